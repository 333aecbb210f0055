"""Training algorithms for linear-chain CRFs.

Each algorithm optimises a weight vector theta [D] of a :class:`Problem`,
which knows the training sentences and how the weights score them (the
model in :mod:`fstcrf.model` supplies one).  The algorithms are

    lbfgs                 penalised conditional log-likelihood, Gaussian prior,
                          L-BFGS (two-loop recursion, Nocedal & Wright alg. 7.4)
                          with scipy's strong-Wolfe line search on the
                          full-batch gradient
    averaged_perceptron   Collins (2002): Viterbi decoding, additive updates,
                          averaged weights (the lazy-update trick)
    sgd                   penalised log-likelihood, one sentence per step, a
                          1/t learning rate and the L2 prior shared per sentence

One *iteration* is an L-BFGS iteration or an epoch of the online methods.
After each one a record is logged (logger ``fstcrf.train``), appended to the
history and passed to ``callback``:

    algorithm       "lbfgs", "perceptron", "sgd", or the name given to lbfgs
                    (e.g. "mce-f" for F-score training)
    iteration       1, 2, ... (0: the starting weights of a warm start)
    objective       lbfgs: the penalised negative log-likelihood;
                    sgd: the per-sentence losses met during the epoch plus
                    the penalty at its end; perceptron: tokens where the
                    paths it updated on differ from gold
    gradient_norm   lbfgs: Euclidean norm of the gradient; None otherwise
    seconds         training time of the iteration (dev evaluation excluded)
    elapsed         seconds since training started
    dev_score       the ``primary`` figure of ``evaluate``'s scores of the
                    weights (percent), or None without ``evaluate``
    dev_metric      the name of that figure (``metric``: "F1", "accuracy"),
                    or None

``evaluate(theta)`` returns scores such as :class:`~fstcrf.evaluate.ChunkScores`
or :class:`~fstcrf.evaluate.TagScores`; the result keeps the weights of the
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
import logging
import math
import time
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Protocol

import numpy as np

from .bandit_settings import SGD_LEARNING_RATE
from .errors import ArgumentTypeError, FstcrfError

if TYPE_CHECKING:
    from .evaluate import ChunkScores, TagScores

logger = logging.getLogger(__name__)

#: Correction pairs L-BFGS keeps (Sha & Pereira found 3 to 10 work well).
LBFGS_MEMORY = 10

Record = dict
Callback = Callable[[Record], "bool | None"]
#: A dev evaluation: weights -> scores with ``.primary`` (percent) and ``.metric`` (its name).
Evaluate = Callable[[np.ndarray], "ChunkScores | TagScores"]
#: The sigmas whose prior 1 / sigma^2 is a normal double; math.inf (no prior) is also accepted.
SIGMA_RANGE = (1e-100, 1e100)


class Problem(Protocol):
    """A labelled training set scored by weights theta [D].

    ``add_gradient`` reads its weights before it writes its output, so the
    weights and the output may be the same array.
    """

    num_weights: int     # D
    num_sequences: int   # B

    def loss_and_gradient(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """Negative log-likelihood of all sentences (no prior) and its gradient float [D]."""

    def add_gradient(self, weights: np.ndarray, scale: float, index: int, out: np.ndarray,
                     out_scale: float) -> float:
        """For theta = scale * weights, add out_scale * (gradient of sentence ``index``'s
        negative log-likelihood) to ``out`` [D] and return that negative log-likelihood."""

    def rival(self, theta: np.ndarray, index: int) -> np.ndarray | None:
        """int32 [T]: the best state sequence of sentence ``index`` other than the gold one,
        if it scores at least as much as gold; None if gold is the unique best."""

    def gold(self, index: int) -> np.ndarray:
        """int32 [T]: the gold state sequence of sentence ``index``."""

    def add_path_difference(self, index: int, plus: np.ndarray, minus: np.ndarray,
                            out: np.ndarray, scale: float) -> None:
        """Add scale * (features of ``plus`` - features of ``minus``) [D] on sentence
        ``index`` to ``out``; ``plus`` and ``minus`` are state sequences int32 [T]."""


@dataclass
class TrainingResult:
    """What training produced: the weights float [D] to keep and how it went."""

    weights: np.ndarray
    n_iter: int
    best_iteration: int
    interrupted: bool
    history: list[Record] = field(default_factory=list)


class _Monitor:
    """Records iterations, keeps the best (or last) weights and handles Ctrl-C."""

    def __init__(self, algorithm: str, evaluate: Evaluate | None, callback: Callback | None):
        self.algorithm = algorithm
        self.evaluate = evaluate
        self.callback = callback
        self.history: list[Record] = []
        self.interrupted = False
        self.kept_weights: np.ndarray | None = None
        self.kept_iteration = 0
        self.iterations = 0
        self._best_score = -math.inf
        self._started = self._resumed = time.perf_counter()

    def start_from(self, theta: np.ndarray, objective: float, gradient_norm: float) -> None:
        """Record a warm start's weights as iteration 0, so that dev selection may keep them."""
        self._record(0, theta, objective, gradient_norm)
        self._resumed = time.perf_counter()

    def end_iteration(self, theta: np.ndarray, objective: float,
                      gradient_norm: float | None = None, extra: dict | None = None) -> bool:
        """Record an iteration that ended with weights ``theta`` (``extra`` adds fields to
        its record); True means stop."""
        self.iterations += 1
        record = self._record(self.iterations, theta, objective, gradient_norm, extra)
        stop = bool(self.callback(record)) if self.callback is not None else False
        self._resumed = time.perf_counter()
        return stop

    def _record(self, iteration: int, theta: np.ndarray, objective: float,
                gradient_norm: float | None, extra: dict | None = None) -> Record:
        now = time.perf_counter()
        record = {"algorithm": self.algorithm, "iteration": iteration, "objective": float(objective),
                  "gradient_norm": None if gradient_norm is None else float(gradient_norm),
                  "seconds": now - self._resumed, "elapsed": now - self._started, "dev_score": None,
                  "dev_metric": None, **(extra or {})}
        if self.evaluate is None:
            self.kept_weights, self.kept_iteration = theta.copy(), iteration
        else:
            scores = self.evaluate(theta)
            record["dev_score"], record["dev_metric"] = float(scores.primary), scores.metric
            if record["dev_score"] > self._best_score:
                self._best_score = record["dev_score"]
                self.kept_weights, self.kept_iteration = theta.copy(), iteration
        self.history.append(record)
        shown = "".join(f", {name.replace('_', ' ')} " + (f"{value:,}" if isinstance(value, int) else f"{value:.4g}")
                        for name, value in (extra or {}).items())
        logger.info("%s iteration %d: objective %.6g%s%s, %.2f s%s", self.algorithm, iteration,
                    record["objective"],
                    "" if gradient_norm is None else f", gradient norm {gradient_norm:.4g}", shown,
                    record["seconds"],
                    "" if record["dev_score"] is None else f", dev {record['dev_metric']} {record['dev_score']:.2f}")
        return record

    @contextlib.contextmanager
    def interruptible(self):
        """Turn Ctrl-C inside the block into ``interrupted = True``."""
        try:
            yield
        except KeyboardInterrupt:
            self.interrupted = True
            logger.warning("%s interrupted after %d iterations; keeping the weights of "
                           "iteration %d", self.algorithm, len(self.history), self.kept_iteration)

    def result(self, final_weights: np.ndarray) -> TrainingResult:
        """The result; ``final_weights`` are used when no iteration's weights were kept,
        or without ``evaluate`` when training ran to its end."""
        use_final = self.kept_weights is None or (self.evaluate is None and not self.interrupted)
        weights = final_weights if use_final else self.kept_weights
        best = self.iterations if use_final else self.kept_iteration
        return TrainingResult(np.array(weights, dtype=np.float64), self.iterations, best,
                              self.interrupted, self.history)


def check_positive(name: str, value, integer: bool = False, bounds: tuple[float, float] | None = None,
                   infinite: bool = False) -> None:
    """Raise ArgumentTypeError unless ``value`` is a number (an integer with ``integer``),
    FstcrfError unless it is positive and finite (or inf, with ``infinite``) and, with
    ``bounds`` (low, high), low <= value <= high."""
    kind = "integer" if integer else "number"
    kinds = (int, np.integer) if integer else (int, float, np.integer, np.floating)
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise ArgumentTypeError(f"{name} must be a positive {kind}, got {type(value).__name__} {value!r}")
    if infinite and value == math.inf:
        return
    if not (value > 0 and math.isfinite(value)):
        raise FstcrfError(f"{name} must be a positive finite {kind}{' or inf' if infinite else ''}, "
                          f"got {value!r}")
    if bounds is not None and not bounds[0] <= value <= bounds[1]:
        raise FstcrfError(f"{name} must lie between {bounds[0]:g} and {bounds[1]:g}"
                          f"{' (or be inf)' if infinite else ''}, got {value!r}")


def lbfgs(problem: Problem, sigma: float = 10.0, max_iter: int = 100, tol: float = 1e-7,
          evaluate: Evaluate | None = None, callback: Callback | None = None,
          initial: np.ndarray | None = None, name: str = "lbfgs") -> TrainingResult:
    """Minimise problem loss + ||theta||^2 / (2 sigma^2) with L-BFGS, from theta = 0 or
    from ``initial`` [D] (a warm start, recorded as iteration 0 and kept if no later
    iteration has a better dev score).

    Stops after ``max_iter`` iterations, when an iteration lowers the objective
    by less than ``tol`` relative to its size, or when the line search finds no
    acceptable step (logged).  ``sigma`` may be ``math.inf`` (no prior).  ``name``
    labels the log lines and the records.
    """
    check_positive("sigma", sigma, bounds=SIGMA_RANGE, infinite=True)
    check_positive("max_iter", max_iter, integer=True)
    check_positive("tol", tol)
    precision = 1.0 / sigma ** 2
    monitor = _Monitor(name, evaluate, callback)

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        loss, gradient = problem.loss_and_gradient(theta)
        loss += 0.5 * precision * float(theta @ theta)
        gradient += precision * theta
        return loss, gradient

    if initial is None:
        theta = np.zeros(problem.num_weights)
    else:
        theta = np.array(initial, dtype=np.float64)
        if theta.shape != (problem.num_weights,):
            raise FstcrfError(f"initial weights have shape {theta.shape}, expected ({problem.num_weights},)")
    with monitor.interruptible():
        start = objective(theta)
        if initial is not None:
            monitor.start_from(theta, start[0], float(np.linalg.norm(start[1])))
        for theta, loss, gradient in _lbfgs_iterations(objective, theta, int(max_iter), tol, start):
            if monitor.end_iteration(theta, loss, float(np.linalg.norm(gradient))):
                break
    return monitor.result(theta)


def _lbfgs_iterations(objective: Callable[[np.ndarray], tuple[float, np.ndarray]], theta: np.ndarray,
                      max_iter: int, tol: float, start: tuple[float, np.ndarray],
                      memory: int = LBFGS_MEMORY):
    """Yield (theta, objective, gradient) after each L-BFGS iteration, from theta
    whose objective and gradient are ``start``.

    The search direction comes from the two-loop recursion over the last
    ``memory`` pairs (s, y), scaled by s.y / y.y; the first direction is the
    negative gradient scaled to unit length.  The step satisfies the strong
    Wolfe conditions (c1 = 1e-4, c2 = 0.9), starting from 1.  A pair with
    s.y <= 0 is not stored, so the implied Hessian stays positive definite.
    """
    loss, gradient = start
    pairs: collections.deque = collections.deque(maxlen=memory)   # (s, y, 1 / s.y)
    last = {}

    def evaluated(point: np.ndarray) -> tuple[float, np.ndarray]:
        """The objective at ``point``; the line search asks for f and f' separately."""
        if "point" not in last or not np.array_equal(point, last["point"]):
            last["point"] = point.copy()
            last["value"] = objective(point)
        return last["value"]

    def line_search(direction: np.ndarray) -> float | None:
        """A strong-Wolfe step along direction, or None (scipy's warning is replaced by ours)."""
        import scipy.optimize
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The line search algorithm did not converge")
            return scipy.optimize.line_search(lambda x: evaluated(x)[0], lambda x: evaluated(x)[1],
                                              theta, direction, gfk=gradient, old_fval=loss,
                                              c1=1e-4, c2=0.9, maxiter=20)[0]

    for _ in range(max_iter):
        direction = _two_loop(gradient, pairs)
        if not pairs:
            direction /= max(float(np.linalg.norm(gradient)), 1e-300)
        step = line_search(direction)
        if step is None and pairs:            # a stale curvature model: restart once
            pairs.clear()
            direction = -gradient / max(float(np.linalg.norm(gradient)), 1e-300)
            step = line_search(direction)
        if step is None:
            logger.warning("lbfgs: the line search found no step that lowers the objective enough, "
                           "along the L-BFGS direction or the gradient; stopping (at a stationary point "
                           "to working precision, or at a kink of a non-smooth objective such as mce-f's)")
            return
        new_theta = theta + step * direction
        new_loss, new_gradient = evaluated(new_theta)
        s, y = new_theta - theta, new_gradient - gradient
        curvature = float(s @ y)
        if curvature > 1e-10 * float(y @ y):
            pairs.append((s, y, 1.0 / curvature))
        converged = loss - new_loss <= tol * max(abs(loss), abs(new_loss), 1.0)
        theta, loss, gradient = new_theta, new_loss, new_gradient
        yield theta, loss, gradient
        if converged:
            return


def _two_loop(gradient: np.ndarray, pairs) -> np.ndarray:
    """-H g: the L-BFGS direction for the stored pairs (s, y, rho), oldest first."""
    q = gradient.copy()
    alphas = []
    for s, y, rho in reversed(pairs):
        alpha = rho * float(s @ q)
        q -= alpha * y
        alphas.append(alpha)
    if pairs:
        s, y, _ = pairs[-1]
        q *= float(s @ y) / float(y @ y)
    for (s, y, rho), alpha in zip(pairs, reversed(alphas)):
        beta = rho * float(y @ q)
        q += (alpha - beta) * s
    return -q


def averaged_perceptron(problem: Problem, max_iter: int = 10, seed: int = 0,
                        evaluate: Evaluate | None = None,
                        callback: Callback | None = None) -> TrainingResult:
    """Collins's averaged perceptron: ``max_iter`` epochs over the sentences, shuffled by ``seed``.

    When the gold path of a sentence is not the unique best path under w,
    w moves by the features of gold minus those of the best other path (a
    tie counts as a mistake: otherwise decoding's tie-break, not the weights,
    would pick gold).  The result is the average of w over all steps,
    computed lazily: with u = sum of c * update (c = the step count), the
    average is w - u / c.
    """
    check_positive("max_iter", max_iter, integer=True)
    rng = np.random.default_rng(seed)
    weights = np.zeros(problem.num_weights)
    weighted_updates = np.zeros(problem.num_weights)
    step = 1

    def averaged() -> np.ndarray:
        return weights - weighted_updates / step

    monitor = _Monitor("perceptron", evaluate, callback)
    with monitor.interruptible():
        for _ in range(int(max_iter)):
            mistakes = 0
            for index in rng.permutation(problem.num_sequences):
                rival = problem.rival(weights, index)
                if rival is not None:
                    gold = problem.gold(index)
                    mistakes += int(np.count_nonzero(gold != rival))
                    problem.add_path_difference(index, gold, rival, weights, 1.0)
                    problem.add_path_difference(index, gold, rival, weighted_updates, float(step))
                step += 1
            if monitor.end_iteration(averaged(), mistakes):
                break
    return monitor.result(averaged())


def sgd(problem: Problem, sigma: float = 10.0, max_iter: int = 10, learning_rate: float = SGD_LEARNING_RATE,
        seed: int = 0, evaluate: Evaluate | None = None,
        callback: Callback | None = None) -> TrainingResult:
    """Stochastic gradient descent on the penalised log-likelihood, one sentence per step.

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
    decay = 1.0 / (sigma ** 2 * num_sentences)
    if learning_rate * decay >= 1.0:
        raise FstcrfError(f"learning_rate {learning_rate} is too large for sigma {sigma}: "
                          f"the prior would flip the weights' sign (need learning_rate * "
                          f"1 / (sigma^2 * {num_sentences} sentences) < 1)")
    rng = np.random.default_rng(seed)
    weights = np.zeros(problem.num_weights)
    scale = 1.0
    step = 0
    monitor = _Monitor("sgd", evaluate, callback)
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
            loss += 0.5 * float(theta @ theta) / sigma ** 2
            if monitor.end_iteration(theta, loss):
                break
    return monitor.result(scale * weights)
