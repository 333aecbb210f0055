"""The driver's training objective: one :class:`~fstcrf.learn.objective.TrainingSet` per
shard lives on a worker; each evaluation sends the weights once to every worker
and receives one (loss, gradient) per shard, summed in shard order, so the
result does not depend on which worker ran which shard.  The prior is not in
it: :func:`fstcrf.learn.train.lbfgs` adds it once, on the driver."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from fstcrf.learn.objective import Scorer, TrainingSet
from fstcrf.distributed.dictionary import EncodedShard

logger = logging.getLogger(__name__)

#: Times one evaluation is tried again after the loss of a worker or a connection.
RETRIES = 3


def make_problem(shard: EncodedShard, scorer: Scorer) -> TrainingSet:
    """Worker: the training set of a shard, built once and kept in the worker's memory."""
    return TrainingSet(scorer, shard.encoded, shard.states, shard.allowed_labels)


def shard_loss_and_gradient(problem: TrainingSet, theta: np.ndarray) -> tuple[float, np.ndarray, float, float]:
    """Worker: (negative log-likelihood of the shard, its gradient float [D], seconds spent,
    CPU seconds of the worker process meanwhile)."""
    from fstcrf.engine.threads import blas_single_threaded

    started, cpu = time.perf_counter(), time.process_time()
    with blas_single_threaded():
        loss, gradient = problem.loss_and_gradient(theta)
    return loss, gradient, time.perf_counter() - started, time.process_time() - cpu


@dataclass
class Traffic:
    """What the evaluations cost: their number, the wall seconds, the seconds of the
    slowest shard's gradient in each and the most CPU seconds a shard's gradient took
    in each, the bytes of weights sent and of gradients received, and the evaluations
    retried."""

    evaluations: int = 0
    seconds: float = 0.0
    gradient_seconds: float = 0.0
    gradient_cpu_seconds: float = 0.0
    bytes_sent: int = 0
    bytes_received: int = 0
    retried: int = 0
    per_evaluation: list[tuple[float, float]] = field(default_factory=list)


#: How long a broadcast of the weights may take: this many seconds plus its bytes over
#: SCATTER_BYTES_PER_SECOND (a pessimistic rate for the driver's network link).
SCATTER_SECONDS, SCATTER_BYTES_PER_SECOND = 10.0, 50e6


def _broadcast(client, vector: np.ndarray, workers: list[str], seconds: float) -> dict:
    """worker address -> a future of ``vector`` held on that worker, one scatter to
    each of ``workers``; TimeoutError after ``seconds``, ConnectionError when the
    scheduler dropped one of ``workers`` meanwhile.  Dask's own broadcast
    (scatter to one worker, then the scheduler's replicate) is not used: a replicate
    that meets a worker dying waits on connection timeouts while holding the
    scheduler's replica lock, and every later broadcast waits behind it.  A scatter
    to a dead worker may hang as well, so the scatters run in a thread of their own
    that is left to Dask when it hangs."""
    outcome: dict = {}

    def scatter():
        try:
            outcome["futures"] = {address: client.scatter(vector, workers=[address], hash=False) for address in workers}
        except BaseException as error:  # raised again in the caller's thread
            outcome["error"] = error

    thread = threading.Thread(target=scatter, name="fstcrf-broadcast", daemon=True)
    thread.start()
    thread.join(seconds)
    error = outcome.get("error")
    if isinstance(error, KeyError) and error.args and error.args[0] in workers:
        # the scheduler had already removed that worker: a lost worker, retried
        raise ConnectionError(f"worker {error.args[0]} left while the weights were sent") from error
    if error is not None:
        raise error
    if "futures" not in outcome:
        raise TimeoutError(f"sending the weights to the workers took more than {seconds:.0f} s")
    return outcome["futures"]


def _local_copy(copies: dict, holders) -> object:
    """The copy (a future) on a worker that holds the shard (``holders``, addresses),
    else any copy: the shard is being rebuilt and its worker is not known yet."""
    for address in holders or ():
        if address in copies:
            return copies[address]
    return next(iter(copies.values()))


def _lost_worker_errors() -> tuple[type[BaseException], ...]:
    """The exceptions that mean a worker or a connection went away (not a fault of the data)."""
    from distributed import KilledWorker
    from distributed.client import FutureCancelledError
    from distributed.comm import CommClosedError

    return KilledWorker, FutureCancelledError, CommClosedError, OSError, TimeoutError


def on_every_shard(
    client, function, problems: list, vector: np.ndarray, *args, retries: int = RETRIES, traffic: Traffic | None = None
) -> list:
    """``function(problem, vector, *args)`` for every shard's problem, run on the workers
    that hold them, results in shard order.  ``vector`` is sent once to each worker;
    a run that a lost worker or connection broke is started again (Dask rebuilds the
    lost shards from their files), at most ``retries`` times."""
    lost = _lost_worker_errors()
    for attempt in range(retries + 1):
        try:
            workers = sorted(client.nthreads())
            shared = _broadcast(
                client, vector, workers, SCATTER_SECONDS + vector.nbytes * len(workers) / SCATTER_BYTES_PER_SECOND
            )
            holders = client.who_has(problems)
            results = client.gather(
                [
                    client.submit(function, problem, _local_copy(shared, holders.get(problem.key)), *args, pure=False)
                    for problem in problems
                ]
            )
            if traffic is not None:
                traffic.bytes_sent += vector.nbytes * len(workers)
            return results
        except lost as problem:
            if attempt == retries:
                raise
            if traffic is not None:
                traffic.retried += 1
            logger.warning(
                "a run on the shards failed (%s: %s); trying it again (%d of %d)",
                type(problem).__name__,
                problem,
                attempt + 1,
                retries,
            )
            client.wait_for_workers(1)


class DistributedObjective:
    """A :class:`fstcrf.learn.train.Problem` (L-BFGS's part: ``loss_and_gradient``) whose
    sentences are the shards' training sets, futures held on the workers of ``client``."""

    def __init__(self, client, problems: list, num_weights: int, num_sequences: int, retries: int = RETRIES):
        self.client = client
        self.problems = problems
        self.num_weights = num_weights
        self.num_sequences = num_sequences
        self.retries = retries
        self.traffic = Traffic()

    def loss_and_gradient(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        started = time.perf_counter()
        results = on_every_shard(
            self.client,
            shard_loss_and_gradient,
            self.problems,
            np.ascontiguousarray(theta, dtype=np.float64),
            retries=self.retries,
            traffic=self.traffic,
        )
        loss, gradient = results[0][0], results[0][1].copy()
        for shard_loss, shard_gradient, *_ in results[1:]:
            loss += shard_loss
            gradient += shard_gradient
        seconds = time.perf_counter() - started
        slowest = max(result[2] for result in results)
        self.traffic.evaluations += 1
        self.traffic.seconds += seconds
        self.traffic.gradient_seconds += slowest
        self.traffic.gradient_cpu_seconds += max(result[3] for result in results)
        self.traffic.bytes_received += sum(result[1].nbytes for result in results)
        self.traffic.per_evaluation.append((seconds, slowest))
        return loss, gradient
