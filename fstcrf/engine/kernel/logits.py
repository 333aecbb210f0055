"""Logits decoded in one call (csrc/fstcrf_logits.h): each token's label
log-probabilities lifted to a topology's states, and each sentence's best path."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fstcrf._kernel import ffi, lib
from fstcrf.engine.kernel.buffers import FC_OK, check_status, input_pointer, output_pointer
from fstcrf.engine.kernel.chain import kept_scores, thread_scratch, topology_graph

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
    start and final states), their Scores, and its state labels int32 [S]; and the
    :class:`Sentences` of one sentence of each length in use (:meth:`sentence`)."""

    def __init__(
        self,
        topology: Topology,
        transitions: np.ndarray | None = None,
        start: np.ndarray | None = None,
        final: np.ndarray | None = None,
    ):
        self.topology = topology
        self.graph = topology_graph(topology).struct
        self.transitions = topology.no_transitions if transitions is None else transitions
        self.start = topology.open_start if start is None else start
        self.final = topology.open_final if final is None else final
        self.scores = kept_scores(self.transitions, self.start, self.final)
        self.state_label = input_pointer(topology.state_label)
        self.num_labels, self.num_states = topology.num_labels, topology.num_states
        self.sentences: dict[int, Sentences] = {}

    def sentence(self, length: int) -> Sentences:
        """The :class:`Sentences` of one sentence of ``length`` tokens (>= 1), made once
        while it is among the last SENTENCE_LENGTHS_KEPT; InfeasibleError naming a
        length the topology allows no sequence of."""
        sentences = self.sentences.get(length)
        if sentences is None:
            if len(self.sentences) >= SENTENCE_LENGTHS_KEPT:
                self.sentences.clear()
            offsets = np.array([0, length], dtype=np.int64)
            sentences = self.sentences[length] = Sentences(self.topology, offsets[1:], offsets)
        return sentences


class Sentences:
    """What fd_decode is given with sentences of ``lengths`` int64 [B] (each >= 1)
    cut at ``offsets`` int64 [B+1] (from 0): both, made read-only, a pointer to the
    offsets, and the doubles and ints of their workspace; InfeasibleError naming the
    sentences the topology allows no sequence of."""

    def __init__(self, topology: Topology, lengths: np.ndarray, offsets: np.ndarray):
        topology.check_lengths(lengths)
        offsets.flags.writeable = lengths.flags.writeable = False
        self.lengths, self.offsets, self.offsets_pointer = lengths, offsets, input_pointer(offsets)
        self.t_max = max(lengths.tolist())
        S, E = topology.num_states, topology.num_edges
        self.doubles = lib.fc_workspace_doubles(S, E, 1, self.t_max, 1)
        self.ints = lib.fc_workspace_ints(S, E, self.t_max, 1)


#: The TopologyParts of the topologies in use, by id (each keeps its topology, so that
#: no other takes its id); at most PARTS_KEPT.
_parts: dict[int, TopologyParts] = {}
PARTS_KEPT = 64
#: Sentence lengths whose Sentences a TopologyParts keeps.
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


#: Bound once: the names fd_decode's caller reads at every call.
fd_decode, from_buffer = lib.fd_decode, ffi.from_buffer


def decode(
    parts: TopologyParts, sentences: Sentences, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """fd_decode: each token's label log-probabilities (as :func:`label_log_probs`
    writes them), emissions float [N, S], then each sentence's best path, int32 [N],
    and its score, float [B], as :func:`~fstcrf.engine.kernel.chain.viterbi` writes
    them, on the topology and scores of ``parts``; the logit ``rows`` float64 [N, L]
    (C-contiguous and aligned, L the topology's labels and N the tokens of the
    ``sentences``, as the caller guarantees: what it guarantees is taken as it is,
    for the checks of input_pointer and output_pointer would cost as much as the
    kernel's work on one sentence).  None (nothing decoded) if a logit is NaN or
    infinite."""
    lengths = sentences.lengths
    emit = np.empty((len(rows), parts.num_states))
    path, score = np.empty(len(rows), dtype=np.int32), np.empty(len(lengths))
    status = fd_decode(
        parts.graph,
        parts.scores.struct,
        len(rows),
        parts.num_labels,
        from_buffer("double[]", rows),
        parts.state_label,
        len(lengths),
        sentences.offsets_pointer,
        from_buffer("double[]", emit),  # new arrays, writable (not asked: the keyword costs as much)
        from_buffer("int32_t[]", path),
        from_buffer("double[]", score),
        thread_scratch(sentences.doubles, sentences.ints, sentences.t_max, 1).struct,
    )
    if status == FC_OK:
        return emit, path, score
    if status == lib.FD_NOT_FINITE:
        return None
    check_status(status, "viterbi")
    return emit, path, score
