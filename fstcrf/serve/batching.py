"""Dynamic batching: work items queued from many requests, run together in batches,
answered apart.

An item is queued under a group (items of one group can run in one call), with a
size (what a batch is bounded by) and the function that runs a batch of its group:
a list of items to a list of results, one each, in order.  One worker thread runs one
batch at a time, off the event loop; while it runs, the items that arrive wait and
form the next batch, so that the busier the server, the larger its batches.  When
the worker is free, the oldest item's group is taken, after waiting at most
``max_wait`` seconds from that item's arrival for the batch to reach ``max_size``,
and only while more items are on their way (their requests read or parsed, marked
by :meth:`Batcher.arriving`): with none coming, waiting could only add latency, so
a lone item runs at once.  A batch holds at most ``max_size`` (an item larger than
that runs alone).  A batch of at most ``inline_size``, with nothing else waiting or
on its way, runs on the event loop itself: handing it to the worker and back would
cost more than running it (a lone small request at low load).

A batch whose call raises is run again one item at a time, so that an item that
cannot be run fails alone and the others get their results.  The call is given, with
the items, an event per item that is set when the item's submitter stops waiting for
it (cancelled, e.g. by a timeout) while its batch runs: the call may stop that item's
work and give anything in its place, which is dropped.

The batcher knows nothing of what its items are: neither HTTP nor features."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from contextlib import contextmanager
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from fstcrf.engine.threads import WorkerPool
from fstcrf.errors import ServerBusyError

#: Runs a batch: items, and an event per item set once nobody waits for it (see the
#: module doc), to their results, one each, in order.
BatchFunction = Callable[[list, list[threading.Event]], list]


@dataclass
class Queued:
    """An item waiting: its size, the function that runs its batch, its future, when
    it arrived (time.monotonic()), and the event set once nobody waits for it."""

    item: object
    size: int
    run: BatchFunction
    future: asyncio.Future
    arrived: float = field(default_factory=time.monotonic)
    abandoned: threading.Event = field(default_factory=threading.Event)


class Batcher:
    """Items queued by group and run in batches by one worker thread (see the module
    doc); :meth:`start` it inside the event loop, :meth:`close` it there."""

    def __init__(self, max_size: int, max_wait: float, max_queued: int, inline_size: int = 0):
        self.max_size, self.max_wait, self.max_queued = max_size, max_wait, max_queued
        self.inline_size = inline_size
        self.groups: dict[Hashable, deque[Queued]] = {}
        #: Items waiting (not yet in a batch that runs).
        self.queued = 0
        #: Items on their way (inside :meth:`arriving`), not yet submitted.
        self.on_the_way = 0
        self.closed = False
        # a daemon thread: one still decoding when the server stops does not hold the process
        self.executor = WorkerPool(1, name="fstcrf-batch", nested_inline=False)
        self.arrival = asyncio.Event()
        self.task: asyncio.Task | None = None

    def start(self) -> None:
        """Start taking batches (in the running event loop)."""
        self.task = asyncio.get_running_loop().create_task(self._take_batches())

    async def close(self, timeout: float | None = None) -> None:
        """Refuse new items, cancel those still queued, let the running batch finish
        (for at most ``timeout`` seconds; left running after, see
        :func:`fstcrf.engine.threads.left_running`)."""
        self.closed = True
        if self.task is not None:
            self.task.cancel()
            try:
                await self.task
            except asyncio.CancelledError:
                pass
        for queue in self.groups.values():
            for queued in queue:
                queued.future.cancel()
        self.groups.clear()
        self.queued = 0
        await asyncio.get_running_loop().run_in_executor(None, self.executor.close, timeout)

    @contextmanager
    def arriving(self):
        """Mark an item on its way while its request is read and parsed: a batch being
        filled waits for it (up to max_wait)."""
        self.on_the_way += 1
        try:
            yield
        except BaseException:
            self.arrival.set()  # it will not come: a batch waiting for it looks again
            raise
        finally:
            self.on_the_way -= 1

    async def submit(self, group: Hashable, item, size: int, run: BatchFunction):
        """The result of ``item``, once a batch of its ``group`` has run it;
        ServerBusyError when the queue is full or the batcher closed.  Cancelled
        (e.g. by a timeout), the item leaves the queue, or if its batch runs, is marked
        abandoned (its work may stop) and its result dropped."""
        if self.closed:
            raise ServerBusyError("the server is shutting down")
        if self.queued >= self.max_queued:
            raise ServerBusyError(f"the queue is full ({self.max_queued} requests wait); try again shortly")
        queued = Queued(item, size, run, asyncio.get_running_loop().create_future())
        self.groups.setdefault(group, deque()).append(queued)
        self.queued += 1
        self.arrival.set()
        try:
            return await queued.future
        except asyncio.CancelledError:
            queue = self.groups.get(group)
            if queue is not None and queued in queue:
                queue.remove(queued)
                self.queued -= 1
                if not queue:
                    del self.groups[group]
            else:
                queued.abandoned.set()
            raise

    async def _take_batches(self) -> None:
        while True:
            if not self.groups:
                self.arrival.clear()
                await self.arrival.wait()
                continue
            group = min(self.groups, key=lambda key: self.groups[key][0].arrived)
            await self._fill(group)
            batch, size = self._take(group)
            if not batch:  # every item of the group was cancelled while it filled
                continue
            items = [queued.item for queued in batch]
            abandoned = [queued.abandoned for queued in batch]
            if self._runs_inline(size):
                results = run_batch(batch[0].run, items, abandoned)
            else:
                results = await asyncio.wrap_future(self.executor.submit(run_batch, batch[0].run, items, abandoned))
            for queued, result in zip(batch, results):
                if queued.future.done():  # cancelled while it ran
                    continue
                if isinstance(result, Exception):
                    queued.future.set_exception(result)
                else:
                    queued.future.set_result(result)

    async def _fill(self, group: Hashable) -> None:
        """Wait until ``group`` holds max_size, its oldest item has waited max_wait or
        no item is on its way (or the group is gone: every item cancelled)."""
        while group in self.groups:
            queue = self.groups[group]
            waited = time.monotonic() - queue[0].arrived
            if not self.on_the_way or waited >= self.max_wait or sum(q.size for q in queue) >= self.max_size:
                return
            self.arrival.clear()
            try:
                await asyncio.wait_for(self.arrival.wait(), self.max_wait - waited)
            except asyncio.TimeoutError:
                return

    def _runs_inline(self, size: int) -> bool:
        """Whether a batch of ``size`` runs on the event loop: small, and nothing else
        waits or is on its way that it would hold up."""
        return not self.groups and not self.on_the_way and size <= self.inline_size

    def _take(self, group: Hashable) -> tuple[list[Queued], int]:
        """The next batch of ``group`` and its size: its oldest items up to max_size (at
        least one), taken off the queue."""
        queue = self.groups.get(group)
        batch: list[Queued] = []
        size = 0
        while queue and (not batch or size + queue[0].size <= self.max_size):
            queued = queue.popleft()
            batch.append(queued)
            size += queued.size
        if queue is not None and not queue:
            del self.groups[group]
        self.queued -= len(batch)
        return batch, size


def run_batch(run: BatchFunction, items: list, abandoned: list[threading.Event] | None = None) -> list:
    """The result of each item run together by ``run`` (given ``abandoned``, an event
    per item; by default none is ever set), or if that raises, each run alone: its
    result, or the exception it raised."""
    if abandoned is None:
        abandoned = [threading.Event() for _ in items]
    try:
        results = run(items, abandoned)
    except Exception as error:
        if len(items) == 1:
            return [error]
        return [result for item, event in zip(items, abandoned) for result in run_batch(run, [item], [event])]
    return results
