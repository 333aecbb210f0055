"""The kept thread pools: work nested in a pool's work runs inline instead of
waiting on threads that are all waiting; their threads are daemon threads; Ctrl-C
waits INTERRUPT_GRACE seconds at most for the items running and leaves a stuck one
(the pool is not used again); an error waits for the others.  And the fault hook's
variable."""

import os
import signal
import threading
import time

import pytest

from fstcrf.engine.faults import parse_faults
from fstcrf.engine.threads import INTERRUPT_GRACE, left_running, on_pool_worker, run_parallel, thread_pool


def test_work_nested_in_the_pools_work_runs_inline_and_finishes():
    # Every outer item asks the same pool for two more items: with the outer items holding
    # every thread of the pool, a nested submission would wait for ever.
    def inner(item):
        return item, threading.current_thread().name, on_pool_worker()

    def outer(item):
        return run_parallel(inner, [(item, 0), (item, 1)])

    finished = []
    caller = threading.Thread(target=lambda: finished.append(run_parallel(outer, [0, 1])), daemon=True)
    caller.start()
    caller.join(timeout=20)
    assert not caller.is_alive(), "work nested in the pool's own work never finished"
    (results,) = finished
    assert [[value for value, _, _ in block] for block in results] == [[(0, 0), (0, 1)], [(1, 0), (1, 1)]]
    for block in results:
        names = {name for _, name, _ in block}
        assert len(names) == 1 and names.pop().startswith("fstcrf"), "nested items ran inline on their worker"
        assert all(inside for _, _, inside in block)


def test_the_calling_thread_is_not_a_pool_worker():
    assert not on_pool_worker()
    assert run_parallel(lambda item: on_pool_worker(), [1, 2]) == [True, True]
    assert run_parallel(lambda item: on_pool_worker(), [1]) == [False]


def _blas_threads() -> list[int]:
    import numpy  # noqa: F401  (loads the BLAS library whose threads are counted)
    import threadpoolctl

    return [info["num_threads"] for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"]


def test_a_block_holds_blas_to_one_thread_once_it_shares_work_out_until_it_ends():
    from fstcrf.engine.threads import blas_single_threaded

    before = _blas_threads()
    with blas_single_threaded():
        with blas_single_threaded():
            run_parallel(lambda item: item, [1])  # on the calling thread: BLAS left alone
            assert _blas_threads() == before
            run_parallel(lambda item: item, [1, 2])
        assert _blas_threads() == [1] * len(before)  # held by the outermost block
    assert _blas_threads() == before


def test_the_pools_threads_never_hold_up_the_interpreters_exit():
    run_parallel(lambda item: item, [1, 2])
    pool = thread_pool(2)
    assert all(thread.daemon for thread in pool.threads)


def test_ctrl_c_leaves_a_stuck_item_running_after_the_grace_and_the_pool_is_replaced():
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    release = threading.Event()
    pool = thread_pool(2)

    def work(item):
        if item == 1:
            release.wait()  # stuck until released
        return item

    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        run_parallel(work, [0, 1])
    assert time.monotonic() - started < 0.2 + INTERRUPT_GRACE + 0.5
    stuck = [thread.name for thread in pool.threads if thread.is_alive()]
    assert len(stuck) == 1 and stuck[0] in left_running()
    assert thread_pool(2) is not pool and run_parallel(work, [0, 2]) == [0, 2]  # a fresh pool
    release.set()
    for thread in pool.threads:
        thread.join(10)
        assert not thread.is_alive()  # the retired pool's threads end once their work does
    assert stuck[0] not in left_running()


def test_an_error_in_an_item_waits_for_the_others():
    finished = []
    started = threading.Event()

    def work(item):
        if item == 0:  # fails once item 1 runs (an item not yet started would be dropped)
            assert started.wait(10)
            raise ValueError("item 0")
        started.set()
        time.sleep(0.3)
        finished.append(item)

    with pytest.raises(ValueError, match="item 0"):
        run_parallel(work, [0, 1])
    assert finished == [1]  # no thread still writes once the error goes on


def test_fault_places_and_visits_are_read_from_the_variable():
    assert parse_faults("worker:3, writer,partner:0,x:y") == {"worker": 3, "writer": 1, "partner": 1, "x": 1}
    assert parse_faults("") == {}
