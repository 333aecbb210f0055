"""A fitted model's small batches tagged in one kernel call (``ft_tag``,
csrc/fstcrf_tagging.h): what :meth:`~fstcrf.model.ChainCRF.predict`,
:meth:`~fstcrf.model.ChainCRF.decode` and :meth:`~fstcrf.model.ChainCRF.predict_spans`
(:meth:`TaggingPlan.entities`: the call's emissions then give the chunks'
probabilities) run for a batch too small to share out to threads (a sentence at a
time: a web service, NLTK's CRFTagger, a Tagger, a spaCy pipeline fed one Doc at a time).

The batch path runs its steps one by one, each over objects made for the batch
(a token table, the encoded sentences, potentials, per-thread sentence blocks).
A :class:`TaggingPlan` holds what those steps read of the model, made once per
fitted model and kept while the model's fitted attributes and threads are the
same objects (:func:`tagging_plan`): the template's lines and the kernel's
dictionary, the graph searched (the model's, or its restriction to the training
grammar, with the state map), the transition scores, and each thread's buffers.
A call reads the batch's columns, hashes their values
(:class:`~fstcrf.features.window_rows.WindowRows`), reads its token dicts' entries
(:meth:`~fstcrf.features.attributes.AttributeExtractor.entries`, which the kernel
makes rows) or takes its rows, and makes one kernel call: the same steps in C, so
the labels and scores are the batch path's, bit for bit
(tests/model/test_one_at_a_time.py, tests/pycrfsuite/test_token_dicts_one_at_a_time.py).
:meth:`TaggingPlan.item_labels` takes one sentence's token dicts as they are, for
fstcrf.pycrfsuite's Tagger.
"""

from __future__ import annotations

import itertools
import math
import operator
import threading
import weakref
from collections.abc import Sequence

import numpy as np

from fstcrf.corpus.conll import Sentence
from fstcrf.engine import kernel
from fstcrf.engine.inference import PARALLEL_WORK, Potentials, check_totals
from fstcrf.engine.kernel.tagging import ListBuffers, TagBuffers, Tagger, tag, tag_entries, tag_items, tag_lists
from fstcrf.engine.spans import ChunkEdges, Entity, decoded_entities, state_labels
from fstcrf.errors import FstcrfError
from fstcrf.features.attributes import READ_ALONE, AttributeExtractor
from fstcrf.features.encoding import EncodedSentences, checked_lengths, token_classes
from fstcrf.features.item_lists import FIRST_ROOM
from fstcrf.features.value_list_rows import ListInputs
from fstcrf.grammar import restriction_maps
from fstcrf.learn.objective import Scorer
from fstcrf.model.fitting import fitted_scorer, scorer_inputs

#: The first buffers of a thread hold batches of this many tokens (they double as needed).
FIRST_TOKENS = 256
#: Known predicates per token that a thread's first list buffers have room for.
FIRST_ENTRIES = 64


class TaggingPlan:
    """What tagging a small batch reads of a fitted model (see the module doc):
    ``window`` (the template's rows looked up by the kernel, or None when the
    extractor gives rows itself), the topology searched and the largest batch
    taken, ``max_tokens`` (a batch below the threads' share of work)."""

    def __init__(self, model, scorer: Scorer):
        extractor = model.extractor_
        self.window = extractor.window_rows()
        self.scorer, self.extractor, self.weights = scorer, extractor, model.weights_
        #: whether the extractor reads token dicts (their entries go to the kernel as they are read)
        self.reads_entries = isinstance(extractor, AttributeExtractor)
        #: the template's value-list lines, when the kernel tags from the value store (else None)
        self.lists = None if self.window is not None or self.reads_entries else extractor.value_list_rows()
        reading = model.reads is not None and model.read_transitions and model.lower_labels_ is not None
        #: the column of lower labels the transitions read, and those labels (see token_classes)
        self.reads: str | None = model.reads if reading else None
        self.lower_labels: Sequence[str] = model.lower_labels_ if reading else ()
        self.topology = topology = scorer.constrained or scorer.topology
        original = scorer.topology
        self.state_map: np.ndarray | None = None
        self.edges: np.ndarray | None = None
        if topology is not original:
            self.state_map, self.edges = restriction_maps(original, topology)
            self.start = np.where(topology.start, original.open_start[self.state_map], -np.inf)
            self.final = np.where(topology.final, original.open_final[self.state_map], -np.inf)
        else:
            self.start, self.final = topology.open_start, topology.open_final
        self.num_classes = scorer.transitions.num_classes
        features = scorer.features
        self.graph = kernel.topology_graph(topology)
        self.tagger = Tagger(
            self.window.lines if self.window is not None else None if self.lists is None else self.lists.lines,
            features.kernel_dictionary,
            self.weights[: features.num_features],
            self.graph,
            self.state_map,
        )
        #: the transition weights float [T] the scores were made of, and those scores;
        #: made again when writable weights (a fitted model's) have changed since
        self.transition_weights = self.weights[features.num_features :]
        self.scored: tuple[np.ndarray, kernel.Scores] = (self.transition_weights.copy(), self._scores())
        self.every_length = topology.feasibility.every_length_feasible
        self.max_tokens = max(1, PARALLEL_WORK // (topology.num_states + topology.num_edges))
        labels = original.labels
        self.state_names = [labels[label] for label in original.state_label.tolist()]
        #: whether :meth:`direct_labels` may take a sentence: its token dicts are all it reads
        self.reads_alone = self.reads_entries and extractor.reads is None and self.reads is None and self.every_length
        self.buffers = threading.local()
        #: the topology read as chunks (made on the first call of :meth:`entities`)
        self.chunk_edges: ChunkEdges | None = None

    def _scores(self) -> kernel.Scores:
        """The kernel scores of the searched graph under the model's weights now."""
        table = self.scorer.transition_table(self.weights)
        if self.edges is not None:
            table = table.take(self.edges, axis=-1)
        if self.state_map is None:
            return kernel.kept_scores(table, self.start, self.final)
        return kernel.Scores(table, self.start, self.final)

    def _current_scores(self) -> kernel.Scores:
        """The kernel scores under the transition weights now (read-only weights never
        change; writable ones are compared with those the scores were made of)."""
        made_of, scores = self.scored
        if self.weights.flags.writeable and made_of.tobytes() != self.transition_weights.tobytes():
            made_of, scores = self.scored = (self.transition_weights.copy(), self._scores())
        return scores

    def _thread_buffers(self, num_tokens: int, t_max: int, num_entries: int) -> TagBuffers:
        """This thread's buffers, made again larger when the batch does not fit."""
        buffers = getattr(self.buffers, "kept", None)
        if (
            buffers is None
            or buffers.max_tokens < num_tokens
            or buffers.t_max < t_max
            or buffers.max_entries < num_entries
        ):
            size = max(FIRST_TOKENS, num_tokens, 2 * (buffers.max_tokens if buffers is not None else 0))
            longest = max(t_max, 2 * (buffers.t_max if buffers is not None else 0), FIRST_TOKENS // 4)
            entries = 0
            if self.reads_entries:
                entries = max(num_entries, 2 * (buffers.max_entries if buffers is not None else 0), 16 * FIRST_TOKENS)
            buffers = self.buffers.kept = TagBuffers(
                self.tagger, self.topology, self.num_classes, size, longest, entries
            )
        return buffers

    def labels(self, sentences: Sequence[Sentence]) -> list[list[str]] | None:
        """The best labels [B][T] of ``sentences`` (none empty), what the batch path
        gives them; None when the plan does not take them (the batch is not small, or
        a column the lines read is missing or holds other than strings: the batch path
        says what is wrong)."""
        best = self.paths(sentences)
        if best is None:
            return None
        return self._named(best[0], [len(sentence) for sentence in sentences] if len(sentences) > 1 else None)

    def entities(self, sentences: Sequence[Sentence]) -> list[list[Entity]] | None:
        """The chunks of the best labels of ``sentences`` (none empty), each with its
        exact probability, what ``ChainCRF.predict_spans`` gives them, bit for bit:
        the chunks of the path the kernel call of :meth:`paths` found and their
        probabilities under the emissions it left, in one more call (fc_path_chunks;
        a sentence the linear domain loses, a small temperature's, through
        :func:`~fstcrf.engine.spans.decoded_entities`).  None when the plan does not
        take them (see :meth:`potentials`)."""
        if self.reads is not None or self.state_map is not None or self.reads_entries:
            return None
        if self.paths(sentences) is None:
            return None
        lengths = [len(sentence) for sentence in sentences]
        buffers = self.buffers.kept
        chunks = self._chunk_edges()
        room = getattr(self.buffers, "chunks", None)
        if room is None or room.emissions is not buffers.emit:
            room = self.buffers.chunks = kernel.PathChunks(
                self.graph, chunks.reading, buffers.emit, self.num_classes, buffers.max_tokens
            )
        count = room.found(self._current_scores(), buffers.path_view, lengths)
        if not all(room.exact[: len(lengths)].tolist()):  # a small temperature: the log domain's passes
            pot = self._buffered_potentials(lengths)
            return decoded_entities(pot, state_labels(self.topology), buffers.path[: pot.num_tokens].copy())
        types, probabilities = chunks.types, room.probability[:count].tolist()
        found = zip(room.first[:count].tolist(), room.last[:count].tolist(), room.kind[:count].tolist(), probabilities)
        if len(lengths) == 1:
            return [[Entity(first, last, types[kind], p) for first, last, kind, p in found]]
        entities: list[list[Entity]] = [[] for _ in lengths]
        for b, (first, last, kind, p) in zip(room.sentence[:count].tolist(), found):
            entities[b].append(Entity(first, last, types[kind], p))
        return entities

    def _chunk_edges(self) -> ChunkEdges:
        """The model topology's states and edges read as chunks (LabelError for labels
        that are not chunk labels), made once."""
        if self.chunk_edges is None:
            self.chunk_edges = ChunkEdges.of(self.topology, state_labels(self.topology))
        return self.chunk_edges

    def potentials(self, sentences: Sequence[Sentence]) -> Potentials | None:
        """The potentials of ``sentences`` (none empty) on the model's topology, what
        ``ChainCRF.decoding_potentials`` gives them, from the emissions of the kernel
        call of :meth:`paths` (whose best path is left in this thread's buffers).  None
        when the plan does not take them (see :meth:`labels`; also a model whose
        transitions read lower labels, whose topology is restricted or whose
        extractor reads token dicts)."""
        if self.reads is not None or self.state_map is not None or self.reads_entries:
            return None
        if self.paths(sentences) is None:
            return None
        return self._buffered_potentials([len(sentence) for sentence in sentences])

    def _buffered_potentials(self, lengths: list[int]) -> Potentials:
        """The potentials of the batch of sentences of ``lengths`` whose emissions the
        thread's last kernel call left in its buffers."""
        num_tokens, num_states = sum(lengths), self.tagger.num_states
        emit = self.buffers.kept.emit[: num_tokens * num_states].reshape(num_tokens, num_states).copy()
        checked, offsets = checked_lengths(lengths, num_tokens)
        transitions = self.scorer.transition_table(self.weights)
        return Potentials.of_checked(self.topology, emit, checked, offsets, transitions)

    def encoded_labels(self, encoded: EncodedSentences) -> list[list[str]] | None:
        """:meth:`labels` of sentences already encoded; None unless the batch is small."""
        best = self.encoded_paths(encoded)
        return None if best is None else self._named(best[0], encoded.lengths.tolist())

    def paths(self, sentences: Sequence[Sentence]) -> tuple[np.ndarray, np.ndarray] | None:
        """The best model state at each token, int32 [N], and each sentence's best
        score, float [B] (the thread's buffers, overwritten by its next call), of
        ``sentences`` (none empty), or None when the plan does not take them (see
        :meth:`labels`).  An extractor that gives rows itself (token
        dicts, value lists) gives them as for the batch (``transform_rows``, which raises
        the typed error of a bad token)."""
        lengths = [len(sentence) for sentence in sentences]
        num_tokens = sum(lengths)
        if num_tokens > self.max_tokens or 0 in lengths:
            return None
        if self.window is None:
            classes = None if self.reads is None else token_classes(sentences, self.reads, self.lower_labels)
            if self.reads_entries:  # the dicts' entries as read, made rows by the kernel
                return self._best(lengths, num_tokens, classes, entries=self.extractor.entries(sentences))
            if self.lists is not None:  # the store's rows, made values, rows and paths by the kernel
                try:
                    lists = self.extractor.list_inputs(sentences)
                except FstcrfError:
                    return None
                return self._best(lengths, num_tokens, classes, lists=lists)
            matrix = self.extractor.transform_rows(sentences)
            if matrix.shape[0] != num_tokens:
                return None  # the batch path says what is wrong
            values = None if matrix.all_ones() else kernel.kernel_array(matrix.data, np.float64)
            rows = kernel.PredicateRows(
                kernel.kernel_array(matrix.indptr, np.int64), kernel.kernel_array(matrix.indices, np.int32), values
            )
            return self._best(lengths, num_tokens, classes, rows=rows.tokens(0, num_tokens))
        try:
            sources = self.window.source_hashes(sentences, num_tokens)
        except (KeyError, TypeError):
            return None
        classes = None if self.reads is None else token_classes(sentences, self.reads, self.lower_labels)
        return self._best(lengths, num_tokens, classes, sources=sources)

    def item_labels(self, tokens: list) -> list[str] | None:
        """The best labels [T] of one sentence given as its tokens (T >= 1 token dicts or
        lists of names, what column "attributes" holds) for a model over token dicts
        that reads no lower labels: :meth:`labels` of its Sentence, without making one
        (read and tagged in one call when it can be: :meth:`direct_labels`).  None when
        the plan does not take it (a sentence too long for one thread)."""
        labels = self.direct_labels(tokens)
        if labels is None:
            best = self._read_item_paths(tokens)
            labels = None if best is None else self._named(best[0], None)[0]
        return labels

    def item_paths(self, tokens: list) -> tuple[np.ndarray, np.ndarray] | None:
        """:meth:`paths` of the one sentence :meth:`item_labels` takes (None when it does
        not: a model that reads lower labels needs a Sentence)."""
        if self.direct_labels(tokens) is not None:
            buffers = self.buffers.kept
            return buffers.path[: len(tokens)], buffers.score[:1]
        return self._read_item_paths(tokens)

    def direct_labels(self, tokens: list) -> list[str] | None:
        """:meth:`item_labels` of ``tokens`` read and tagged in one C call (fstcrf._attributes
        reads them and runs the kernel: no array or other Python object made but the
        labels), when the model reads no lower labels, every length is feasible, this
        thread's buffers hold the sentence and its tokens are dicts, lists and tuples
        (exactly those types); else None (the other steps say what is wrong).  The same
        entries and kernel call as :meth:`item_paths` otherwise makes: the same labels
        and scores, bit for bit.  A bad token raises what reading it raises."""
        buffers = getattr(self.buffers, "kept", None)
        if buffers is None or not self.reads_alone or len(tokens) > self.max_tokens:
            return None
        by_name, by_key = self.extractor.item_columns()
        return tag_items(
            tokens, by_name, by_key, READ_ALONE, self.state_names, self.tagger, self._current_scores(), buffers
        )

    def _read_item_paths(self, tokens: list) -> tuple[np.ndarray, np.ndarray] | None:
        """:meth:`item_paths` by its steps: the tokens' entries read, then one kernel call."""
        num_tokens = len(tokens)
        if num_tokens > self.max_tokens or self.extractor.reads is not None:
            return None
        return self._best([num_tokens], num_tokens, None, entries=self.extractor.item_entries(tokens))

    def encoded_paths(self, encoded: EncodedSentences) -> tuple[np.ndarray, np.ndarray] | None:
        """:meth:`paths` of sentences already encoded; None unless the batch is small."""
        num_tokens = encoded.num_tokens
        if num_tokens > self.max_tokens:
            return None
        rows = encoded.tokens(0, encoded.num_sequences)
        return self._best(encoded.lengths.tolist(), num_tokens, encoded.token_class, rows=rows)

    def _best(
        self,
        lengths: list[int],
        num_tokens: int,
        classes,
        sources=None,
        rows=None,
        entries=None,
        lists: ListInputs | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The one kernel call on the batch's value hashes ``sources``, its ``rows``, its
        token ``entries`` (columns, values, starts) or its value store ``lists``: paths
        int32 [N] and scores float [B] (the buffers' own, overwritten by the thread's
        next call)."""
        if not self.every_length:
            self.topology.check_lengths(lengths)
        scores = self._current_scores()
        buffers = self._thread_buffers(num_tokens, max(lengths), 0 if entries is None else len(entries[0]))
        if lists is not None:
            path, score = self._tagged_lists(scores, buffers, lists, len(lengths) == 1, classes)
        elif entries is None:  # ft_tag takes no offsets for one sentence
            offsets = None if len(lengths) == 1 else _offsets(lengths)
            path, score = tag(self.tagger, scores, buffers, num_tokens, offsets, sources, rows, classes)
        else:
            columns, values, starts = entries
            path, score = tag_entries(self.tagger, scores, buffers, _offsets(lengths), starts, columns, values, classes)
        if not (len(lengths) == 1 and math.isfinite(score[0])):
            check_totals(score, "viterbi", "the best path's score")
        return path, score

    def _tagged_lists(
        self, scores: kernel.Scores, buffers: TagBuffers, lists: ListInputs, single: bool, classes
    ) -> tuple[np.ndarray, np.ndarray]:
        """ft_tag_lists on the batch's value store ``lists`` (of one sentence when
        ``single``), with this thread's list buffers, made again larger until they hold it."""
        num_tokens, num_items = lists.token_rows.shape[1], len(lists.items)
        room = getattr(self.buffers, "lists", None)
        if room is None or not room.fits(num_tokens, num_items):
            size = buffers.max_tokens
            room = ListBuffers(size, num_items, FIRST_ROOM * num_items * size, 1024, FIRST_ENTRIES * size)
            room = self.buffers.lists = room.grown(num_tokens, num_items)
        offsets, grouped = None if single else lists.offsets, lists.grouped
        if grouped[0]:  # the grouped lines' columns of each value, kept across calls
            room.keep(lists.tables.generation, lists.tables.num_rows)
        while True:
            found = tag_lists(
                self.tagger,
                scores,
                buffers,
                room,
                lists.tables,
                lists.items,
                offsets,
                lists.token_rows,
                grouped,
                classes,
            )
            if found is not None:
                return found
            room = self.buffers.lists = room.grown(num_tokens, num_items)

    def _named(self, path: np.ndarray, lengths: list[int] | None) -> list[list[str]]:
        """The label of each state of ``path`` [N], one list per sentence of ``lengths``
        (None: one sentence)."""
        names = self.state_names
        labels = [names[state] for state in path.tolist()]
        if lengths is None or len(lengths) == 1:
            return [labels]
        bounds = [0, *itertools.accumulate(lengths)]
        return [labels[first:last] for first, last in zip(bounds[:-1], bounds[1:])]


def _offsets(lengths: list[int]) -> np.ndarray:
    """int64 [B+1]: where each of the sentences of ``lengths`` starts, then the total
    (a small batch's few lengths: summed in Python, one array made)."""
    return np.array([0, *itertools.accumulate(lengths)], dtype=np.int64)


#: Each model's plan, with the scorer inputs, extractor and weights it was made of.
_plans: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def tagging_plan(model) -> TaggingPlan:
    """The :class:`TaggingPlan` of a fitted model, made once and kept while what its
    scorer is made of (:func:`~fstcrf.model.fitting.scorer_inputs`), its extractor and
    its weights are the same objects (``fit``, loading and ``set_params(threads=...)``
    make another)."""
    made_of = (*scorer_inputs(model), model.extractor_, model.weights_)
    kept = _plans.get(model)
    if kept is None or not all(map(operator.is_, kept[0], made_of)):  # the same objects
        kept = _plans[model] = (made_of, TaggingPlan(model, fitted_scorer(model)))
    return kept[1]
