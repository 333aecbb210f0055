"""The chain and joint dynamic programs (csrc/fstcrf_kernel.h): the graph, scores,
batch, workspace and joint structs and one function per DP."""

from __future__ import annotations


import threading
import weakref
from typing import TYPE_CHECKING

import numpy as np

from fstcrf._kernel import ffi, lib
from fstcrf.engine.kernel.buffers import (
    KernelBuffers,
    check_status,
    input_pointer,
    optional_output,
    output_pointer,
    own_lines,
)

if TYPE_CHECKING:
    from fstcrf.engine.topology import Topology


class Graph(KernelBuffers):
    """fc_graph: a topology's CSR arrays (in_ptr, edge_src, out_ptr, out_dst,
    out_edge, int32; see fstcrf.engine.topology)."""

    def __init__(self, topology: Topology):
        super().__init__()
        graph = self.struct = ffi.new("fc_graph *")
        graph.num_states = topology.num_states
        graph.num_edges = topology.num_edges
        graph.in_ptr = self.pin(topology.in_ptr)
        graph.in_src = self.pin(topology.edge_src)
        graph.out_ptr = self.pin(topology.out_ptr)
        graph.out_dst = self.pin(topology.out_dst)
        graph.out_edge = self.pin(topology.out_edge)


class Scores(KernelBuffers):
    """fc_scores: transition scores float [E] (one class) or [C, E] (by the class of
    the token entered), start and final scores float [S] (-inf: not allowed), and
    optionally each state's emission class int32 [S] (a hint: the forward-backward
    takes one exp for equal emission scores of a class; the same results)."""

    def __init__(
        self, transitions: np.ndarray, start: np.ndarray, final: np.ndarray, emit_class: np.ndarray | None = None
    ):
        super().__init__()
        scores = self.struct = ffi.new("fc_scores *")
        scores.trans = self.pin(transitions)
        scores.start = self.pin(start)
        scores.final = self.pin(final)
        scores.num_classes = 1 if transitions.ndim == 1 else len(transitions)
        if emit_class is not None:
            scores.emit_class = self.pin(emit_class)
            scores.num_emit_classes = int(emit_class.max()) + 1 if len(emit_class) else 1


class Batch(KernelBuffers):
    """fc_batch: sentences cut at offsets int64 [b+1] (from 0), scored by emissions
    float [n, S], with token classes int32 [n] (None: every token of class 0)."""

    def __init__(self, offsets: np.ndarray, emissions: np.ndarray, token_class: np.ndarray | None):
        super().__init__()
        batch = self.struct = ffi.new("fc_batch *")
        batch.num_sequences = len(offsets) - 1
        batch.offsets = self.pin(offsets)
        batch.emit = self.pin(emissions)
        if token_class is not None:
            batch.token_class = self.pin(token_class)


class Workspace(KernelBuffers):
    """fc_workspace: scratch of num_doubles doubles and num_ints int32 for sentences
    of up to t_max tokens and k paths."""

    def __init__(self, num_doubles: int, num_ints: int, t_max: int, k: int = 1):
        super().__init__()
        workspace = self.struct = ffi.new("fc_workspace *")
        workspace.t_max = t_max
        workspace.k = k
        # a thread's own: on cache lines no other thread's scratch shares
        workspace.doubles = self.pin(own_lines(num_doubles))
        workspace.ints = self.pin(own_lines(num_ints, np.int32))


def chain_workspace(topology: Topology, num_classes: int, t_max: int, k: int = 1) -> Workspace:
    """The workspace of the chain programs below on a topology with C = num_classes."""
    S, E = topology.num_states, topology.num_edges
    return Workspace(
        lib.fc_workspace_doubles(S, E, num_classes, t_max, k), lib.fc_workspace_ints(S, E, t_max, k), t_max, k
    )


#: The Graph of each topology in use (a topology's arrays never change).
_graphs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def topology_graph(topology: Topology) -> Graph:
    """The :class:`Graph` of ``topology``, made once per topology."""
    graph = _graphs.get(topology)
    if graph is None:
        graph = _graphs[topology] = Graph(topology)
    return graph


#: The Scores of the read-only transition tables in use, by the table's id: (a weak
#: reference to the table, its start and final scores, the Scores); at most SCORES_KEPT.
_scores: dict[int, tuple[weakref.ref, np.ndarray, np.ndarray, Scores]] = {}
SCORES_KEPT = 64


def kept_scores(transitions: np.ndarray, start: np.ndarray, final: np.ndarray) -> Scores:
    """The :class:`Scores` of read-only score arrays (the potentials a model makes), made
    once per transition table while it lives; for writable arrays a new one."""
    if transitions.flags.writeable or start.flags.writeable or final.flags.writeable:
        return Scores(transitions, start, final)
    kept = _scores.get(id(transitions))
    if kept is None or kept[0]() is not transitions or kept[1] is not start or kept[2] is not final:
        if len(_scores) >= SCORES_KEPT:
            _scores.clear()
        kept = _scores[id(transitions)] = (weakref.ref(transitions), start, final, Scores(transitions, start, final))
    return kept[3]


#: Scratch workspaces of at most this many doubles are kept per thread for reuse.
SCRATCH_DOUBLES = 1 << 20
_scratch = threading.local()


def scratch_workspace(topology: Topology, num_classes: int, t_max: int, k: int = 1) -> Workspace:
    """A workspace for one call of the chain programs below, on the calling thread:
    :func:`chain_workspace`'s, kept per thread and reused by its next calls while
    it is large enough (a workspace is scratch, read by no call after its own), so
    that a call on one sentence allocates none.  Never for a caller that keeps it
    between calls or hands it to another thread."""
    S, E = topology.num_states, topology.num_edges
    return thread_scratch(
        lib.fc_workspace_doubles(S, E, num_classes, t_max, k), lib.fc_workspace_ints(S, E, t_max, k), t_max, k
    )


def thread_scratch(doubles: int, ints: int, t_max: int, k: int) -> Workspace:
    """The calling thread's kept workspace when it has ``doubles`` and ``ints``, else a
    new one (kept when it has at most SCRATCH_DOUBLES doubles)."""
    kept = getattr(_scratch, "workspace", None)
    if kept is not None and kept[0] >= doubles and kept[1] >= ints:
        workspace = kept[2]
        workspace.struct.t_max, workspace.struct.k = t_max, k
        return workspace
    workspace = Workspace(doubles, ints, t_max, k)
    if doubles <= SCRATCH_DOUBLES:
        _scratch.workspace = (doubles, ints, workspace)
    return workspace


class Joint(KernelBuffers):
    """fc_joint: component topologies [K]; component k's transition scores float
    [L_k, E_k]; start and final scores float [P]; allowed uint8 [P] joint states
    (None: all)."""

    def __init__(
        self,
        components: list[Topology] | tuple[Topology, ...],
        transitions: list[np.ndarray],
        start: np.ndarray,
        final: np.ndarray,
        allowed: np.ndarray | None,
    ):
        super().__init__()
        self._graphs = [topology_graph(topology) for topology in components]
        self._graph_array = ffi.new("fc_graph[]", [graph.struct[0] for graph in self._graphs])
        self._transitions = ffi.new("double *[]", [self.pin(table) for table in transitions])
        joint = self.struct = ffi.new("fc_joint *")
        joint.num_components = len(components)
        joint.graphs = self._graph_array
        joint.trans = self._transitions
        joint.start = self.pin(start)
        joint.final = self.pin(final)
        joint.allowed = ffi.NULL if allowed is None else self.pin(allowed)


def joint_workspace(joint: Joint, t_max: int) -> Workspace:
    """The workspace of the joint programs below for sentences of up to t_max tokens:
    scratch like :func:`scratch_workspace`'s, for one call on the calling thread."""
    return thread_scratch(
        lib.fc_joint_workspace_doubles(joint.struct, t_max), lib.fc_joint_workspace_ints(joint.struct, t_max), t_max, 1
    )


def forward_backward(
    graph: Graph,
    scores: Scores,
    batch: Batch,
    log_z: np.ndarray,
    node_marginals: np.ndarray | None,
    edge_counts: np.ndarray | None,
    workspace: Workspace,
    each_sentence: bool = False,
    allow_infeasible: bool = False,
) -> None:
    """fc_forward_backward: log Z float [b] and, unless None, node marginals float
    [n, S] and edge_counts float [E] or [C, E] ADDED TO: the expected uses of each
    edge over the batch; with ``each_sentence`` (fc_forward_backward_each) per
    sentence, [b, E] or [b, C, E].  ``allow_infeasible``: a sentence without a path
    gets log Z = -inf."""
    function = lib.fc_forward_backward_each if each_sentence else lib.fc_forward_backward
    status = function(
        graph.struct,
        scores.struct,
        batch.struct,
        output_pointer(log_z),
        optional_output(node_marginals),
        optional_output(edge_counts),
        workspace.struct,
    )
    check_status(status, "forward_backward", allow_infeasible)


def viterbi(
    graph: Graph,
    scores: Scores,
    batch: Batch,
    path: np.ndarray,
    score: np.ndarray,
    workspace: Workspace,
    allow_infeasible: bool = False,
) -> None:
    """fc_viterbi: the best path int32 [n] (states) and its score float [b]; with
    ``allow_infeasible``, a sentence without a path scores -inf (its path -1)."""
    status = lib.fc_viterbi(
        graph.struct, scores.struct, batch.struct, output_pointer(path), output_pointer(score), workspace.struct
    )
    check_status(status, "viterbi", allow_infeasible)


def max_marginals(
    graph: Graph, scores: Scores, batch: Batch, table: np.ndarray, best: np.ndarray, workspace: Workspace
) -> None:
    """fc_max_marginals: the best score of a path through each (token, state) float
    [n, S] and the best score float [b]."""
    status = lib.fc_max_marginals(
        graph.struct, scores.struct, batch.struct, output_pointer(table), output_pointer(best), workspace.struct
    )
    check_status(status, "max_marginals")


def log_tables(
    graph: Graph, scores: Scores, batch: Batch, log_alpha: np.ndarray, log_beta: np.ndarray, workspace: Workspace
) -> None:
    """fc_log_tables: the log-domain forward and backward tables float [n, S]."""
    status = lib.fc_log_tables(
        graph.struct,
        scores.struct,
        batch.struct,
        output_pointer(log_alpha),
        output_pointer(log_beta),
        workspace.struct,
    )
    check_status(status, "log_tables")


def span_viterbi(
    graph: Graph,
    scores: Scores,
    batch: Batch,
    span_sentence: np.ndarray,
    span_first: np.ndarray,
    span_length: np.ndarray,
    mask_offsets: np.ndarray,
    allowed: np.ndarray,
    path_offsets: np.ndarray,
    inside: np.ndarray,
    outside: np.ndarray,
    inside_paths: np.ndarray | None,
    outside_paths: np.ndarray | None,
    workspace: Workspace,
) -> None:
    """fc_span_viterbi on K spans sorted by sentence: span k covers tokens
    span_first[k] .. span_first[k] + span_length[k] - 1 (int64 [K]) of sentence
    span_sentence[k] (int32 [K]), and its rows of allowed states, uint8 [R, S], are
    mask_offsets[k] .. mask_offsets[k+1]-1 (int64 [K+1]).  Writes the best scores
    inside and outside float [K] and, unless None, their paths int32 [sum T], span
    k's at path_offsets[k] .. path_offsets[k+1]-1 (int64 [K+1])."""
    status = lib.fc_span_viterbi(
        graph.struct,
        scores.struct,
        batch.struct,
        len(span_sentence),
        input_pointer(span_sentence),
        input_pointer(span_first),
        input_pointer(span_length),
        input_pointer(mask_offsets),
        input_pointer(allowed),
        input_pointer(path_offsets),
        output_pointer(inside),
        output_pointer(outside),
        optional_output(inside_paths),
        optional_output(outside_paths),
        workspace.struct,
    )
    check_status(status, "span_viterbi")


def kbest(
    graph: Graph,
    scores: Scores,
    batch: Batch,
    k: int,
    paths: np.ndarray,
    path_scores: np.ndarray,
    found: np.ndarray,
    workspace: Workspace,
) -> None:
    """fc_kbest: the k best paths int32 [k, n] (-1 where there is none), their scores
    float [b, k] and how many each sentence has, int32 [b]."""
    status = lib.fc_kbest(
        graph.struct,
        scores.struct,
        batch.struct,
        k,
        output_pointer(paths),
        output_pointer(path_scores),
        output_pointer(found),
        workspace.struct,
    )
    check_status(status, "kbest")


def sample(
    graph: Graph,
    scores: Scores,
    batch: Batch,
    seed: int,
    first_index: int,
    draws: np.ndarray,
    workspace: Workspace,
) -> None:
    """fc_sample: exact draws int32 [num_samples, n] from p(y | x); draw r of sentence
    i is seeded by (seed, first_index + i, r)."""
    status = lib.fc_sample(
        graph.struct,
        scores.struct,
        batch.struct,
        seed,
        first_index,
        len(draws),
        output_pointer(draws),
        workspace.struct,
    )
    check_status(status, "sample")


def joint_forward_backward(
    joint: Joint,
    batch: Batch,
    log_z: np.ndarray,
    node_marginals: np.ndarray | None,
    edge_counts: np.ndarray | None,
    redo: np.ndarray,
    workspace: Workspace,
) -> None:
    """fc_joint_forward_backward: log Z float [b], joint node marginals float [n, P]
    (or None) and, ADDED TO edge_counts float [sum_k L_k E_k] (or None), the expected
    component edge counts; redo int32 [b] is 1 for a sentence left to the exact
    dense product."""
    status = lib.fc_joint_forward_backward(
        joint.struct,
        batch.struct,
        output_pointer(log_z),
        optional_output(node_marginals),
        optional_output(edge_counts),
        output_pointer(redo),
        workspace.struct,
    )
    check_status(status, "joint_posteriors")


def joint_viterbi(joint: Joint, batch: Batch, path: np.ndarray, score: np.ndarray, workspace: Workspace) -> None:
    """fc_joint_viterbi: the best joint path int32 [n] and its score float [b]."""
    status = lib.fc_joint_viterbi(
        joint.struct, batch.struct, output_pointer(path), output_pointer(score), workspace.struct
    )
    check_status(status, "joint_viterbi")
