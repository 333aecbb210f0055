"""The dynamic batcher on its own (plain items, no HTTP, no model): items submitted
together run in batches bounded by size, each gets its own result, a batch whose
call fails is run again item by item, a full queue refuses, a cancelled item leaves
the queue, the worker thread is not the event loop's, and a lone small batch runs on
the event loop."""

import asyncio
import threading

import pytest

from fstcrf.errors import ServerBusyError
from fstcrf.serve.batching import Batcher, run_batch


class Recorder:
    """A batch function that records each batch and the thread it ran on, and answers
    each item doubled (an item "bad" raises)."""

    def __init__(self, pause: float = 0.0):
        self.batches: list[list] = []
        self.threads: set[str] = set()
        self.pause = pause

    def __call__(self, items: list, abandoned: list) -> list:
        import time

        self.batches.append(list(items))
        self.threads.add(threading.current_thread().name)
        time.sleep(self.pause)
        if "bad" in items:
            raise ValueError("bad item")
        return [item * 2 for item in items]


def run(coroutine):
    return asyncio.run(coroutine)


async def started(max_size=10, max_wait=0.05, max_queued=100) -> Batcher:
    batcher = Batcher(max_size, max_wait, max_queued)
    batcher.start()
    return batcher


def test_items_submitted_together_run_in_batches_bounded_by_size():
    recorder = Recorder()

    async def scenario():
        batcher = await started(max_size=10)
        results = await asyncio.gather(*(batcher.submit("g", n, 3, recorder) for n in range(9)))
        await batcher.close()
        return results

    assert run(scenario()) == [2 * n for n in range(9)]
    assert [len(batch) for batch in recorder.batches] == [3, 3, 3]  # 3 items of size 3 fit in 10
    assert sorted(item for batch in recorder.batches for item in batch) == list(range(9))
    assert recorder.threads and threading.main_thread().name not in recorder.threads


def test_while_a_batch_runs_the_next_one_gathers():
    recorder = Recorder(pause=0.2)

    async def scenario():
        batcher = await started(max_size=100, max_wait=0.0)
        first = asyncio.ensure_future(batcher.submit("g", 0, 1, recorder))
        await asyncio.sleep(0.05)  # the first batch (one item) runs now
        rest = [asyncio.ensure_future(batcher.submit("g", n, 1, recorder)) for n in range(1, 6)]
        results = await asyncio.gather(first, *rest)
        await batcher.close()
        return results

    assert run(scenario()) == [0, 2, 4, 6, 8, 10]
    assert recorder.batches == [[0], [1, 2, 3, 4, 5]]


def test_groups_are_never_mixed_and_the_oldest_goes_first():
    recorder = Recorder()

    async def scenario():
        batcher = await started(max_size=100, max_wait=0.02)
        results = await asyncio.gather(
            batcher.submit("a", 1, 1, recorder),
            batcher.submit("b", 10, 1, recorder),
            batcher.submit("a", 2, 1, recorder),
        )
        await batcher.close()
        return results

    assert run(scenario()) == [2, 20, 4]
    assert recorder.batches == [[1, 2], [10]]


def test_a_failing_item_fails_alone():
    recorder = Recorder()

    async def scenario():
        batcher = await started()
        results = await asyncio.gather(
            *(batcher.submit("g", item, 1, recorder) for item in (1, "bad", 3)), return_exceptions=True
        )
        await batcher.close()
        return results

    first, bad, third = run(scenario())
    assert (first, third) == (2, 6) and isinstance(bad, ValueError)
    assert recorder.batches[0] == [1, "bad", 3] and [1] in recorder.batches and [3] in recorder.batches


def test_run_batch_returns_each_items_result_or_error():
    results = run_batch(Recorder(), ["bad", 2])
    assert isinstance(results[0], ValueError) and results[1] == 4


def test_a_full_queue_refuses_and_a_closed_batcher_too():
    recorder = Recorder(pause=0.3)

    async def scenario():
        batcher = await started(max_size=1, max_wait=0.0, max_queued=2)
        running = asyncio.ensure_future(batcher.submit("g", 0, 1, recorder))
        await asyncio.sleep(0.05)
        waiting = [asyncio.ensure_future(batcher.submit("g", n, 1, recorder)) for n in (1, 2)]
        await asyncio.sleep(0)
        with pytest.raises(ServerBusyError, match="queue is full"):
            await batcher.submit("g", 3, 1, recorder)
        results = await asyncio.gather(running, *waiting)
        await batcher.close()
        with pytest.raises(ServerBusyError, match="shutting down"):
            await batcher.submit("g", 4, 1, recorder)
        return results

    assert run(scenario()) == [0, 2, 4]


def test_a_cancelled_item_leaves_the_queue():
    recorder = Recorder(pause=0.2)

    async def scenario():
        batcher = await started(max_size=100, max_wait=0.0)
        running = asyncio.ensure_future(batcher.submit("g", 0, 1, recorder))
        await asyncio.sleep(0.05)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(batcher.submit("g", 1, 1, recorder), 0.01)
        assert batcher.queued == 0
        kept = await asyncio.gather(running, batcher.submit("g", 2, 1, recorder))
        await batcher.close()
        return kept

    assert run(scenario()) == [0, 4]
    assert recorder.batches == [[0], [2]]


def test_a_lone_item_runs_at_once_and_a_batch_waits_only_for_items_on_their_way():
    recorder = Recorder()

    async def scenario():
        batcher = await started(max_size=100, max_wait=5.0)
        began = asyncio.get_running_loop().time()
        assert await batcher.submit("g", 1, 1, recorder) == 2
        lone = asyncio.get_running_loop().time() - began
        with batcher.arriving():
            first = asyncio.ensure_future(batcher.submit("g", 2, 1, recorder))
            await asyncio.sleep(0.1)  # the batch of 2 waits for the item on its way
            second = asyncio.ensure_future(batcher.submit("g", 3, 1, recorder))
        results = await asyncio.gather(first, second)
        with pytest.raises(ValueError):
            with batcher.arriving():  # a request that fails while it is read
                third = asyncio.ensure_future(batcher.submit("g", 4, 1, recorder))
                await asyncio.sleep(0.1)
                raise ValueError("unreadable")
        results.append(await third)
        await batcher.close()
        return asyncio.get_running_loop().time() - began, lone, results

    total, lone, results = run(scenario())
    assert lone < 1.0 and total < 4.0 and results == [4, 6, 8]  # never the 5 s of max_wait
    assert recorder.batches == [[1], [2, 3], [4]]


def test_a_lone_small_batch_runs_on_the_event_loop_and_others_on_the_worker():
    def thread_names(items: list, abandoned: list) -> list:
        return [threading.current_thread().name for _ in items]

    async def scenario():
        batcher = Batcher(100, 0.05, 100, inline_size=8)
        batcher.start()
        lone_small = await batcher.submit("g", 0, 8, thread_names)
        lone_large = await batcher.submit("g", 0, 9, thread_names)
        with batcher.arriving():  # another request is being read: it would wait behind the loop
            with_one_coming = await batcher.submit("g", 0, 1, thread_names)
        together = await asyncio.gather(
            batcher.submit("a", 0, 1, thread_names), batcher.submit("b", 0, 1, thread_names)
        )
        await batcher.close()
        return lone_small, lone_large, with_one_coming, together

    lone_small, lone_large, with_one_coming, together = run(scenario())
    loop_thread = threading.main_thread().name
    assert lone_small == loop_thread
    assert lone_large != loop_thread and with_one_coming != loop_thread
    # group a's batch finds group b's waiting: it goes to the worker; b's, then alone, not
    assert together[0] != loop_thread and together[1] == loop_thread
