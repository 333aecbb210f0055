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
Only the coordinates a minibatch touches are read or moved.  There is no
penalty term: the epoch with the best dev score is kept.

The gradients run in C: emissions, forward-backward and the expected counts
of a minibatch go through ``ft_gradient`` with a per-sentence weight (the sum
of the sentence's coefficients), the drawn paths' counts through
``ff_accumulate``; each minibatch is split over the threads.
"""
from __future__ import annotations

import contextlib
import logging
import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse

from . import train
from ._kernel import ffi, lib
from .bandit_settings import BanditSettings
from .encoding import EncodedSentences, buffer_pointer
from .errors import FeedbackError, FstcrfError
from .inference import SentenceBatch, log_partition, sample, thread_chunks
from .objective import GROUP_TOKENS, Scorer, _GradientBlock, _GradientDriver, _path_edges

logger = logging.getLogger(__name__)

_ADAM_BETAS = (0.9, 0.999)
_EPSILON = 1e-8
#: Pieces each minibatch's gradient is split into (run on up to that many threads).
_PIECES = 2


@dataclass
class SparseGradient:
    """A gradient over weights [F + T] whose feature part is zero outside ``indices``:
    ``indices`` int64 [M] (sorted feature ids), ``values`` float [M], ``transitions``
    float [T]."""

    indices: np.ndarray
    values: np.ndarray
    transitions: np.ndarray

    def dense(self, num_features: int) -> np.ndarray:
        """float [F + T]."""
        result = np.zeros(num_features + len(self.transitions))
        result[self.indices] = self.values
        result[num_features:] = self.transitions
        return result


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
        F = scorer.features.num_features
        self._piece_gradients = [np.zeros(F) for _ in range(_PIECES)]     # each [F], kept zero between minibatches
        self._piece_pointers = ffi.new("double *[]", [buffer_pointer("double", grad) for grad in self._piece_gradients])
        self._transitions = np.zeros(scorer.transitions.size)             # [T]
        self._pool: ThreadPoolExecutor | None = None
        self._seen = np.zeros(encoded.num_predicates, dtype=bool)         # [P], kept False between calls

    def potentials(self, theta: np.ndarray, first: int, last: int, sign: float = 1.0):
        """The potentials of sentences first .. last-1 under sign * theta."""
        return self.scorer.potentials(self.encoded, theta, first, last, sign)

    def draw(self, theta: np.ndarray, first: int, last: int, count: int, seed: int, sign: float = 1.0,
             with_log_probabilities: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
        """(int32 [count, n] exact draws of state paths of sentences first .. last-1 from
        p_{sign theta}, and float [count, B] their log-probabilities or None).  Piece j
        of the minibatch's fixed split draws with seed + j."""
        pieces = thread_chunks(self._minibatch(first, last), _PIECES)

        def work(piece: int):
            lo, hi = first + pieces[piece][0], first + pieces[piece][1]
            pot = self.potentials(theta, lo, hi, sign)
            paths = sample(pot, count, (seed + piece) % 2 ** 64)
            return paths, self.log_probabilities(pot, paths) if with_log_probabilities else None

        parts = self._map(work, range(len(pieces)))
        paths = np.concatenate([part[0] for part in parts], axis=1)
        return paths, np.concatenate([part[1] for part in parts], axis=1) if with_log_probabilities else None

    @staticmethod
    def log_probabilities(pot, paths: np.ndarray) -> np.ndarray:
        """float [K, B]: log p(path | x) of state paths [K, n] under potentials ``pot``."""
        return pot.path_scores(paths) - log_partition(pot)

    def _map(self, work, items) -> list:
        """[work(item) for item in items], on the threads of a pool kept for this object."""
        if self.scorer.threads == 1:
            return [work(item) for item in items]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=min(self.scorer.threads, _PIECES))
        return list(self._pool.map(work, items))

    def close(self) -> None:
        """Stop the threads (the object stays usable and restarts them if needed)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def add_gradient(self, theta: np.ndarray, first: int, last: int, paths: np.ndarray,
                     coefficients: np.ndarray, sign: float = 1.0) -> None:
        """Add sum_k sum_b coefficients[k, b] * grad_theta log p_{sign theta}(paths[k] of
        sentence b), for state paths [K, n] of sentences first .. last-1, to the
        gradient that :meth:`take` returns."""
        F = self.scorer.features.num_features
        weights = np.ascontiguousarray(coefficients.sum(axis=0), dtype=np.float64)     # [B]
        scores = self._driver.scores(sign * theta[F:])
        minibatch = self._minibatch(first, last)

        def work(piece: int) -> np.ndarray:
            lo, hi = pieces[piece]                            # within the minibatch
            grad = self._piece_gradients[piece]
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
            return edge_counts

        # a fixed split, summed in a fixed order, so results do not depend on the threads
        pieces = thread_chunks(minibatch, _PIECES)
        numbers = list(range(len(pieces)))
        counts = self._map(work, numbers)
        self._transitions += self._driver.weight_gradient(sum(counts))
        self._transitions += sign * self._path_transition_counts(first, last, paths, coefficients)

    def take(self, first: int, last: int) -> SparseGradient:
        """The gradient added since the last call, for sentences first .. last-1, and
        reset it.  Only the features of the predicates of those sentences can be
        non-zero, so only they are read and cleared."""
        rows = self.encoded.token_rows(first, last)
        self._seen[self.encoded.indices[self.encoded.indptr[rows.start]:self.encoded.indptr[rows.stop]]] = True
        predicates = np.flatnonzero(self._seen)
        self._seen[predicates] = False
        ptr = self.scorer.features.ptr
        sizes = ptr[predicates + 1] - ptr[predicates]
        starts = np.repeat(ptr[predicates] - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes)
        indices = starts + np.arange(int(sizes.sum()))
        values = np.empty(len(indices))
        lib.fu_gather_clear(self._piece_pointers, len(self._piece_gradients), buffer_pointer("int64_t", indices),
                            len(indices), buffer_pointer("double", values))
        transitions, self._transitions = self._transitions, np.zeros(self.scorer.transitions.size)
        return SparseGradient(indices, values, transitions)

    def _minibatch(self, first: int, last: int) -> SentenceBatch:
        minibatch = SentenceBatch()
        minibatch.lengths = self.encoded.lengths[first:last]
        minibatch.offsets = self.encoded.offsets[first:last + 1] - self.encoded.offsets[first]
        return minibatch

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
    matrix = scipy.sparse.csr_matrix((encoded.values, encoded.indices, encoded.indptr),
                                     shape=(encoded.num_tokens, encoded.num_predicates))
    return EncodedSentences(matrix[rows], encoded.lengths[order], token_class)


class _Steps:
    """The step rule: theta += update(s) for a stochastic gradient s (ascent), in C
    (``fu_apply``).  Only the coordinates a minibatch touches move: AdaGrad's sums
    and Adam's moments (lazy Adam, bias-corrected by the global step count) are
    kept per coordinate."""

    _RULES = {"constant": lib.FU_CONSTANT, "adagrad": lib.FU_ADAGRAD, "adam": lib.FU_ADAM}

    def __init__(self, rule: str, learning_rate: float, num_features: int, size: int):
        self.rule, self.rate, self.num_features = rule, learning_rate, num_features
        self.squares = np.zeros(size) if rule in ("adagrad", "adam") else None
        self.moments = np.zeros(size) if rule == "adam" else None
        self.count = 0
        self._step = ffi.new("fu_step *")
        self._step.rule = self._RULES[rule]
        self._step.beta1, self._step.beta2 = _ADAM_BETAS
        self._step.epsilon = _EPSILON

    def apply(self, theta: np.ndarray, gradient: SparseGradient) -> None:
        at = np.concatenate([gradient.indices, self.num_features + np.arange(len(gradient.transitions))])
        g = np.concatenate([gradient.values, gradient.transitions])
        self.count += 1
        beta1, beta2 = _ADAM_BETAS
        self._step.rate = (self.rate if self.rule != "adam" else
                           self.rate * math.sqrt(1.0 - beta2 ** self.count) / (1.0 - beta1 ** self.count))
        status = lib.fu_apply(self._step, buffer_pointer("double", theta), _optional(self.squares),
                              _optional(self.moments), buffer_pointer("int64_t", at), buffer_pointer("double", g),
                              len(at))
        if status != 0:
            raise RuntimeError(f"fu_apply returned status {status}; this is a bug in fstcrf")


def _optional(array: np.ndarray | None):
    return ffi.NULL if array is None else buffer_pointer("double", array)


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
                       first: int, last: int, indices: np.ndarray, seed: int,
                       running: _Running) -> SparseGradient:
    """The stochastic gradient of sentences first .. last-1 (training sentences
    ``indices`` [B] for the feedback) under ``theta``."""
    K = settings.draws
    state_label = gradient.scorer.topology.state_label
    independent_pairs = settings.objective == "pairwise-independent"
    draws, log_p = gradient.draw(theta, first, last, 2 * K if independent_pairs else K, seed,
                                 with_log_probabilities=settings.objective == "cross-entropy")
    gains = feedback.gains(indices, state_label[draws])
    running.epoch_gain += float(gains.sum())
    running.epoch_draws += gains.size
    if settings.objective == "expected":
        gradient.add_gradient(theta, first, last, draws, _centred(gains, settings, running) / K)
    elif settings.objective == "cross-entropy":
        probabilities = np.exp(log_p)
        running.epoch_clipped += int(np.count_nonzero(probabilities < settings.clip))
        raw = gains / np.maximum(probabilities, settings.clip) if settings.clip > 0 else gains / probabilities
        gradient.add_gradient(theta, first, last, draws, _centred(raw, settings, running) / K)
    elif settings.objective == "pairwise":
        rivals, _ = gradient.draw(theta, first, last, K, seed ^ 0x5DEECE66D, sign=-1.0)
        rival_gains = feedback.gains(indices, state_label[rivals])
        coefficients = _centred((gains >= rival_gains).astype(np.float64), settings, running) / K
        gradient.add_gradient(theta, first, last, draws, coefficients)
        gradient.add_gradient(theta, first, last, rivals, coefficients, sign=-1.0)
    else:
        half = 0.5 * np.sign(gains[:K] - gains[K:]) / K
        gradient.add_gradient(theta, first, last, draws, np.concatenate([half, -half]))
    return gradient.take(first, last)


class _Run:
    """The state of a bandit run: weights theta [D], step rule, running sums, draws."""

    def __init__(self, gradient: SampledGradient, feedback, settings: BanditSettings, order: np.ndarray):
        self.gradient, self.feedback, self.settings, self.order = gradient, feedback, settings, order
        self.rng = np.random.default_rng(settings.seed)
        self.theta = np.zeros(gradient.num_weights)
        self.steps = _Steps(settings.step, settings.learning_rate, gradient.scorer.features.num_features,
                            gradient.num_weights)
        self.running = _Running()

    def epoch(self) -> tuple[float, dict]:
        """One pass over the minibatches in random order: (the record's objective, the
        negated mean gain; its extra fields)."""
        B = self.gradient.encoded.num_sequences
        size = self.settings.batch_size
        running = self.running
        running.epoch_gain, running.epoch_draws, running.epoch_clipped = 0.0, 0, 0
        for first in self.rng.permutation(np.arange(0, B, size)).tolist():
            last = min(first + size, B)
            self.steps.apply(self.theta, minibatch_gradient(
                self.gradient, self.feedback, self.settings, self.theta, first, last, self.order[first:last],
                int(self.rng.integers(2 ** 63)), running))
        mean_gain = running.epoch_gain / max(running.epoch_draws, 1)
        extra = {"mean_gain": mean_gain, "feedback_calls": int(self.feedback.calls)}
        if self.settings.objective == "cross-entropy":
            extra["clipped"] = running.epoch_clipped / max(running.epoch_draws, 1)
        return -mean_gain, extra


def learn(gradient: SampledGradient, feedback, settings: BanditSettings, order: np.ndarray,
          evaluate: train.Evaluate | None = None, callback: train.Callback | None = None
          ) -> train.TrainingResult:
    """Bandit training over the sentences of ``gradient`` (training sentences ``order``
    [B] for the feedback); one iteration is an epoch, whose record's objective is
    minus the mean gain of its draws and which adds ``mean_gain``,
    ``feedback_calls`` (so far) and, for cross-entropy, ``clipped`` (the share of
    the epoch's draws whose probability was below the floor).  A FeedbackError
    carries the result so far as its ``result``."""
    settings.check()
    run = _Run(gradient, feedback, settings, order)
    monitor = train._Monitor(f"bandit-{settings.objective}", evaluate, callback)
    try:
        with monitor.interruptible(), contextlib.closing(gradient):
            for _ in range(settings.max_iter):
                objective, extra = run.epoch()
                if monitor.end_iteration(run.theta, objective, extra=extra):
                    break
    except FeedbackError as error:
        error.result = monitor.result(run.theta)
        raise
    return monitor.result(run.theta)
