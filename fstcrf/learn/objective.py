"""The penalised log-likelihood of a training set and its gradient.

:class:`Scorer` scores encoded sentences (emissions from the factored
features, transitions from the topology's edges) and decodes them;
:class:`TrainingSet` is the :class:`fstcrf.learn.train.Problem` of a model: its
loss and gradient come from the C training gradient (``ft_gradient``, driven
per thread by :class:`_GradientDriver`) and the gold paths' feature counts.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from fstcrf.engine import kernel
from fstcrf.features.encoding import EncodedSentences, FactoredFeatures, TransitionWeights
from fstcrf.errors import FstcrfError, LabelError, ShapeError
from fstcrf.grammar import constrain, restrict_to, restriction_maps, sum_per_original_edge
from fstcrf.engine.inference import (
    Potentials,
    SentenceBatch,
    forward_backward,
    neighbours,
    check_totals,
    thread_chunks,
    useful_threads,
    viterbi,
)
from fstcrf.engine.threads import run_parallel
from fstcrf.engine.acceptor import Acceptor
from fstcrf.phases import release_free_heap
from fstcrf.engine.topology import Topology

#: Cells (tokens x states) of one block of sentences scored at once per thread.
BLOCK_CELLS = 2**19


def path_edges(table: np.ndarray, states: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """int64 [N - B]: the edge ids (``table`` [S, S] of a topology's edge_ids) along
    state paths [N] cut into sentences at offsets [B+1]."""
    before, after = neighbours(offsets, len(states))
    return table[states[before], states[after]]


def seen_edges(topology, states: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """bool [E]: the edges that gold state paths int [N] (-1: unknown) cut into
    sentences at offsets [B+1] take between two known states."""
    before, after = neighbours(offsets, len(states))
    known = (states[before] >= 0) & (states[after] >= 0)
    seen = np.zeros(topology.num_edges, dtype=bool)
    edges = topology.edge_ids[states[before[known]], states[after[known]]]
    seen[edges[edges >= 0]] = True
    return seen


def thread_plans(encoded: SentenceBatch, threads: int, max_tokens: int) -> list[list[tuple[int, int]]]:
    """Sentence blocks (first, last): one list per thread (the threads' runs as in
    :func:`~fstcrf.engine.inference.thread_chunks`), each block at most ``max_tokens``
    tokens (or one sentence)."""
    offsets = encoded.offsets
    if threads == 1 and encoded.num_tokens <= max_tokens:  # one block: a small batch
        return [[(0, encoded.num_sequences)]]
    plans = []
    for first, last in thread_chunks(encoded, threads):
        blocks = []
        while first < last:
            stop = int(np.searchsorted(offsets, offsets[first] + max_tokens, side="right")) - 1
            stop = min(max(stop, first + 1), last)
            blocks.append((first, stop))
            first = stop
        plans.append(blocks)
    return plans


#: Gold counts subtracted from the gradient at a time (TrainingSet._subtract_observed).
OBSERVED_SLICE = 1 << 18


def sparse_counts(counts: np.ndarray) -> tuple[np.ndarray | slice, np.ndarray]:
    """(index, values) with counts[index] = values and counts 0 elsewhere, for counts
    float [D]: the non-zero entries (int32 or int64 indices) when that takes less
    memory (a complete feature set's gold counts are mostly 0), else every entry
    (slice(None), counts).  Sparse values that are all whole numbers (binary
    predicates count tokens) are kept as int32, exactly."""
    nonzero = np.flatnonzero(counts)
    index_type = np.int32 if len(counts) <= np.iinfo(np.int32).max else np.int64
    values = counts[nonzero]
    if np.all(values == np.round(values)) and (values.size == 0 or np.abs(values).max() < 2**31):
        values = values.astype(np.int32)
    if len(nonzero) * (values.itemsize + np.dtype(index_type).itemsize) >= 8 * len(counts):
        return slice(None), counts
    return nonzero.astype(index_type), values


class Scorer:
    """Scores encoded sentences with a feature dictionary, a topology and weights
    [F + T] (T transition weights, laid out by ``transitions``).

    With ``constraint`` (an acceptor over the topology's labels) every
    inference runs on the topology restricted to the accepted label sequences
    (Z sums over those only) and reports results on the original states; errors
    name it ``grammar`` (e.g. "the training grammar chunks.fgr")."""

    def __init__(
        self,
        features: FactoredFeatures,
        topology: Topology,
        threads: int,
        constraint: Acceptor | None = None,
        transitions: TransitionWeights | None = None,
        grammar: str = "the grammar",
    ):
        self.features = features
        self.topology = topology
        self.threads = threads
        self.transitions = transitions or TransitionWeights(topology.num_edges)
        self.num_weights = features.num_features + self.transitions.size
        self.constrained = None if constraint is None else constrain(topology, constraint, name=grammar)

    def potentials(
        self,
        encoded: EncodedSentences,
        weights: np.ndarray,
        first: int,
        last: int,
        scale: float = 1.0,
        threads: int = 1,
    ) -> Potentials:
        """The potentials of sentences first .. last-1 under scale * weights (their
        emissions in ``threads`` threads)."""
        F = self.features.num_features
        emit = self.features.sentence_emissions(encoded, first, last, weights[:F], scale, threads)
        token_class = None if encoded.token_class is None else encoded.token_class[encoded.token_rows(first, last)]
        lengths = encoded.lengths[first:last]
        self.topology.check_lengths(lengths)
        offsets = encoded.offsets[first : last + 1]
        return Potentials.of_checked(
            self.topology,
            emit,
            lengths,
            offsets if first == 0 else offsets - offsets[0],
            self.transition_table(weights) if scale == 1.0 else self.transitions.scores(scale * weights[F:]),
            token_class,
        )

    def transition_table(self, weights: np.ndarray) -> np.ndarray:
        """float [E] or [C, E]: the transition scores of ``weights`` [F + T], kept while
        they are the same read-only weights (a loaded model's), so that each batch's
        potentials share one table and its kernel struct."""
        kept = self.__dict__.get("_table")
        if kept is not None and kept[0] is weights and not weights.flags.writeable:
            return kept[1]
        table = self.transitions.scores(weights[self.features.num_features :])
        if not weights.flags.writeable:
            table = table.view()
            table.flags.writeable = False
            self._table = (weights, table)
        return table

    def decoding_topology(self, grammar=None, params: dict | None = None) -> Topology:
        """The topology decoding runs on: the model's, restricted to the training
        constraint and to ``grammar`` when there are ones."""
        topology = self.constrained or self.topology
        return topology if grammar is None else constrain(topology, grammar, params=params)

    def sum_product(self, pot: Potentials, allowed_labels: np.ndarray | None = None, topology: Topology | None = None):
        """(log Z [B], state marginals [N, S], expected edge counts [E]) under the
        constraint (or on ``topology``, a restriction of the model's); with
        ``allowed_labels`` bool [N, L], summed over the paths whose labels keep to
        it (log Z is -inf for a sentence without such a path)."""
        topology = topology or self.constrained or self.topology
        restriction = None if topology is self.topology else restrict_to(pot, topology)
        target = pot if restriction is None else restriction.potentials
        stranded = np.zeros(pot.num_sequences, dtype=bool)
        if allowed_labels is not None:
            allowed_states = allowed_labels[:, target.topology.state_label]
            # a token no state may take leaves its sentence without a path
            empty = ~allowed_states.any(axis=1)
            if empty.any():
                stranded[np.searchsorted(pot.offsets, np.flatnonzero(empty), side="right") - 1] = True
                allowed_states[empty] = True
            target = target.clamp(allowed_states)
        result = forward_backward(target, allow_infeasible=allowed_labels is not None)
        result.log_z[stranded] = -np.inf
        if restriction is None:
            return result.log_z, result.node_marginals, result.edge_counts
        return (
            result.log_z,
            restriction.original_marginals(cast(np.ndarray, result.node_marginals)),
            restriction.original_edge_counts(cast(np.ndarray, result.edge_counts)),
        )

    def plans(self, encoded: EncodedSentences, topology: Topology | None = None) -> list[list[tuple[int, int]]]:
        """Per-thread sentence blocks.  Checks first that every length is feasible, which
        also fills the topology's caches before threads share it."""
        topology = topology or self.constrained or self.topology
        topology.check_lengths(encoded.lengths)
        threads = useful_threads(encoded.num_tokens, topology, self.threads)
        return thread_plans(encoded, threads, max(1, BLOCK_CELLS // topology.num_states))

    def paths(
        self, encoded: EncodedSentences, weights: np.ndarray, grammar=None, params: dict | None = None
    ) -> np.ndarray:
        """int32 [N]: the Viterbi state paths of all sentences, among the label
        sequences the training constraint and ``grammar`` accept."""
        paths = np.empty(encoded.num_tokens, dtype=np.int32)
        topology = self.decoding_topology(grammar, params)

        def work(blocks):
            for first, last in blocks:
                rows = encoded.token_rows(first, last)
                if topology is self.topology:
                    self.best_paths(encoded, weights, first, last, paths[rows])
                else:
                    restriction = restrict_to(self.potentials(encoded, weights, first, last), topology)
                    paths[rows] = restriction.state_map[viterbi(restriction.potentials).paths]

        run_parallel(work, self.plans(encoded, topology))
        return paths

    def best_paths(
        self, encoded: EncodedSentences, weights: np.ndarray, first: int, last: int, out: np.ndarray
    ) -> None:
        """Write into out int32 [n] the Viterbi state paths of sentences first .. last-1
        (n tokens, their lengths feasible) on the model's topology: their emissions and
        Viterbi in one kernel call (``ft_best_paths``), on the topology's kept graph and
        the kernel scores of the kept transition table; ScoreError if a path's score
        leaves float64's range."""
        topology = self.topology
        offsets = encoded.offsets[first : last + 1]
        table = self.transition_table(weights)
        lengths = encoded.lengths[first:last]
        workspace = kernel.scratch_workspace(topology, 1 if table.ndim == 1 else len(table), max(lengths.tolist()), 1)
        scores = np.empty(last - first)
        self.features.kernel_dictionary.best_paths(
            encoded.tokens(first, last),
            weights[: self.features.num_features],
            kernel.topology_graph(topology),
            kernel.kept_scores(table, topology.open_start, topology.open_final),
            offsets if first == 0 else offsets - offsets[0],
            None if encoded.token_class is None else encoded.token_class[encoded.token_rows(first, last)],
            np.empty((len(out), topology.num_states)),
            workspace,
            out,
            scores,
        )
        check_totals(scores, "viterbi", "the best path's score")

    def marginals(
        self, encoded: EncodedSentences, weights: np.ndarray, grammar=None, params: dict | None = None
    ) -> np.ndarray:
        """float [N, S]: the state marginals of all sentences, among the label
        sequences the training constraint and ``grammar`` accept."""
        marginals = np.empty((encoded.num_tokens, self.topology.num_states))
        topology = self.decoding_topology(grammar, params)

        def work(blocks):
            for first, last in blocks:
                pot = self.potentials(encoded, weights, first, last)
                marginals[encoded.token_rows(first, last)] = self.sum_product(pot, topology=topology)[1]

        run_parallel(work, self.plans(encoded, topology))
        return marginals


#: Tokens per group of sentences in the training gradient: the group's scores and
#: marginals (a few hundred kB) stay in cache between scoring, forward-backward and
#: the expected counts (see csrc/fstcrf_train.h).
GROUP_TOKENS = 1024
#: A group's [tokens, states] arrays of doubles in the training workspace (emit, marg and
#: the graph's four) are kept to about this many doubles (2 MiB): fewer tokens per group
#: for larger state spaces (second order on 22 tags: 474 states, 92 tokens).
GROUP_DOUBLES = 2**18


def group_tokens(num_states: int) -> int:
    """Tokens per group of the training gradient for S = ``num_states`` states: GROUP_TOKENS,
    or fewer where six [tokens, S] arrays would pass GROUP_DOUBLES (at least 16; a group
    always holds a whole sentence, however long)."""
    return min(GROUP_TOKENS, max(16, GROUP_DOUBLES // (6 * max(num_states, 1))))


def predicates_used(encoded: EncodedSentences, first: int, last: int, num_predicates: int) -> np.ndarray:
    """bool [P]: the predicates that sentences first .. last-1 use."""
    used = np.zeros(num_predicates, dtype=bool)
    rows = encoded.token_rows(first, last)
    used[encoded.indices[encoded.indptr[rows.start] : encoded.indptr[rows.stop]]] = True
    return used


class _GradientBlock:
    """One thread's run of sentences first .. last-1 and its buffers for ``ft_gradient``:
    its expected edge counts, and, with a ``counts_layout`` (at int64 [P], size; see
    FeatureDictionary.compact_layout), the layout of its expected feature counts: the
    predicates that it alone uses go straight into the gradient (DIRECT), those that
    other threads use too into a buffer of ``counts_size`` made for each evaluation (so
    that it is not alive while L-BFGS finds its direction; on CoNLL-2000 with the
    second-order chunker, the second half of the sentences use 61% of the features and
    share 22% with the first).  The first thread's counts all go straight into the
    gradient, so it has no layout."""

    def __init__(
        self,
        driver: _GradientDriver,
        first: int,
        last: int,
        group_tokens: int,
        counts_layout: tuple[np.ndarray, int] | None = None,
        t_max: int | None = None,
    ):
        encoded = driver.encoded
        self.point_at(driver, first, last)
        t_max = t_max or int(encoded.lengths[first:last].max())
        self.workspace = kernel.TrainingWorkspace(
            driver.features.kernel_dictionary, driver.graph, driver.num_classes, group_tokens, t_max
        )
        self._loss = kernel.own_lines(1)  # each thread's on lines of its own, as the workspace
        self._loss[:] = 0.0
        self.layout: np.ndarray | None = None
        self.counts_size = 0
        if counts_layout is not None:
            self.layout, self.counts_size = counts_layout
        self.edge_counts = kernel.own_lines(driver.edge_count_shape)
        self.edge_counts[...] = 0.0

    def point_at(self, driver: _GradientDriver, first: int, last: int) -> None:
        """Make the block sentences first .. last-1 (they must fit its workspace)."""
        encoded = driver.encoded
        rows = encoded.token_rows(first, last)
        self.tokens = encoded.tokens(first, last)
        clamp = None
        if driver.partial is not None and driver.partial[first:last].any():
            clamp = (
                np.ascontiguousarray(driver.partial[first:last], dtype=np.uint8),
                np.ascontiguousarray(cast(np.ndarray, driver.allowed_labels)[rows], dtype=np.uint8),
                driver.state_label,
            )
        self.sentences = kernel.TrainingSentences(
            encoded.offsets[first : last + 1] - encoded.offsets[first],
            None if encoded.token_class is None else encoded.token_class[rows],
            clamp,
        )

    def run(
        self,
        driver: _GradientDriver,
        scores: kernel.Scores,
        theta: np.ndarray,
        theta_scale: float,
        grad_scale: float,
        grad: np.ndarray,
        edge_counts: np.ndarray,
        grad_at: np.ndarray | None = None,
        grad_direct: np.ndarray | None = None,
    ) -> float:
        """Add the block's Z-dependent terms to grad (float [F], or the counts laid out
        by grad_at, the block's layout, its DIRECT predicates' to grad_direct float [F])
        and edge_counts [E'] or [C, E'] (see ``ft_gradient``) and return its log Z sum
        minus its partial sentences' clamped log Z."""
        self._loss[0] = 0.0
        kernel.training_gradient(
            driver.features.kernel_dictionary,
            self.tokens,
            self.sentences,
            driver.graph,
            scores,
            driver.state_map,
            theta,
            theta_scale,
            grad_scale,
            self._loss,
            grad,
            edge_counts,
            self.workspace,
            grad_at,
            grad_direct,
        )
        return float(self._loss[0])


class _GradientDriver:
    """The training gradient in C (``ft_gradient``): one call per thread's run of
    sentences, on the decoding topology (the model's, or its restriction to the
    training constraint), with the partial sentences' clamps."""

    def __init__(
        self, scorer: Scorer, encoded: EncodedSentences, partial: np.ndarray, allowed_labels: np.ndarray | None
    ):
        self.features = scorer.features
        self.encoded = encoded
        self.layout = scorer.transitions
        self.num_classes = self.layout.num_classes
        model = scorer.topology
        decoding = scorer.constrained or model
        self.state_map: np.ndarray | None
        self.edge_map: np.ndarray | None
        self.state_map, self.edge_map = (None, None) if decoding is model else restriction_maps(model, decoding)
        self.graph = kernel.Graph(decoding)
        self.edge_count_shape = (
            (decoding.num_edges,) if self.layout.num_classes == 1 else (self.layout.num_classes, decoding.num_edges)
        )
        starts = decoding.start if self.state_map is None else decoding.start & model.start[self.state_map]
        finals = decoding.final if self.state_map is None else decoding.final & model.final[self.state_map]
        self._start = np.where(starts, 0.0, -np.inf)
        self._final = np.where(finals, 0.0, -np.inf)
        self.partial = partial if partial.any() else None
        self.allowed_labels = allowed_labels
        self.state_label = kernel.kernel_array(model.state_label, np.int32)  # read through a struct field
        chunks = thread_chunks(encoded, scorer.threads)
        used = [predicates_used(encoded, first, last, self.features.num_predicates) for first, last in chunks]
        alone = np.sum(used, axis=0) == 1  # the predicates one thread alone uses
        self.blocks = [
            _GradientBlock(
                self,
                first,
                last,
                group_tokens(decoding.num_states),
                None if index == 0 else self.features.kernel_dictionary.compact_layout(used[index], direct=alone),
            )
            for index, (first, last) in enumerate(chunks)
        ]
        self._sentence_block: _GradientBlock | None = None

    def scores(self, weights: np.ndarray) -> kernel.Scores:
        """The kernel scores of the decoding graph for transition weights [T]."""
        table = self.layout.scores(weights)
        trans = np.ascontiguousarray(table if self.edge_map is None else table[..., self.edge_map])
        return kernel.Scores(trans, self._start, self._final)

    def weight_gradient(self, counts: np.ndarray) -> np.ndarray:
        """float [T]: the transition weights' share of decoding-graph edge counts [E']
        (or [C, E'])."""
        if self.edge_map is not None:
            counts = sum_per_original_edge(self.edge_map, self.layout.num_edges, counts)
        return self.layout.gradient(counts)

    def sentence_block(self, index: int) -> _GradientBlock:
        """A block of sentence ``index`` alone (for the online algorithms): one block, sized
        for the longest sentence, pointed at each sentence in turn."""
        if self._sentence_block is None:
            t_max = int(self.encoded.lengths.max())
            self._sentence_block = _GradientBlock(self, index, index + 1, t_max, t_max=t_max)
        else:
            self._sentence_block.point_at(self, index, index + 1)
        return self._sentence_block


class TrainingSet:
    """Encoded sentences with gold labels, scored by a :class:`Scorer`: the
    :class:`fstcrf.learn.train.Problem` of a model (weights theta float [F + E]).

    Args:
        states: int32 [N] gold states, -1 throughout a partially labelled sentence.
        allowed_labels: bool [N, L], the labels each token may take (None when
            every sentence is fully labelled).  A partially labelled sentence
            contributes log Z - log Z(paths keeping to its allowed labels).
    """

    def __init__(
        self, scorer: Scorer, encoded: EncodedSentences, states: np.ndarray, allowed_labels: np.ndarray | None = None
    ):
        self.scorer = scorer
        self.encoded = encoded
        self.states = states
        self.allowed_labels = allowed_labels
        self.num_weights = scorer.num_weights
        self.num_sequences = encoded.num_sequences
        self.partial = np.minimum.reduceat(states, encoded.offsets[:-1]) < 0
        self._plans = scorer.plans(encoded)
        self._driver = _GradientDriver(scorer, encoded, self.partial, allowed_labels)
        self._sentence_kernel: _SentenceKernel | None = None
        self._edge_table = scorer.topology.edge_ids
        self._num_features = scorer.features.num_features
        observed = np.zeros(self.num_weights)
        complete = np.flatnonzero(~self.partial)
        for first, last in _runs(complete):
            self._add_paths(first, last, states[encoded.token_rows(first, last)], None, observed, 1.0)
        self.observed_index, self.observed_counts = sparse_counts(observed)
        self._check_gold()

    def __getstate__(self) -> dict:
        """The state without the C gradient driver and rival search, whose cffi buffers
        cannot be pickled; :meth:`__setstate__` rebuilds the driver, so a training set
        can be sent to another process (a worker evaluates the same objective)."""
        return {name: value for name, value in self.__dict__.items() if name not in ("_driver", "_sentence_kernel")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._driver = _GradientDriver(self.scorer, self.encoded, self.partial, self.allowed_labels)
        self._sentence_kernel = None

    def _check_gold(self) -> None:
        """Raise LabelError for a sentence whose gold labels fit no allowed path (with
        full labels this can only happen under a training constraint)."""
        if self.scorer.constrained is None and not self.partial.any():
            return
        zero = np.zeros(self.num_weights)
        allowed = np.zeros((self.encoded.num_tokens, self.scorer.topology.num_labels), dtype=bool)
        complete = np.repeat(~self.partial, self.encoded.lengths)
        allowed[np.flatnonzero(complete), self.scorer.topology.state_label[self.states[complete]]] = True
        if self.partial.any():
            allowed[~complete] = cast(np.ndarray, self.allowed_labels)[~complete]
        for blocks in self._plans:
            for first, last in blocks:
                pot = self.scorer.potentials(self.encoded, zero, first, last)
                log_z = self.scorer.sum_product(pot, allowed[self.encoded.token_rows(first, last)])[0]
                bad = np.flatnonzero(np.isneginf(log_z))
                if len(bad):
                    what = "the training grammar" if self.scorer.constrained else "the topology"
                    raise LabelError(
                        f"training sentence {first + int(bad[0])}: no label sequence "
                        f"allowed by {what} fits its gold labels"
                    )

    def loss_and_gradient(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        F = self._num_features
        scores = self._driver.scores(theta[F:])
        gradient = np.zeros(self.num_weights)  # fresh zero pages, touched by the threads that write them

        def work(block):
            if block.layout is None:
                counts = gradient[:F]
            else:
                counts = np.zeros(block.counts_size)
            block.edge_counts[:] = 0.0
            loss = block.run(
                self._driver, scores, theta, 1.0, 1.0, counts, block.edge_counts, block.layout, gradient[:F]
            )
            return loss, counts

        results = run_parallel(work, self._driver.blocks)
        losses = [loss for loss, _ in results]
        dictionary = self.scorer.features.kernel_dictionary
        for block, (_, counts) in zip(self._driver.blocks[1:], results[1:]):  # every thread's but the first
            dictionary.add_compact(cast(np.ndarray, block.layout), counts, gradient[:F])
        del results
        gradient[F:] = self._driver.weight_gradient(
            np.sum([block.edge_counts for block in self._driver.blocks], axis=0)
        )
        loss = sum(losses) - self._subtract_observed(theta, gradient)
        # the buffers and temporaries of this evaluation are free: their pages go back, so
        # that a heap holding them does not count in the next evaluation's peak
        release_free_heap()
        return loss, gradient

    def _subtract_observed(self, theta: np.ndarray, gradient: np.ndarray) -> float:
        """gradient [D] -= the gold feature counts; return theta [D] . those counts.
        Sparse counts are taken OBSERVED_SLICE entries at a time, so that their gathers
        make no temporaries of their size (three of 16 MiB on CoNLL-2000 order 2)."""
        index, counts = self.observed_index, self.observed_counts
        if isinstance(index, slice):
            gradient -= counts
            return float(theta @ counts)
        total = 0.0
        for start in range(0, len(index), OBSERVED_SLICE):
            rows = index[start : start + OBSERVED_SLICE]
            values = counts[start : start + OBSERVED_SLICE].astype(np.float64, copy=False)
            gradient[rows] -= values
            total += float(theta[rows] @ values)
        return total

    def add_gradient(self, weights: np.ndarray, scale: float, index: int, out: np.ndarray, out_scale: float) -> float:
        F = self._num_features
        gold_score = 0.0
        if not self.partial[index]:  # scored before ``out``, which may be ``weights``, changes
            gold_score = self._sentence().gold_score(weights, scale, index)
        edge_counts = np.zeros(self._driver.edge_count_shape)
        loss = self._driver.sentence_block(index).run(
            self._driver, self._driver.scores(scale * weights[F:]), weights, scale, out_scale, out[:F], edge_counts
        )
        out[F:] += self._driver.weight_gradient(edge_counts)
        if not self.partial[index]:
            self._sentence().add_gold(index, -out_scale, out)
        return loss - gold_score

    def rival(self, theta: np.ndarray, index: int) -> np.ndarray | None:
        found = self._sentence().find(theta, index, difference=False)
        return None if found is None else found[1]

    def mistake(self, theta: np.ndarray, index: int) -> tuple[int, np.ndarray, np.ndarray] | None:
        """None if gold is the unique best path of sentence ``index`` under theta [D], else
        (the number of tokens where the rival of :meth:`rival` differs from gold, indices
        int64 [m] increasing, values float [m] non-zero): the features of gold minus
        those of the rival, the non-zero entries of what :meth:`add_path_difference` adds."""
        found = self._sentence().find(theta, index, difference=True)
        return None if found is None else (found[0], found[2], found[3])

    def _sentence(self) -> _SentenceKernel:
        """The C calls on one sentence (built at the first use: only the online learners
        need them)."""
        if self._sentence_kernel is None:
            self._sentence_kernel = _SentenceKernel(self)
        return self._sentence_kernel

    def gold(self, index: int) -> np.ndarray:
        self._check_complete(index)
        return self.states[self.encoded.token_rows(index, index + 1)]

    def _check_complete(self, index: int) -> None:
        if self.partial[index]:
            raise FstcrfError(
                f"training sentence {index} is partially labelled; the perceptron "
                "needs full labels (use algorithm='lbfgs' or 'sgd')"
            )

    def add_path_difference(
        self, index: int, plus: np.ndarray, minus: np.ndarray, out: np.ndarray, scale: float
    ) -> None:
        self._add_paths(index, index + 1, plus, minus, out, scale)

    def _transition_counts(self, first: int, last: int, plus: np.ndarray, minus: np.ndarray | None) -> np.ndarray:
        """float [T]: the transition weights' counts along state path ``plus`` [n] of
        sentences first .. last-1, minus those along ``minus`` (if given)."""
        offsets = self.encoded.offsets[first : last + 1] - self.encoded.offsets[first]
        token_class = None
        if self.encoded.token_class is not None:
            _, after = neighbours(offsets, len(plus))
            token_class = self.encoded.token_class[self.encoded.token_rows(first, last)][after]
        layout = self.scorer.transitions
        counts = layout.path_counts(path_edges(self._edge_table, plus, offsets), token_class)
        if minus is not None:
            counts = counts - layout.path_counts(path_edges(self._edge_table, minus, offsets), token_class)
        return layout.gradient(counts)

    def _add_paths(
        self, first: int, last: int, plus: np.ndarray, minus: np.ndarray | None, out: np.ndarray, scale: float
    ) -> None:
        """Add scale * (feature counts along state path ``plus`` [n] of sentences first ..
        last-1, minus those along ``minus``) to ``out`` [F + E]."""
        F = self._num_features
        self.scorer.features.add_paths(self.encoded.tokens(first, last), plus, minus, out[:F], scale)
        out[F:] += scale * self._transition_counts(first, last, plus, minus)


def _edge_weights(layout: TransitionWeights, num_features: int) -> np.ndarray:
    """int64 [C, E, 2]: the indices in theta [F + T] of the (at most two) weights the
    transition along edge e into a token of class c sums (-1: none), as
    ``layout.scores`` sums them (see csrc/fstcrf_online.h)."""
    E, L = layout.num_edges, layout.num_lower_labels
    base = num_features + np.arange(E, dtype=np.int64)
    if layout.active is not None:
        base[~layout.active] = -1
    table = np.full((layout.num_classes, E, 2), -1, dtype=np.int64)
    table[:, :, 0] = base
    if L:
        deviations = num_features + E + np.arange(L * E, dtype=np.int64).reshape(L, E)
        table[:L, :, 1] = np.where(base >= 0, deviations, -1)
    return table


class _SentenceKernel:
    """The C calls of csrc/fstcrf_online.h on one sentence of a training set at a time
    (:class:`fstcrf.engine.kernel.OnlineProblem`, built once).  Not for concurrent use
    (one workspace)."""

    def __init__(self, training: TrainingSet):
        driver, scorer, encoded = training._driver, training.scorer, training.encoded
        self._training = training
        # the difference touches at most every feature of a token's predicates, and
        # two weights per transition of each path
        features_per_entry = np.diff(scorer.features.ptr)[encoded.indices]
        per_token = np.add.reduceat(np.concatenate([features_per_entry, [0]]), encoded.indptr[:-1]) * (
            np.diff(encoded.indptr) > 0
        )
        per_sentence = np.add.reduceat(per_token + 4, encoded.offsets[:-1])
        maps = None
        if driver.state_map is not None:
            maps = (driver.state_map, np.asarray(driver.edge_map, dtype=np.int32))
        self._problem = kernel.OnlineProblem(
            scorer.features.kernel_dictionary,
            kernel.Graph(scorer.topology),
            driver.graph,
            maps,
            driver._start,
            driver._final,
            _edge_weights(scorer.transitions, scorer.features.num_features),
            training.num_weights,
            np.ascontiguousarray(training.states, dtype=np.int32),
            encoded.token_class,
            int(encoded.lengths.max()),
            int(min(per_sentence.max(), training.num_weights)),
        )

    def _check_weights(self, weights: np.ndarray, name: str) -> np.ndarray:
        """``weights`` as a contiguous float [D] array (ShapeError otherwise)."""
        weights = np.ascontiguousarray(weights, dtype=np.float64)
        if weights.shape != (self._training.num_weights,):
            raise ShapeError(f"{name} have shape {weights.shape}, expected ({self._training.num_weights},)")
        return weights

    def _sentence(self, index: int) -> tuple[kernel.Tokens, int]:
        """(the token block, the first token) of sentence ``index``, which must be fully labelled."""
        self._training._check_complete(index)
        return self._training.encoded.tokens(index, index + 1), int(self._training.encoded.offsets[index])

    def gold_score(self, weights: np.ndarray, scale: float, index: int) -> float:
        """The score of sentence ``index``'s gold path under scale * weights [D]."""
        weights = self._check_weights(weights, "weights")
        return self._problem.path_score(*self._sentence(index), weights, scale)

    def add_gold(self, index: int, scale: float, out: np.ndarray) -> None:
        """Add scale * the features of sentence ``index``'s gold path to out [D] (in place)."""
        if out.dtype != np.float64 or not out.flags.c_contiguous or out.shape != (self._training.num_weights,):
            raise ShapeError(
                f"out must be a contiguous float64 array of shape ({self._training.num_weights},), "
                f"got {out.dtype} {out.shape}"
            )
        self._problem.add_path(*self._sentence(index), scale, out)

    def find(self, theta: np.ndarray, index: int, difference: bool):
        """None if gold is the unique best path of sentence ``index`` under theta [D], else
        (wrong tokens, rival int32 [T], and with ``difference`` indices int64 [m] and values
        [m] of phi(gold) - phi(rival), else None, None)."""
        theta = self._check_weights(theta, "weights")
        return self._problem.mistake(*self._sentence(index), theta, difference)


def _runs(indices: np.ndarray) -> list[tuple[int, int]]:
    """Maximal runs (first, last) of consecutive integers in sorted ``indices``."""
    if len(indices) == 0:
        return []
    breaks = np.flatnonzero(np.diff(indices) != 1)
    firsts = np.concatenate([[indices[0]], indices[breaks + 1]])
    lasts = np.concatenate([indices[breaks], [indices[-1]]]) + 1
    return list(zip(firsts.tolist(), lasts.tolist()))
