"""The kept thread pools: work nested in a pool's work runs inline instead of
waiting on threads that are all waiting."""

import threading

from fstcrf.engine.threads import on_pool_worker, run_parallel


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
