"""The threads of fstcrf's parallel work: a kept pool per size, one item per thread
(:func:`run_parallel`), and BLAS held to one thread beside them."""

from __future__ import annotations

import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from collections.abc import Sequence

import numpy  # noqa: F401  (its BLAS library loaded before threadpoolctl looks for it)
import threadpoolctl

_blas = None
#: Per thread: ``depth``, how many blas_single_threaded blocks it is inside, and
#: ``limit``, the BLAS limit its outermost block holds (None until work is shared out).
_blocks = threading.local()


class _BlasBlock:
    """A :func:`blas_single_threaded` block: a context manager, and a decorator."""

    def __enter__(self) -> None:
        _blocks.depth = getattr(_blocks, "depth", 0) + 1

    def __exit__(self, *exception) -> None:
        _blocks.depth -= 1
        if not _blocks.depth:
            held, _blocks.limit = getattr(_blocks, "limit", None), None
            if held is not None:
                held.__exit__(None, None, None)

    def __call__(self, function):
        @functools.wraps(function)
        def in_block(*args, **kwargs):
            with self:
                return function(*args, **kwargs)

        return in_block


def blas_single_threaded() -> _BlasBlock:
    """A block (a context manager, or a function's decorator) in which the BLAS
    libraries numpy and scipy loaded run on one thread each once it shares work out
    to threads of its own.  OpenBLAS spreads large vector products over worker
    threads that then busy-wait for more work, on the cores fstcrf's own threads
    need: beside them a training gradient on 2 cores took 0.23 s instead of 0.16 s.
    The limit is set (about 10 microseconds) by :func:`limit_blas`, which
    :func:`run_parallel` and the learners that start threads call, and held until the
    thread's outermost block ends; a block whose work all runs on the calling thread
    (a sentence tagged) leaves BLAS alone, and nested blocks cost nothing."""
    return _BlasBlock()


def limit_blas() -> None:
    """Inside a :func:`blas_single_threaded` block, hold BLAS to one thread from now
    until the block ends (nothing outside one, or when the limit is held already)."""
    global _blas
    if not getattr(_blocks, "depth", 0) or getattr(_blocks, "limit", None) is not None:
        return
    if _blas is None:
        _blas = threadpoolctl.ThreadpoolController()
    limit = _blas.limit(limits=1, user_api="blas")
    limit.__enter__()
    _blocks.limit = limit


_pools: dict[tuple[int, int], ThreadPoolExecutor] = {}

#: ``worker.inside`` is True on the threads of fstcrf's pools, whose nested work runs inline.
_worker = threading.local()


def _mark_worker() -> None:
    _worker.inside = True


def on_pool_worker() -> bool:
    """Whether the calling thread is one of fstcrf's pool threads."""
    return getattr(_worker, "inside", False)


def thread_pool(size: int) -> ThreadPoolExecutor:
    """A pool of ``size`` threads, started once per process and kept: starting
    threads for each call cost 1-3 ms, as much as a forward-backward pass over a
    small batch.  A forked child gets pools of its own (its parent's threads do
    not exist in it)."""
    key = (os.getpid(), size)
    if key not in _pools:
        _pools[key] = ThreadPoolExecutor(max_workers=size, thread_name_prefix="fstcrf", initializer=_mark_worker)
    return _pools[key]


@blas_single_threaded()
def run_parallel(work, items: Sequence) -> list:
    """[work(item) for item in items], one thread per item; inline for one item, and on
    a pool thread, which must never wait on a pool (work nested in a pool's work, such as
    a block's emissions inside a joint model's blocks, would wait for threads that are
    all busy waiting).  An exception (Ctrl-C too) goes on once no thread still writes
    to the caller's arrays."""
    if len(items) <= 1 or on_pool_worker():
        return [work(item) for item in items]
    limit_blas()
    pool = thread_pool(len(items))
    futures = [pool.submit(work, item) for item in items]
    try:
        return [future.result() for future in futures]
    except BaseException:  # the items not started are dropped, those running waited for
        wait([future for future in futures if not future.cancel()])
        raise
