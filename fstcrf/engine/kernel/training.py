"""The training gradient (csrc/fstcrf_train.h), one sentence's rival for the online
learners (csrc/fstcrf_online.h) and the learners' vector steps (csrc/fstcrf_update.h)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fstcrf._kernel import ffi, lib
from fstcrf.engine.kernel.buffers import (
    KernelBuffers,
    STEP_RULES,
    check_status,
    input_pointer,
    optional_input,
    optional_output,
    output_pointer,
    own_lines,
)
from fstcrf.engine.kernel.chain import Graph, Scores
from fstcrf.engine.kernel.features import FeatureDictionary, Tokens
from fstcrf.errors import ShapeError


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
        # a thread's own: on cache lines no other thread's scratch shares
        workspace.doubles = self.pin(own_lines(num_doubles))
        workspace.ints = self.pin(own_lines(lib.ft_workspace_ints(graph.struct, group_tokens, t_max), np.int32))
        workspace.int64s = self.pin(own_lines(lib.ft_workspace_int64s(group_tokens, t_max), np.int64))


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
    grad_at: np.ndarray | None = None,
    grad_direct: np.ndarray | None = None,
) -> None:
    """ft_gradient on a block of sentences scored by theta_scale * theta float [F] and
    by the scores of a graph whose states stand for the model's states state_map
    int32 [S'] (None: the model's own graph).  ADDED TO: loss float [1], the
    sentences' log Z minus the clamped log Z of the partial ones; grad float [F],
    grad_scale * the expected feature counts (or, laid out by grad_at int64 [P], those
    of the predicates the tokens use: see FeatureDictionary.compact_layout, whose
    DIRECT predicates' counts go to grad_direct float [F]);
    edge_counts float [E'] or [C, E'], grad_scale * the expected edge counts."""
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
        optional_input(grad_at),
        optional_output(grad_direct),
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
        self.count = len(self._pointers)
        self.struct = ffi.new("double *[]", self._pointers)


def gather_clear(buffers: GatherBuffers, index: np.ndarray, values: np.ndarray) -> None:
    """fu_gather_clear: values float [m] = the sum over the buffers of their entries at
    the distinct indices int64 [m], which become 0."""
    lib.fu_gather_clear(buffers.struct, buffers.count, input_pointer(index), len(index), output_pointer(values))


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

    def set_rate(self, rate: float) -> None:
        """Make the step size ``rate`` (Adam's bias correction changes it at every step)."""
        self.struct.rate = rate


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


#: The precisions an L-BFGS history may be kept in: name -> dtype of its pairs and direction.
HISTORY_PRECISIONS: dict[str, np.dtype] = {"double": np.dtype(np.float64), "single": np.dtype(np.float32)}


def _history_dtype(name: str, *arrays: np.ndarray) -> bool:
    """True for float32 history vectors, False for float64; ShapeError unless all have one of them."""
    dtypes = {array.dtype for array in arrays}
    if len(dtypes) != 1 or not dtypes <= set(HISTORY_PRECISIONS.values()):
        raise ShapeError(
            f"{name}: the history vectors must all be float64 or all float32, got {sorted(map(str, dtypes))}"
        )
    return dtypes == {np.dtype(np.float32)}


def two_loop(
    steps: Sequence[np.ndarray], changes: Sequence[np.ndarray], rho: np.ndarray, alpha: np.ndarray, q: np.ndarray
) -> None:
    """fu_two_loop: q [D] becomes H q, H the L-BFGS inverse-Hessian estimate of the m
    pairs (steps[i], changes[i]) [D], oldest first, with rho float [m] = 1 / (s_i . y_i);
    alpha float [m] is scratch.  q and the pairs are all float64, or all float32
    (fu_two_loop_single: sums in double, q rounded to float32 after each update)."""
    single = _history_dtype("two_loop", q, *steps, *changes)
    step_pointers = [input_pointer(step) for step in steps]
    change_pointers = [input_pointer(change) for change in changes]
    pointer_type = "float *[]" if single else "double *[]"
    (lib.fu_two_loop_single if single else lib.fu_two_loop)(
        ffi.new(pointer_type, step_pointers),
        ffi.new(pointer_type, change_pointers),
        input_pointer(rho),
        len(step_pointers),
        len(q),
        output_pointer(alpha),
        output_pointer(q),
    )


def add_scaled(out: np.ndarray, scale: float, x: np.ndarray) -> None:
    """fu_add_scaled: out float64 [D] += scale * x [D] (float64, or float32 for a
    single-precision direction), in one call and without a temporary array."""
    if out.shape != x.shape or out.ndim != 1 or out.dtype != np.float64:
        raise ShapeError(
            f"add_scaled: out {out.dtype} {out.shape} and x {x.shape} must be one vector shape, out float64"
        )
    single = _history_dtype("add_scaled", x)
    (lib.fu_add_scaled_single if single else lib.fu_add_scaled)(
        output_pointer(out), float(scale), input_pointer(x), len(out)
    )


def history_dot(a: np.ndarray, b: np.ndarray) -> float:
    """a [D] . b [D] summed in double, where either may be a float32 history vector
    (numpy would sum two float32 vectors in float32, and copy a float32 one beside a
    float64 one); two float64 vectors: numpy's dot, as before."""
    if a.shape != b.shape or a.ndim != 1:
        raise ShapeError(f"history_dot: {a.shape} and {b.shape} must be one vector shape")
    if a.dtype == np.float64 and b.dtype == np.float64:
        return float(a @ b)
    if a.dtype == np.float64:
        a, b = b, a
    if a.dtype != np.float32 or b.dtype not in (np.float32, np.float64):
        raise ShapeError(f"history_dot: float64 or float32 vectors only, got {a.dtype} and {b.dtype}")
    if b.dtype == np.float32:
        return float(lib.fu_dot_single(input_pointer(a), input_pointer(b), len(a)))
    return float(lib.fu_slope_single(input_pointer(b), input_pointer(a), len(a)))


def round_in_place(vector: np.ndarray) -> np.ndarray:
    """float32 [D]: vector float64 [D] rounded, in vector's own memory, half of which is
    then given back (fu_round_in_place, then a realloc to 4D bytes), so that no [D]
    float32 array is made beside it.  The vector holds other values afterwards; one
    that does not own its memory, or is not C-contiguous, is copied instead (and left
    as it was)."""
    if vector.ndim != 1 or vector.dtype != np.float64:
        raise ShapeError(f"round_in_place: a float64 vector, got {vector.dtype} {vector.shape}")
    if (
        vector.base is not None
        or not vector.flags.c_contiguous
        or not vector.flags.writeable
        or not vector.flags.owndata
    ):
        return vector.astype(np.float32)
    size = len(vector)
    lib.fu_round_in_place(output_pointer(vector), size)
    vector.resize((size + 1) // 2, refcheck=False)
    return vector.view(np.float32)[:size]


def change_single(y: np.ndarray, gradient: np.ndarray) -> None:
    """fu_change_single: y float32 [D], which holds the previous gradient rounded to
    float32, becomes gradient float64 [D] - y, taken in double and rounded."""
    if y.shape != gradient.shape or y.ndim != 1 or y.dtype != np.float32 or gradient.dtype != np.float64:
        raise ShapeError(
            "change_single: y float32 and gradient float64 of one vector shape, "
            f"got {y.dtype} {y.shape} and {gradient.dtype} {gradient.shape}"
        )
    lib.fu_change_single(output_pointer(y), input_pointer(gradient), len(y))
