"""The bandit learner's per-minibatch work (csrc/fstcrf_bandit.h): draws with their
posteriors, the gradient of weighted draws, the step at the touched features, and
the simulated user's chunk F1."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence

import numpy as np

from fstcrf._kernel import ffi, lib
from fstcrf.engine.kernel.buffers import (
    KernelBuffers,
    check_status,
    input_pointer,
    optional_input,
    optional_output,
    output_pointer,
)
from fstcrf.engine.faults import stall
from fstcrf.engine.threads import leave_running
from fstcrf.errors import FstcrfError, LabelError, ShapeError, TopologyError
from fstcrf.engine.kernel.chain import Graph, Scores, Workspace
from fstcrf.engine.kernel.features import FeatureDictionary, PredicateRows
from fstcrf.engine.kernel.training import GatherBuffers, StepRule


class TrainingSet(KernelBuffers):
    """fb_set: B sentences cut at offsets int64 [B+1] (from 0), their N tokens' predicate
    rows and transition classes int32 [N] (or None), scored by a dictionary on a
    graph whose edge from state a to state b is edge_ids[a, b] (int32 [S, S], -1: none)."""

    def __init__(
        self,
        dictionary: FeatureDictionary,
        rows: PredicateRows,
        offsets: np.ndarray,
        token_class: np.ndarray | None,
        graph: Graph,
        edge_ids: np.ndarray,
    ):
        super().__init__()
        self._parts = (dictionary, rows, graph)  # the structs the fields point into
        self.num_predicates = int(dictionary.struct.num_predicates)
        self._tokens = rows.tokens(0, int(offsets[-1]))
        training = self.struct = ffi.new("fb_set *")
        training.dictionary = dictionary.struct
        training.tokens = self._tokens.struct
        training.offsets = self.pin(offsets)
        if token_class is not None:
            training.token_class = self.pin(token_class)
        training.graph = graph.struct
        training.edge_ids = self.pin(edge_ids)


class GradientLayout(KernelBuffers):
    """fb_layout: the compact layout of a minibatch's gradient over P predicates
    (:func:`index` makes it, :func:`add_gradient` adds to its buffers, :func:`step`
    steps from them and undoes it), kept from one minibatch to the next with its
    scratch: ``seen`` uint64 [Q + 1, ceil(P / 64)] (0 between calls), ``order`` int32
    [P], ``pieces_of`` uint8 [P], ``at`` int64 [P] (-1 outside a layout), and Q
    gradient ``buffers`` float [U] (0 outside a layout; see :meth:`use_buffers`)."""

    def __init__(self, num_predicates: int, buffers: Sequence[np.ndarray]):
        super().__init__()
        if not 1 <= len(buffers) <= lib.FB_MAX_PIECES:
            raise ShapeError(f"a gradient layout takes 1 to {lib.FB_MAX_PIECES} buffers, got {len(buffers)}")
        self.num_predicates = num_predicates
        self.seen = np.zeros((len(buffers) + 1, -(-num_predicates // 64)), dtype=np.uint64)
        self.order = np.empty(num_predicates, dtype=np.int32)
        self.pieces_of = np.empty(num_predicates, dtype=np.uint8)
        self.at = np.full(num_predicates, -1, dtype=np.int64)
        layout = self.struct = ffi.new("fb_layout *")
        layout.num_predicates = num_predicates
        layout.num_buffers = len(buffers)
        layout.seen = self.pin(self.seen)
        layout.order = self.pin(self.order)
        layout.pieces_of = self.pin(self.pieces_of)
        layout.at = self.pin(self.at)
        self.use_buffers(buffers)

    def sizes(self) -> tuple[int, int]:
        """(m, U): the predicates and features of the layout :func:`index` made last."""
        return int(self.struct.used_predicates), int(self.struct.used_features)

    def use_buffers(self, buffers: Sequence[np.ndarray]) -> None:
        """Lay the gradient out in ``buffers`` float [U] from now on, as many as before,
        all 0 (the layout's features need U of them: :func:`index` tells)."""
        if len(buffers) != self.struct.num_buffers:
            raise ShapeError(f"a gradient layout of {self.struct.num_buffers} buffers got {len(buffers)}")
        self.buffers = list(buffers)
        self.gather = GatherBuffers(self.buffers)
        self.struct.buffers = self.gather.struct


class Partner:
    """fb_partner: a thread of its own that makes one fb_draw, fb_gradient, fb_step or
    fb_index call at a time while the caller works on (:func:`draw`,
    :func:`add_gradient`, :func:`step` and :func:`index` with ``partner=``), handed
    over through a flag.  It blocks in the kernel whenever it holds no call (each post
    wakes it, and it blocks again right after the call); a call it has not taken
    when the caller waits for it the caller makes itself.  Calls must be
    collected with :meth:`wait`; :meth:`stop` ends the thread."""

    #: Milliseconds a wait blocks in C before it comes back to Python to see signals.
    WAIT_SLICE_MS = 50

    def __init__(self):
        # the struct at the start of a cache line, and no other data on its last one
        align = lib.FB_PARTNER_ALIGN
        self._memory = ffi.new("char[]", ffi.sizeof("fb_partner") + 2 * align)
        start = -int(ffi.cast("uintptr_t", self._memory)) % align
        self.struct = ffi.cast("fb_partner *", self._memory + start)
        self.pid = os.getpid()  # the thread is this process's only
        #: the posted call's name, status check and arguments (kept alive until it is made)
        self._posted: tuple | None = None
        #: what a call left running may still use, kept by its owner (this object lives as long as the thread)
        self.keep: tuple = ()
        self._thread = threading.Thread(target=self._serve, name="fstcrf-partner", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        """The thread: serve calls until stopped (in C throughout, blocked when idle)."""
        stall("partner")
        lib.fb_partner_serve(self.struct)

    def post(self, function, arguments: tuple, check, what: str) -> None:
        """Post ``function`` (an fb_post_ function) with ``arguments``, waking the thread
        if it is blocked; :meth:`wait` checks the call's status with check(status, what).
        FstcrfError if a call is still to be collected or the partner is stopped."""
        if function(self.struct, *arguments) != lib.FC_OK:
            raise FstcrfError("the partner thread has a call not collected yet, or is stopped")
        self._posted = (what, check, arguments)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the posted call and check its status as its :meth:`post` said: True;
        False if it is not done after ``timeout`` seconds (None: no limit), the call
        still posted.  The wait comes back to Python every WAIT_SLICE_MS, so that
        Ctrl-C (KeyboardInterrupt) ends it."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while (status := lib.fb_partner_wait(self.struct, self.WAIT_SLICE_MS)) == lib.FB_PARTNER_BUSY:
            if deadline is not None and time.monotonic() >= deadline:
                return False
        what, check, _ = ("the partner's call", check_status, None) if self._posted is None else self._posted
        self._posted = None
        check(status, what)
        return True

    def stop(self, timeout: float | None = None) -> bool:
        """End the thread once the call it is making is made (a call it has not taken is
        dropped; neither is collected), waiting at most ``timeout`` seconds (None: until
        it ends).  A thread still running then is left running
        (fstcrf.engine.threads.left_running).  True unless it is still making a call,
        which may write to its arrays."""
        lib.fb_partner_stop(self.struct)
        self._thread.join(timeout)
        if not self._thread.is_alive():
            self._posted = None
            return True
        leave_running(self._thread)  # the posted call's arguments stay with this object, which the thread holds
        return int(self.struct.flag) == lib.FB_PARTNER_STOP  # it holds no call


def _make(function, post, arguments: tuple, check, partner: Partner | None) -> None:
    """function(*arguments) checked by check(status, name), or posted to ``partner`` with
    ``post`` (:meth:`Partner.wait` collects and checks it)."""
    if partner is not None:
        partner.post(post, arguments, check, function.__name__)
    else:
        check(function(*arguments), function.__name__)


def draw(
    training: TrainingSet,
    bounds: np.ndarray,
    scores: Scores,
    theta: np.ndarray,
    sign: float,
    seed: int,
    outputs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None, np.ndarray],
    step_state: np.ndarray | None = None,
) -> Callable[..., None]:
    """fb_draw on the minibatch cut at sentences bounds int64 [Q+1], under sign * theta
    float [F] (the scores already signed): the call on a range of its pieces,
    ``call((begin, end), workspace, work, partner=None)``, which WRITES at those
    pieces' rows ``outputs`` = (offsets int64 [b+Q], piece q's from 0 at bounds[q] -
    bounds[0] + q; emissions [n, S], log_z [b], marginals [n, S], edge_counts [b, C,
    E], paths int32 [K, n]: K draws, those of piece q's i-th sentence seeded by (seed
    + q, i, r)); marginals and edge_counts both None: not computed (no backward
    pass); work float [S + L] is scratch; with a ``partner``, the call is posted to it
    (:meth:`Partner.wait` collects it).  The arrays are converted once, for every
    call.  ``step_state`` (float [F] or [F, 2], the state :func:`step` will read, or
    None) has its lines at the sentences' features asked for: a hint, results are
    the same."""
    offsets, emissions, log_z, marginals, edge_counts, paths = outputs
    minibatch = (training.struct, input_pointer(bounds), len(bounds) - 1)
    inputs = (scores.struct, input_pointer(theta), sign, seed, len(paths))
    written = (
        output_pointer(offsets),
        output_pointer(emissions),
        output_pointer(log_z),
        optional_output(marginals),
        optional_output(edge_counts),
        output_pointer(paths),
    )
    hint = (
        ffi.NULL if step_state is None else input_pointer(step_state),
        1 if step_state is None or step_state.ndim == 1 else step_state.shape[1],
    )

    def call(pieces: tuple[int, int], workspace: Workspace, work: np.ndarray, partner: Partner | None = None):
        arguments = (*minibatch, *pieces, *inputs, *written, workspace.struct, output_pointer(work), *hint)
        _make(lib.fb_draw, lib.fb_post_draw, arguments, check_status, partner)

    return call


def add_gradient(
    training: TrainingSet,
    bounds: np.ndarray,
    draws: tuple[np.ndarray, np.ndarray],
    posteriors: tuple[np.ndarray, np.ndarray],
    sign: float,
    layout: GradientLayout,
    marks: np.ndarray,
) -> Callable[..., None]:
    """fb_gradient on the minibatch cut at sentences bounds int64 [Q+1] (b sentences, n
    tokens), whose ``draws`` = (coefficients float [K, b], paths int32 [K, n]), both
    C-contiguous, give draw k of sentence i weight coefficients[k, i] and states
    paths[k] at its tokens; ``posteriors`` = (offsets, marginals) of :func:`draw`
    (marginals None: the expectation term left out, as it cancels where each
    sentence's coefficients sum to 0): the call on a range of its pieces,
    ``call((begin, end), work, counts=None, partner=None)``, which ADDS piece q's
    gradient TO buffer q of the minibatch's ``layout`` (:func:`index`'s), and to
    ``counts`` float [K, E] or [K, C, E] (unless None) draw k's edge uses weighted by
    its coefficients, over the whole minibatch; marks float [n, S] and work float
    [S + L] are scratch; TopologyError for a state outside the topology's or a
    predicate the layout lacks (before any output is touched, for a path the graph
    does not allow); with a ``partner``, the call is posted to it
    (:meth:`Partner.wait` collects it).  The arrays are converted once."""
    coefficients, paths = draws
    offsets, marginals = posteriors
    minibatch = (training.struct, input_pointer(bounds), len(bounds) - 1)
    inputs = (
        len(paths),
        input_pointer(coefficients),
        input_pointer(paths),
        input_pointer(offsets),
        optional_input(marginals),
        sign,
        output_pointer(marks),
        layout.struct,
    )

    def call(
        pieces: tuple[int, int], work: np.ndarray, counts: np.ndarray | None = None, partner: Partner | None = None
    ):
        classes = 1 if counts is None or counts.ndim == 2 else counts.shape[1]
        arguments = (*minibatch, *pieces, *inputs, output_pointer(work), classes, optional_output(counts))
        _make(lib.fb_gradient, lib.fb_post_gradient, arguments, _check_paths, partner)

    return call


def _check_paths(status: int, what: str) -> None:
    """check_status, with TopologyError for paths the graph does not allow."""
    if status == lib.FC_BAD_ARGUMENT:
        raise TopologyError(
            f"{what}: a state path has a state outside the topology's or steps along no edge of it "
            "(or a token uses a predicate outside the gradient's layout); paths must be ones the "
            "model's topology allows"
        )
    check_status(status, what)


def index(
    training: TrainingSet, layout: GradientLayout, piece_rows: np.ndarray, partner: Partner | None = None
) -> tuple[int, int]:
    """fb_index: the compact layout of the gradient of token rows piece_rows[0] ..
    piece_rows[-1]-1 (int64 [Q'+1], piece q's rows piece_rows[q] .. piece_rows[q+1]-1),
    made in ``layout``: (m, U), the m predicates they use (in ascending order in its
    order, with each one's pieces as bits in its pieces_of) and their U features,
    predicate order[i]'s at its at[order[i]] (-1 everywhere before; :func:`step` sets
    it back).  ShapeError for a layout of other predicates or fewer buffers than Q'.
    With a ``partner``, the call is posted to it and (0, 0) returned: after
    :meth:`Partner.wait`, :meth:`GradientLayout.sizes` tells (m, U)."""
    if layout.num_predicates != training.num_predicates or not 1 <= len(piece_rows) - 1 <= len(layout.buffers):
        raise ShapeError(
            f"fb_index: a layout of {layout.num_predicates} predicates and {len(layout.buffers)} buffers "
            f"does not fit {len(piece_rows) - 1} pieces of {training.num_predicates} predicates"
        )
    arguments = (training.struct, layout.struct, input_pointer(piece_rows), len(piece_rows) - 1)
    if partner is not None:
        partner.post(lib.fb_post_index, arguments, check_status, "fb_index")
        return 0, 0
    check_status(lib.fb_index(*arguments), "fb_index")
    return layout.sizes()


def order_by_piece(layout: GradientLayout) -> int:
    """fb_order_by_piece: reorder the m predicates of ``layout`` (:func:`index` made it)
    so that those piece 0 alone uses come first, each group in its previous order;
    their number.  :func:`step` gives the same weights whatever the order."""
    m = int(layout.struct.used_predicates)
    order_scratch, pieces_scratch = np.empty(m, dtype=np.int32), np.empty(m, dtype=np.uint8)
    return int(lib.fb_order_by_piece(layout.struct, output_pointer(order_scratch), output_pointer(pieces_scratch)))


def step(
    training: TrainingSet,
    layout: GradientLayout,
    rule: StepRule,
    weights: tuple[np.ndarray, np.ndarray | None],
) -> Callable[..., None]:
    """fb_step on the ``layout`` :func:`index` made: the call on a range of its
    predicates, ``call((begin, end), transitions=None, partner=None)``, which steps
    the features of predicates order[begin] .. order[end-1] by the rule and the
    gradient its buffers hold there, then cleared, and sets its at back to -1 there.
    ``weights`` = (theta float [F + T], state): state None (constant), the squares
    float [F] (adagrad) or the (moment, square) pairs float [F, 2] (adam).
    ``transitions`` = (gradient float [T], squares [T], moments [T], None where the
    rule keeps none), or None: the transitions' weights theta[F:] stepped too, after
    the features, and the gradient cleared.  With a ``partner``, the call is posted
    to it (:meth:`Partner.wait` collects it).  The arrays are converted once."""
    theta, state = weights
    layout_arguments = (training.struct, layout.struct)
    rule_weights = (rule.struct, output_pointer(theta), optional_output(state))

    def call(
        positions: tuple[int, int],
        transitions: tuple[np.ndarray, np.ndarray | None, np.ndarray | None] | None = None,
        partner: Partner | None = None,
    ):
        gradient, squares, moments = (None, None, None) if transitions is None else transitions
        arguments = (
            *layout_arguments,
            *positions,
            *rule_weights,
            optional_output(gradient),
            0 if gradient is None else len(gradient),
            optional_output(squares),
            optional_output(moments),
        )
        _make(lib.fb_step, lib.fb_post_step, arguments, check_status, partner)

    return call


def chunk_f1(
    gold: tuple[np.ndarray, np.ndarray],
    sentences: np.ndarray,
    predicted: np.ndarray,
    tables: tuple[np.ndarray, np.ndarray, np.ndarray],
    f1: np.ndarray,
) -> None:
    """fb_chunk_f1: WRITTEN f1 float [K, b], the per-sentence chunk F1 of label ids
    predicted int64 [K, n] (the tokens of b sentences, in order) against ``gold`` =
    (label ids int64 [N], offsets int64 [B+1] that cut them into sentences), of whose
    sentences those are the ones numbered sentences int64 [b], by ``tables`` = (starts
    uint8 [L+1, L+1], ends uint8 [L+1, L+1], kind int64 [L+1]) with L the implicit
    outside label; ShapeError for arrays that do not fit, LabelError for sentences
    outside the gold ones, whose offsets do not lie in order within the gold tokens or
    whose lengths do not sum to n, or an id outside [0, L)."""
    labels, offsets = gold
    starts, ends, kind = tables
    if predicted.ndim != 2 or f1.shape != (len(predicted), len(sentences)):
        raise ShapeError(
            f"chunk F1: predicted {predicted.shape} and f1 {f1.shape} do not fit {len(sentences)} sentences"
        )
    status = lib.fb_chunk_f1(
        input_pointer(labels),
        len(labels),
        input_pointer(offsets),
        len(offsets) - 1,
        input_pointer(sentences),
        len(sentences),
        input_pointer(predicted),
        predicted.shape[1],
        len(predicted),
        len(kind) - 1,
        input_pointer(starts),
        input_pointer(ends),
        input_pointer(kind),
        output_pointer(f1),
    )
    if status == lib.FC_BAD_ARGUMENT:
        raise LabelError(
            f"chunk F1: sentences outside the {len(offsets) - 1} gold sentences, or whose offsets do not lie in "
            f"order within the {len(labels)} gold tokens or do not sum to {predicted.shape[1]} tokens, or a "
            f"label id outside [0, {len(kind) - 1})"
        )
    check_status(status, "fb_chunk_f1")
