"""A Dask client for ``fstcrf train/tag --dask SPEC``: a scheduler address, or
``local:N`` for a LocalCluster of N single-threaded worker processes."""
from __future__ import annotations

import contextlib
import logging
import os
import re

from ..errors import FstcrfError, SchedulerError

#: Seconds to wait for a scheduler to answer before SchedulerError.
CONNECT_TIMEOUT = 10


@contextlib.contextmanager
def connect(spec: str, threads_per_worker: int = 1, timeout: float = CONNECT_TIMEOUT):
    """A dask.distributed Client for ``spec`` ("local:N" or a scheduler address such
    as "tcp://host:8786"), closed (with its LocalCluster) on exit; SchedulerError
    when the scheduler does not answer within ``timeout`` seconds."""
    local = re.fullmatch(r"local:(\d+)", spec)
    if local is None and not re.fullmatch(r"(tcp|tls|inproc|ws|wss|ucx)://\S+|[\w.-]+:\d+", spec):
        raise FstcrfError(f"--dask takes a scheduler address such as tcp://host:8786 or local:N, got {spec!r}")
    from distributed import Client, LocalCluster
    # fstcrf's own log and typed errors say what happens; Dask's logs (tracebacks of
    # heartbeats that race a closing scheduler) would reach the user's terminal
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    if local is not None:
        workers = int(local.group(1))
        if workers < 1:
            raise FstcrfError(f"--dask local:N needs N >= 1 workers, got {spec!r}")
        with _environment(DASK_LOGGING__DISTRIBUTED="critical"):        # read by the worker processes
            cluster = LocalCluster(n_workers=workers, threads_per_worker=threads_per_worker, processes=True,
                                   dashboard_address=":0")
        with cluster, Client(cluster) as client:
            yield client
        return
    try:
        client = Client(spec, timeout=timeout)
    except (OSError, TimeoutError) as problem:
        raise SchedulerError(f"cannot reach the Dask scheduler at {spec} within {timeout:g} s: "
                             f"{problem}") from None
    with client:
        yield client


@contextlib.contextmanager
def _environment(**variables: str):
    """Set environment variables for the body (processes started in it inherit them)."""
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
