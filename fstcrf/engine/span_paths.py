"""Best paths inside and outside a set of allowed states on spans of tokens
(the kernel's ``fc_span_viterbi``), for confidence checks over spans: a span's
inside score against its outside score is how sure the model is of the span's
states (docs/mce.md).  K spans of a batch of N tokens over S states give

    span_viterbi      best score inside [K] and outside [K], and both paths
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np

from fstcrf.engine import kernel
from fstcrf.engine.inference import (
    ChunkStructs,
    Potentials,
    check_flag,
    check_potentials,
    lengths_to_offsets,
    run_chunks,
)
from fstcrf.errors import LabelError, ShapeError


def _check_span_column(name: str, values) -> np.ndarray:
    """int64 [K] from a 1-D integer array (any dtype when empty)."""
    array = np.asarray(values)
    if array.ndim != 1 or not (np.issubdtype(array.dtype, np.integer) or array.size == 0):
        raise ShapeError(f"{name} must be a 1-D integer array, got dtype {array.dtype} and shape {array.shape}")
    return array.astype(np.int64)


def _segment_rows(offsets: np.ndarray, order: np.ndarray) -> np.ndarray:
    """int64 [R]: the rows of the segments offsets[k] .. offsets[k+1]-1 (offsets
    int [K+1]) one after another, segments taken in ``order`` int [K]."""
    lengths = np.diff(offsets)[order]
    new_starts = lengths_to_offsets(lengths)[:-1]
    return np.repeat(offsets[:-1][order] - new_starts, lengths) + np.arange(lengths.sum(), dtype=np.int64)


@dataclass
class SpanViterbi:
    """Per span, the best scores (and paths) of paths that keep to its allowed states and of
    paths that leave them somewhere (:func:`span_viterbi`)."""

    inside: np.ndarray  # [K] best score of a path allowed at every token of span k (-inf if none)
    outside: np.ndarray  # [K] best score of a path not allowed at some token of span k (-inf if none)
    inside_paths: np.ndarray | None  # int32 [R] such paths over whole sentences, -1 if none (None if not requested)
    outside_paths: np.ndarray | None  # int32 [R]
    path_offsets: np.ndarray  # int64 [K+1] span k's paths are rows path_offsets[k] .. path_offsets[k+1]-1

    def span_paths(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """int32 [T] the inside and the outside path of span k (T = length of its sentence)."""
        rows = slice(int(self.path_offsets[k]), int(self.path_offsets[k + 1]))
        return cast(np.ndarray, self.inside_paths)[rows], cast(np.ndarray, self.outside_paths)[rows]


def span_viterbi(
    pot: Potentials, span_sentence, span_first, span_length, allowed, paths: bool = True, threads: int = 1
) -> SpanViterbi:
    """Best paths inside and outside a set of allowed states on each of K spans.

    Span k covers tokens span_first[k] .. span_first[k] + span_length[k] - 1 of
    sentence span_sentence[k] (int [K] each; tokens counted within the sentence).
    ``allowed`` is bool [sum(span_length), S]: the rows of span k, one per token,
    follow those of span k-1.  Spans may overlap and come in any order; results
    follow the given order (``paths=False`` leaves the paths None).  Cost: O(T E)
    per sentence with a span plus O(span_length E) per span."""
    check_potentials(pot, "span_viterbi")
    paths = check_flag(paths, "paths")
    sentence = _check_span_column("span_sentence", span_sentence)
    first = _check_span_column("span_first", span_first)
    length = _check_span_column("span_length", span_length)
    K, S = len(sentence), pot.topology.num_states
    if len(first) != K or len(length) != K:
        raise ShapeError(
            f"span_sentence, span_first and span_length must have one entry per span, "
            f"got {K}, {len(first)} and {len(length)} entries"
        )
    bad = np.flatnonzero((sentence < 0) | (sentence >= pot.num_sequences))
    if len(bad):
        raise LabelError(f"span {bad[0]}: sentence {sentence[bad[0]]} is out of range [0, {pot.num_sequences})")
    bad = np.flatnonzero(length < 1)
    if len(bad):
        raise ShapeError(f"span {bad[0]} has length {length[bad[0]]}; a span needs at least one token")
    sentence_length = pot.lengths[sentence]
    bad = np.flatnonzero((first < 0) | (first > sentence_length - length))
    if len(bad):
        k = bad[0]
        raise ShapeError(
            f"span {k} covers tokens {first[k]} .. {first[k] + length[k] - 1} of sentence "
            f"{sentence[k]}, which has tokens 0 .. {sentence_length[k] - 1}"
        )
    allowed = np.asarray(allowed)
    if allowed.dtype != np.bool_ or allowed.shape != (int(length.sum()), S):
        raise ShapeError(
            f"allowed must be a bool array of shape ({int(length.sum())}, {S}), one row per span "
            f"token, got dtype {allowed.dtype} and shape {allowed.shape}"
        )
    # the kernel takes spans sorted by sentence; results go back to the caller's order
    order = np.argsort(sentence, kind="stable")
    rank = np.argsort(order)  # position of each span in the sorted order
    sorted_allowed = allowed[_segment_rows(lengths_to_offsets(length), order)].view(np.uint8)
    sentence, first, length = sentence[order], first[order], length[order]
    mask_offsets = lengths_to_offsets(length)
    path_offsets = lengths_to_offsets(sentence_length[order])
    inside, outside = np.empty(K), np.empty(K)
    inside_paths = np.empty(path_offsets[-1], dtype=np.int32) if paths else None
    outside_paths = np.empty(path_offsets[-1], dtype=np.int32) if paths else None

    def job(first_sentence: int, last_sentence: int):
        lo, hi = (int(i) for i in np.searchsorted(sentence, [first_sentence, last_sentence]))
        if lo == hi:
            return
        chunk = ChunkStructs(pot, first_sentence, last_sentence, k=3)
        path_rows = slice(path_offsets[lo], path_offsets[hi])
        kernel.span_viterbi(
            chunk.graph,
            chunk.scores,
            chunk.batch,
            (sentence[lo:hi] - first_sentence).astype(np.int32),
            first[lo:hi],
            length[lo:hi],
            mask_offsets[lo : hi + 1] - mask_offsets[lo],
            sorted_allowed[mask_offsets[lo] : mask_offsets[hi]],
            path_offsets[lo : hi + 1] - path_offsets[lo],
            inside[lo:hi],
            outside[lo:hi],
            inside_paths[path_rows] if inside_paths is not None else None,
            outside_paths[path_rows] if outside_paths is not None else None,
            chunk.workspace,
        )

    run_chunks(pot, threads, job)
    path_rows = _segment_rows(path_offsets, rank)  # the sorted rows in the caller's order
    return SpanViterbi(
        inside[rank],
        outside[rank],
        inside_paths[path_rows] if inside_paths is not None else None,
        outside_paths[path_rows] if outside_paths is not None else None,
        lengths_to_offsets(sentence_length),
    )
