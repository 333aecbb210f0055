"""The threads of fstcrf's parallel work: a kept pool per size, one item per thread
(:func:`run_parallel`), BLAS held to one thread beside them, and the threads an
interrupt left running (:func:`left_running`)."""

from __future__ import annotations

import functools
import os
import queue
import threading
import time
from concurrent.futures import Future, wait
from collections.abc import Callable, Sequence

from fstcrf.engine.faults import stall

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
            depth = getattr(_blocks, "depth", 0)  # __enter__ and __exit__ inline: a call costs less
            _blocks.depth = depth + 1
            try:
                return function(*args, **kwargs)
            finally:
                if depth:
                    _blocks.depth = depth
                else:
                    self.__exit__()

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
        import numpy  # noqa: F401  (its BLAS library loaded before threadpoolctl looks for it)
        import threadpoolctl  # here: the command line's start-up does without either

        _blas = threadpoolctl.ThreadpoolController()
    limit = _blas.limit(limits=1, user_api="blas")
    limit.__enter__()
    _blocks.limit = limit


#: Seconds an interrupted :func:`run_parallel` waits for the items already running before
#: it leaves them (:func:`left_running`): a stuck thread must not keep Ctrl-C from ending a command.
INTERRUPT_GRACE = 1.0


class WorkerPool:
    """``size`` threads that make the calls submitted to them, in order.  They are daemon
    threads, never joined at the interpreter's exit (concurrent.futures joins its
    pools' threads there, so one stuck in its work kept a process from ending), and
    the threads of fstcrf's pools (:func:`on_pool_worker`) unless ``nested_inline`` is
    False (a pool whose calls may use the kept pools themselves, as a server's batch
    thread does).  :meth:`close` ends them."""

    def __init__(self, size: int, name: str = "fstcrf", nested_inline: bool = True):
        self.nested_inline = nested_inline
        self._calls: queue.SimpleQueue = queue.SimpleQueue()
        self.threads = [threading.Thread(target=self._serve, name=f"{name}_{n}", daemon=True) for n in range(size)]
        for thread in self.threads:
            thread.start()

    def submit(self, work: Callable, *arguments) -> Future:
        """The future of work(*arguments), made on one of the threads."""
        future: Future = Future()
        self._calls.put((future, work, arguments))
        return future

    def close(self, timeout: float | None = None) -> bool:
        """End the threads once the calls submitted are made, waiting for them at most
        ``timeout`` seconds (None: until they end); True if every thread ended, else
        those left are in :func:`left_running`."""
        for _ in self.threads:
            self._calls.put(None)
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in self.threads:
            thread.join(None if deadline is None else max(deadline - time.monotonic(), 0.0))
        stuck = [thread for thread in self.threads if thread.is_alive()]
        for thread in stuck:
            leave_running(thread)
        return not stuck

    def _serve(self) -> None:
        _worker.inside = self.nested_inline
        while (call := self._calls.get()) is not None:
            future, work, arguments = call
            if future.set_running_or_notify_cancel():
                stall("worker")
                try:
                    future.set_result(work(*arguments))
                except BaseException as error:  # handed to the caller, which waits for the future
                    future.set_exception(error)
            del future, work, arguments, call  # the result is the caller's alone


_pools: dict[tuple[int, int], WorkerPool] = {}

#: The threads running work a caller stopped waiting for.
_left: list[threading.Thread] = []

#: ``worker.inside`` is True on the threads of fstcrf's pools, whose nested work runs inline.
_worker = threading.local()


def on_pool_worker() -> bool:
    """Whether the calling thread is one of fstcrf's pool threads."""
    return getattr(_worker, "inside", False)


def leave_running(thread: threading.Thread) -> None:
    """Note that ``thread`` runs work its caller stopped waiting for (after an interrupt)."""
    if thread not in _left:
        _left.append(thread)


def left_running() -> list[str]:
    """The names of the threads still running work their callers stopped waiting for:
    the process should end with ``os._exit`` (the interpreter's exit could wait for them,
    or fail while they hold a lock it needs)."""
    return [thread.name for thread in _left if thread.is_alive()]


def thread_pool(size: int) -> WorkerPool:
    """A pool of ``size`` threads, started once per process and kept: starting
    threads for each call cost 1-3 ms, as much as a forward-backward pass over a
    small batch.  A forked child gets pools of its own (its parent's threads do
    not exist in it), and so does a caller after an interrupt left work running on one."""
    key = (os.getpid(), size)
    if key not in _pools:
        _pools[key] = WorkerPool(size)
    return _pools[key]


@blas_single_threaded()
def run_parallel(work, items: Sequence) -> list:
    """[work(item) for item in items], one thread per item; inline for one item, and on
    a pool thread, which must never wait on a pool (work nested in a pool's work, such as
    a block's emissions inside a joint model's blocks, would wait for threads that are
    all busy waiting).  An exception goes on once no thread still writes to the caller's
    arrays; Ctrl-C (KeyboardInterrupt) after INTERRUPT_GRACE seconds at most: the items
    still running then are left to their threads (:func:`left_running`), and the pool
    is not used again."""
    if len(items) <= 1 or on_pool_worker():
        return [work(item) for item in items]
    limit_blas()
    pool = thread_pool(len(items))
    futures = [pool.submit(work, item) for item in items]
    try:
        return [future.result() for future in futures]
    except BaseException as error:  # the items not started are dropped, those running waited for
        running = [future for future in futures if not future.cancel()]
        try:
            wait(running, timeout=INTERRUPT_GRACE if isinstance(error, KeyboardInterrupt) else None)
        finally:  # a second Ctrl-C may end the wait too
            if not all(future.done() for future in running):
                _retire(pool)
        raise


def _retire(pool: WorkerPool) -> None:
    """Stop using ``pool``, some of whose threads run work their caller left: each
    thread ends once its work does (those still running are in :func:`left_running`)."""
    for key, kept in list(_pools.items()):
        if kept is pool:
            del _pools[key]
    pool.close(timeout=0.1)
