"""The one binding to fstcrf's C code: the cffi module ``fstcrf._kernel`` (its
API is the headers in csrc/) and the CPython extension ``fstcrf._attributes``
(token dicts to columns, csrc/fstcrf_attributes.c).  No other module imports them.

An array reaches C by its dtype (float64 as ``double``, int32, int64, uint64,
uint8; any other dtype is a KeyError, never a reinterpretation) in one of
three ways:

    input_pointer(array)     an array the kernel reads: a cffi view that keeps
                             it alive.  An array that is not C-contiguous and
                             aligned is copied first (weights unpickled from
                             Dask's out-of-band buffers may start at any byte).
    output_pointer(array)    an array the kernel writes or updates: it must be
                             C-contiguous, aligned and writable (ShapeError),
                             since a copy would take the results.
    KernelBuffers.pin(array) an array a struct field points to (an input or
                             scratch): its input_pointer, kept alive as long as
                             the struct.

An optional array given as None is NULL.  Each struct is a class here
(:class:`Graph`, :class:`Scores`, :class:`Batch`, :class:`Workspace`, ...)
that holds the cffi struct as ``struct`` and the arrays its fields point into;
each C function is called by one function or method below, which takes numpy
arrays and raises the typed error of a status other than success
(:func:`check_status`).  An object that keeps structs over arrays of its own
makes them with :func:`kernel_array` and derives from :class:`KernelViews`.

Shapes: n tokens and b sentences of a batch (N and B of a whole training set),
S states, E edges, C transition classes, P joint states, L labels, F features
and D weights.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

import fstcrf._attributes as attributes_extension
from fstcrf._kernel import ffi, lib
from fstcrf.errors import HashCollisionError, InfeasibleError, ShapeError

if TYPE_CHECKING:
    from fstcrf.engine.topology import Topology

FC_OK: int = lib.FC_OK
FC_INFEASIBLE: int = lib.FC_INFEASIBLE
FH_DUPLICATE: int = lib.FH_DUPLICATE
#: The step rules of :class:`StepRule` by name.
STEP_RULES = {"constant": lib.FU_CONSTANT, "adagrad": lib.FU_ADAGRAD, "adam": lib.FU_ADAM}

#: The C element type of each dtype an array may reach the kernel with.
C_ARRAY_TYPES = {
    np.dtype(np.float64): "double[]",
    np.dtype(np.int32): "int32_t[]",
    np.dtype(np.int64): "int64_t[]",
    np.dtype(np.uint64): "uint64_t[]",
    np.dtype(np.uint8): "uint8_t[]",
}


def input_pointer(array: np.ndarray):
    """A cffi view of an array the kernel reads, which keeps the array alive; an
    array that is not C-contiguous and aligned is copied first (the view keeps the copy)."""
    flags = array.flags
    if not (flags.c_contiguous and flags.aligned):
        array = array.copy()
    return ffi.from_buffer(C_ARRAY_TYPES[array.dtype], array)


def output_pointer(array: np.ndarray):
    """A cffi view of an array the kernel writes or updates in place: ShapeError unless
    it is C-contiguous, aligned and writable."""
    flags = array.flags
    if not (flags.c_contiguous and flags.aligned and flags.writeable):
        raise ShapeError("arrays the kernel writes must be C-contiguous, aligned and writable")
    return ffi.from_buffer(C_ARRAY_TYPES[array.dtype], array)


def optional_input(array: np.ndarray | None):
    """input_pointer(array), or NULL for None (an optional input left out)."""
    return ffi.NULL if array is None else input_pointer(array)


def optional_output(array: np.ndarray | None):
    """output_pointer(array), or NULL for None (an output not wanted)."""
    return ffi.NULL if array is None else output_pointer(array)


def check_status(status: int, what: str, allow_infeasible: bool = False) -> None:
    """Nothing for FC_OK (and FC_INFEASIBLE with ``allow_infeasible``); else the error
    of a status that computation ``what`` returned: InfeasibleError for a sentence
    without an allowed path, HashCollisionError for equal keys, RuntimeError for
    arguments the kernel rejects (Python checked them, so that is a bug)."""
    if status == FC_OK or (status == FC_INFEASIBLE and allow_infeasible):
        return
    # Potentials validated the lengths against the topology, and the kernel's exact
    # fallback rules out underflow, so only a clamp can leave a sentence no path.
    if status == FC_INFEASIBLE:
        raise InfeasibleError(
            f"{what}: a sentence has no allowed path: the states its clamp allows "
            "at each token do not connect through the topology, or every path's "
            "score is below float64's range (scale the scores down)"
        )
    if status == FH_DUPLICATE:
        raise HashCollisionError(f"{what}: two of them have the same key")
    raise RuntimeError(f"the C kernel rejected the arguments of {what} (status {status}); this is a bug in fstcrf")


class KernelBuffers:
    """Keeps alive the arrays that the fields of a C struct point into, as long as
    this object (which holds the struct as ``struct``)."""

    def __init__(self) -> None:
        self._views: list = []

    def pin(self, array: np.ndarray):
        """input_pointer(array), kept alive with this object: for a struct field."""
        view = input_pointer(array)
        self._views.append(view)
        return view


def kernel_array(values, dtype) -> np.ndarray:
    """``values`` as a C-contiguous array of ``dtype`` aligned for it (a copy only
    when it is not already one): what objects keep for the kernel to read."""
    return np.require(values, dtype=dtype, requirements=["C", "A"])


class KernelViews:
    """An object that keeps kernel structs (:class:`KernelBuffers`) over its own
    arrays.  They cannot be pickled: pickling and copying drop them, and unpickling
    rebuilds them with the subclass's ``make_views``."""

    make_views: Callable[[], None]  # defined by each subclass

    def __getstate__(self) -> dict:
        return {name: value for name, value in self.__dict__.items() if not isinstance(value, KernelBuffers)}

    def __setstate__(self, state: dict) -> None:
        # Arrays unpickled from out-of-band buffers (Dask's transport) may start at any
        # byte; the kernel reads them as int64 or double, so each such array is copied.
        aligned = {
            name: value.copy() if isinstance(value, np.ndarray) and not value.flags.aligned else value
            for name, value in state.items()
        }
        self.__dict__.update(aligned)
        self.make_views()


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
    the token entered), start and final scores float [S] (-inf: not allowed)."""

    def __init__(self, transitions: np.ndarray, start: np.ndarray, final: np.ndarray):
        super().__init__()
        scores = self.struct = ffi.new("fc_scores *")
        scores.trans = self.pin(transitions)
        scores.start = self.pin(start)
        scores.final = self.pin(final)
        scores.num_classes = 1 if transitions.ndim == 1 else len(transitions)


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
        workspace.doubles = self.pin(np.empty(num_doubles))
        workspace.ints = self.pin(np.empty(num_ints, dtype=np.int32))


def chain_workspace(topology: Topology, num_classes: int, t_max: int, k: int = 1) -> Workspace:
    """The workspace of the chain programs below on a topology with C = num_classes."""
    S, E = topology.num_states, topology.num_edges
    return Workspace(
        lib.fc_workspace_doubles(S, E, num_classes, t_max, k), lib.fc_workspace_ints(S, E, t_max, k), t_max, k
    )


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
        self._graphs = [Graph(topology) for topology in components]
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
    """The workspace of the joint programs below for sentences of up to t_max tokens."""
    return Workspace(
        lib.fc_joint_workspace_doubles(joint.struct, t_max), lib.fc_joint_workspace_ints(joint.struct, t_max), t_max
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
) -> None:
    """fc_viterbi: the best path int32 [n] (states) and its score float [b]."""
    status = lib.fc_viterbi(
        graph.struct, scores.struct, batch.struct, output_pointer(path), output_pointer(score), workspace.struct
    )
    check_status(status, "viterbi")


def max_marginals(
    graph: Graph, scores: Scores, batch: Batch, table: np.ndarray, best: np.ndarray, workspace: Workspace
) -> None:
    """fc_max_marginals: the best score of a path through each (token, state) float
    [n, S] and the best score float [b]."""
    status = lib.fc_max_marginals(
        graph.struct, scores.struct, batch.struct, output_pointer(table), output_pointer(best), workspace.struct
    )
    check_status(status, "max_marginals")


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


# -- feature scoring (csrc/fstcrf_features.h) ---------------------------------


class PredicateRows(KernelBuffers):
    """The predicate rows of N tokens in CSR form, cut into ff_tokens blocks by
    :meth:`tokens`: indptr int64 [N+1], indices int32 [nnz], and values float [nnz]
    or None when every value is 1 (the loops then read no values)."""

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, values: np.ndarray | None):
        super().__init__()
        self._indptr = self.pin(indptr)
        self._indices = self.pin(indices)
        self._values = ffi.NULL if values is None else self.pin(values)

    def tokens(self, first: int, last: int) -> Tokens:
        """The ff_tokens of rows first .. last-1."""
        return Tokens(self, first, last)


class Tokens:
    """ff_tokens: rows first .. last-1 of a :class:`PredicateRows`, which it keeps alive."""

    def __init__(self, rows: PredicateRows, first: int, last: int):
        self.rows = rows
        self.num_tokens = last - first
        tokens = self.struct = ffi.new("ff_tokens *")
        tokens.num_tokens = self.num_tokens
        tokens.indptr = rows._indptr + first
        tokens.indices = rows._indices
        tokens.values = rows._values


class FeatureDictionary(KernelBuffers):
    """ff_dictionary: the features of predicate p are ptr[p] .. ptr[p+1]-1 (int64
    [P+1]), feature f pairing it with output[f] (int32 [F]), state s or label S + c;
    state s has label state_label[s] (int32 [S]) of num_labels (0 in order 1)."""

    def __init__(self, state_label: np.ndarray, num_labels: int, ptr: np.ndarray, output: np.ndarray):
        super().__init__()
        dictionary = self.struct = ffi.new("ff_dictionary *")
        dictionary.num_states = len(state_label)
        dictionary.num_labels = num_labels
        dictionary.state_label = self.pin(state_label)
        dictionary.num_predicates = len(ptr) - 1
        dictionary.ptr = self.pin(ptr)
        dictionary.output = self.pin(output)
        #: Whether every predicate's outputs ascend (the loops then take their fast path).
        self.outputs_ascending = bool(lib.ff_outputs_ascending(dictionary))
        dictionary.outputs_ascending = self.outputs_ascending
        self._work_size = int(lib.ff_work_doubles(dictionary))

    def emissions(self, tokens: Tokens, theta: np.ndarray, scale: float, emit: np.ndarray) -> None:
        """ff_emissions: emit float [n, S] = scale * the state scores of the tokens under
        feature weights theta float [F]."""
        status = lib.ff_emissions(
            self.struct,
            tokens.struct,
            input_pointer(theta),
            scale,
            output_pointer(emit),
            output_pointer(np.empty(self._work_size)),
        )
        check_status(status, "ff_emissions")

    def accumulate(self, tokens: Tokens, marginals: np.ndarray, scale: float, out: np.ndarray) -> None:
        """ff_accumulate: add scale * the expected feature counts under state marginals
        float [n, S] to out float [F]."""
        status = lib.ff_accumulate(
            self.struct,
            tokens.struct,
            input_pointer(marginals),
            scale,
            output_pointer(out),
            output_pointer(np.empty(self._work_size)),
        )
        check_status(status, "ff_accumulate")

    def add_paths(
        self, tokens: Tokens, plus: np.ndarray, minus: np.ndarray | None, scale: float, out: np.ndarray
    ) -> None:
        """ff_add_paths: add scale * (the feature counts along state path plus int32 [n],
        minus those along minus int32 [n] if given) to out float [F]."""
        status = lib.ff_add_paths(
            self.struct, tokens.struct, input_pointer(plus), optional_input(minus), scale, output_pointer(out)
        )
        check_status(status, "ff_add_paths")


# -- the training gradient (csrc/fstcrf_train.h) ------------------------------


class TrainingSentences(KernelBuffers):
    """ft_sentences: sentences cut at offsets int64 [b+1] (from 0) with token classes
    int32 [n] (or None).  ``clamp``, for partial labels, is (partial uint8 [b],
    allowed uint8 [n, L], state_label int32 [S]): a sentence marked partial is also
    summed over the paths that keep to the labels its tokens allow."""

    def __init__(
        self,
        offsets: np.ndarray,
        token_class: np.ndarray | None,
        clamp: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    ):
        super().__init__()
        sentences = self.struct = ffi.new("ft_sentences *")
        sentences.num_sequences = len(offsets) - 1
        sentences.offsets = self.pin(offsets)
        if token_class is not None:
            sentences.token_class = self.pin(token_class)
        if clamp is not None:
            partial, allowed, state_label = clamp
            sentences.partial = self.pin(partial)
            sentences.num_labels = allowed.shape[1]
            sentences.state_label = self.pin(state_label)
            sentences.allowed = self.pin(allowed)


class TrainingWorkspace(KernelBuffers):
    """ft_workspace for groups of group_tokens tokens and sentences of up to t_max
    tokens, scored by a dictionary on a graph with C = num_classes."""

    def __init__(self, dictionary: FeatureDictionary, graph: Graph, num_classes: int, group_tokens: int, t_max: int):
        super().__init__()
        workspace = self.struct = ffi.new("ft_workspace *")
        workspace.group_tokens = group_tokens
        workspace.t_max = t_max
        num_doubles = lib.ft_workspace_doubles(dictionary.struct, graph.struct, num_classes, group_tokens, t_max)
        workspace.doubles = self.pin(np.empty(num_doubles))
        workspace.ints = self.pin(np.empty(lib.ft_workspace_ints(graph.struct, group_tokens, t_max), dtype=np.int32))
        workspace.int64s = self.pin(np.empty(lib.ft_workspace_int64s(group_tokens, t_max), dtype=np.int64))


def training_gradient(
    dictionary: FeatureDictionary,
    tokens: Tokens,
    sentences: TrainingSentences,
    graph: Graph,
    scores: Scores,
    state_map: np.ndarray | None,
    theta: np.ndarray,
    theta_scale: float,
    grad_scale: float,
    loss: np.ndarray,
    grad: np.ndarray,
    edge_counts: np.ndarray,
    workspace: TrainingWorkspace,
) -> None:
    """ft_gradient on a block of sentences scored by theta_scale * theta float [F] and
    by the scores of a graph whose states stand for the model's states state_map
    int32 [S'] (None: the model's own graph).  ADDED TO: loss float [1], the
    sentences' log Z minus the clamped log Z of the partial ones; grad float [F],
    grad_scale * the expected feature counts; edge_counts float [E'] or [C, E'],
    grad_scale * the expected edge counts."""
    status = lib.ft_gradient(
        dictionary.struct,
        tokens.struct,
        sentences.struct,
        graph.struct,
        scores.struct,
        optional_input(state_map),
        input_pointer(theta),
        theta_scale,
        grad_scale,
        output_pointer(loss),
        output_pointer(grad),
        output_pointer(edge_counts),
        workspace.struct,
    )
    check_status(status, "ft_gradient")


# -- one sentence's rival (csrc/fstcrf_online.h) ------------------------------


class OnlineProblem(KernelBuffers):
    """fo_problem and fo_workspace: the gold path's score and features, and the rival
    with the feature difference, of one sentence at a time of a training set whose
    gold states are gold int32 [N] and token classes token_class int32 [N] (or None),
    in sentences of up to t_max tokens.

    The model graph scores with weights theta float [D]: the dictionary's features,
    and along edge e into a token of class c the weights edge_weights[c, e] (int64
    [C, E, 2], -1: none).  Rivals are searched on the decoding graph, a restriction
    of the model's whose states and edges stand for ``maps``, (state_map int32 [S'],
    edge_map int32 [E']) of the model's (None: the model's own graph), with start
    and final scores float [S'].  ``capacity``: the most entries a sentence's
    feature difference may have.  Not for concurrent use (one workspace)."""

    def __init__(
        self,
        dictionary: FeatureDictionary,
        model: Graph,
        decoding: Graph,
        maps: tuple[np.ndarray, np.ndarray] | None,
        start: np.ndarray,
        final: np.ndarray,
        edge_weights: np.ndarray,
        num_weights: int,
        gold: np.ndarray,
        token_class: np.ndarray | None,
        t_max: int,
        capacity: int,
    ):
        super().__init__()
        self._structs = (dictionary, model, decoding)  # which the problem points into
        problem = self.struct = ffi.new("fo_problem *")
        problem.dictionary = dictionary.struct
        problem.model = model.struct
        problem.decoding = decoding.struct
        if maps is not None:
            problem.state_map = self.pin(maps[0])
            problem.edge_map = self.pin(maps[1])
        problem.start = self.pin(start)
        problem.final = self.pin(final)
        problem.num_classes = len(edge_weights)
        problem.edge_weights = self.pin(edge_weights)
        problem.num_weights = num_weights
        workspace = self._workspace = ffi.new("fo_workspace *")
        workspace.t_max = t_max
        workspace.doubles = self.pin(np.empty(lib.fo_workspace_doubles(problem, t_max)))
        workspace.ints = self.pin(np.empty(lib.fo_workspace_ints(problem, t_max), dtype=np.int32))
        workspace.int64s = self.pin(np.empty(2 * t_max, dtype=np.int64))
        workspace.dense = self.pin(np.zeros(num_weights))
        workspace.marks = self.pin(np.zeros(num_weights, dtype=np.uint8))
        self._gold = self.pin(gold)
        self._token_class = ffi.NULL if token_class is None else self.pin(token_class)
        self._capacity = capacity
        self._rival = np.empty(t_max, dtype=np.int32)
        self._index = np.empty(capacity, dtype=np.int64)
        self._value = np.empty(capacity)
        self._rival_pointer = output_pointer(self._rival)
        self._index_pointer = output_pointer(self._index)
        self._value_pointer = output_pointer(self._value)
        self._wrong = ffi.new("int32_t *")
        self._count = ffi.new("int64_t *")
        self._score = ffi.new("double *")

    def _sentence(self, first: int) -> tuple:
        """The token classes and gold states of the sentence whose first token is ``first``."""
        token_class = self._token_class if self._token_class == ffi.NULL else self._token_class + first
        return token_class, self._gold + first

    def path_score(self, tokens: Tokens, first: int, theta: np.ndarray, theta_scale: float) -> float:
        """fo_path_score: the score of the gold path of the sentence of ``tokens``
        (from token ``first``) under theta_scale * theta float [D]."""
        status = lib.fo_path_score(
            self.struct,
            tokens.struct,
            *self._sentence(first),
            input_pointer(theta),
            theta_scale,
            self._score,
            self._workspace,
        )
        check_status(status, "fo_path_score")
        return self._score[0]

    def add_path(self, tokens: Tokens, first: int, scale: float, out: np.ndarray) -> None:
        """fo_add_path: add scale * the features of the gold path of the sentence of
        ``tokens`` (from token ``first``) to out float [D]."""
        status = lib.fo_add_path(
            self.struct, tokens.struct, *self._sentence(first), scale, output_pointer(out), self._workspace
        )
        check_status(status, "fo_add_path")

    def mistake(
        self, tokens: Tokens, first: int, theta: np.ndarray, difference: bool
    ) -> tuple[int, np.ndarray, np.ndarray | None, np.ndarray | None] | None:
        """fo_mistake: None if the gold path of the sentence of ``tokens`` (from token
        ``first``) is its unique best path under theta float [D], else (the number of
        tokens where the rival differs, the rival int32 [n], and with ``difference``
        the indices int64 [m], increasing, and values float [m] of phi(gold) -
        phi(rival), else None, None)."""
        status = lib.fo_mistake(
            self.struct,
            tokens.struct,
            *self._sentence(first),
            input_pointer(theta),
            self._rival_pointer,
            self._wrong,
            self._capacity,
            self._index_pointer if difference else ffi.NULL,
            self._value_pointer,
            self._count,
            self._workspace,
        )
        check_status(status, "fo_mistake")
        wrong = self._wrong[0]
        if wrong < 0:
            return None
        rival = self._rival[: tokens.num_tokens].copy()
        if not difference:
            return wrong, rival, None, None
        count = self._count[0]
        return wrong, rival, self._index[:count].copy(), self._value[:count].copy()


# -- the learners' vector steps (csrc/fstcrf_update.h) ------------------------


class GatherBuffers:
    """float arrays [D] that :func:`gather_clear` sums and clears, as a C array of pointers."""

    def __init__(self, arrays: Sequence[np.ndarray]):
        self._pointers = [output_pointer(array) for array in arrays]
        self.struct = ffi.new("double *[]", self._pointers)


def gather_clear(buffers: GatherBuffers, index: np.ndarray, values: np.ndarray) -> None:
    """fu_gather_clear: values float [m] = the sum over the buffers of their entries at
    the distinct indices int64 [m], which become 0."""
    lib.fu_gather_clear(
        buffers.struct, len(buffers._pointers), input_pointer(index), len(index), output_pointer(values)
    )


class StepRule:
    """fu_step: a rule of :data:`STEP_RULES`, its step size (Adam's bias-corrected for
    the step), Adam's decays beta1 and beta2, and the epsilon added to the roots."""

    def __init__(self, rule: str, rate: float, beta1: float, beta2: float, epsilon: float):
        step = self.struct = ffi.new("fu_step *")
        step.rule = STEP_RULES[rule]
        step.rate = rate
        step.beta1 = beta1
        step.beta2 = beta2
        step.epsilon = epsilon


def apply_step(
    step: StepRule,
    theta: np.ndarray,
    squares: np.ndarray | None,
    moments: np.ndarray | None,
    index: np.ndarray,
    gradient: np.ndarray,
) -> None:
    """fu_apply: move theta float [D] (ascent) by the gradient values float [m] at the
    indices int64 [m], updating the squared gradients (AdaGrad, Adam) and moments
    (Adam) float [D], None when the rule keeps none."""
    status = lib.fu_apply(
        step.struct,
        output_pointer(theta),
        optional_output(squares),
        optional_output(moments),
        input_pointer(index),
        input_pointer(gradient),
        len(index),
    )
    check_status(status, "fu_apply")


def two_loop(
    steps: Sequence[np.ndarray], changes: Sequence[np.ndarray], rho: np.ndarray, alpha: np.ndarray, q: np.ndarray
) -> None:
    """fu_two_loop: q float [D] becomes H q, H the L-BFGS inverse-Hessian estimate of
    the m pairs (steps[i], changes[i]) float [D], oldest first, with rho float [m]
    = 1 / (s_i . y_i); alpha float [m] is scratch."""
    step_pointers = [input_pointer(step) for step in steps]
    change_pointers = [input_pointer(change) for change in changes]
    lib.fu_two_loop(
        ffi.new("double *[]", step_pointers),
        ffi.new("double *[]", change_pointers),
        input_pointer(rho),
        len(step_pointers),
        len(q),
        output_pointer(alpha),
        output_pointer(q),
    )


# -- hashing (csrc/fstcrf_hashing.h) -------------------------------------------
# A key table is slots uint64 [2 * capacity], capacity a power of two (the layout
# is in the header).


def checksum(data: np.ndarray, digest: np.ndarray) -> None:
    """fh_checksum: digest uint64 [4] = the four lanes of the checksum of bytes uint8 [n]."""
    lib.fh_checksum(input_pointer(data), len(data), output_pointer(digest))


def string_hashes(blob: np.ndarray, offsets: np.ndarray, salt: int, hashes: np.ndarray) -> None:
    """fh_string_hashes: hashes uint64 [n] of the n strings blob[offsets[i] ..
    offsets[i+1]-1] (blob uint8 [offsets[n]], offsets int64 [n+1]) under ``salt``."""
    lib.fh_string_hashes(input_pointer(blob), input_pointer(offsets), len(hashes), salt, output_pointer(hashes))


def chain_keys(keys: np.ndarray, values: np.ndarray) -> None:
    """fh_chain: keys uint64 [n] <- mix(keys ^ values) with values uint64 [n], in place."""
    lib.fh_chain(output_pointer(keys), input_pointer(values), len(keys))


def build_table(keys: np.ndarray, slots: np.ndarray, what: str) -> None:
    """fh_build_table: fill the table ``slots`` with keys uint64 [n] -> their columns;
    HashCollisionError naming ``what`` (the keys) if two are equal."""
    check_status(lib.fh_build_table(input_pointer(keys), len(keys), len(slots) // 2, output_pointer(slots)), what)


def lookup(keys: np.ndarray, slots: np.ndarray, columns: np.ndarray) -> None:
    """fh_lookup: columns int64 [n] = the column of each key uint64 [n] in the table, -1 if none."""
    lib.fh_lookup(input_pointer(keys), len(keys), len(slots) // 2, input_pointer(slots), output_pointer(columns))


def factorize(keys: np.ndarray, slots: np.ndarray, codes: np.ndarray, first: np.ndarray, counts: np.ndarray) -> int:
    """fh_factorize: K, the number of distinct keys uint64 [n]; codes int64 [n] numbers
    the keys by first occurrence, first and counts int64 [n] hold in their first K
    entries where each code first occurs and how often; ``slots`` is scratch."""
    return lib.fh_factorize(
        input_pointer(keys),
        len(keys),
        len(slots) // 2,
        output_pointer(slots),
        output_pointer(codes),
        output_pointer(first),
        output_pointer(counts),
    )


def predicate_rows(
    value_hashes: np.ndarray,
    seeds: np.ndarray,
    item_ptr: np.ndarray,
    items: np.ndarray,
    slots: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
) -> None:
    """fh_predicate_rows: the known predicates of N tokens in CSR form, indptr int64
    [N+1] and the first indptr[N] entries of indices int32 [N * T], each row's columns
    ascending.  Template k, of key seed seeds[k] (uint64 [T]), reads the observations
    items[item_ptr[k] .. item_ptr[k+1]-1] (int32 [T+1], int32 [I]), whose value hash
    at token t is value_hashes[j, t] (uint64 [J, N])."""
    status = lib.fh_predicate_rows(
        value_hashes.shape[1],
        len(value_hashes),
        input_pointer(value_hashes),
        len(seeds),
        input_pointer(seeds),
        input_pointer(item_ptr),
        input_pointer(items),
        len(slots) // 2,
        input_pointer(slots),
        output_pointer(np.empty((lib.FH_BLOCK, len(seeds)), dtype=np.int32)),
        output_pointer(indptr),
        output_pointer(indices),
    )
    check_status(status, "fh_predicate_rows")


# -- token dicts (fstcrf._attributes) ------------------------------------------


def read_columns(
    token_lists: list,
    lower_lists: list | None,
    reads: str | None,
    by_name: dict[str, int],
    by_key: dict[str, dict[str, int]],
    names: list[str] | None,
    fallback: Callable[[object, int, int], tuple[list, list]],
) -> tuple[bytearray, bytearray, bytearray]:
    """The attributes of the token dicts of B sentences (token_lists [B] of lists) in
    the columns of a vocabulary, as bytearrays: columns int64 [M], values float64
    [M] and where each token's entries start, int64 [N+1].  lower_lists [B] of lists
    of lower labels (or None) give each token the attribute "reads:label";
    ``by_name`` maps names to columns and ``by_key`` is :func:`values_by_key` of it;
    ``names`` None drops unknown names, else (the names in column order) they take
    the next columns.  fallback(token, sentence, position) -> (names, values) reads a
    token the C code hands back (anything but a dict of str, bool, int or float)."""
    return attributes_extension.read_columns(token_lists, lower_lists, reads, by_name, by_key, names, fallback)


def values_by_key(vocabulary: dict[str, int], separator: str) -> dict[str, dict[str, int]]:
    """key -> {value: column} for every name "key<separator>value" of a vocabulary
    (name -> column), split at each of its separators in turn."""
    return attributes_extension.values_by_key(vocabulary, separator)
