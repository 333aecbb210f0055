"""Minimum classification error training with a segment-level F-score (MCE-F).

Suzuki, McDermott & Isozaki (2006), *Training Conditional Random Fields with
Multivariate Evaluation Measures*, paper 003 in ../shared/papers.  The
objective is a smoothed version of 1 - F over the chunks of the training
set, with the discriminant g(y) = theta . Phi(y) of the CRF and psi = infinity
(hard maxima in the misclassification measure).

Segments
--------
A segment is a chunk of IOB2 labels: tokens a..b of type X.  It is *output*
by a label sequence y when y_a is its first label (B-X, or the I-X that opens
it in an ill-formed sequence), y_{a+1..b} = I-X and y_{b+1} != I-X: a box of
allowed labels per token over a..b+1.  For a box, span Viterbi
(:func:`fstcrf.engine.span_paths.span_viterbi`) gives

    inside  = max over paths that keep to the box of g(y)
    outside = max over paths that leave it somewhere of g(y)

so Viterbi decoding outputs the segment iff inside > outside.

Objective
---------
With l(d) = 1 / (1 + exp(-alpha d - beta)) (alpha = 1, beta = 0 as in the
paper), every gold segment s has d_s = outside - inside (> 0 when decoding
misses it), and the candidate false positives are the segments of the best
incorrect output y~ (the Viterbi path, or the second best when Viterbi is
gold) that are not gold, each with d_s = inside - outside (> 0 when decoding
outputs it).  Then

    TP = sum_gold (1 - l(d_s))    FN = sum_gold l(d_s)    FP = sum_candidates l(d_s)
    r  = (gamma^2 FN + FP) / ((1 + gamma^2) TP)

and F_gamma = 1 / (1 + r), so minimising r maximises the smoothed F-score.
The gradient of d_s is Phi(best path of the winning side) - Phi(best path of
the other side); all segments of a block are folded into per-token state
weights and counted by one pass of the feature loops.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fstcrf.errors import FstcrfError, LabelError
from fstcrf.corpus.schemes import split_tag
from fstcrf.engine.inference import kbest
from fstcrf.engine.span_paths import span_viterbi
from fstcrf.engine.threads import run_parallel

#: Label kinds of the IOB2 scheme.
OUTSIDE, BEGIN, INSIDE = 0, 1, 2


@dataclass
class Scheme:
    """How IOB2 labels [L] read: ``kind`` int8 [L] (OUTSIDE, BEGIN or INSIDE), ``chunk_type``
    int32 [L] (-1 for O) and ``inside_label`` int32 [X] (the label I-X of each type, or -1)."""

    kind: np.ndarray
    chunk_type: np.ndarray
    inside_label: np.ndarray

    @classmethod
    def from_labels(cls, labels) -> Scheme:
        """Raise LabelError for a label that is not O, B-X or I-X."""
        kind = np.empty(len(labels), dtype=np.int8)
        chunk_type = np.full(len(labels), -1, dtype=np.int32)
        types: dict[str, int] = {}
        for index, label in enumerate(labels):
            prefix, name = split_tag(label)
            if label == "O":
                kind[index] = OUTSIDE
            elif prefix in ("B", "I") and name:
                kind[index] = BEGIN if prefix == "B" else INSIDE
                chunk_type[index] = types.setdefault(name, len(types))
            else:
                raise LabelError(
                    f"F-score training reads chunks of IOB2 labels (O, B-X, I-X); label {label!r} is none of these"
                )
        inside_label = np.full(len(types), -1, dtype=np.int32)
        inside = np.flatnonzero(kind == INSIDE)
        inside_label[chunk_type[inside]] = inside
        return cls(kind, chunk_type, inside_label)


@dataclass
class Segments:
    """Chunks: sentence int64 [K], first and last token int64 [K] (within the
    sentence, inclusive), chunk type int32 [K]; sorted by sentence, then first."""

    sentence: np.ndarray
    first: np.ndarray
    last: np.ndarray
    chunk_type: np.ndarray

    def __len__(self) -> int:
        return len(self.sentence)

    def keys(self, offsets: np.ndarray, num_types: int) -> np.ndarray:
        """int64 [K]: a number that identifies each segment (position, end and type)."""
        start = offsets[self.sentence] + self.first
        return (start * (offsets[-1] + 1) + self.last - self.first) * num_types + self.chunk_type

    def select(self, mask: np.ndarray | slice) -> Segments:
        return Segments(self.sentence[mask], self.first[mask], self.last[mask], self.chunk_type[mask])


def read_segments(label_ids: np.ndarray, offsets: np.ndarray, scheme: Scheme) -> Segments:
    """The chunks of label sequences int [N] cut into sentences at offsets [B+1], read
    like conlleval reads IOB2: a chunk starts at B-X, or at an I-X that does not
    continue a chunk of type X, and continues over the I-X that follow."""
    kind = scheme.kind[label_ids]
    chunk_type = scheme.chunk_type[label_ids]
    N = len(label_ids)
    sentence_start = np.zeros(N, dtype=bool)
    sentence_start[offsets[:-1]] = True
    in_chunk = kind != OUTSIDE
    continues = np.zeros(N, dtype=bool)  # token t continues the chunk of token t-1
    continues[1:] = (kind[1:] == INSIDE) & in_chunk[:-1] & (chunk_type[1:] == chunk_type[:-1])
    continues &= ~sentence_start
    starts = np.flatnonzero(in_chunk & ~continues)
    # a chunk ends before the next token that does not continue it
    breaks = np.flatnonzero(~continues)
    ends = np.append(breaks, N)[np.searchsorted(breaks, starts, side="right")] - 1
    sentence = np.searchsorted(offsets, starts, side="right") - 1
    return Segments(sentence.astype(np.int64), starts - offsets[sentence], ends - offsets[sentence], chunk_type[starts])


def segment_boxes(
    segments: Segments, label_ids: np.ndarray, offsets: np.ndarray, scheme: Scheme, num_labels: int
) -> tuple[np.ndarray, np.ndarray]:
    """(span lengths int64 [K], allowed labels bool [R, L]): the box of each segment over
    its tokens and the token after it, rows of a segment consecutive; label_ids [N] are
    the sequences the segments were read from."""
    lengths = segments.last - segments.first + 1
    sentence_end = offsets[segments.sentence + 1]
    start = offsets[segments.sentence] + segments.first
    has_next = start + lengths < sentence_end
    span_lengths = lengths + has_next
    R = int(span_lengths.sum())
    row_start = np.cumsum(span_lengths) - span_lengths
    allowed = np.zeros((R, num_labels), dtype=bool)
    # the segment's own tokens: exactly their labels
    inside_rows = np.repeat(row_start, lengths) + _ranges(lengths)
    allowed[inside_rows, label_ids[np.repeat(start, lengths) + _ranges(lengths)]] = True
    # the token after it: anything but I-X
    after = row_start[has_next] + lengths[has_next]
    allowed[after] = True
    closing = scheme.inside_label[segments.chunk_type[has_next]]
    allowed[after[closing >= 0], closing[closing >= 0]] = False
    return span_lengths, allowed


def _ranges(lengths: np.ndarray) -> np.ndarray:
    """0..n-1 for each n of lengths, concatenated."""
    total = int(lengths.sum())
    return np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)


@dataclass
class BlockSpans:
    """The segments of one block of sentences and their span Viterbi results."""

    first: int  # the block's first sentence
    segments: Segments  # [K] gold segments, then candidate false positives (block sentences)
    rows: np.ndarray  # int64 [R]: block token row of each path entry
    span_of_row: np.ndarray  # int64 [R]: the span each path entry belongs to
    plus_paths: np.ndarray  # int32 [R]: the side d grows with (see the module doc)
    minus_paths: np.ndarray  # int32 [R]
    d: np.ndarray  # float [K]
    gold: np.ndarray  # bool [K]: a gold segment (else a candidate false positive)


class SegmentFScore:
    """The MCE-F objective r(theta) of a training set (a :class:`fstcrf.learn.train.Problem`
    without the per-sentence methods); ``last_counts`` holds TP, FN, FP of the last
    evaluation.  The model's topology must be unconstrained and its labels IOB2."""

    def __init__(
        self, scorer, encoded, gold_states: np.ndarray, alpha: float = 1.0, beta: float = 0.0, gamma: float = 1.0
    ):
        if scorer.constrained is not None:
            raise FstcrfError(
                "F-score training does not support a training grammar; decode under it instead (tag --grammar)"
            )
        if np.any(gold_states < 0):
            raise FstcrfError("F-score training needs fully labelled sentences")
        self.scorer = scorer
        self.encoded = encoded
        self.topology = scorer.topology
        self.scheme = Scheme.from_labels(self.topology.labels)
        self.alpha, self.beta, self.gamma = float(alpha), float(beta), float(gamma)
        self.num_weights = scorer.num_weights
        self.num_sequences = encoded.num_sequences
        self.gold_states = gold_states
        self.gold_labels = self.topology.state_label[gold_states]
        self.gold_segments = read_segments(self.gold_labels, encoded.offsets, self.scheme)
        if len(self.gold_segments) == 0:
            raise LabelError("F-score training needs chunks in the training data; it has none")
        self._num_types = len(self.scheme.inside_label)
        self._gold_keys = np.sort(self.gold_segments.keys(encoded.offsets, self._num_types))
        self._plans = scorer.plans(encoded)
        self._edge_table = self.topology.edge_ids
        self.last_counts = (0.0, 0.0, 0.0)

    # -- pass 1: segments and their margins ---------------------------------------------
    def block_spans(self, theta: np.ndarray, first: int, last: int) -> BlockSpans:
        encoded, offsets = self.encoded, self.encoded.offsets
        pot = self.scorer.potentials(encoded, theta, first, last)
        local_offsets = offsets[first : last + 1] - offsets[first]
        rival, has_rival = best_incorrect(pot, self.gold_states[encoded.token_rows(first, last)])
        rival_labels = self.topology.state_label[np.where(rival >= 0, rival, 0)]
        candidates = read_segments(rival_labels, local_offsets, self.scheme)
        candidates = candidates.select(has_rival[candidates.sentence])
        candidate_keys = Segments(
            candidates.sentence + first, candidates.first, candidates.last, candidates.chunk_type
        ).keys(offsets, self._num_types)
        candidates = candidates.select(~_sorted_contains(self._gold_keys, candidate_keys))

        lo, hi = np.searchsorted(self.gold_segments.sentence, [first, last])
        gold_segments = self.gold_segments.select(slice(lo, hi))
        gold_segments = Segments(
            gold_segments.sentence - first, gold_segments.first, gold_segments.last, gold_segments.chunk_type
        )
        gold_lengths, gold_allowed = segment_boxes(
            gold_segments,
            self.gold_labels[encoded.token_rows(first, last)],
            local_offsets,
            self.scheme,
            self.topology.num_labels,
        )
        cand_lengths, cand_allowed = segment_boxes(
            candidates, rival_labels, local_offsets, self.scheme, self.topology.num_labels
        )
        is_gold = np.concatenate([np.ones(len(gold_segments), bool), np.zeros(len(candidates), bool)])
        segments = Segments(
            *(
                np.concatenate([getattr(gold_segments, name), getattr(candidates, name)])
                for name in ("sentence", "first", "last", "chunk_type")
            )
        )
        span_length = np.concatenate([gold_lengths, cand_lengths])
        allowed_states = np.concatenate([gold_allowed, cand_allowed])[:, self.topology.state_label]
        result = span_viterbi(pot, segments.sentence, segments.first, span_length, allowed_states)
        assert result.inside_paths is not None and result.outside_paths is not None  # paths=True

        path_lengths = np.diff(result.path_offsets)
        gold_rows = np.repeat(is_gold, path_lengths)
        d = np.where(is_gold, result.outside - result.inside, result.inside - result.outside)
        plus = np.where(gold_rows, result.outside_paths, result.inside_paths)
        minus = np.where(gold_rows, result.inside_paths, result.outside_paths)
        span_of_row = np.repeat(np.arange(len(d)), path_lengths)
        rows = local_offsets[segments.sentence][span_of_row] + _ranges(path_lengths)
        return BlockSpans(first, segments, rows, span_of_row, plus, minus, d, is_gold)

    # -- the objective --------------------------------------------------------------------
    def loss_and_gradient(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """r(theta) (see the module doc) and its gradient float [D]."""
        import scipy.special

        blocks = [
            block
            for blocks in run_parallel(
                lambda plan: [self.block_spans(theta, first, last) for first, last in plan], self._plans
            )
            for block in blocks
        ]
        d = np.concatenate([block.d for block in blocks])
        gold = np.concatenate([block.gold for block in blocks])
        smoothed = scipy.special.expit(self.alpha * d + self.beta)
        true_positives = float(np.sum(1.0 - smoothed[gold]))
        false_negatives = float(np.sum(smoothed[gold]))
        false_positives = float(np.sum(smoothed[~gold]))
        self.last_counts = (true_positives, false_negatives, false_positives)
        g2 = self.gamma**2
        numerator = g2 * false_negatives + false_positives
        denominator = (1.0 + g2) * true_positives
        if denominator <= 0.0:
            raise FstcrfError(
                "F-score training: every gold chunk is missed with certainty "
                "(smoothed TP = 0); start from trained weights"
            )
        dr_dl = np.where(gold, g2 / denominator + (1.0 + g2) * numerator / denominator**2, 1.0 / denominator)
        weight = dr_dl * self.alpha * smoothed * (1.0 - smoothed)
        weight[~np.isfinite(d)] = 0.0

        span_weights = np.split(weight, np.cumsum([len(block.d) for block in blocks])[:-1])
        by_first = {block.first: (block, weights) for block, weights in zip(blocks, span_weights)}

        def accumulate(plan):
            part = np.zeros(self.num_weights)
            for first, last in plan:
                self._add_block_gradient(*by_first[first], last, part)
            return part

        gradient = np.sum(run_parallel(accumulate, self._plans), axis=0)
        return numerator / denominator, gradient

    def _add_block_gradient(self, block: BlockSpans, weights: np.ndarray, last: int, out: np.ndarray) -> None:
        """Add sum over the spans of block (sentences block.first .. last-1) of
        weights [K] * (Phi(plus path) - Phi(minus path)) to out [D]."""
        keep = weights[block.span_of_row] != 0.0
        if not keep.any():
            return
        S = self.topology.num_states
        F = self.scorer.features.num_features
        first = block.first
        n = int(self.encoded.offsets[last] - self.encoded.offsets[first])
        row_weight = weights[block.span_of_row][keep]
        rows, plus, minus = block.rows[keep], block.plus_paths[keep], block.minus_paths[keep]
        state_weights = np.bincount(rows * S + plus, weights=row_weight, minlength=n * S) - np.bincount(
            rows * S + minus, weights=row_weight, minlength=n * S
        )
        self.scorer.features.accumulate(self.encoded.tokens(first, last), state_weights.reshape(n, S), out[:F])
        # transitions: consecutive entries of one span's (whole-sentence) paths, each
        # into a token of its transition class
        spans = block.span_of_row[keep]
        linked = np.flatnonzero(spans[1:] == spans[:-1]) + 1
        token_class = (
            None
            if self.encoded.token_class is None
            else self.encoded.token_class[self.encoded.offsets[first] + rows[linked]]
        )
        layout = self.scorer.transitions
        counts = layout.path_counts(
            self._edge_table[plus[linked - 1], plus[linked]], token_class, row_weight[linked]
        ) - layout.path_counts(self._edge_table[minus[linked - 1], minus[linked]], token_class, row_weight[linked])
        out[F:] += layout.gradient(counts)


def best_incorrect(pot, gold_states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The best incorrect output of each sentence of potentials ``pot`` (B sentences, N
    tokens) given the gold states int [N]: (states int32 [N], bool [B] whether the sentence
    has one).  It is the Viterbi path, or the second best path when Viterbi is gold (the
    paper's A* search for the maximum incorrect output, here by 2-best Viterbi)."""
    best = kbest(pot, 2)
    viterbi_is_gold = np.minimum.reduceat((best.paths[0] == gold_states).astype(np.int8), pot.offsets[:-1]) == 1
    rival = np.where(np.repeat(viterbi_is_gold, pot.lengths), best.paths[1], best.paths[0])
    return rival, ~viterbi_is_gold | (best.found >= 2)


def _sorted_contains(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """bool [len(keys)]: whether each key is in the sorted array."""
    position = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return sorted_keys[position] == keys
