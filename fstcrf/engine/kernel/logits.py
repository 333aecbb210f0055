"""Logits decoded in one call (csrc/fstcrf_logits.h): each token's label
log-probabilities lifted to a topology's states, and each sentence's best path."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fstcrf._kernel import ffi, lib
from fstcrf.engine.kernel.buffers import FC_OK, check_status, input_pointer, output_pointer
from fstcrf.engine.kernel.chain import Workspace, kept_scores, topology_graph

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
    """What fd_decode reads of a topology, made once (:func:`topology_parts`): its
    graph, the scores of no transitions (its open start and final states), and its
    state labels int32 [S]."""

    def __init__(self, topology: Topology):
        self.topology = topology
        self.graph = topology_graph(topology)
        self.scores = kept_scores(topology.no_transitions, topology.open_start, topology.open_final)
        self.state_label = input_pointer(topology.state_label)
        self.num_labels = topology.num_labels


#: The TopologyParts of the topologies in use, by id (each keeps its topology, so that
#: no other takes its id); at most PARTS_KEPT.
_parts: dict[int, TopologyParts] = {}
PARTS_KEPT = 64


def topology_parts(topology: Topology) -> TopologyParts:
    """The :class:`TopologyParts` of ``topology``, made once while it is among the last
    PARTS_KEPT (a topology's arrays never change)."""
    parts = _parts.get(id(topology))
    if parts is None or parts.topology is not topology:
        if len(_parts) >= PARTS_KEPT:
            _parts.clear()
        parts = _parts[id(topology)] = TopologyParts(topology)
    return parts


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
