"""Feedback for learning from sampled outputs (see :mod:`fstcrf.learn.bandit`).

A feedback source answers, for label sequences drawn by the learner, how good
each one was: a gain in [0, 1].  The learner passes sentence indices and label
ids and receives gains; it never sees what the feedback is computed from.

Built in:

- :func:`simulated_feedback`: a simulated user who knows the gold labels and
  answers with the per-sentence chunk F1 of the draw (a sentence with no gold
  and no predicted chunks scores 1; chunks read as :func:`fstcrf.corpus.evaluate.score_chunks`
  reads them) or its token
  accuracy, optionally noisy: the gain flipped to 1 - g with probability
  ``flip`` and perturbed by Gaussian noise of standard deviation ``noise``
  (then clipped to [0, 1]), both seeded;
- :class:`CallableFeedback`: a user function ``feedback(sentence, labels) ->
  float`` called once per draw, its answers checked.

Every source counts its ``calls`` (one per draw scored).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from fstcrf.corpus.conll import Sentence
from fstcrf.engine import kernel
from fstcrf.errors import FeedbackError, FstcrfError, LabelError, ShapeError
from fstcrf.corpus.schemes import chunk_end, chunk_start, split_tag

METRICS = ("f1", "accuracy")


def _continues(previous: tuple[str, str], current: tuple[str, str]) -> bool:
    """BIOES reading (as :func:`fstcrf.corpus.schemes.read_chunks`): does the current tag
    continue the chunk the previous tag left open?"""
    return previous[0] in ("B", "I") and current[0] in ("I", "E") and previous[1] == current[1]


class ChunkTables:
    """Chunk rules as tables over label ids: ``starts[a, b]`` (a chunk starts at
    label b after label a) and ``ends[a, b]`` (a chunk ends between a and b), with
    an extra id L standing for the implicit O around a sentence; ``kind`` int
    [L + 1] numbers the chunk types.  The rules are those of
    :func:`fstcrf.corpus.evaluate.score_chunks`: conlleval's for IOB labels, and for
    labels with E- or S- tags a chunk ends at E or S.  ``kernel_tables`` holds the
    three as the kernel reads them (uint8, uint8, int64)."""

    def __init__(self, labels: Sequence[str]):
        tags = [split_tag(label) for label in labels] + [("O", "")]
        self.outside = len(labels)
        if any(prefix in ("E", "S") and chunk_type for prefix, chunk_type in tags):
            self.starts = np.array([[b[0] != "O" and not _continues(a, b) for b in tags] for a in tags])
            self.ends = np.array([[a[0] != "O" and not _continues(a, b) for b in tags] for a in tags])
        else:
            self.starts = np.array([[chunk_start(a, b) for b in tags] for a in tags])
            self.ends = np.array([[chunk_end(a, b) for b in tags] for a in tags])
        types = {name: index for index, name in enumerate(sorted({t for _, t in tags}))}
        self.kind = np.array([types[t] for _, t in tags], dtype=np.int64)
        self.kernel_tables = (
            kernel.kernel_array(self.starts, np.uint8),
            kernel.kernel_array(self.ends, np.uint8),
            kernel.kernel_array(self.kind, np.int64),
        )


def sentence_chunk_f1(tables: ChunkTables, gold: np.ndarray, predicted: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """float [B] (or [K, B]): per-sentence chunk F1 in [0, 1] of predicted label ids [N]
    (or K sequences [K, N]) against gold [N] cut at offsets [B+1] (1 where neither
    side has a chunk), in C."""
    sequences = kernel.kernel_array(np.atleast_2d(predicted), np.int64)
    if sequences.shape[1] != len(gold):
        raise ShapeError(f"chunk F1: predicted {np.shape(predicted)} does not fit gold {np.shape(gold)}")
    f1 = np.empty((len(sequences), len(offsets) - 1))
    gold_set = (kernel.kernel_array(gold, np.int64), kernel.kernel_array(offsets, np.int64))
    every = np.arange(len(offsets) - 1, dtype=np.int64)
    kernel.bandit.chunk_f1(gold_set, every, sequences, tables.kernel_tables, f1)
    return f1 if np.ndim(predicted) == 2 else f1[0]


def sentence_accuracy(gold: np.ndarray, predicted: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """float [B] (or [K, B]): per-sentence share of tokens whose predicted label id
    (of [N], or of each of K sequences [K, N]) is the gold one."""
    return np.add.reduceat((gold == predicted).astype(np.float64), offsets[:-1], axis=-1) / np.diff(offsets)


class SimulatedFeedback:
    """A simulated user holding gold label ids [N] (sentences cut at offsets [B+1])."""

    def __init__(
        self,
        labels: Sequence[str],
        gold: np.ndarray,
        offsets: np.ndarray,
        metric: str = "f1",
        flip: float = 0.0,
        noise: float = 0.0,
        seed: int = 0,
    ):
        if metric not in METRICS:
            raise FstcrfError(f"feedback metric must be one of {', '.join(METRICS)}, got {metric!r}")
        for name, value, upper in (("flip", flip, 1.0), ("noise", noise, math.inf)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= upper:
                raise FstcrfError(f"feedback {name} must be a number in [0, {upper}], got {value!r}")
        self.labels = list(labels)
        self.metric = metric
        self._gold = kernel.kernel_array(gold, np.int64)
        self._offsets = kernel.kernel_array(offsets, np.int64)
        self._tables = ChunkTables(self.labels) if metric == "f1" else None
        self._flip, self._noise = float(flip), float(noise)
        self._rng = np.random.default_rng(seed)
        self.calls = 0

    def gains(self, indices: np.ndarray, label_ids: np.ndarray) -> np.ndarray:
        """float [K, B]: the gain of each of K label-id sequences [K, n] of training
        sentences ``indices`` [B] (their tokens concatenated in that order)."""
        indices = kernel.kernel_array(indices, np.int64)
        if self._tables:
            gains = np.empty((len(label_ids), len(indices)))
            sequences = kernel.kernel_array(label_ids, np.int64)
            kernel.bandit.chunk_f1((self._gold, self._offsets), indices, sequences, self._tables.kernel_tables, gains)
        else:
            starts = self._offsets[indices]
            lengths = self._offsets[indices + 1] - starts
            cuts = np.concatenate([[0], np.cumsum(lengths)])
            rows = np.repeat(starts - cuts[:-1], lengths) + np.arange(int(cuts[-1]))  # the sentences' tokens, in order
            gains = sentence_accuracy(self._gold[rows], np.asarray(label_ids, dtype=np.int64), cuts)
        self.calls += gains.size
        if self._flip > 0:
            flipped = self._rng.random(gains.shape) < self._flip
            gains = np.where(flipped, 1.0 - gains, gains)
        if self._noise > 0:
            gains = np.clip(gains + self._rng.normal(0.0, self._noise, gains.shape), 0.0, 1.0)
        return gains


def simulated_feedback(
    sentences: Sequence[Sentence],
    target: str,
    labels: Sequence[str],
    metric: str = "f1",
    flip: float = 0.0,
    noise: float = 0.0,
    seed: int = 0,
) -> SimulatedFeedback:
    """A simulated user for column ``target`` of ``sentences`` over ``labels``; the gold
    labels are copied, so later changes to the sentences do not reach it."""
    index = {label: i for i, label in enumerate(labels)}
    gold = []
    for number, sentence in enumerate(sentences):
        for position, label in enumerate(sentence[target]):
            if label not in index:
                raise LabelError(
                    f"sentence {number} token {position}: the feedback's gold label "
                    f"{label!r} is not among the model's labels ({', '.join(labels)})"
                )
            gold.append(index[label])
    offsets = np.concatenate([[0], np.cumsum([len(sentence) for sentence in sentences])])
    return SimulatedFeedback(labels, np.array(gold, dtype=np.int64), offsets, metric, flip, noise, seed)


class CallableFeedback:
    """Gains from a user function ``feedback(sentence, labels) -> float`` in [0, 1],
    called once per draw with the training :class:`~fstcrf.corpus.conll.Sentence` and the
    drawn labels (a list of strings)."""

    def __init__(
        self, function: Callable[[Sentence, list[str]], float], sentences: Sequence[Sentence], labels: Sequence[str]
    ):
        if not callable(function):
            raise FstcrfError(f"feedback must be 'f1', 'accuracy' or a callable, got {function!r}")
        self.function = function
        self.labels = list(labels)
        self._sentences = sentences
        self.calls = 0

    def gains(self, indices: np.ndarray, label_ids: np.ndarray) -> np.ndarray:
        """float [K, B], as :meth:`SimulatedFeedback.gains`."""
        lengths = [len(self._sentences[i]) for i in indices]
        cuts = np.cumsum(lengths)[:-1]
        gains = np.empty((len(label_ids), len(indices)))
        for k, draw in enumerate(label_ids):
            for b, (index, ids) in enumerate(zip(indices, np.split(np.asarray(draw), cuts))):
                gains[k, b] = self._call(int(index), [self.labels[i] for i in ids])
        return gains

    def _call(self, index: int, labels: list[str]) -> float:
        try:
            value = self.function(self._sentences[index], labels)
        except Exception as error:  # the user's code: report it with the sentence
            raise FeedbackError(
                f"the feedback function raised {type(error).__name__}: {error} (training sentence {index})"
            ) from error
        self.calls += 1
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise FeedbackError(
                f"the feedback function returned {type(value).__name__} {value!r} for "
                f"training sentence {index}; expected a number in [0, 1]"
            )
        if not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise FeedbackError(
                f"the feedback function returned {value!r} for training sentence "
                f"{index}; expected a finite number in [0, 1]"
            )
        return float(value)
