"""Reading, preparing, tagging and writing overlapped: ``fstcrf tag`` reads the next
batches in one thread, extracts the features of the next batch in another, decodes in
this thread and writes the finished batches in a fourth (reading, the C parts of
extraction, decoding and writing release the GIL, so the stages share the machine's
cores).  Queues of a few batches keep memory bounded.  Ctrl-C and SIGTERM act at once
while a batch is decoded, else once the queues are at rest (:class:`SignalGate`); a
stage still running STOP_GRACE seconds later, stuck, is left behind."""

from __future__ import annotations

import contextlib
import gc
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from fstcrf.engine.faults import stall
from fstcrf.engine.threads import leave_running
from fstcrf.phases import phase

#: Batches each queue holds: the reader is at most this far ahead of the next stage,
#: the writer this far behind tagging.
QUEUE_BATCHES = 2

#: Seconds a blocked stage waits before it looks again whether it should stop.
STOP_POLL = 0.1

#: The signals a :class:`SignalGate` handles: Ctrl-C, and what ``kill`` and job schedulers send.
HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)

#: Seconds the tagging thread waits, once it stops, for the reader and the preparer to
#: see the stop (a reader waiting for input on a pipe is left behind; it holds no lock
#: shutdown needs).
READER_JOIN_SECONDS = 1.0

#: Seconds the stages get, once Ctrl-C or SIGTERM came, to finish (the writer writes the
#: items worked on); a stage still running then, stuck, is left behind.
STOP_GRACE = 1.0

#: The garbage collector's first threshold while batches flow (Python's default is 700).
#: Batches are lists and strings without cycles, which reference counting frees; at the
#: default, collections that walk the batches in flight cost about a tenth of tagging.
COLLECTION_THRESHOLD = 20_000

_END = object()


class _Failure:
    """An exception an upstream stage met, passed on in order."""

    def __init__(self, error: BaseException):
        self.error = error


def overlapped(
    items: Iterable,
    work: Callable[[Any], Any],
    finish: Callable[[Any, Any], None],
    prepare: Callable[[Any], Any] | None = None,
) -> None:
    """finish(item, work(item)) for each of ``items`` in order: the items produced in a
    reader thread, work done in this thread and finish in a writer thread.  With
    ``prepare``, finish(item, work(prepare(item))), prepare running in a thread of its
    own, so that the next item is prepared while this one is worked on.

    An exception of any stage is raised here once the items before it are finished
    (an upstream stage's when its place in the order is reached).  Ctrl-C or SIGTERM
    raises KeyboardInterrupt: during ``work`` at once (the item in hand is dropped),
    elsewhere once the stages are at rest (:class:`SignalGate`); either way the
    reader and the preparer stop and the items worked on are finished first, each stage
    getting STOP_GRACE seconds at most (one stuck is left running:
    fstcrf.engine.threads.left_running).  Phase
    "read" (without ``prepare``) or "features" (with it) is the time this thread
    waits for the stage before it, "write" the time it waits for the writer
    (fstcrf.phases, which times this thread only)."""
    stop = threading.Event()
    inbox: queue.Queue = queue.Queue(QUEUE_BATCHES)
    outbox: queue.Queue = queue.Queue(QUEUE_BATCHES)
    failed: list[BaseException] = []

    def write() -> None:
        while (entry := outbox.get()) is not _END:
            if failed:
                continue  # drain, so that the main thread never blocks on a full queue
            try:
                stall("writer")
                finish(*entry)
            except BaseException as error:  # raised in the main thread
                failed.append(error)

    upstream = [threading.Thread(target=_relay, args=(items, inbox, stop.is_set), name="fstcrf-read", daemon=True)]
    if prepare is not None:
        prepared: queue.Queue = queue.Queue(QUEUE_BATCHES)
        source = ((item, prepare(item)) for item in _entries(inbox, stop))
        upstream.append(
            threading.Thread(target=_relay, args=(source, prepared, stop.is_set), name="fstcrf-prepare", daemon=True)
        )
        inbox = prepared
    writer = threading.Thread(target=write, name="fstcrf-write", daemon=True)
    thresholds = gc.get_threshold()
    gc.set_threshold(max(COLLECTION_THRESHOLD, thresholds[0]), *thresholds[1:])
    waiting = "read" if prepare is None else "features"
    with SignalGate.installed() as gate:
        for thread in upstream:
            thread.start()
        writer.start()
        grace = _Grace(gate)
        try:
            while not failed:
                with phase(waiting):
                    entry = _next_entry(inbox, gate)
                if entry is _END:
                    break
                if isinstance(entry, _Failure):
                    raise entry.error
                item, ready = entry if prepare is not None else (entry, entry)
                with gate.opened():
                    result = work(ready)
                with phase("write"):
                    if not _put(outbox, (item, result), lambda: bool(gate.received)):
                        break
        except KeyboardInterrupt:
            grace.start()
            raise
        finally:
            stop.set()
            for thread in upstream:
                _join(thread, grace, READER_JOIN_SECONDS)
            with phase("write"):
                _put(outbox, _END, grace.over)
                _join(writer, grace)
            gc.set_threshold(*thresholds)
    if failed:
        raise failed[0]


class _Grace:
    """How long the stages may still take once Ctrl-C or SIGTERM came (``gate`` received
    a signal, or :meth:`start`): STOP_GRACE seconds, after which a stage still running
    is left (fstcrf.engine.threads.left_running); until then, as long as they need."""

    def __init__(self, gate: SignalGate):
        self.gate = gate
        self.deadline: float | None = None

    def start(self) -> None:
        """Count from now, if not counting yet."""
        if self.deadline is None:
            self.deadline = time.monotonic() + STOP_GRACE

    def over(self) -> bool:
        """Whether the stages have had their time."""
        if self.gate.received:
            self.start()
        return self.deadline is not None and time.monotonic() >= self.deadline


def _join(thread: threading.Thread, grace: _Grace, at_most: float | None = None) -> None:
    """Wait for ``thread`` to end, at most ``at_most`` seconds and no longer than
    ``grace`` allows; a thread still running then is left running (noted)."""
    deadline = None if at_most is None else time.monotonic() + at_most
    while thread.is_alive() and not grace.over() and (deadline is None or time.monotonic() < deadline):
        thread.join(STOP_POLL)
    if thread.is_alive():
        leave_running(thread)


class SignalGate:
    """The handler of SIGINT and SIGTERM while stages run in threads: it raises
    KeyboardInterrupt only while the gate is open (during work that holds no lock
    another thread waits for), and otherwise notes the signal, which
    :meth:`installed` raises at the end of its block.  Raised inside a queue's put
    or get, KeyboardInterrupt can release the queue's lock under another thread or
    lose its wake-up, and leave that thread waiting forever."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self.open = False

    def __call__(self, number: int, frame) -> None:
        self.received.append(number)
        if self.open:
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def opened(self) -> Iterator[None]:
        """The block runs with the gate open."""
        self.open = True
        try:
            yield
        finally:
            self.open = False

    @classmethod
    @contextlib.contextmanager
    def installed(cls) -> Iterator[SignalGate]:
        """A gate, the handler of HELD_SIGNALS within the block (the handlers of
        before are restored at its end, then KeyboardInterrupt is raised if a signal
        came).  Only the main thread receives signals and sets their handlers:
        elsewhere the gate holds nothing back."""
        gate = cls()
        previous = [signal.getsignal(number) for number in HELD_SIGNALS]
        if threading.current_thread() is not threading.main_thread() or None in previous:
            yield gate  # handlers not set from Python cannot be put back
            return
        for number in HELD_SIGNALS:
            signal.signal(number, gate)
        try:
            yield gate
        finally:
            for number, handler in zip(HELD_SIGNALS, previous):
                signal.signal(number, handler)
        if gate.received:
            raise KeyboardInterrupt


def _next_entry(box: queue.Queue, gate: SignalGate):
    """The next entry of ``box``, or the end mark once ``gate`` has received a signal."""
    while not gate.received:
        try:
            return box.get(timeout=STOP_POLL)
        except queue.Empty:
            pass
    return _END


def _relay(items: Iterable, box: queue.Queue, stop: Callable[[], bool]) -> None:
    """Put each of ``items`` in ``box``, then the end mark, until ``stop()`` is true; an
    exception of ``items`` is put in ``box`` in its place (handed on in order)."""
    try:
        for item in items:
            if not _put(box, item, stop):
                return
        _put(box, _END, stop)
    except BaseException as error:  # handed to the next stage, in order
        _put(box, _Failure(error), stop)


def _entries(box: queue.Queue, stop: threading.Event) -> Iterator:
    """The entries of ``box`` up to the end mark, an upstream failure raised in its
    place; ends early once ``stop`` is set."""
    while not stop.is_set():
        try:
            entry = box.get(timeout=STOP_POLL)
        except queue.Empty:
            continue
        if entry is _END:
            return
        if isinstance(entry, _Failure):
            raise entry.error
        yield entry


def _put(box: queue.Queue, entry, stop: Callable[[], bool]) -> bool:
    """Put entry in box, waiting for room until ``stop()`` is true (False then)."""
    while not stop():
        try:
            box.put(entry, timeout=STOP_POLL)
            return True
        except queue.Full:
            pass
    return False
