"""Logits decoded in one call (csrc/fstcrf_logits.h): each token's label
log-probabilities lifted to a topology's states, and each sentence's best path."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fstcrf._kernel import ffi, lib
from fstcrf.engine.kernel.buffers import FC_OK, check_status, input_pointer, output_pointer
from fstcrf.engine.kernel.chain import Workspace, kept_scores, thread_scratch, topology_graph

if TYPE_CHECKING:
    from fstcrf.engine.topology import Topology


def label_log_probs(rows: np.ndarray, state_label: np.ndarray, emit: np.ndarray) -> bool:
    """fd_label_log_probs: emit float [n, S] OVERWRITTEN with the log-softmax of each
    of the logit rows float64 [n, L], at the label state_label int32 [S] of each
    state; False (emit then undefined) if a logit is NaN or infinite."""
    return FC_OK == lib.fd_label_log_probs(
        len(rows),
        rows.shape[1],
        input_pointer(rows),
        len(state_label),
        input_pointer(state_label),
        output_pointer(emit),
    )


class TopologyParts:
    """What fd_decode reads of a topology and its scores, made once: its graph, its
    transition scores float [E] and its start and final scores float [S] (-inf where
    the topology forbids a state; all read-only; by default none, the topology's open
    start and final states), their Scores, and its state labels int32 [S]; and, by
    sentence length, what :func:`decode_sentence` passes with a sentence of that
    length (:meth:`sentence`)."""

    def __init__(
        self,
        topology: Topology,
        transitions: np.ndarray | None = None,
        start: np.ndarray | None = None,
        final: np.ndarray | None = None,
    ):
        self.topology = topology
        self.graph = topology_graph(topology)
        self.transitions = topology.no_transitions if transitions is None else transitions
        self.start = topology.open_start if start is None else start
        self.final = topology.open_final if final is None else final
        self.scores = kept_scores(self.transitions, self.start, self.final)
        self.state_label = input_pointer(topology.state_label)
        self.num_labels, self.num_states = topology.num_labels, topology.num_states
        self.sentences: dict[int, SentenceParts] = {}

    def sentence(self, length: int) -> SentenceParts:
        """The :class:`SentenceParts` of a sentence of ``length`` tokens (>= 1), made
        once while it is among the last SENTENCE_LENGTHS_KEPT."""
        parts = self.sentences.get(length)
        if parts is None:
            if len(self.sentences) >= SENTENCE_LENGTHS_KEPT:
                self.sentences.clear()
            parts = self.sentences[length] = SentenceParts(self.topology, length)
        return parts


class SentenceParts:
    """What fd_decode is given with one sentence of ``length`` tokens: its offsets
    int64 [2] (0, length) and lengths int64 [1], both read-only, a pointer to the
    offsets, and the doubles and ints of its workspace."""

    def __init__(self, topology: Topology, length: int):
        self.offsets = np.array([0, length], dtype=np.int64)
        self.offsets.flags.writeable = False
        self.lengths = self.offsets[1:]
        self.offsets_pointer = input_pointer(self.offsets)
        S, E = topology.num_states, topology.num_edges
        self.doubles, self.ints = lib.fc_workspace_doubles(S, E, 1, length, 1), lib.fc_workspace_ints(S, E, length, 1)


#: The TopologyParts of the topologies in use, by id (each keeps its topology, so that
#: no other takes its id); at most PARTS_KEPT.
_parts: dict[int, TopologyParts] = {}
PARTS_KEPT = 64
#: Sentence lengths whose SentenceParts a TopologyParts keeps.
SENTENCE_LENGTHS_KEPT = 256


def topology_parts(topology: Topology) -> TopologyParts:
    """The :class:`TopologyParts` of ``topology`` without transition scores, made once
    while it is among the last PARTS_KEPT (a topology's arrays never change)."""
    parts = _parts.get(id(topology))
    if parts is None or parts.topology is not topology:
        if len(_parts) >= PARTS_KEPT:
            _parts.clear()
        parts = _parts[id(topology)] = TopologyParts(topology)
    return parts


def decode_sentence(
    parts: TopologyParts, sentence: SentenceParts, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """fd_decode of one sentence, the logit rows float64 [T, L] (C-contiguous and
    aligned, T >= 1 and L the topology's labels, as the caller guarantees; and
    ``sentence`` is ``parts.sentence(T)``), on the topology and scores of ``parts``:
    emissions float [T, S], the best path int32 [T] and its score float [1]; None
    (nothing decoded) if a logit is NaN or infinite; InfeasibleError if the
    sentence has no path."""
    T = len(rows)
    emit, path, score = np.empty((T, parts.num_states)), np.empty(T, dtype=np.int32), np.empty(1)
    status = lib.fd_decode(
        parts.graph.struct,
        parts.scores.struct,
        T,
        parts.num_labels,
        ffi.from_buffer("double[]", rows),
        parts.state_label,
        1,
        sentence.offsets_pointer,
        # new arrays, writable: not asked again (its keyword costs as much as the view)
        ffi.from_buffer("double[]", emit),
        ffi.from_buffer("int32_t[]", path),
        ffi.from_buffer("double[]", score),
        thread_scratch(sentence.doubles, sentence.ints, T, 1).struct,
    )
    if status == FC_OK:
        return emit, path, score
    if status == lib.FD_NOT_FINITE:
        return None
    check_status(status, "viterbi")
    return emit, path, score


def decode_rows(
    parts: TopologyParts,
    rows: np.ndarray,
    offsets: np.ndarray,
    emit: np.ndarray,
    path: np.ndarray,
    score: np.ndarray,
    workspace: Workspace,
) -> bool:
    """fd_decode: :func:`label_log_probs` into emit float [n, S], then the best path
    int32 [n] and its score float [b] of each sentence cut at offsets int64 [b+1]
    (from 0), as :func:`~fstcrf.engine.kernel.chain.viterbi` writes them, on the
    topology of ``parts``.  Every array is C-contiguous of the dtype given: rows
    float64 [n, L], and the outputs new arrays of the caller's.  False (nothing
    decoded) if a logit is NaN or infinite; InfeasibleError if a sentence has no path."""
    status = lib.fd_decode(
        parts.graph.struct,
        parts.scores.struct,
        len(rows),
        parts.num_labels,
        # what the caller guarantees (see above) taken as it is: the checks of input_pointer and
        # output_pointer cost as much as the kernel's work on one sentence
        ffi.from_buffer("double[]", rows),
        parts.state_label,
        len(offsets) - 1,
        ffi.from_buffer("int64_t[]", offsets),
        ffi.from_buffer("double[]", emit, require_writable=True),
        ffi.from_buffer("int32_t[]", path, require_writable=True),
        ffi.from_buffer("double[]", score, require_writable=True),
        workspace.struct,
    )
    if status == FC_OK:
        return True
    if status == lib.FD_NOT_FINITE:
        return False
    check_status(status, "viterbi")
    return True
