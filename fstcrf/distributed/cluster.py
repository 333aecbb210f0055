"""A Dask client for ``fstcrf train/tag --dask SPEC``: a scheduler address, or
``local:N`` for a LocalCluster of N single-threaded worker processes that listens
on the loopback interface only (its dashboard too, unless ``--dask-dashboard``)."""

from __future__ import annotations

import contextlib
import logging
import os
import re

from fstcrf.errors import FstcrfError, SchedulerError
from fstcrf.extras import require

#: Seconds to wait for a scheduler to answer before SchedulerError.
CONNECT_TIMEOUT = 10

#: The one interface a LocalCluster's scheduler, nannies and workers listen on.
LOOPBACK = "127.0.0.1"

#: --dask-dashboard HOST:PORT; no IPv6 address, since Dask cuts the address at its colons.
DASHBOARD_ADDRESS = re.compile(r"([\w.-]+):(\d{1,5})")

LOG = logging.getLogger(__name__)


@contextlib.contextmanager
def connect(spec: str, threads_per_worker: int = 1, timeout: float = CONNECT_TIMEOUT, dashboard: str | None = None):
    """A dask.distributed Client for ``spec`` ("local:N" or a scheduler address such
    as "tcp://host:8786"), closed (with its LocalCluster) on exit; SchedulerError
    when the scheduler does not answer within ``timeout`` seconds. A LocalCluster
    listens on 127.0.0.1 only and serves its dashboard only when ``dashboard``
    ("HOST:PORT", port 0 for any free port) asks for it."""
    local = re.fullmatch(r"local:(\d+)", spec)
    if local is None and not re.fullmatch(r"(tcp|tls|inproc|ws|wss|ucx)://\S+|[\w.-]+:\d+", spec):
        raise FstcrfError(f"--dask takes a scheduler address such as tcp://host:8786 or local:N, got {spec!r}")
    if dashboard is not None:
        _check_dashboard(dashboard, spec, local is not None)
    Client = require("distributed", "--dask").Client

    # fstcrf's own log and typed errors say what happens; Dask's logs (tracebacks of
    # heartbeats that race a closing scheduler) would reach the user's terminal
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    if local is not None:
        workers = int(local.group(1))
        if workers < 1:
            raise FstcrfError(f"--dask local:N needs N >= 1 workers, got {spec!r}")
        with _environment(DASK_LOGGING__DISTRIBUTED="critical"):  # read by the worker processes
            cluster = _local_cluster(workers, threads_per_worker, dashboard)
        with cluster, Client(cluster) as client:
            if dashboard is not None:
                LOG.info("Dask dashboard (no authentication) at %s", client.dashboard_link)
            yield client
        return
    failure = None
    made: list = []  # the Client being made, closed at once if its constructor fails

    class Recorded(Client):
        def __init__(self, *args, **kwargs):
            made.append(self)
            super().__init__(*args, **kwargs)

    try:
        client = Recorded(spec, timeout=timeout)
    except (OSError, TimeoutError) as problem:
        failure = SchedulerError(f"cannot reach the Dask scheduler at {spec} within {timeout:g} s: {problem}")
    except (RuntimeError, TypeError) as problem:  # Dask's TLS settings refuse the address or are missing
        failure = SchedulerError(
            f"cannot connect to the Dask scheduler at {spec}: {problem} (TLS comes from "
            f"Dask's configuration, see docs/distributed.md)"
        )
    if failure is not None:
        # closed here and now: left to the garbage collector, the half-made client's
        # __del__ closes it in whichever thread allocates then, and when that is a thread
        # Dask is starting for another client, the two wait for each other for ever
        for half_made in made:
            half_made.close()
        raise failure
    with client:
        yield client


def _check_dashboard(address: str, spec: str, local: bool) -> None:
    """FstcrfError unless ``address`` is HOST:PORT and ``spec`` starts a LocalCluster."""
    form = DASHBOARD_ADDRESS.fullmatch(address)
    if form is None or int(form.group(2)) > 65535:
        raise FstcrfError(
            f"--dask-dashboard takes HOST:PORT, such as 127.0.0.1:8787 (this machine only), "
            f"0.0.0.0:8787 (every interface) or 127.0.0.1:0 (any free port), got {address!r}"
        )
    if not local:
        raise FstcrfError(
            f"--dask-dashboard opens the dashboard of a LocalCluster (--dask local:N); the "
            f"scheduler at {spec} serves its own, set where it is started"
        )


def _local_cluster(workers: int, threads_per_worker: int, dashboard: str | None):
    """A LocalCluster of ``workers`` processes whose scheduler, nannies and workers listen
    on LOOPBACK; with the dashboard on ``dashboard``, or without one (the scheduler's
    HTTP server, which Dask always starts for its health and metrics pages, then on
    LOOPBACK at a free port)."""
    from distributed import LocalCluster

    if dashboard is None:
        options = {"dashboard_address": f"{LOOPBACK}:0", "scheduler_kwargs": {"dashboard": False}}
    else:
        options = {"dashboard_address": dashboard}
    try:
        return LocalCluster(
            n_workers=workers, threads_per_worker=threads_per_worker, processes=True, host=LOOPBACK, **options
        )
    except (OSError, RuntimeError) as problem:  # Dask wraps the cause (a dashboard address that
        while problem.__cause__ is not None:  # cannot be bound, TLS required without certificates)
            problem = problem.__cause__
        where = "" if dashboard is None else f" with its dashboard on {dashboard}"
        raise FstcrfError(
            f"cannot start the LocalCluster of --dask local:{workers}{where}: {type(problem).__name__}: {problem}"
        ) from None


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
