"""Learning a CRF from bandit feedback: sampled outputs scored by a gain, never
the gold labels (Sokolov, Kreutzer, Lo & Riezler 2016; paper 001).

On each minibatch of sentences the learner draws label sequences from its own
distribution p_w(y|x) with the kernel's exact sampler, asks a feedback source
(:mod:`fstcrf.learn.feedback`) for the gain g in [0, 1] of each draw, and moves the
weights along a stochastic gradient.  Every estimator has the form

    s = sum over draws of c(draw) * grad_w log p(draw | x)
      = sum over draws of c(draw) * (phi(draw) - E_p[phi])

for a coefficient c per draw; its expectation is the gradient of the stated
objective (maximised):

    expected        J = E_{y ~ p_w}[g(y)];  c = g - b
    pairwise        J = P(g(y) >= g(y')) for y ~ p_w, y' ~ p_{-w} (the model with
                    negated weights, Sokolov et al.'s pair distribution);
                    c = [g(y) >= g(y')] - b on both draws, the second with the
                    gradient of log p_{-w}
    pairwise-independent
                    y, y' ~ p_w; c = sign(g(y) - g(y')) / 2 on y and its negative
                    on y'.  Its expectation is the gradient of E_{y ~ p_w}[r(y)]
                    with r(y) = P(g(Y') < g(y)) - P(g(Y') > g(y)) held at the
                    current weights (a rank-transformed gain)
    cross-entropy   J = sum_y g(y) log p_w(y | x);  c = g / max(p(y), clip) - b.
                    With clip = 0 the estimate is unbiased; clipping (paper 001)
                    bounds it, and the share of clipped draws is reported

The baseline b never depends on the draw it is subtracted from, so it leaves
the expectation unchanged (E_p[grad log p] = 0): "none" (b = 0), "mean" (the
running mean of the uncentred coefficients of earlier minibatches) or "loo"
(the mean over the other draws of the same sentence, which needs draws >= 2).
Pairwise-independent is centred by construction and takes no baseline.

Steps ascend J: "constant" w += rate * s, "adagrad" w += rate * s / (sqrt(G) +
1e-8) with G the running sum of s^2, "adam" (Kingma & Ba, bias-corrected).
Only the coordinates a minibatch touches are read or moved.  There is no
penalty term: the epoch with the best dev score is kept.

The gradients run in C (csrc/fstcrf_bandit.c, see :class:`SampledGradient`):
over the fixed pieces of a minibatch, one call computes the emissions, the
posteriors with each sentence's expected edge counts and the draws, another
the feature gradient of the weighted draws, and one call steps the touched
features straight from the gradient buffers.  Where each sentence's
coefficients sum to 0 (:func:`expectation_cancels`) the E[phi] term is 0 and
the draws are made without posteriors (no backward pass).  On more than one
thread the pieces of a large minibatch run on a pool, a call each; a small one's
second piece is handed to a partner thread (csrc/fstcrf_partner.h: a pool's lock
and wake-up cost a good part of a small minibatch's work), which blocks in the
kernel whenever it holds no call (each post wakes it), and its step is shared out
by piece: the calling thread steps the features only the first piece uses, whose
lines its caches hold, the partner the others.  On one thread every call runs on
the calling thread; on more, a learner shares a minibatch out only where its
:class:`~fstcrf.learn.thread_choice.ThreadChoice` measured that to pay.
"""

from __future__ import annotations

import contextlib
import math
import os
from concurrent.futures import wait
from dataclasses import dataclass

import numpy as np

from fstcrf.learn import train
from fstcrf.engine import kernel
from fstcrf.learn.settings import BanditSettings
from fstcrf.learn.thread_choice import ThreadChoice
from fstcrf.features.encoding import EncodedSentences
from fstcrf.errors import FeedbackError, FstcrfError, TopologyError
from fstcrf.engine.inference import Potentials, SentenceBatch, thread_chunks
from fstcrf.learn.objective import Scorer
from fstcrf.engine.threads import INTERRUPT_GRACE, WorkerPool, limit_blas
from fstcrf.phases import phase

_ADAM_BETAS = (0.9, 0.999)
_EPSILON = 1e-8
#: Pieces each minibatch's gradient is split into (run on up to that many threads).
_PIECES = 2
#: Below this many tokens a minibatch's second piece goes to the partner thread, not
#: the pool: a hand-off to the pool costs more than it saves on a small minibatch (at
#: 16 sentences, two threads made an epoch about twice as slow), and more still when
#: other processes share the cores.
_INLINE_TOKENS = 4096


@dataclass
class SparseGradient:
    """A gradient over weights [F + T] whose feature part is zero outside ``indices``:
    ``indices`` int64 [M] (sorted feature ids), ``values`` float [M], ``transitions``
    float [T]."""

    indices: np.ndarray
    values: np.ndarray
    transitions: np.ndarray

    def dense(self, num_features: int) -> np.ndarray:
        """float [F + T]."""
        result = np.zeros(num_features + len(self.transitions))
        result[self.indices] = self.values
        result[num_features:] = self.transitions
        return result


@dataclass
class _Piece:
    """Sum-product results of sentences first .. last-1 (one fixed piece of a minibatch,
    views of its :class:`Posteriors`) under sign * theta: ``lengths`` [b], ``offsets`` int64 [b+1] (from 0),
    ``emissions`` float [n, S], the kernel's ``transitions`` [E] or [C, E] and
    ``token_class`` [n] (or None), ``log_z`` [b], ``marginals`` float [n, S] and each
    sentence's expected ``edge_counts`` [b, E] or [b, C, E] (both None when not computed)."""

    first: int
    last: int
    lengths: np.ndarray
    offsets: np.ndarray
    emissions: np.ndarray
    transitions: np.ndarray
    token_class: np.ndarray | None
    log_z: np.ndarray
    marginals: np.ndarray | None
    edge_counts: np.ndarray | None


class Posteriors:
    """The sum-product results of a minibatch, sentences first .. last-1 cut into Q
    pieces (the :class:`_Split`'s, piece q from sentence first + i_q on), under
    sign * theta: ``offsets`` int64 [b + Q] (piece q's [b_q + 1], from 0, at
    i_q + q), ``emissions``
    float [n, S], the kernel's ``transitions`` [E] or [C, E], ``log_z`` [b],
    ``marginals`` float [n, S] and each sentence's expected ``edge_counts`` [b, E] or
    [b, C, E], both None when they were not computed (``draw(..., expectations=False)``)."""

    def __init__(self, split: _Split, sign: float, gradient: SampledGradient, arrays: tuple, transitions):
        self._split, self.sign = split, sign
        self.first, self.last = split.pieces[0][0], split.pieces[-1][1]
        self.offsets, self.emissions, self.log_z, self.marginals, self.edge_counts = arrays
        self.transitions = transitions
        self._encoded, self.topology = gradient.encoded, gradient.scorer.topology

    @property
    def pieces(self) -> list[_Piece]:
        """Each piece's results (views)."""
        encoded, first, pieces = self._encoded, self.first, []
        for q, (lo, hi) in enumerate(self._split.pieces):
            rows = slice(encoded.offsets[lo] - encoded.offsets[first], encoded.offsets[hi] - encoded.offsets[first])
            sentences = slice(lo - first, hi - first)
            token_class = None if encoded.token_class is None else encoded.token_class[encoded.token_rows(lo, hi)]
            pieces.append(
                _Piece(
                    lo,
                    hi,
                    encoded.lengths[lo:hi],
                    self.offsets[lo - first + q : hi - first + q + 1],
                    self.emissions[rows],
                    self.transitions,
                    token_class,
                    self.log_z[sentences],
                    None if self.marginals is None else self.marginals[rows],
                    None if self.edge_counts is None else self.edge_counts[sentences],
                )
            )
        return pieces

    def log_probabilities(self, paths: np.ndarray) -> np.ndarray:
        """float [K, B]: log p(path | x) of state paths [K, n] of the minibatch."""
        parts, row = [], 0
        for piece in self.pieces:
            rows = slice(row, row + len(piece.emissions))
            pot = Potentials(
                self.topology, piece.emissions, piece.lengths, piece.transitions, token_class=piece.token_class
            )
            parts.append(pot.path_scores(paths[:, rows]) - piece.log_z)
            row = rows.stop
        return np.concatenate(parts, axis=1)


class SampledGradient:
    """Draws and score-function gradients for encoded sentences under weights
    theta [D] = [F + T] (F features, T transition weights); labels never enter.

    A minibatch (sentences first .. last-1) is cut into fixed pieces; their
    emissions, posteriors (with each sentence's expected edge counts) and draws
    come from one C call (``fb_draw``), and their gradients from another
    (``fb_gradient``: coefficient-weighted path indicators minus weighted
    marginals, accumulated into each piece's gradient buffer), a call per piece on
    more than one thread (:meth:`map`).  :meth:`step` moves the weights the
    minibatch touched straight from those buffers (``fb_step``)."""

    def __init__(self, scorer: Scorer, encoded: EncodedSentences):
        if scorer.constrained is not None:
            raise FstcrfError(
                "bandit training under a training grammar is not supported; train "
                "without --grammar and decode under the grammar instead"
            )
        self.scorer = scorer
        self.encoded = encoded
        self.num_weights = scorer.num_weights
        topology = scorer.topology
        #: int64 [S] each state's label id: label ids of draws come out as the kernel reads them
        self.state_labels = topology.state_label.astype(np.int64)
        # each piece's gradient in the compact layout of its minibatch (kernel.bandit.index),
        # in buffers [U] of a capacity grown as minibatches need, kept zero between minibatches
        self._compact = kernel.bandit.GradientLayout(encoded.num_predicates, [np.zeros(0) for _ in range(_PIECES)])
        self._transitions = np.zeros(scorer.transitions.size)  # [T]
        self._pool: WorkerPool | None = None
        self._pool_pid = 0  # the process the pool's thread runs in
        #: whether an interrupt left a thread of this object running (which may still write to its arrays)
        self._left_running = False
        self._partner: kernel.bandit.Partner | None = None
        #: the partner making the layout of sentences first .. last-1: (partner, first, last)
        self._indexing: tuple[kernel.bandit.Partner, int, int] | None = None
        #: whether a gradient was added to the buffers of the layout
        self._added = False
        #: the minibatch (first, last) whose gradient the buffers hold, with its m
        #: predicates and U features; None when they hold none
        self._layout: tuple[int, int, int, int] | None = None
        token_class = None if encoded.token_class is None else kernel.kernel_array(encoded.token_class, np.int32)
        self._training = kernel.bandit.TrainingSet(
            scorer.features.kernel_dictionary,
            encoded.kernel_rows,
            kernel.kernel_array(encoded.offsets, np.int64),
            token_class,
            kernel.Graph(topology),
            kernel.kernel_array(np.where(topology.edge_ids >= 0, topology.edge_ids, -1), np.int32),
        )
        self._start = np.where(topology.start, 0.0, -np.inf)
        self._final = np.where(topology.final, 0.0, -np.inf)
        self._workspaces: list = []  # one per piece, built on first use
        # each piece's scratch on cache lines of its own: the pieces run on two threads
        self._work = [kernel.own_lines(scorer.features.num_states + scorer.features.num_labels) for _ in range(_PIECES)]
        self._splits: dict[tuple[int, int], _Split] = {}
        #: whether minibatches are shared out between threads (on more than one): a
        #: learner's ThreadChoice turns it off where one thread is the cheaper
        self.shared = True
        #: the minibatches a learner's ThreadChoice ran on one thread [0] and shared out [1]
        self.minibatches = [0, 0]
        #: the step state of the features (_Steps.features) whose lines each draw asks for
        self.step_state: np.ndarray | None = None

    def potentials(self, theta: np.ndarray, first: int, last: int, sign: float = 1.0) -> Potentials:
        """The potentials of sentences first .. last-1 under sign * theta."""
        return self.scorer.potentials(self.encoded, theta, first, last, sign)

    def posteriors(self, theta: np.ndarray, first: int, last: int, sign: float = 1.0) -> Posteriors:
        """The posteriors of sentences first .. last-1 under sign * theta."""
        return self.draw(theta, first, last, 0, 0, sign)[1]

    def draw(
        self,
        theta: np.ndarray,
        first: int,
        last: int,
        count: int,
        seed: int,
        sign: float = 1.0,
        expectations: bool = True,
    ) -> tuple[np.ndarray, Posteriors]:
        """(int32 [count, n] exact draws of state paths of sentences first .. last-1 from
        p_{sign theta}, their posteriors).  Piece j of the minibatch draws with seed + j.
        Without ``expectations`` the posteriors hold no marginals or expected edge
        counts (no backward pass): enough for a gradient whose coefficients sum to 0
        on each sentence (:func:`expectation_cancels`).  The kernel is called directly
        on caller-owned structs: the scores come from the model and need none of
        :class:`Potentials`' checks."""
        F = self.scorer.features.num_features
        split = self._split(first, last)
        transitions = np.ascontiguousarray(self.scorer.transitions.scores(sign * theta[F:]))
        scores = kernel.Scores(transitions, self._start, self._final)
        if not self._workspaces:
            self._workspaces = [
                kernel.chain_workspace(
                    self.scorer.topology, self.scorer.transitions.num_classes, int(self.encoded.lengths.max())
                )
                for _ in range(_PIECES)
            ]
        S = self.scorer.topology.num_states
        b, n = last - first, split.tokens
        offsets, log_z = np.empty(b + len(split.pieces), dtype=np.int64), np.empty(b)
        emissions = np.empty((n, S))
        marginals = np.empty((n, S)) if expectations else None
        edge_counts = np.empty((b, *transitions.shape)) if expectations else None
        paths = np.empty((count, n), dtype=np.int32)
        outputs = (offsets, emissions, log_z, marginals, edge_counts, paths)

        draw = kernel.bandit.draw(
            self._training, split.bounds, scores, theta[:F], sign, seed % 2**64, outputs, self.step_state
        )

        def work(pieces: tuple[int, int], partner: kernel.bandit.Partner | None = None) -> None:
            draw(pieces, self._workspaces[pieces[0]], self._work[pieces[0]], partner)

        with phase("bandit draws"):
            self.map(work, self._calls(split), self._small(first, last))
            if self._partner is not None and self.shared and self._layout is None and self._indexing is None:
                # laid out on the partner while the caller scores the draws
                kernel.bandit.index(self._training, self._compact, split.rows, self._partner)
                self._indexing = (self._partner, first, last)
        return paths, Posteriors(split, sign, self, outputs[:-1], transitions)

    def map(self, work, items, small: bool = False) -> None:
        """work(item) for each item: the first on the calling thread, the others on the
        threads of a pool kept for this object, or for two ``small`` ones (a minibatch
        too small to share out through the pool, :meth:`_small`) the second posted to
        this object's partner thread (``work(item, partner=...)``); all on the calling
        thread for a single item, a single thread or while not :attr:`shared`."""
        items = list(items)
        if self.scorer.threads == 1 or len(items) <= 1 or not self.shared:
            for item in items:
                work(item)
            return
        if self._left_running:
            raise FstcrfError("an interrupt left a thread of this learner running; make a new one")
        limit_blas()  # BLAS threads would busy-wait beside the partner's and the pool's
        if small and len(items) == 2:
            if self._partner is None or self._partner.pid != os.getpid():  # none, or a parent's before a fork
                self._partner, self._indexing = kernel.bandit.Partner(), None
            partner = self._partner
            self._collect_layout()
            work(items[1], partner=partner)
            try:
                work(items[0])
            except BaseException:
                if not partner.wait(INTERRUPT_GRACE):
                    self._leave_threads()
                raise
            partner.wait()
            return
        if self._pool is None or self._pool_pid != os.getpid():
            self._pool, self._pool_pid = WorkerPool(min(self.scorer.threads, _PIECES) - 1, "fstcrf-bandit"), os.getpid()
        futures = [self._pool.submit(work, item) for item in items[1:]]
        try:
            work(items[0])
        except BaseException:
            wait(futures, timeout=INTERRUPT_GRACE)  # close() leaves a thread still running then
            raise
        for future in futures:
            future.result()

    def close(self) -> None:
        """Stop the threads and forget the step state (the object stays usable and
        restarts them if needed).  After Ctrl-C (KeyboardInterrupt), threads whose work
        does not end within INTERRUPT_GRACE seconds are left running (and the object
        refuses more work)."""
        self.step_state = None
        if self._partner is not None:
            if not self._collect_layout(INTERRUPT_GRACE) or not self._partner.stop(INTERRUPT_GRACE):
                self._leave_threads()
            self._partner = None
        if self._pool is not None:
            if not self._pool.close(INTERRUPT_GRACE):
                self._left_running = True
            self._pool = None

    def _leave_threads(self) -> None:
        """Leave the partner, whose call did not end in time, running: it is stopped
        once its call ends (fstcrf.engine.threads.left_running), and holds the kernel
        structs that call may still read or write."""
        if self._partner is not None:
            self._partner.stop(0.0)
            self._partner.keep = (self._training, self._compact, self._workspaces, self._work)
        self._partner, self._indexing, self._left_running = None, None, True

    def add_gradient(self, posteriors: Posteriors, paths: np.ndarray, coefficients: np.ndarray) -> None:
        """Add sum_k sum_b coefficients[k, b] * grad_theta log p_{sign theta}(paths[k] of
        sentence b) = sign * sum c (phi(path) - E[phi]) to the gradient that
        :meth:`take` returns, for state paths [K, n] of the sentences of
        ``posteriors`` (under sign * theta); timed as the phase "bandit gradient".
        Posteriors without marginals leave the E[phi] term out: right only when
        each sentence's coefficients sum to 0 (:func:`expectation_cancels`)."""
        with phase("bandit gradient"):
            self._add_gradient(posteriors, paths, coefficients)

    def _add_gradient(self, posteriors: Posteriors, paths: np.ndarray, coefficients: np.ndarray) -> None:
        """:meth:`add_gradient`'s work."""
        sign, first, last = posteriors.sign, posteriors.first, posteriors.last
        paths = kernel.kernel_array(paths, np.int32)
        coefficients = kernel.kernel_array(coefficients, np.float64)
        layout = self.scorer.transitions
        # the draws' edge uses, counted by the call of the first piece; a path the
        # topology does not allow is refused by every call before any output is touched
        counts = np.zeros((len(paths), *posteriors.transitions.shape))
        predicates = self._lay_out(first, last)[2]
        fresh = not self._added
        split = self._split(first, last)
        marks = np.empty(posteriors.emissions.shape)

        add = kernel.bandit.add_gradient(
            self._training,
            split.bounds,
            (coefficients, paths),
            (posteriors.offsets, posteriors.marginals),
            sign,
            self._compact,
            marks,
        )

        def work(pieces: tuple[int, int], partner: kernel.bandit.Partner | None = None) -> None:
            add(pieces, self._work[pieces[0]], counts if pieces[0] == 0 else None, partner)

        try:
            self.map(work, self._calls(split), self._small(first, last))
        except TopologyError:
            if fresh:  # refused before any output: the layout made for it goes too
                self._forget(predicates)
            raise
        self._added = True
        total: np.ndarray | float = 0.0
        for draw in counts:
            total = total + layout.gradient(draw)
        if posteriors.edge_counts is None:
            self._transitions += sign * total
            return
        # sum_b weights[b] edge_counts[b] piece by piece: np.tensordot's own dot, without its overhead
        edge_counts = posteriors.edge_counts.reshape(last - first, -1)
        expected = np.zeros((1, edge_counts.shape[1]))
        for lo, hi in split.sentences:
            expected += np.dot(coefficients[:, lo:hi].sum(axis=0, keepdims=True), edge_counts[lo:hi])
        self._transitions += sign * (total - layout.gradient(expected.reshape(counts.shape[1:])))

    def _lay_out(self, first: int, last: int) -> tuple[int, int, int, int]:
        """The layout of the gradient buffers for sentences first .. last-1 (kernel.bandit.index),
        made unless they already have it: (first, last, predicates m, features U);
        FstcrfError if they hold another minibatch's gradient."""
        self._collect_layout()
        if self._layout is not None:
            if self._layout[:2] == (first, last):
                return self._layout
            if self._added:
                raise FstcrfError(
                    f"the gradient of sentences {self._layout[0]} .. {self._layout[1] - 1} was added "
                    f"but not taken or stepped before one of sentences {first} .. {last - 1}"
                )
            self._forget(self._layout[2])  # laid out after a draw, but its gradient never came
        kernel.bandit.index(self._training, self._compact, self._split(first, last).rows)
        return self._made(first, last)

    def _made(self, first: int, last: int) -> tuple[int, int, int, int]:
        """Take the layout kernel.bandit.index made for sentences first .. last-1, with
        buffers to hold it."""
        predicates, features = self._compact.sizes()
        capacity = len(self._compact.buffers[0])
        if features > capacity:  # buffers hold zeros only here: replace them
            size = min(max(features, 2 * capacity), self.scorer.features.num_features)
            self._compact.use_buffers([kernel.written_zeros(size) for _ in range(_PIECES)])
        self._layout, self._added = (first, last, predicates, features), False
        return self._layout

    def _collect_layout(self, timeout: float | None = None) -> bool:
        """Take the layout posted to the partner after a draw, if any: True; False if it
        is not done after ``timeout`` seconds (None: no limit)."""
        if self._indexing is not None:
            partner, first, last = self._indexing
            if not partner.wait(timeout):
                return False
            self._indexing = None
            self._made(first, last)
        return True

    def _release(self) -> None:
        """Forget the layout (the buffers and ``at`` were cleared)."""
        self._layout = None

    def _forget(self, predicates: int) -> None:
        """Set ``at`` back to -1 at the layout's predicates and forget the layout (the
        buffers were cleared)."""
        self._compact.at[self._compact.order[:predicates]] = -1
        self._release()

    def take(self, first: int, last: int) -> SparseGradient:
        """The gradient added since the last call, for sentences first .. last-1, and
        reset it.  Only the features of the predicates of those sentences (the
        layout's, in ascending order) can be non-zero."""
        _, _, predicates, features = self._lay_out(first, last)
        order = self._compact.order[:predicates]
        ptr = self.scorer.features.ptr
        sizes = ptr[order + 1] - ptr[order]
        indices = np.repeat(ptr[order] - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes) + np.arange(features)
        values = np.empty(features)
        compact = np.arange(features)

        def gather(run: slice) -> None:
            kernel.gather_clear(self._compact.gather, compact[run], values[run])

        self.map(gather, _runs(features))
        self._forget(predicates)
        transitions, self._transitions = self._transitions, np.zeros(self.scorer.transitions.size)
        return SparseGradient(indices, values, transitions)

    def step(self, first: int, last: int, steps: _Steps, theta: np.ndarray) -> None:
        """Step theta by ``steps`` along the gradient added since the last call, for
        sentences first .. last-1, and reset it: what :meth:`take` returns, stepped
        in one pass (``fb_step``): each touched feature's gradient is read from the
        buffers of the pieces that touched it, cleared and stepped at once
        (``fu_apply``'s arithmetic), the transitions after."""
        predicates = self._lay_out(first, last)[2]
        rule = steps.next_rule()
        transitions = (self._transitions, steps.squares, steps.moments)

        step = kernel.bandit.step(self._training, self._compact, rule, (theta, steps.features))

        def work(numbered: tuple[int, slice], partner: kernel.bandit.Partner | None = None) -> None:
            number, run = numbered
            # the call of the first run steps the transitions too (and clears their gradient)
            step((run.start, run.stop), transitions if number == 0 else None, partner)

        small = self._small(first, last)
        if small and self.scorer.threads > 1 and self.shared:  # each thread steps where its caches hold the lines
            alone = kernel.bandit.order_by_piece(self._compact)
            runs = [slice(0, alone), slice(alone, predicates)]
        else:
            runs = _runs(predicates, split=self.scorer.threads > 1 and self.shared)
        with phase("bandit step"):
            self.map(work, enumerate(runs), small)
        self._release()

    def _small(self, first: int, last: int) -> bool:
        """Whether sentences first .. last-1 are too few tokens to share out through the
        pool (_INLINE_TOKENS): their second piece goes to the partner thread."""
        return bool(self.encoded.offsets[last] - self.encoded.offsets[first] < _INLINE_TOKENS)

    def _split(self, first: int, last: int) -> _Split:
        """The fixed split of sentences first .. last-1 into pieces of similar token
        counts (the same whatever the threads, so results do not depend on them)."""
        split = self._splits.get((first, last))
        if split is None:
            minibatch = SentenceBatch()
            minibatch.lengths = self.encoded.lengths[first:last]
            minibatch.offsets = self.encoded.offsets[first : last + 1] - self.encoded.offsets[first]
            pieces = [(first + lo, first + hi) for lo, hi in thread_chunks(minibatch, _PIECES)]
            bounds = np.array([lo for lo, _ in pieces] + [last], dtype=np.int64)
            rows = kernel.kernel_array(self.encoded.offsets[bounds], np.int64)
            split = self._splits[first, last] = _Split(
                pieces,
                bounds,
                rows,
                int(rows[-1] - rows[0]),
                [(lo - first, hi - first) for lo, hi in pieces],
            )
        return split

    def _calls(self, split: _Split) -> list[tuple[int, int]]:
        """The ranges of pieces of ``split`` each kernel call takes: all in one call where
        the minibatch runs on one thread (one thread, or not :attr:`shared`), as on
        one thread whatever the choice; else one each."""
        if self.scorer.threads > 1 and self.shared:
            return [(q, q + 1) for q in range(len(split.pieces))]
        return [(0, len(split.pieces))]


@dataclass
class _Split:
    """A minibatch cut into Q pieces: their sentences ``pieces`` [(lo, hi)] and the
    ``bounds`` int64 [Q+1] between them, their first token rows ``rows`` int64 [Q+1]
    (the last one's end at rows[Q]), the minibatch's ``tokens`` and their ``sentences`` within the minibatch [(lo -
    first, hi - first)]."""

    pieces: list[tuple[int, int]]
    bounds: np.ndarray
    rows: np.ndarray
    tokens: int
    sentences: list[tuple[int, int]]


def permuted(encoded: EncodedSentences, order: np.ndarray) -> EncodedSentences:
    """The sentences of ``encoded`` in the order int [B] (sentence i of the result is
    sentence order[i])."""
    rows = np.concatenate([np.arange(encoded.offsets[i], encoded.offsets[i + 1]) for i in order])
    token_class = None if encoded.token_class is None else encoded.token_class[rows]
    matrix = encoded.rows().to_scipy()
    return EncodedSentences(matrix[rows], encoded.lengths[order], token_class)


class _Steps:
    """The step rule: theta += update(s) for a stochastic gradient s (ascent), made
    in C by :meth:`SampledGradient.step` (``fu_apply``'s arithmetic).  Only the
    coordinates a minibatch touches move: AdaGrad's sums and Adam's moments (lazy
    Adam, bias-corrected by the global step count) are kept per coordinate.  The
    features' state is ``features``: None (constant), the squares [F] (adagrad), or
    Adam's (moment, square) pairs [F, 2], interleaved so that a touched feature's
    state is one cache line; the transitions' is ``squares`` and ``moments`` [T]."""

    def __init__(self, rule: str, learning_rate: float, num_features: int, size: int):
        self.rule, self.rate, self.num_features = rule, learning_rate, num_features
        shape = {"constant": None, "adagrad": (num_features,), "adam": (num_features, 2)}[rule]
        self.features = None if shape is None else kernel.written_zeros(shape)
        transitions = size - num_features
        self.squares = np.zeros(transitions) if rule in ("adagrad", "adam") else None
        self.moments = np.zeros(transitions) if rule == "adam" else None
        self.count = 0
        self._kernel_rule = kernel.StepRule(rule, learning_rate, *_ADAM_BETAS, _EPSILON)

    def next_rule(self) -> kernel.StepRule:
        """The rule of the next step (Adam's rate bias-corrected for it): one struct,
        its rate set for each step."""
        self.count += 1
        beta1, beta2 = _ADAM_BETAS
        rate = (
            self.rate
            if self.rule != "adam"
            else self.rate * math.sqrt(1.0 - beta2**self.count) / (1.0 - beta1**self.count)
        )
        self._kernel_rule.set_rate(rate)
        return self._kernel_rule


#: Below this many coordinates a gather runs on one thread (handing work to the pool
#: costs more than it saves).
_SPLIT_COORDINATES = 20_000


def _runs(size: int, split: bool | None = None) -> list[slice]:
    """Consecutive runs covering range(size): ``_PIECES`` of them when ``split``, or
    (None) when size is at least _SPLIT_COORDINATES; else one."""
    if not (size >= _SPLIT_COORDINATES if split is None else split):
        return [slice(0, size)]
    cuts = np.linspace(0, size, _PIECES + 1).astype(int)
    return [slice(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:])]


@dataclass
class _Running:
    """Running sums over an epoch and over the whole run."""

    baseline_sum: float = 0.0
    baseline_count: int = 0
    epoch_gain: float = 0.0
    epoch_draws: int = 0
    epoch_clipped: int = 0

    def mean(self) -> float:
        return self.baseline_sum / self.baseline_count if self.baseline_count else 0.0


def expectation_cancels(settings: BanditSettings) -> bool:
    """Whether the coefficients of each sentence's draws sum to 0 by construction, so
    that the E[phi] term of the gradient, sum_k c_k * E[phi], is 0 and the draws need
    no posteriors: the leave-one-out baseline of the expected gain (c_k = (g_k - the
    mean of the others) / K) and pairwise-independent draws (+c and -c)."""
    return (settings.objective == "expected" and settings.baseline == "loo") or (
        settings.objective == "pairwise-independent"
    )


def _centred(raw: np.ndarray, settings: BanditSettings, running: _Running) -> np.ndarray:
    """Coefficients [K, B] from raw coefficients [K, B] minus the baseline."""
    if settings.baseline == "mean":
        centred = raw - running.mean()
        running.baseline_sum += float(raw.sum())
        running.baseline_count += raw.size
        return centred
    if settings.baseline == "loo":
        return raw - (raw.sum(axis=0, keepdims=True) - raw) / (len(raw) - 1)
    return raw


def _gains(feedback, indices: np.ndarray, label_ids: np.ndarray) -> np.ndarray:
    """feedback.gains(indices, label_ids), timed as the phase "bandit feedback"."""
    with phase("bandit feedback"):
        return feedback.gains(indices, label_ids)


def add_minibatch_gradient(
    gradient: SampledGradient,
    feedback,
    settings: BanditSettings,
    theta: np.ndarray,
    first: int,
    last: int,
    indices: np.ndarray,
    seed: int,
    running: _Running,
) -> None:
    """Add the stochastic gradient of sentences first .. last-1 (training sentences
    ``indices`` [B] for the feedback) under ``theta`` to ``gradient``'s buffers."""
    K = settings.draws
    state_label = gradient.state_labels
    independent_pairs = settings.objective == "pairwise-independent"
    count = 2 * K if independent_pairs else K
    draws, posteriors = gradient.draw(theta, first, last, count, seed, expectations=not expectation_cancels(settings))
    gains = _gains(feedback, indices, state_label[draws])
    running.epoch_gain += float(gains.sum())
    running.epoch_draws += gains.size
    if settings.objective == "expected":
        gradient.add_gradient(posteriors, draws, _centred(gains, settings, running) / K)
    elif settings.objective == "cross-entropy":
        probabilities = np.exp(posteriors.log_probabilities(draws))
        running.epoch_clipped += int(np.count_nonzero(probabilities < settings.clip))
        raw = gains / np.maximum(probabilities, settings.clip) if settings.clip > 0 else gains / probabilities
        gradient.add_gradient(posteriors, draws, _centred(raw, settings, running) / K)
    elif settings.objective == "pairwise":
        rivals, negated = gradient.draw(theta, first, last, K, seed ^ 0x5DEECE66D, sign=-1.0)
        rival_gains = _gains(feedback, indices, state_label[rivals])
        coefficients = _centred((gains >= rival_gains).astype(np.float64), settings, running) / K
        gradient.add_gradient(posteriors, draws, coefficients)
        gradient.add_gradient(negated, rivals, coefficients)
    else:
        half = 0.5 * np.sign(gains[:K] - gains[K:]) / K
        gradient.add_gradient(posteriors, draws, np.concatenate([half, -half]))


def minibatch_gradient(
    gradient: SampledGradient,
    feedback,
    settings: BanditSettings,
    theta: np.ndarray,
    first: int,
    last: int,
    indices: np.ndarray,
    seed: int,
    running: _Running,
) -> SparseGradient:
    """The stochastic gradient of sentences first .. last-1 (training sentences
    ``indices`` [B] for the feedback) under ``theta``."""
    add_minibatch_gradient(gradient, feedback, settings, theta, first, last, indices, seed, running)
    return gradient.take(first, last)


class _Run:
    """The state of a bandit run: weights theta [D], step rule, running sums, draws."""

    def __init__(self, gradient: SampledGradient, feedback, settings: BanditSettings, order: np.ndarray):
        self.gradient, self.feedback, self.settings, self.order = gradient, feedback, settings, order
        self.rng = np.random.default_rng(settings.seed)
        self.theta = kernel.written_zeros(gradient.num_weights)
        self.steps = _Steps(
            settings.step, settings.learning_rate, gradient.scorer.features.num_features, gradient.num_weights
        )
        self.running = _Running()
        self.choice = ThreadChoice() if gradient.scorer.threads > 1 else None
        gradient.step_state = self.steps.features

    def epoch(self) -> tuple[float, dict]:
        """One pass over the minibatches in random order: (the record's objective, the
        negated mean gain; its extra fields)."""
        B = self.gradient.encoded.num_sequences
        size = self.settings.batch_size
        running = self.running
        running.epoch_gain, running.epoch_draws, running.epoch_clipped = 0.0, 0, 0
        for first in self.rng.permutation(np.arange(0, B, size)).tolist():
            last = min(first + size, B)
            if self.choice is None:
                self.minibatch(first, last)
            else:
                tokens = int(self.gradient.encoded.offsets[last] - self.gradient.encoded.offsets[first])
                with self.choice.minibatch(self.gradient, tokens):
                    self.minibatch(first, last)
        mean_gain = running.epoch_gain / max(running.epoch_draws, 1)
        extra = {"mean_gain": mean_gain, "feedback_calls": int(self.feedback.calls)}
        if self.settings.objective == "cross-entropy":
            extra["clipped"] = running.epoch_clipped / max(running.epoch_draws, 1)
        return -mean_gain, extra

    def minibatch(self, first: int, last: int) -> None:
        """Step theta along the gradient of sentences first .. last-1."""
        add_minibatch_gradient(
            self.gradient,
            self.feedback,
            self.settings,
            self.theta,
            first,
            last,
            self.order[first:last],
            int(self.rng.integers(2**63)),
            self.running,
        )
        self.gradient.step(first, last, self.steps, self.theta)


def learn(
    gradient: SampledGradient,
    feedback,
    settings: BanditSettings,
    order: np.ndarray,
    evaluate: train.Evaluate | None = None,
    callback: train.Callback | None = None,
) -> train.TrainingResult:
    """Bandit training over the sentences of ``gradient`` (training sentences ``order``
    [B] for the feedback); one iteration is an epoch, whose record's objective is
    minus the mean gain of its draws and which adds ``mean_gain``,
    ``feedback_calls`` (so far) and, for cross-entropy, ``clipped`` (the share of
    the epoch's draws whose probability was below the floor).  A FeedbackError
    carries the result so far as its ``result``."""
    settings.check()
    run = _Run(gradient, feedback, settings, order)
    monitor = train.Monitor(f"bandit-{settings.objective}", evaluate, callback)
    try:
        with monitor.interruptible(), contextlib.closing(gradient):
            for _ in range(settings.max_iter):
                objective, extra = run.epoch()
                if monitor.end_iteration(run.theta, objective, extra=extra):
                    break
    except FeedbackError as error:
        error.result = monitor.result(run.theta)
        raise
    return monitor.result(run.theta, handed_over=True)
