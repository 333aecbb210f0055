"""Learning a CRF from bandit feedback: sampled outputs scored by a gain, never
the gold labels (Sokolov, Kreutzer, Lo & Riezler 2016; paper 001).

On each minibatch of sentences the learner draws label sequences from its own
distribution p_w(y|x) with the kernel's exact sampler, asks a feedback source
(:mod:`fstcrf.feedback`) for the gain g in [0, 1] of each draw, and moves the
weights along a stochastic gradient.  Every estimator has the form

    s = sum over draws of c(draw) * grad_w log p(draw | x)
      = sum over draws of c(draw) * (phi(draw) - E_p[phi])

for a coefficient c per draw; its expectation is the gradient of the stated
objective (maximised):

    expected        J = E_{y ~ p_w}[g(y)];  c = g - b
    pairwise        J = P(g(y) >= g(y')) for y ~ p_w, y' ~ p_{-w} (the model with
                    negated weights, Sokolov et al.'s pair distribution);
                    c = [g(y) >= g(y')] - b on both draws, the second with the
                    gradient of log p_{-w}
    pairwise-independent
                    y, y' ~ p_w; c = sign(g(y) - g(y')) / 2 on y and its negative
                    on y'.  Its expectation is the gradient of E_{y ~ p_w}[r(y)]
                    with r(y) = P(g(Y') < g(y)) - P(g(Y') > g(y)) held at the
                    current weights (a rank-transformed gain)
    cross-entropy   J = sum_y g(y) log p_w(y | x);  c = g / max(p(y), clip) - b.
                    With clip = 0 the estimate is unbiased; clipping (paper 001)
                    bounds it, and the share of clipped draws is reported

The baseline b never depends on the draw it is subtracted from, so it leaves
the expectation unchanged (E_p[grad log p] = 0): "none" (b = 0), "mean" (the
running mean of the uncentred coefficients of earlier minibatches) or "loo"
(the mean over the other draws of the same sentence, which needs draws >= 2).
Pairwise-independent is centred by construction and takes no baseline.

Steps ascend J: "constant" w += rate * s, "adagrad" w += rate * s / (sqrt(G) +
1e-8) with G the running sum of s^2, "adam" (Kingma & Ba, bias-corrected).
An L2 penalty l2 / 2 * ||w||^2 per sentence may be added.

The gradients run in C: emissions, forward-backward and the expected counts
of a minibatch go through ``ft_gradient`` with a per-sentence weight (the sum
of the sentence's coefficients), the drawn paths' counts through
``ff_accumulate``; each minibatch is split over the threads.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

import numpy as np

from . import train
from .encoding import EncodedSentences, buffer_pointer
from .errors import FstcrfError
from .inference import SentenceBatch, log_partition, run_parallel, sample, thread_chunks
from .objective import GROUP_TOKENS, Scorer, _GradientBlock, _GradientDriver, _path_edges

logger = logging.getLogger(__name__)

OBJECTIVES = ("expected", "pairwise", "pairwise-independent", "cross-entropy")
BASELINES = ("none", "mean", "loo")
STEPS = ("constant", "adagrad", "adam")

_ADAM_BETAS = (0.9, 0.999)
_EPSILON = 1e-8
#: Pieces each minibatch's gradient is split into (run on up to that many threads).
_PIECES = 2


class SampledGradient:
    """Draws and score-function gradients for encoded sentences under weights
    theta [D] = [F + T] (F features, T transition weights); labels never enter."""

    def __init__(self, scorer: Scorer, encoded: EncodedSentences):
        if scorer.constrained is not None:
            raise FstcrfError("bandit training under a training grammar is not supported; train "
                              "without --grammar and decode under the grammar instead")
        self.scorer = scorer
        self.encoded = encoded
        self.num_weights = scorer.num_weights
        self._driver = _GradientDriver(scorer, encoded, np.zeros(encoded.num_sequences, dtype=bool), None)
        self._edge_table = scorer.topology.edge_ids

    def potentials(self, theta: np.ndarray, first: int, last: int, sign: float = 1.0):
        """The potentials of sentences first .. last-1 under sign * theta."""
        return self.scorer.potentials(self.encoded, theta, first, last, sign)

    def log_probabilities(self, pot, paths: np.ndarray, first: int, last: int) -> np.ndarray:
        """float [K, B]: log p(path | x) of state paths [K, n] under potentials ``pot``
        of sentences first .. last-1."""
        offsets = self.encoded.offsets[first:last + 1] - self.encoded.offsets[first]
        log_z = log_partition(pot, self.scorer.threads)
        transitions = np.atleast_2d(pot.transitions)
        classes = (np.zeros(pot.num_tokens, dtype=np.int64) if pot.token_class is None
                   else pot.token_class.astype(np.int64))
        inside = np.ones(pot.num_tokens, dtype=bool)
        inside[offsets[:-1]] = False
        result = np.empty((len(paths), last - first))
        for k, path in enumerate(paths):
            tokens = pot.emissions[np.arange(pot.num_tokens), path]
            edges = _path_edges(self._edge_table, path, offsets)
            tokens[inside] += transitions[classes[inside], edges]
            tokens[offsets[:-1]] += pot.start[path[offsets[:-1]]]
            tokens[offsets[1:] - 1] += pot.final[path[offsets[1:] - 1]]
            result[k] = np.add.reduceat(tokens, offsets[:-1]) - log_z
        return result

    def add_gradient(self, theta: np.ndarray, first: int, last: int, paths: np.ndarray,
                     coefficients: np.ndarray, out: np.ndarray, sign: float = 1.0) -> None:
        """Add sum_k sum_b coefficients[k, b] * grad_theta log p_{sign theta}(paths[k] of
        sentence b) to ``out`` [D], for state paths [K, n] of sentences first .. last-1."""
        F = self.scorer.features.num_features
        weights = np.ascontiguousarray(coefficients.sum(axis=0), dtype=np.float64)     # [B]
        scores = self._driver.scores(sign * theta[F:])
        minibatch = SentenceBatch()
        minibatch.lengths = self.encoded.lengths[first:last]
        minibatch.offsets = self.encoded.offsets[first:last + 1] - self.encoded.offsets[first]

        def work(bounds: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
            lo, hi = bounds                                   # within the minibatch
            grad = np.zeros(F)
            edge_counts = np.zeros(self._driver.edge_count_shape)
            if np.any(weights[lo:hi]):
                block = _GradientBlock(self._driver, first + lo, first + hi, GROUP_TOKENS,
                                       with_outputs=False)
                sentence_weights = np.ascontiguousarray(weights[lo:hi])
                block.sentences.weight = buffer_pointer("double", sentence_weights)
                block.run(self._driver, scores, theta, sign, -sign, grad, edge_counts)
            rows = minibatch.token_rows(lo, hi)
            marks = np.zeros((rows.stop - rows.start, self.scorer.features.num_states))    # [n', S]
            sentence_of = np.repeat(np.arange(lo, hi), minibatch.lengths[lo:hi])
            for k, path in enumerate(paths):
                marks[np.arange(len(marks)), path[rows]] += coefficients[k, sentence_of]
            self.scorer.features.accumulate(self.encoded.tokens(first + lo, first + hi), marks, grad, sign)
            return grad, edge_counts

        # a fixed split, summed in a fixed order, so results do not depend on the threads
        pieces = thread_chunks(minibatch, _PIECES)
        parts = run_parallel(work, pieces) if self.scorer.threads > 1 else [work(p) for p in pieces]
        for grad, _ in parts:
            out[:F] += grad
        out[F:] += self._driver.weight_gradient(sum(counts for _, counts in parts))
        out[F:] += sign * self._path_transition_counts(first, last, paths, coefficients)

    def _path_transition_counts(self, first: int, last: int, paths: np.ndarray,
                                coefficients: np.ndarray) -> np.ndarray:
        """float [T]: sum_k sum_b coefficients[k, b] * transition-weight counts of paths[k]."""
        offsets = self.encoded.offsets[first:last + 1] - self.encoded.offsets[first]
        inside = np.ones(offsets[-1], dtype=bool)
        inside[offsets[:-1]] = False
        token_class = (None if self.encoded.token_class is None else
                       self.encoded.token_class[self.encoded.token_rows(first, last)][inside])
        per_edge = np.repeat(np.arange(last - first), np.diff(offsets) - 1)
        layout = self.scorer.transitions
        total = 0.0
        for k, path in enumerate(paths):
            edges = _path_edges(self._edge_table, path, offsets)
            total = total + layout.gradient(layout.path_counts(edges, token_class, coefficients[k, per_edge]))
        return total


def permuted(encoded: EncodedSentences, order: np.ndarray) -> EncodedSentences:
    """The sentences of ``encoded`` in the order int [B] (sentence i of the result is
    sentence order[i])."""
    rows = np.concatenate([np.arange(encoded.offsets[i], encoded.offsets[i + 1]) for i in order])
    token_class = None if encoded.token_class is None else encoded.token_class[rows]
    return EncodedSentences(encoded.matrix[rows], encoded.lengths[order], token_class)


class _Steps:
    """The step rule: theta += update(s) for a stochastic gradient s [D] (ascent)."""

    def __init__(self, rule: str, learning_rate: float, size: int):
        self.rule, self.rate = rule, learning_rate
        self.squares = np.zeros(size) if rule in ("adagrad", "adam") else None
        self.moments = np.zeros(size) if rule == "adam" else None
        self.count = 0

    def apply(self, theta: np.ndarray, gradient: np.ndarray) -> None:
        if self.rule == "constant":
            theta += self.rate * gradient
            return
        if self.rule == "adagrad":
            touched = np.flatnonzero(gradient)
            g = gradient[touched]
            self.squares[touched] += g * g
            theta[touched] += self.rate * g / (np.sqrt(self.squares[touched]) + _EPSILON)
            return
        beta1, beta2 = _ADAM_BETAS
        self.count += 1
        self.moments *= beta1
        self.moments += (1.0 - beta1) * gradient
        self.squares *= beta2
        self.squares += (1.0 - beta2) * gradient * gradient
        corrected = self.rate * math.sqrt(1.0 - beta2 ** self.count) / (1.0 - beta1 ** self.count)
        theta += corrected * self.moments / (np.sqrt(self.squares) + _EPSILON)


@dataclass
class BanditSettings:
    """The options of :func:`learn` (see the module doc)."""

    objective: str = "expected"
    draws: int = 1
    baseline: str = "mean"
    step: str = "adagrad"
    learning_rate: float = 0.1
    clip: float = 0.0
    l2: float = 0.0
    batch_size: int = 16
    max_iter: int = 10
    seed: int = 0

    def check(self) -> None:
        for name, value, choices in (("objective", self.objective, OBJECTIVES),
                                     ("baseline", self.baseline, BASELINES), ("step", self.step, STEPS)):
            if value not in choices:
                raise FstcrfError(f"bandit {name} must be one of {', '.join(choices)}, got {value!r}")
        train._check_positive("draws", self.draws, integer=True)
        train._check_positive("learning_rate", self.learning_rate)
        train._check_positive("batch_size", self.batch_size, integer=True)
        train._check_positive("max_iter", self.max_iter, integer=True)
        for name in ("clip", "l2"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < math.inf:
                raise FstcrfError(f"bandit {name} must be a finite number >= 0, got {value!r}")
        if self.clip >= 1.0:
            raise FstcrfError(f"bandit clip is a probability floor in [0, 1), got {self.clip!r}")
        if self.baseline == "loo" and self.draws < 2:
            raise FstcrfError("baseline 'loo' (leave-one-out) needs draws >= 2")
        if self.objective == "pairwise-independent" and self.baseline != "none":
            raise FstcrfError("objective 'pairwise-independent' is centred by construction; use "
                              "baseline 'none'")
        if not isinstance(self.seed, (int, np.integer)) or isinstance(self.seed, bool) or self.seed < 0:
            raise FstcrfError(f"seed must be a non-negative integer, got {self.seed!r}")


@dataclass
class _Running:
    """Running sums over an epoch and over the whole run."""

    calls: int = 0
    baseline_sum: float = 0.0
    baseline_count: int = 0
    epoch_gain: float = 0.0
    epoch_draws: int = 0
    epoch_clipped: int = 0
    history: list = field(default_factory=list)

    def mean(self) -> float:
        return self.baseline_sum / self.baseline_count if self.baseline_count else 0.0


def _centred(raw: np.ndarray, settings: BanditSettings, running: _Running) -> np.ndarray:
    """Coefficients [K, B] from raw coefficients [K, B] minus the baseline."""
    if settings.baseline == "mean":
        centred = raw - running.mean()
        running.baseline_sum += float(raw.sum())
        running.baseline_count += raw.size
        return centred
    if settings.baseline == "loo":
        return raw - (raw.sum(axis=0, keepdims=True) - raw) / (len(raw) - 1)
    return raw


def minibatch_gradient(gradient: SampledGradient, feedback, settings: BanditSettings, theta: np.ndarray,
                       first: int, last: int, indices: np.ndarray, seed: int, running: _Running,
                       out: np.ndarray) -> None:
    """Add the stochastic gradient of sentences first .. last-1 (training sentences
    ``indices`` [B] for the feedback) under ``theta`` to ``out`` [D]."""
    K = settings.draws
    state_label = gradient.scorer.topology.state_label
    pot = gradient.potentials(theta, first, last)
    draws = sample(pot, 2 * K if settings.objective == "pairwise-independent" else K, seed,
                   gradient.scorer.threads)
    gains = feedback.gains(indices, state_label[draws])
    running.epoch_gain += float(gains.sum())
    running.epoch_draws += gains.size
    if settings.objective == "expected":
        gradient.add_gradient(theta, first, last, draws, _centred(gains, settings, running) / K, out)
    elif settings.objective == "cross-entropy":
        probabilities = np.exp(gradient.log_probabilities(pot, draws, first, last))
        running.epoch_clipped += int(np.count_nonzero(probabilities < settings.clip))
        raw = gains / np.maximum(probabilities, settings.clip) if settings.clip > 0 else gains / probabilities
        gradient.add_gradient(theta, first, last, draws, _centred(raw, settings, running) / K, out)
    elif settings.objective == "pairwise":
        negated = gradient.potentials(theta, first, last, -1.0)
        rivals = sample(negated, K, seed ^ 0x5DEECE66D, gradient.scorer.threads)
        rival_gains = feedback.gains(indices, state_label[rivals])
        coefficients = _centred((gains >= rival_gains).astype(np.float64), settings, running) / K
        gradient.add_gradient(theta, first, last, draws, coefficients, out)
        gradient.add_gradient(theta, first, last, rivals, coefficients, out, sign=-1.0)
    else:
        half = 0.5 * np.sign(gains[:K] - gains[K:]) / K
        gradient.add_gradient(theta, first, last, draws, np.concatenate([half, -half]), out)


def learn(gradient: SampledGradient, feedback, settings: BanditSettings, order: np.ndarray,
          evaluate: train.Evaluate | None = None, callback: train.Callback | None = None
          ) -> train.TrainingResult:
    """Bandit training over the sentences of ``gradient`` (training sentences ``order``
    [B] for the feedback); one iteration is an epoch.  Each record adds
    ``mean_gain`` (of the epoch's draws), ``feedback_calls`` (so far) and, for
    cross-entropy, ``clipped`` (the share of the epoch's draws clipped)."""
    settings.check()
    rng = np.random.default_rng(settings.seed)
    B = gradient.encoded.num_sequences
    starts = np.arange(0, B, settings.batch_size)
    theta = np.zeros(gradient.num_weights)
    steps = _Steps(settings.step, settings.learning_rate, gradient.num_weights)
    running = _Running()
    monitor = train._Monitor(f"bandit-{settings.objective}", evaluate, callback)
    update = np.zeros(gradient.num_weights)
    with monitor.interruptible():
        for _ in range(settings.max_iter):
            running.epoch_gain, running.epoch_draws, running.epoch_clipped = 0.0, 0, 0
            for first in rng.permutation(starts):
                last = min(int(first) + settings.batch_size, B)
                update[:] = 0.0
                minibatch_gradient(gradient, feedback, settings, theta, int(first), last,
                                   order[first:last], int(rng.integers(2 ** 63)), running, update)
                if settings.l2 > 0:
                    update -= settings.l2 * (last - first) * theta
                steps.apply(theta, update)
            mean_gain = running.epoch_gain / max(running.epoch_draws, 1)
            extra = {"mean_gain": mean_gain, "feedback_calls": int(feedback.calls)}
            if settings.objective == "cross-entropy":
                extra["clipped"] = running.epoch_clipped / max(running.epoch_draws, 1)
            if monitor.end_iteration(theta, -mean_gain, extra=extra):
                break
    return monitor.result(theta)
