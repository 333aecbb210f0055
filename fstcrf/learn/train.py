"""Training algorithms for linear-chain CRFs.

Each algorithm optimises a weight vector theta [D] of a :class:`Problem`,
which knows the training sentences and how the weights score them (the
model in :mod:`fstcrf.model` supplies one).  The algorithms are

    lbfgs                 penalised conditional log-likelihood on the full-batch
                          gradient, Gaussian prior and optional L1 term (elastic
                          net).  Without L1: L-BFGS (two-loop recursion, Nocedal &
                          Wright alg. 7.4) with their strong-Wolfe line search
                          (alg. 3.5 and 3.6) or a backtracking Wolfe search.
                          With L1: OWL-QN (Andrew & Gao 2007): the
                          pseudo-gradient, the direction kept in its
                          orthant and a backtracking search along the projected
                          path.  CRFsuite's L-BFGS options (num_memories, epsilon,
                          period, delta, linesearch, max_linesearch) are accepted
    averaged_perceptron   Collins (2002): Viterbi decoding, additive updates,
                          averaged weights (the lazy-update trick)
    sgd                   penalised log-likelihood, one sentence per step, a
                          1/t learning rate and the L2 prior shared per sentence

One *iteration* is an L-BFGS iteration or an epoch of the online methods.
After each one a record is logged (logger ``fstcrf.learn.train``), appended to the
history and passed to ``callback``:

    algorithm       "lbfgs", "perceptron", "sgd", or the name given to lbfgs
                    (e.g. "mce-f" for F-score training)
    iteration       1, 2, ... (0: the starting weights of a warm start)
    objective       lbfgs: the penalised negative log-likelihood (with the
                    L1 term when l1 > 0); sgd: the per-sentence losses met
                    during the epoch plus the penalty at its end; perceptron:
                    tokens where the paths it updated on differ from gold
    gradient_norm   lbfgs: Euclidean norm of the gradient (of the
                    pseudo-gradient when l1 > 0); None otherwise
    nonzero         lbfgs only: the number of weights that are not 0
    seconds         training time of the iteration (dev evaluation excluded)
    elapsed         seconds since training started
    dev_score       the ``primary`` figure of ``evaluate``'s scores of the
                    weights (percent), or None without ``evaluate``
    dev_metric      the name of that figure (``metric``: "F1", "accuracy"),
                    or None

``evaluate(theta)`` returns scores such as :class:`~fstcrf.corpus.evaluate.ChunkScores`
or :class:`~fstcrf.corpus.evaluate.TagScores`; the result keeps the weights of the
iteration with the best dev score (Sha & Pereira found the best F1 well
before convergence).  A
callback returning True stops training after that iteration.  Ctrl-C
(KeyboardInterrupt) stops training too: the result then holds the best
weights so far (without ``evaluate``, those of the last finished iteration)
and ``interrupted`` is True.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import logging
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, cast
from collections.abc import Callable

import numpy as np

from fstcrf.engine import kernel
from fstcrf.learn.settings import DEFAULT_SIGMA, LBFGS_MEMORY, SGD_LEARNING_RATE, SIGMA_RANGE, check_positive
from fstcrf.errors import ArgumentTypeError, FstcrfError, ShapeError
from fstcrf.learn.linesearch import backtracking, zoom_search
from fstcrf.phases import phase

if TYPE_CHECKING:
    from fstcrf.corpus.evaluate import ChunkScores, TagScores

logger = logging.getLogger(__name__)

#: lbfgs's line searches by name (ours and CRFsuite's) -> the search that runs when l1 == 0.
LINE_SEARCHES = {
    "strong-wolfe": "zoom",
    "MoreThuente": "zoom",
    "Backtracking": "wolfe",
    "StrongBacktracking": "strong-wolfe",
}
#: CRFsuite's defaults for its delta test (lbfgs's ``period`` and ``delta``).
CRFSUITE_PERIOD, CRFSUITE_DELTA = 10, 1e-5

Record = dict
Callback = Callable[[Record], "bool | None"]
#: A dev evaluation: weights -> scores with ``.primary`` (percent) and ``.metric`` (its name).
Evaluate = Callable[[np.ndarray], "ChunkScores | TagScores"]


class Objective(Protocol):
    """What L-BFGS minimises: a loss of weights theta [D] and its gradient."""

    num_weights: int  # D

    def loss_and_gradient(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """The loss (no prior) and its gradient float [D], a new array that the learner
        takes over: it adds the prior in place and, with a single-precision history,
        rounds it to float32 in its own memory."""


class Problem(Objective, Protocol):
    """A labelled training set scored by weights theta [D].

    ``add_gradient`` reads its weights before it writes its output, so the
    weights and the output may be the same array.
    """

    num_sequences: int  # B

    def add_gradient(self, weights: np.ndarray, scale: float, index: int, out: np.ndarray, out_scale: float) -> float:
        """For theta = scale * weights, add out_scale * (gradient of sentence ``index``'s
        negative log-likelihood) to ``out`` [D] and return that negative log-likelihood."""

    def mistake(self, theta: np.ndarray, index: int) -> tuple[int, np.ndarray, np.ndarray] | None:
        """None if gold is the unique best state sequence of sentence ``index``, else, for
        the rival (the best sequence other than gold, which scores at least as much), (the
        number of tokens where it differs from gold, indices int64 [m], values [m]): the
        non-zero entries of the features of gold minus those of the rival."""

    def gold(self, index: int) -> np.ndarray:
        """int32 [T]: the gold state sequence of sentence ``index``."""


class StoppingTest(Protocol):
    """lbfgs's convergence test (see :func:`stopping_test`)."""

    losses: collections.deque[float]

    def __call__(self, theta: np.ndarray, loss: float, steepest: np.ndarray) -> bool: ...


@dataclass
class TrainingResult:
    """What training produced: the weights float [D] to keep and how it went."""

    weights: np.ndarray
    n_iter: int
    best_iteration: int
    interrupted: bool
    history: list[Record] = field(default_factory=list)


@dataclass
class LbfgsState:
    """Where :func:`lbfgs` stands after an iteration, enough to continue it exactly
    (a checkpoint): the weights, objective and smooth gradient float [D], the
    correction pairs (s [D], y [D], 1 / s.y), oldest first, the iterations done,
    their records, the objectives the stopping test still compares against, the
    weights kept so far (with their iteration and dev score), and whether the run
    stopped there."""

    theta: np.ndarray
    loss: float
    gradient: np.ndarray
    pairs: list[tuple[np.ndarray, np.ndarray, float]]
    iteration: int
    history: list[Record]
    recent_losses: list[float]
    kept_weights: np.ndarray | None
    kept_iteration: int
    best_score: float
    finished: bool = False


class Monitor:
    """Records iterations, keeps the best (or last) weights and handles Ctrl-C.

    The weights kept are copies, or, with ``copy=False`` (for a learner that never
    changes an array it has passed to :meth:`end_iteration`), the arrays themselves.
    Without ``evaluate`` the kept copy is only read on an interruption, so each
    iteration's weights are copied into the same array (no fresh pages each time)."""

    def __init__(self, algorithm: str, evaluate: Evaluate | None, callback: Callback | None, copy: bool = True):
        self.algorithm = algorithm
        self.copy = copy
        self.evaluate = evaluate
        self.callback = callback
        self.history: list[Record] = []
        self.interrupted = False
        self.kept_weights: np.ndarray | None = None
        self.kept_iteration = 0
        self.iterations = 0
        self._kept_copy: np.ndarray | None = None  # the array copies are made into (no evaluate)
        self._best_score = -math.inf
        self._started = self._resumed = time.perf_counter()

    def resume(self, state: LbfgsState) -> None:
        """Continue the records and kept weights of a checkpointed run."""
        self.history = list(state.history)
        self.iterations = state.iteration
        self.kept_weights, self.kept_iteration = state.kept_weights, state.kept_iteration
        self._best_score = state.best_score

    def start_from(self, theta: np.ndarray, objective: float, gradient_norm: float, extra: dict | None = None) -> None:
        """Record a warm start's weights as iteration 0, so that dev selection may keep them."""
        self._record(0, theta, objective, gradient_norm, extra)
        self._resumed = time.perf_counter()

    def end_iteration(
        self, theta: np.ndarray, objective: float, gradient_norm: float | None = None, extra: dict | None = None
    ) -> bool:
        """Record an iteration that ended with weights ``theta`` (``extra`` adds fields to
        its record); True means stop."""
        record = self._record(self.iterations + 1, theta, objective, gradient_norm, extra)
        self.iterations += 1  # once recorded: Ctrl-C while the dev set is scored counts no iteration
        stop = bool(self.callback(record)) if self.callback is not None else False
        self._resumed = time.perf_counter()
        return stop

    def _record(
        self,
        iteration: int,
        theta: np.ndarray,
        objective: float,
        gradient_norm: float | None,
        extra: dict | None = None,
    ) -> Record:
        now = time.perf_counter()
        record = {
            "algorithm": self.algorithm,
            "iteration": iteration,
            "objective": float(objective),
            "gradient_norm": None if gradient_norm is None else float(gradient_norm),
            "seconds": now - self._resumed,
            "elapsed": now - self._started,
            "dev_score": None,
            "dev_metric": None,
            **(extra or {}),
        }
        if self.evaluate is None:
            self.kept_weights, self.kept_iteration = self._kept(theta), iteration
        else:
            scores = self.evaluate(theta)
            record["dev_score"], record["dev_metric"] = float(scores.primary), scores.metric
            if record["dev_score"] > self._best_score:
                self._best_score = record["dev_score"]
                self.kept_weights, self.kept_iteration = self._kept(theta), iteration
        self.history.append(record)
        shown = "".join(
            f", {name.replace('_', ' ')} " + (f"{value:,}" if isinstance(value, int) else f"{value:.4g}")
            for name, value in (extra or {}).items()
        )
        logger.info(
            "%s iteration %d: objective %.6g%s%s, %.2f s%s",
            self.algorithm,
            iteration,
            record["objective"],
            "" if gradient_norm is None else f", gradient norm {gradient_norm:.4g}",
            shown,
            record["seconds"],
            "" if record["dev_score"] is None else f", dev {record['dev_metric']} {record['dev_score']:.2f}",
        )
        return record

    def _kept(self, theta: np.ndarray) -> np.ndarray:
        if not self.copy:
            return theta
        if self.evaluate is not None:
            return theta.copy()
        if self._kept_copy is None or self._kept_copy.shape != theta.shape:
            self._kept_copy = np.empty_like(theta)
        np.copyto(self._kept_copy, theta)
        return self._kept_copy

    @contextlib.contextmanager
    def interruptible(self):
        """Turn Ctrl-C inside the block into ``interrupted = True``."""
        try:
            yield
        except KeyboardInterrupt:
            self.interrupted = True
            logger.warning(
                "%s interrupted after %d iterations; keeping the weights of iteration %d",
                self.algorithm,
                len(self.history),
                self.kept_iteration,
            )

    def result(self, final_weights: np.ndarray, handed_over: bool = False) -> TrainingResult:
        """The result; ``final_weights`` are used when no iteration's weights were kept,
        or without ``evaluate`` when training ran to its end.  ``handed_over`` says the
        learner no longer uses the array ``final_weights``: it is returned as it is
        rather than copied."""
        use_final = self.kept_weights is None or (self.evaluate is None and not self.interrupted)
        weights = final_weights if use_final else self.kept_weights
        best = self.iterations if use_final else self.kept_iteration
        copy = self.copy and not (use_final and handed_over)
        return TrainingResult(
            np.array(weights, dtype=np.float64) if copy else np.asarray(weights, dtype=np.float64),
            self.iterations,
            best,
            self.interrupted,
            self.history,
        )


def lbfgs(
    problem: Objective,
    sigma: float = DEFAULT_SIGMA,
    max_iter: int = 100,
    tol: float = 1e-7,
    evaluate: Evaluate | None = None,
    callback: Callback | None = None,
    initial: np.ndarray | None = None,
    name: str = "lbfgs",
    *,
    l1: float = 0.0,
    memory: int = LBFGS_MEMORY,
    history: str = "double",
    epsilon: float | None = None,
    period: int | None = None,
    delta: float | None = None,
    linesearch: str = "strong-wolfe",
    max_linesearch: int = 20,
    frozen: np.ndarray | None = None,
    checkpoint: Callable[[LbfgsState], None] | None = None,
    resume: LbfgsState | None = None,
) -> TrainingResult:
    """Minimise problem loss + ||theta||^2 / (2 sigma^2) + l1 ||theta||_1 from theta = 0 or
    from ``initial`` [D] (a warm start, recorded as iteration 0 and kept if no later
    iteration has a better dev score): L-BFGS when l1 == 0, OWL-QN when l1 > 0.

    ``sigma`` may be ``math.inf`` (no Gaussian prior); ``memory`` is the number of
    correction pairs (CRFsuite's num_memories); ``history`` "single" keeps them (and the
    direction, and under the zoom search the gradient at the weights while the line
    search runs) in float32, half their memory, with every sum still in double; the
    objective, its gradient and the weights stay float64.  ``linesearch`` is "strong-wolfe" or
    CRFsuite's "MoreThuente" (both :func:`zoom_search`, a strong-Wolfe search), "Backtracking"
    (Wolfe conditions) or "StrongBacktracking" (strong Wolfe conditions), each with at
    most ``max_linesearch`` trial points.  OWL-QN always backtracks with the sufficient
    decrease condition alone along its orthant-projected path, whatever ``linesearch``
    names (as CRFsuite does when c1 > 0).  ``frozen`` bool [D] marks weights held at
    their starting value.  ``name`` labels the log lines and the records.
    ``checkpoint(state)`` is called after every iteration with an :class:`LbfgsState`;
    ``resume``, such a state, continues that run (``initial`` is then not used) and
    ends where the uninterrupted run would have, ``max_iter`` counting from its start.

    Training stops after ``max_iter`` iterations, when the line search finds no
    acceptable point (logged), when ``callback`` asks, or when an iteration ends with

    * ``epsilon`` given: ||g|| / max(1, ||theta||) <= epsilon, with g the gradient
      (the pseudo-gradient when l1 > 0); also tested at the start (0 iterations);
    * ``period`` or ``delta`` given (CRFsuite's test; the missing one takes CRFsuite's
      default, 10 or 1e-5): (f_{k-period} - f_k) / |f_k| < delta at iteration k >= period,
      with f_0 the starting objective.  ``tol`` is then not used;
    * otherwise: the iteration lowered the objective by at most ``tol`` times
      max(|f_{k-1}|, |f_k|, 1).
    """
    check_positive("sigma", sigma, bounds=SIGMA_RANGE, infinite=True)
    check_positive("max_iter", max_iter, integer=True)
    check_positive("tol", tol)
    check_positive("l1", l1, zero=True)
    check_positive("memory", memory, integer=True)
    check_positive("max_linesearch", max_linesearch, integer=True)
    if history not in kernel.HISTORY_PRECISIONS:
        raise FstcrfError(f"unknown history precision {history!r}; available: {', '.join(kernel.HISTORY_PRECISIONS)}")
    for option, value, integer in (("epsilon", epsilon, False), ("period", period, True), ("delta", delta, False)):
        if value is not None:
            check_positive(option, value, integer=integer, zero=not integer)
    search = _line_search(linesearch, l1)
    frozen = _frozen_mask(frozen, problem.num_weights)
    precision = 1.0 / sigma**2
    # _quasi_newton moves its weights in place: the best dev iteration's are copied; without
    # dev scores the weights kept are the array itself, which ends at the last iteration's
    monitor = Monitor(name, evaluate, callback, copy=evaluate is not None)

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        with phase("gradient"):
            loss, gradient = problem.loss_and_gradient(theta)
        loss += 0.5 * precision * float(theta @ theta)
        kernel.add_scaled(gradient, precision, theta)
        if frozen is not None:
            gradient[frozen] = 0.0
        return loss, gradient

    def counts(theta: np.ndarray) -> dict:
        return {"nonzero": int(np.count_nonzero(theta))}

    theta = _starting_weights(problem, initial)
    start = None
    if resume is not None:
        theta = resume.theta.copy()
        start = (resume.loss, resume.gradient.copy(), resume.pairs)
        monitor.resume(resume)
    with monitor.interruptible():
        steps = _quasi_newton(
            objective, theta, float(l1), frozen, int(memory), search, int(max_linesearch), start, history
        )
        theta, loss, steepest, (gradient, pairs) = next(steps)
        if initial is not None and resume is None:
            monitor.start_from(theta, loss, float(np.linalg.norm(steepest)), counts(theta))
        converged = stopping_test(tol, epsilon, period, delta, [loss] if resume is None else resume.recent_losses)
        go_on = (resume is None and not _gradient_small(theta, steepest, epsilon)) or (
            resume is not None and not resume.finished
        )
        del steepest, gradient  # the first line search runs without these [D] arrays (see _quasi_newton)
        if go_on:
            for theta, loss, steepest, (gradient, pairs) in itertools.islice(steps, int(max_iter) - monitor.iterations):
                stop = monitor.end_iteration(theta, loss, float(np.linalg.norm(steepest)), counts(theta)) or converged(
                    theta, loss, steepest
                )
                if checkpoint is not None:
                    weights = theta.copy()  # theta itself moves in the next line search
                    checkpoint(
                        LbfgsState(
                            weights,
                            loss,
                            gradient.copy(),
                            list(pairs),
                            monitor.iterations,
                            list(monitor.history),
                            list(converged.losses),
                            weights if monitor.kept_weights is theta else monitor.kept_weights,
                            monitor.kept_iteration,
                            monitor._best_score,
                            stop,
                        )
                    )
                if stop:
                    break
                # the next line search runs without these [D] arrays (see _quasi_newton)
                del steepest, gradient
    return monitor.result(theta)


def _starting_weights(problem: Objective, initial: np.ndarray | None) -> np.ndarray:
    """float [D]: zeros, or a copy of ``initial`` checked to have D weights."""
    if initial is None:
        return np.zeros(problem.num_weights)
    theta = np.array(initial, dtype=np.float64)
    if theta.shape != (problem.num_weights,):
        raise FstcrfError(f"initial weights have shape {theta.shape}, expected ({problem.num_weights},)")
    return theta


def _line_search(linesearch: str, l1: float) -> str:
    """The search lbfgs runs for ``linesearch``: a value of LINE_SEARCHES, or "armijo" when l1 > 0."""
    if not isinstance(linesearch, str):
        raise ArgumentTypeError(f"linesearch must be a string, got {type(linesearch).__name__} {linesearch!r}")
    if linesearch not in LINE_SEARCHES:
        raise FstcrfError(f"unknown linesearch {linesearch!r}; available: {', '.join(LINE_SEARCHES)}")
    if l1 > 0:
        logger.info(
            "lbfgs: l1 > 0 (OWL-QN) backtracks along the orthant-projected path instead of the %s line search",
            linesearch,
        )
        return "armijo"
    return LINE_SEARCHES[linesearch]


def _frozen_mask(frozen, num_weights: int) -> np.ndarray | None:
    """``frozen`` checked to be None or bool [D]."""
    if frozen is None:
        return None
    if not isinstance(frozen, np.ndarray):
        raise ArgumentTypeError(f"frozen must be a numpy bool array [D], got {type(frozen).__name__}")
    if frozen.dtype != np.bool_ or frozen.shape != (num_weights,):
        raise ShapeError(
            f"frozen must be bool [{num_weights}] (one flag per weight), got {frozen.dtype} {list(frozen.shape)}"
        )
    return frozen


def _gradient_small(theta: np.ndarray, steepest: np.ndarray, epsilon: float | None) -> bool:
    """CRFsuite's test ||steepest|| / max(1, ||theta||) <= epsilon (False without epsilon)."""
    return epsilon is not None and float(np.linalg.norm(steepest)) <= epsilon * max(1.0, float(np.linalg.norm(theta)))


def stopping_test(
    tol: float, epsilon: float | None, period: int | None, delta: float | None, recent_losses: list[float]
) -> StoppingTest:
    """lbfgs's convergence test, called once per iteration with (theta [D], objective,
    steepest [D]) and True when training should stop (see lbfgs).  ``recent_losses``
    are the objectives met so far (the start's, then each iteration's); the test keeps
    those it still compares against in its attribute ``losses``."""
    crfsuite = period is not None or delta is not None
    delta = CRFSUITE_DELTA if delta is None else delta
    losses = collections.deque(recent_losses, maxlen=(period or CRFSUITE_PERIOD) if crfsuite else 1)

    def converged(theta: np.ndarray, loss: float, steepest: np.ndarray) -> bool:
        previous = losses[0]
        if crfsuite:
            stop = len(losses) == losses.maxlen and previous - loss < delta * abs(loss)
        else:
            stop = previous - loss <= tol * max(abs(previous), abs(loss), 1.0)
        losses.append(loss)
        return stop or _gradient_small(theta, steepest, epsilon)

    test = cast(StoppingTest, converged)
    test.losses = losses
    return test


def _quasi_newton(
    smooth: Callable[[np.ndarray], tuple[float, np.ndarray]],
    theta: np.ndarray,
    l1: float,
    frozen: np.ndarray | None,
    memory: int,
    search: str,
    max_linesearch: int,
    start: tuple | None = None,
    history: str = "double",
):
    """Yield (theta, objective, steepest, (smooth gradient, the pairs)) at ``theta`` and
    after each iteration of L-BFGS (l1 == 0) or OWL-QN (l1 > 0) on smooth(theta) + l1
    ||theta||_1; end when the line search fails.  ``start`` (objective, smooth gradient,
    pairs) at ``theta`` continues a run instead of evaluating ``theta`` afresh.

    ``smooth`` gives the smooth part and its gradient float [D] (zero at ``frozen``
    weights).  ``steepest`` [D] is that gradient, or with l1 > 0 the pseudo-gradient
    (zero at ``frozen`` weights too).  The direction is the two-loop recursion over
    the last ``memory`` pairs (s, y) of steps and smooth-gradient changes applied to
    ``steepest``, or, without pairs, -steepest scaled to unit length.  A pair with
    s.y <= 0 is not stored, so the implied Hessian stays positive definite.  When the
    search fails with stored pairs, the pairs are dropped and it is retried once.
    ``search`` is "zoom" (:func:`zoom_search`: strong Wolfe, c1 = 1e-4, c2 = 0.9,
    starting from 1) or a condition of :func:`backtracking`.

    Memory: with ``memory`` pairs stored, the oldest is dropped once the direction is
    found, so that its two arrays are free during the line search, and the new pair
    takes its place.  The Wolfe searches accept only steps with s.y > 0, so a new pair
    is left out (and one fewer kept) only when s.y is below 1e-10 y.y; under OWL-QN's
    backtracking ("armijo"), which does not ensure s.y > 0, the oldest pair stays until
    the new one is stored.  Besides the pairs, at most the weights, the gradient, the
    direction (which becomes the new pair's s in place) and the trial point's gradient
    are alive, and under backtracking the trial point.  The zoom search moves the
    weights in place (see :func:`zoom_search`): the array yielded is the same each
    time and is moved by the next iteration's line search, or moved back (to within
    rounding) when that search fails or is interrupted, so a caller keeps a copy of
    weights it wants to keep beyond the next iteration.  The smooth gradient yielded
    becomes the next pair's y in place, so a caller drops its references to it (and
    to ``steepest``) before asking for the next iteration.

    ``history`` "single" (see :data:`fstcrf.engine.kernel.HISTORY_PRECISIONS`) keeps the
    pairs and the direction in float32.  Under the zoom search the gradient at theta
    is then rounded to float32 before the direction is made, in the array that becomes
    the new pair's y (y = new gradient - that rounded gradient, taken in double), so that
    the line search holds the weights, the trial's gradient and half-size vectors only:
    m - 1 pairs, the direction and the previous gradient.
    """
    dtype = kernel.HISTORY_PRECISIONS[history]
    # a single-precision history under the zoom search keeps the gradient at theta in
    # float32 during the line search, in the array that becomes the new pair's y
    compact_previous = dtype == np.float32 and search == "zoom"
    pairs: collections.deque = collections.deque(maxlen=memory)  # (s, y, 1 / s.y)
    if start is None:
        loss, gradient = smooth(theta)
        if l1:
            loss += l1 * float(np.abs(theta).sum())
    else:
        loss, gradient, resumed = start
        pairs.extend((s.astype(dtype, copy=False), y.astype(dtype, copy=False), rho) for s, y, rho in resumed)
    steepest = pseudo_gradient(theta, gradient, l1, frozen) if l1 else gradient
    yield theta, loss, steepest, (gradient, pairs)

    def line_search(
        direction: np.ndarray, previous: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, float, np.ndarray] | None:
        """(point, the step s = point - theta, objective, smooth gradient) of an acceptable
        step along direction from theta, where the steepest gradient is ``previous``, or
        None.  The zoom search moves theta in place (so point is theta) and s is made in
        direction's array."""
        if search == "zoom":
            found = zoom_search(smooth, theta, loss, previous, direction, max_linesearch)
            if found is None:
                return None
            step, point_loss, point_gradient = found
            return theta, np.multiply(direction, step, out=direction), point_loss, point_gradient
        point_found = backtracking(smooth, theta, loss, previous, direction, l1, search, max_linesearch)
        if point_found is None:
            return None
        point, point_loss, point_gradient = point_found
        return point, np.subtract(point, theta, out=direction, casting="same_kind"), point_loss, point_gradient

    while True:
        with phase("direction"):
            if compact_previous:  # the caller has dropped its references to the gradient
                previous = kernel.round_in_place(steepest)
                del gradient, steepest
            else:
                previous = steepest
            direction = two_loop(previous, pairs, dtype)
        if not pairs:
            direction /= max(vector_norm(previous), 1e-300)
        curved = bool(pairs)
        if len(pairs) == memory and search != "armijo":
            pairs.popleft()  # the pair this iteration's would push out, freed during the line search
        found = line_search(direction, previous)
        if found is None and curved:  # a stale curvature model: restart once
            pairs.clear()
            np.negative(previous, out=direction)
            direction /= max(vector_norm(previous), 1e-300)
            found = line_search(direction, previous)
        del direction
        if found is None:
            if previous.any():
                logger.warning(
                    "lbfgs: the line search found no step that lowers the objective enough, "
                    "along the L-BFGS direction or the gradient; stopping (at a stationary point "
                    "to working precision, or at a kink of a non-smooth objective such as "
                    "mce-f's)"
                )
            return
        new_theta, s, new_loss, new_gradient = found
        del found
        if compact_previous:
            y = previous
            kernel.change_single(y, new_gradient)
        else:
            y = np.subtract(new_gradient, gradient, out=gradient)  # in the old gradient's place
            y = y.astype(dtype, copy=False)
        del previous
        curvature = kernel.history_dot(s, y)
        if curvature > 1e-10 * kernel.history_dot(y, y):
            pairs.append((s, y, 1.0 / curvature))
        theta, loss, gradient = new_theta, new_loss, new_gradient
        del new_theta, new_gradient, s, y  # gradient is dropped before the next line search
        steepest = pseudo_gradient(theta, gradient, l1, frozen) if l1 else gradient
        yield theta, loss, steepest, (gradient, pairs)


def pseudo_gradient(theta: np.ndarray, gradient: np.ndarray, l1: float, frozen: np.ndarray | None) -> np.ndarray:
    """float [D]: Andrew & Gao's pseudo-gradient of smooth + l1 ||theta||_1, from the smooth
    part's ``gradient`` [D]: gradient + l1 sign(theta) where theta != 0; where theta == 0, the
    one-sided derivative that descends (gradient shrunk towards 0 by l1), or 0; 0 at ``frozen``."""
    sign = np.sign(theta)
    steepest = gradient + l1 * sign
    at_zero = sign == 0.0
    shrunk = np.abs(gradient[at_zero]) - l1
    steepest[at_zero] = np.sign(gradient[at_zero]) * np.maximum(shrunk, 0.0)
    if frozen is not None:
        steepest[frozen] = 0.0
    return steepest


def two_loop(gradient: np.ndarray, pairs, dtype: np.dtype = np.dtype(np.float64)) -> np.ndarray:
    """-H g [D] of dtype (float64, or float32 for a single-precision history): the
    L-BFGS direction for the stored pairs (s, y, rho) of that dtype, oldest first
    (``fu_two_loop`` in C: one pass per update, no [D] temporaries)."""
    q = np.array(gradient, dtype=dtype)
    if pairs:
        rho = np.array([r for _, _, r in pairs], dtype=np.float64)
        kernel.two_loop([s for s, _, _ in pairs], [y for _, y, _ in pairs], rho, np.empty(len(pairs)), q)
    return np.negative(q, out=q)


def vector_norm(vector: np.ndarray) -> float:
    """The Euclidean norm of a float64 or float32 [D] vector, summed in double (for
    float64, numpy's norm: the root of the same dot product)."""
    return math.sqrt(kernel.history_dot(vector, vector))


def averaged_perceptron(
    problem: Problem,
    max_iter: int = 10,
    seed: int = 0,
    evaluate: Evaluate | None = None,
    callback: Callback | None = None,
    epsilon: float = 0.0,
    initial: np.ndarray | None = None,
) -> TrainingResult:
    """Collins's averaged perceptron: ``max_iter`` epochs over the sentences, shuffled by ``seed``,
    from w = 0 or from ``initial`` [D].

    When the gold path of a sentence is not the unique best path under w,
    w moves by the features of gold minus those of the best other path (a
    tie counts as a mistake: otherwise decoding's tie-break, not the weights,
    would pick gold).  The result is the average of w over all steps,
    computed lazily: with u = sum of c * update (c = the step count), the
    average is w - u / c.  As CRFsuite's "ap", training also stops after an
    epoch whose mean share of wrong labels per sentence is below ``epsilon``.
    """
    check_positive("max_iter", max_iter, integer=True)
    check_positive("epsilon", epsilon, zero=True)
    rng = np.random.default_rng(seed)
    weights = _starting_weights(problem, initial)
    weighted_updates = np.zeros(problem.num_weights)
    step = 1

    def averaged() -> np.ndarray:
        return weights - weighted_updates / step

    monitor = Monitor("perceptron", evaluate, callback)
    with monitor.interruptible():
        for _ in range(int(max_iter)):
            mistakes, loss = 0, 0.0
            for index in rng.permutation(problem.num_sequences):
                found = problem.mistake(weights, index)
                if found is not None:
                    wrong, indices, values = found
                    mistakes += wrong
                    loss += wrong / len(problem.gold(index))
                    weights[indices] += values
                    weighted_updates[indices] += step * values
                step += 1
            if monitor.end_iteration(averaged(), mistakes) or loss / problem.num_sequences < epsilon:
                break
    return monitor.result(averaged())


def sgd(
    problem: Problem,
    sigma: float = DEFAULT_SIGMA,
    max_iter: int = 10,
    learning_rate: float = SGD_LEARNING_RATE,
    seed: int = 0,
    evaluate: Evaluate | None = None,
    callback: Callback | None = None,
    initial: np.ndarray | None = None,
) -> TrainingResult:
    """Stochastic gradient descent on the penalised log-likelihood, one sentence per step,
    from theta = 0 or from ``initial`` [D].

    Each of the B sentences carries 1/B of the prior, so step t (counted over
    all epochs) does theta <- theta - eta_t * (gradient of its sentence's
    -log-likelihood + theta / (B sigma^2)) with eta_t = learning_rate / (1 + t / B).
    theta is kept as scale * w, so the shrinking costs O(1) and the update
    touches only the sentence's features.  Sentences are shuffled by ``seed``.
    """
    check_positive("sigma", sigma, bounds=SIGMA_RANGE, infinite=True)
    check_positive("max_iter", max_iter, integer=True)
    check_positive("learning_rate", learning_rate)
    num_sentences = problem.num_sequences
    decay = 1.0 / (sigma**2 * num_sentences)
    if learning_rate * decay >= 1.0:
        raise FstcrfError(
            f"learning_rate {learning_rate} is too large for sigma {sigma}: "
            f"the prior would flip the weights' sign (need learning_rate * "
            f"1 / (sigma^2 * {num_sentences} sentences) < 1)"
        )
    rng = np.random.default_rng(seed)
    weights = _starting_weights(problem, initial)
    scale = 1.0
    step = 0
    monitor = Monitor("sgd", evaluate, callback)
    with monitor.interruptible():
        for _ in range(int(max_iter)):
            loss = 0.0
            for index in rng.permutation(num_sentences):
                eta = learning_rate / (1.0 + step / num_sentences)
                new_scale = scale * (1.0 - eta * decay)
                loss += problem.add_gradient(weights, scale, index, weights, -eta / new_scale)
                scale = new_scale
                step += 1
                if scale < 1e-9:
                    weights *= scale
                    scale = 1.0
            theta = scale * weights
            loss += 0.5 * float(theta @ theta) / sigma**2
            if monitor.end_iteration(theta, loss):
                break
    return monitor.result(scale * weights)
