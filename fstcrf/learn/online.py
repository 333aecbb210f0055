"""CRFsuite's online learners: passive-aggressive, AROW and SGD with an L2 prior.

Each function trains the weights theta [D] of a :class:`SparseProblem` (a
:class:`fstcrf.learn.train.Problem` that also gives the feature difference of two
paths sparsely) and follows CRFsuite's algorithm, defaults and stopping test:

    passive_aggressive   Crammer et al. (2006): PA, PA-I or PA-II steps on the
                         Viterbi rival, CRFsuite's cost and averaging
    arow                 Crammer et al. (2009): adaptive regularisation of the
                         weights with a diagonal covariance
    l2sgd                SGD on the log-likelihood plus c2 ||theta||^2, with
                         eta_t = 1 / (lambda (t0 + t)), t0 calibrated on a sample

One iteration is an epoch over the sentences, shuffled by ``seed``.  Records,
dev selection, callbacks and Ctrl-C behave as in :mod:`fstcrf.learn.train`; the
``objective`` of a record is CRFsuite's loss of the epoch: pa and arow, the
summed costs of the sentences they updated on; l2sgd, the negative
log-likelihood met during the epoch plus c2 ||theta||^2 at its end.

As in :func:`fstcrf.learn.train.averaged_perceptron`, a rival that ties with gold
counts as a mistake.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from typing import Protocol

import numpy as np

from fstcrf.errors import ArgumentTypeError, FstcrfError
from fstcrf.learn.settings import check_positive
from fstcrf.learn.train import Callback, Evaluate, Problem, TrainingResult, Monitor

logger = logging.getLogger(__name__)

PA_TYPES = (0, 1, 2)


class SparseProblem(Problem, Protocol):
    """A :class:`~fstcrf.learn.train.Problem` that also gives a sentence's mistake sparsely."""

    def mistake(self, theta: np.ndarray, index: int) -> tuple[int, np.ndarray, np.ndarray] | None:
        """None if gold is the unique best path of sentence ``index`` under theta [D], else
        (the number of tokens where the rival differs from gold, indices int64 [m] and
        values float [m]: the non-zero entries of phi(gold) - phi(rival))."""


def _check_flag(name: str, value) -> None:
    if not isinstance(value, (bool, np.bool_)):
        raise ArgumentTypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")


def _mistake(problem: SparseProblem, weights: np.ndarray, index: int):
    """None if gold is the unique best path of sentence ``index`` under ``weights``, else
    (labels wrong on the rival, indices int64 [m], values [m] of gold minus rival, margin
    = score of gold minus score of the rival)."""
    found = problem.mistake(weights, index)
    if found is None:
        return None
    wrong, indices, values = found
    return wrong, indices, values, float(weights[indices] @ values)


def _mistake_epochs(
    algorithm: str,
    problem: SparseProblem,
    weights: np.ndarray,
    update,
    result_weights,
    max_iter: int,
    seed: int,
    evaluate: Evaluate | None,
    callback: Callback | None,
    converged,
) -> TrainingResult:
    """Epochs over the sentences shuffled by ``seed``: on a sentence whose gold path is
    not the unique best under ``weights`` [D], ``update(step, *mistake)`` (see
    :func:`_mistake`; step counts sentences from 1) moves them and returns the
    sentence's cost.  After an epoch the weights ``result_weights(step)`` are
    recorded; training stops when ``converged(costs / sentences)``."""
    rng = np.random.default_rng(seed)
    monitor = Monitor(algorithm, evaluate, callback)
    step = 1
    with monitor.interruptible():
        for _ in range(int(max_iter)):
            loss = 0.0
            for index in rng.permutation(problem.num_sequences):
                mistake = _mistake(problem, weights, index)
                if mistake is not None:
                    loss += update(step, *mistake)
                step += 1
            if monitor.end_iteration(result_weights(step), loss) or converged(loss / problem.num_sequences):
                break
    return monitor.result(result_weights(step))


def passive_aggressive(
    problem: SparseProblem,
    pa_type: int = 1,
    c: float = 1.0,
    error_sensitive: bool = True,
    averaging: bool = True,
    max_iter: int = 100,
    epsilon: float = 0.0,
    seed: int = 0,
    evaluate: Evaluate | None = None,
    callback: Callback | None = None,
) -> TrainingResult:
    """Passive-aggressive training as CRFsuite's ``pa``.

    On a sentence whose rival y' differs from gold y in d labels, with
    delta = phi(y) - phi(y') and cost = score(y') - score(y) + sqrt(d) (+ 1
    instead of sqrt(d) without ``error_sensitive``), w moves by tau * delta with
    tau = cost / |delta|^2 (pa_type 0), min(c, cost / |delta|^2) (1) or
    cost / (|delta|^2 + 1 / (2c)) (2); a delta of zero moves nothing.  With
    ``averaging`` the result is the average of w over all steps (the lazy trick
    of the averaged perceptron).  Stops when an epoch's costs per sentence fall
    below ``epsilon``.
    """
    if isinstance(pa_type, bool) or not isinstance(pa_type, (int, np.integer)):
        raise ArgumentTypeError(f"pa_type must be 0, 1 or 2, got {type(pa_type).__name__} {pa_type!r}")
    if pa_type not in PA_TYPES:
        raise FstcrfError(f"pa_type must be 0 (PA), 1 (PA-I) or 2 (PA-II), got {pa_type}")
    check_positive("c", c)
    _check_flag("error_sensitive", error_sensitive)
    _check_flag("averaging", averaging)
    check_positive("max_iter", max_iter, integer=True)
    check_positive("epsilon", epsilon, zero=True)
    step_size = {
        0: lambda cost, norm2: cost / norm2,
        1: lambda cost, norm2: min(c, cost / norm2),
        2: lambda cost, norm2: cost / (norm2 + 0.5 / c),
    }[int(pa_type)]
    weights = np.zeros(problem.num_weights)
    weighted_updates = np.zeros(problem.num_weights)

    def update(step: int, wrong: int, indices: np.ndarray, values: np.ndarray, margin: float) -> float:
        cost = -margin + (math.sqrt(wrong) if error_sensitive else 1.0)
        norm2 = float(values @ values)
        if norm2 > 0:
            tau = step_size(cost, norm2)
            weights[indices] += tau * values
            weighted_updates[indices] += tau * step * values
        return cost

    def result_weights(steps: int) -> np.ndarray:
        return weights - weighted_updates / steps if averaging else weights

    return _mistake_epochs(
        "pa",
        problem,
        weights,
        update,
        result_weights,
        max_iter,
        seed,
        evaluate,
        callback,
        lambda mean_loss: mean_loss < epsilon,
    )


def arow(
    problem: SparseProblem,
    variance: float = 1.0,
    gamma: float = 1.0,
    max_iter: int = 100,
    epsilon: float = 0.0,
    seed: int = 0,
    evaluate: Evaluate | None = None,
    callback: Callback | None = None,
) -> TrainingResult:
    """AROW as CRFsuite's ``arow``: a mean mu [D] and a diagonal covariance sigma [D],
    which starts at ``variance``.

    On a sentence whose rival differs from gold in d labels, with delta = phi(gold)
    - phi(rival) and cost = score(rival) - score(gold) + d under mu:
    alpha = cost / (gamma + sum sigma delta^2), mu += alpha sigma delta and
    1 / sigma += delta^2 / gamma.  The result is mu (no averaging).  Stops when
    an epoch's costs per sentence are at most ``epsilon`` (with 0: an epoch
    without mistakes).
    """
    check_positive("variance", variance)
    check_positive("gamma", gamma)
    check_positive("max_iter", max_iter, integer=True)
    check_positive("epsilon", epsilon, zero=True)
    mean = np.zeros(problem.num_weights)
    covariance = np.full(problem.num_weights, float(variance))

    def update(step: int, wrong: int, indices: np.ndarray, values: np.ndarray, margin: float) -> float:
        cost = -margin + wrong
        arow_update(mean, covariance, indices, values, cost, gamma)
        return cost

    return _mistake_epochs(
        "arow",
        problem,
        mean,
        update,
        lambda steps: mean,
        max_iter,
        seed,
        evaluate,
        callback,
        lambda mean_loss: mean_loss <= epsilon,
    )


def arow_update(
    mean: np.ndarray, covariance: np.ndarray, indices: np.ndarray, values: np.ndarray, cost: float, gamma: float
) -> None:
    """One AROW step in place on mean [D] and the diagonal covariance [D], for the
    feature difference x given by indices int64 [m] (distinct) and values [m]:
    mu += cost / (gamma + x' Sigma x) Sigma x, and the precision's diagonal grows by
    x^2 / gamma."""
    squares = values * values
    spread = covariance[indices]
    alpha = cost / (gamma + float(squares @ spread))
    mean[indices] += alpha * spread * values
    covariance[indices] = 1.0 / (1.0 / spread + squares / gamma)


def _sgd_epoch(
    problem: Problem, weights: np.ndarray, order: np.ndarray, lam: float, t0: float, t: int
) -> tuple[float, float]:
    """One epoch of l2sgd over the sentences ``order`` from step ``t``, in place on
    ``weights`` [D]: (the summed negative log-likelihoods met, the last eta).  Step t
    shrinks theta by 1 - eta lambda with eta = 1 / (lambda (t0 + t)), then moves it by
    -eta times the sentence's gradient at the shrunk theta (CRFsuite's order).  theta
    is kept as scale * weights, so the shrinking costs O(1)."""
    scale, loss, eta = 1.0, 0.0, math.nan
    for index in order:
        eta = 1.0 / (lam * (t0 + t))
        scale *= 1.0 - eta * lam
        loss += problem.add_gradient(weights, scale, index, weights, -eta / scale)
        t += 1
        if scale < 1e-9:
            weights *= scale
            scale = 1.0
    weights *= scale
    return loss, eta


def _calibrate(
    problem: Problem, sample: np.ndarray, lam: float, eta: float, rate: float, candidates: int, max_trials: int
) -> float:
    """CRFsuite's search for the initial learning rate: one epoch of l2sgd from zero
    on ``sample`` per trial eta, raising eta by ``rate`` while it lowers the loss
    (up to ``candidates`` such rates), then lowering it from eta / rate until
    ``candidates`` rates lowered the loss, or ``max_trials``; the eta of the lowest
    loss (the first eta if none was finite)."""
    zero = np.zeros(problem.num_weights)
    scratch = np.zeros(problem.num_weights)
    initial_loss = sum(problem.add_gradient(zero, 1.0, int(index), scratch, 0.0) for index in sample)
    logger.info("l2sgd calibration on %d sentences: initial loss %.6g", len(sample), initial_loss)
    best_loss, best_eta, first_eta = math.inf, eta, eta
    remaining, decreasing, trials = candidates, False, 1
    while remaining > 0 or not decreasing:
        loss = math.inf
        if eta * lam < 1.0:  # otherwise the first shrinking step would flip theta's sign
            weights = np.zeros(problem.num_weights)
            loss = _sgd_epoch(problem, weights, sample, lam, 1.0 / (lam * eta), 0)[0]
            loss += 0.5 * lam * float(weights @ weights) * len(sample)
        improved = math.isfinite(loss) and loss < initial_loss
        logger.info(
            "l2sgd calibration trial %d: eta %.6g, loss %.6g%s", trials, eta, loss, "" if improved else " (worse)"
        )
        if improved:
            remaining -= 1
        if math.isfinite(loss) and loss < best_loss:
            best_loss, best_eta = loss, eta
        if decreasing:
            eta /= rate
        elif improved and remaining > 0:
            eta *= rate
        else:
            decreasing, remaining, eta = True, candidates, first_eta / rate
        trials += 1
        if trials >= max_trials:
            break
    logger.info("l2sgd calibration: learning rate eta %.6g", best_eta)
    return best_eta


def l2sgd(
    problem: Problem,
    c2: float = 1.0,
    max_iter: int = 1000,
    period: int = 10,
    delta: float = 1e-6,
    calibration_eta: float = 0.1,
    calibration_rate: float = 2.0,
    calibration_samples: int = 1000,
    calibration_candidates: int = 10,
    calibration_max_trials: int = 20,
    seed: int = 0,
    evaluate: Evaluate | None = None,
    callback: Callback | None = None,
) -> TrainingResult:
    """SGD as CRFsuite's ``l2sgd``: minimise the negative log-likelihood + c2 ||theta||^2.

    With lambda = 2 c2 / B, step t (over all epochs) uses eta = 1 / (lambda (t0 +
    t)); t0 = 1 / (lambda eta0), eta0 being calibrated on the first
    ``calibration_samples`` sentences of a shuffle (see :func:`_calibrate`).
    Stops after ``max_iter`` epochs, or when the objective improved by less than
    ``delta`` (relative to its value) over the last ``period`` epochs.  Without
    ``evaluate`` the result holds the weights of the epoch with the lowest
    objective, as CRFsuite's.  Records carry the last step's ``learning_rate``; the first
    record's ``seconds`` include the calibration.
    """
    check_positive("c2", c2)
    check_positive("max_iter", max_iter, integer=True)
    check_positive("period", period, integer=True)
    check_positive("delta", delta, zero=True)
    check_positive("calibration_eta", calibration_eta)
    check_positive("calibration_rate", calibration_rate)
    if calibration_rate <= 1.0:
        raise FstcrfError(
            f"calibration_rate must exceed 1 (it scales the trial learning rates), got {calibration_rate!r}"
        )
    check_positive("calibration_samples", calibration_samples, integer=True)
    check_positive("calibration_candidates", calibration_candidates, integer=True)
    check_positive("calibration_max_trials", calibration_max_trials, integer=True)
    num_sentences = problem.num_sequences
    lam = 2.0 * c2 / num_sentences
    rng = np.random.default_rng(seed)
    monitor = Monitor("l2sgd", evaluate, callback)
    weights = np.zeros(problem.num_weights)
    best_weights, best_objective, best_epoch = weights.copy(), math.inf, 0
    with monitor.interruptible():
        sample = rng.permutation(num_sentences)[: int(calibration_samples)]
        eta0 = _calibrate(
            problem,
            sample,
            lam,
            calibration_eta,
            calibration_rate,
            int(calibration_candidates),
            int(calibration_max_trials),
        )
        if eta0 * lam >= 1.0:
            raise FstcrfError(
                f"l2sgd: no usable learning rate (calibration_eta {calibration_eta} times "
                f"2 c2 / {num_sentences} sentences must stay below 1); lower calibration_eta"
            )
        t0 = 1.0 / (lam * eta0)
        objectives: list[float] = []
        for epoch in range(1, int(max_iter) + 1):
            loss, eta = _sgd_epoch(
                problem, weights, rng.permutation(num_sentences), lam, t0, (epoch - 1) * num_sentences
            )
            if not math.isfinite(loss):
                raise FstcrfError(f"l2sgd: the loss overflowed in epoch {epoch}; lower calibration_eta or raise c2")
            objective = loss + c2 * float(weights @ weights)
            if objective < best_objective:
                best_weights, best_objective, best_epoch = weights.copy(), objective, epoch
            objectives.append(objective)
            stop = monitor.end_iteration(weights, objective, extra={"learning_rate": eta})
            if stop or (epoch > period and (objectives[-1 - period] - objective) / objective < delta):
                break
    result = monitor.result(weights)
    if evaluate is None and best_epoch:
        result = dataclasses.replace(result, weights=best_weights, best_iteration=best_epoch)
    return result
