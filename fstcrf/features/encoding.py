"""Sentences encoded as predicate rows, and Sha & Pereira's factored features.

Features
--------
A feature is an observation predicate p (a column of the predicate matrix X
[N, P] of :class:`~fstcrf.features.extractor.FeatureExtractor`) paired with an output
predicate q on the state at the token.  Outputs are numbered

    q = s        0 <= s < S    the state is s
    q = S + c    0 <= c < L    the label of the state is c (order 2 only)

Order 1 (topology ``first_order(labels)``): states are labels and every
predicate pairs with y_i = y.  Order 2 (``second_order(tags)``): a state is a
tag pair (c_{i-1}, c_i); every predicate pairs with y_i = y (the pair state)
and, except ``bias``, with c(y_i) = c (the current tag, ``state_label``).
In both orders the always-true predicate also pairs with every allowed
transition (y', y): those are the kernel's edge scores, one weight per edge
of the topology whatever the feature set.  The score of state s at token n
is the sum over the active predicates p of theta(p, s) + theta(p, label(s)).

Feature sets (the bias never pairs with tags):

    "supported"      the (predicate, output) pairs that occur in the gold
                     training data
    "complete"       every (predicate, output) pair: P x (S + L) features, which
                     is refused above MAX_FEATURES (e.g. order 2 on the 22
                     CoNLL-2000 tags: 340k predicates x (474 + 22) outputs)
    "complete-tags"  order 2 only: every (predicate, tag) pair, and the
                     supported (predicate, pair state) pairs
    "complete-if-fits"  "complete" when its features are at most MAX_FEATURES,
                     else "supported" (with a warning): the default of the
                     rich NER templates (fstcrf.features.defaults)

Weights
-------
A model's weights float [F + T]: first the F (predicate, output) features
grouped by predicate -- feature f = ``FactoredFeatures.ptr[p]`` ..
``ptr[p+1]-1`` pairs predicate p with output ``FactoredFeatures.output[f]``
-- then the T transition weights laid out by :class:`TransitionWeights`
(T = E, in the topology's edge order, unless transitions read lower labels).
"""

from __future__ import annotations

import logging
from itertools import accumulate
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fstcrf.corpus.conll import Corpus, Sentence
from fstcrf.engine import budget, kernel
from fstcrf.errors import EmptySequenceError, FstcrfError, ShapeError, TemplateError
from fstcrf.features.extractor import FeatureExtractor
from fstcrf.engine.inference import SentenceBatch, sentence_runs
from fstcrf.engine.threads import run_parallel
from fstcrf.features.sparse_rows import SparseRows
from fstcrf.features.token_table import missing_column_message
from fstcrf.engine.topology import Topology

LOG = logging.getLogger(__name__)

FEATURE_SETS = ("supported", "complete", "complete-tags", "complete-if-fits")
#: The fewest tokens whose emissions are computed in several threads (below, one thread:
#: handing work to a thread costs about a tenth of a millisecond).
PARALLEL_EMISSION_TOKENS = 4096
#: Complete feature sets larger than this are refused: L-BFGS needs about 260 bytes per
#: weight (its 10 correction pairs, gradients and copies), so 2**24 weights take ~4.4 GB.
MAX_FEATURES = 2**24


def checked_lengths(lengths: Sequence[int] | np.ndarray, num_tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """(lengths int64 [B], offsets int64 [B+1]), both read-only, of sentences of the
    given lengths, which must be positive and add up to ``num_tokens`` (ShapeError,
    EmptySequenceError); checked in Python, which is quicker than numpy on the few
    sentences of a small batch."""
    counts = lengths.tolist() if isinstance(lengths, np.ndarray) else list(lengths)
    if len(counts) == 1:  # a sentence at a time: no running sum to make
        offsets = np.array([0, counts[0]], dtype=np.int64)
    else:
        offsets = np.fromiter(accumulate(counts, initial=0), dtype=np.int64, count=len(counts) + 1)
    if int(offsets[-1]) != num_tokens:
        raise ShapeError(f"{num_tokens} token rows for sentences of {int(offsets[-1])} tokens")
    if counts and min(counts) <= 0:
        empty = next(k for k, count in enumerate(counts) if count <= 0)
        raise EmptySequenceError(f"sentence {empty} is empty; every sentence needs at least one token")
    array = np.array(counts, dtype=np.int64)
    array.flags.writeable = offsets.flags.writeable = False
    return array, offsets


class EncodedSentences(kernel.KernelViews, SentenceBatch):
    """Sentences as predicate rows: X [N, P] in CSR form cut into sentences.

    Attributes: ``indptr`` int64 [N+1], ``indices`` int32 [nnz] (predicates),
    ``values`` float [nnz], or None when every value is 1 (binary predicates: the
    array is not kept, and the kernel's feature loops stream half the memory);
    ``lengths`` int64 [B] and ``offsets`` int64 [B+1]; ``token_class`` int32 [N],
    the class of each token's transition scores (see :class:`TransitionWeights`),
    or None.
    """

    def __init__(self, matrix, lengths: Sequence[int] | np.ndarray, token_class: np.ndarray | None = None):
        """``matrix``: the rows [N, P], a :class:`SparseRows` or a scipy sparse matrix."""
        matrix = SparseRows.of(matrix)
        self.token_class = None if token_class is None else kernel.kernel_array(token_class, np.int32)
        self.num_predicates = matrix.shape[1]
        self.indptr = kernel.kernel_array(matrix.indptr, np.int64)
        self.indices = kernel.kernel_array(matrix.indices, np.int32)
        self.values = None if matrix.all_ones() else kernel.kernel_array(matrix.data, np.float64)
        self.lengths, self.offsets = checked_lengths(lengths, matrix.shape[0])
        self.make_views()

    def make_views(self) -> None:
        """The kernel's view of the rows."""
        self.kernel_rows = kernel.PredicateRows(self.indptr, self.indices, self.values)

    def rows(self) -> SparseRows:
        """The predicate rows X [N, P] (a values array of 1s made when none is kept)."""
        values = np.ones(len(self.indices)) if self.values is None else self.values
        return SparseRows(self.indptr, self.indices, values, (self.num_tokens, self.num_predicates))

    @classmethod
    def from_corpus(
        cls,
        extractor: FeatureExtractor,
        corpus: Corpus | Sequence[Sentence],
        fit: bool = False,
        token_class: np.ndarray | None = None,
    ) -> EncodedSentences:
        """Encode a corpus with a fitted extractor (or fit it first)."""
        matrix = extractor.fit_transform_rows(corpus) if fit else extractor.transform_rows(corpus)
        return cls(matrix, [len(sentence) for sentence in corpus], token_class)

    def tokens(self, first: int, last: int) -> kernel.Tokens:
        """The kernel's token block of sentences first .. last-1."""
        return self.kernel_rows.tokens(int(self.offsets[first]), int(self.offsets[last]))


class FactoredFeatures(kernel.KernelViews):
    """The feature dictionary: which (predicate, output) pairs carry a weight.

    Attributes: ``state_label`` int32 [S]; ``num_labels`` L (label outputs, 0
    in order 1); ``ptr`` int64 [P+1], the features of predicate p being
    ptr[p] .. ptr[p+1]-1; ``output`` int32 [F], each feature's output in
    [0, S + L).  Inconsistent arrays raise ShapeError.
    """

    def __init__(self, state_label, num_labels: int, ptr, output):
        self.state_label = kernel.kernel_array(state_label, np.int32)
        self.num_labels = int(num_labels)
        self.ptr = kernel.kernel_array(ptr, np.int64)
        self.output = kernel.kernel_array(output, np.int32)
        S, L = len(self.state_label), self.num_labels
        if S == 0 or L < 0 or (L and (self.state_label.min() < 0 or self.state_label.max() >= L)):
            raise ShapeError(f"feature dictionary: bad state labels for {L} label outputs")
        if (
            self.ptr.ndim != 1
            or len(self.ptr) == 0
            or self.ptr[0] != 0
            or np.any(np.diff(self.ptr) < 0)
            or self.ptr[-1] != len(self.output)
        ):
            raise ShapeError("feature dictionary: ptr must rise from 0 to the number of features")
        if len(self.output) and (self.output.min() < 0 or self.output.max() >= S + L):
            raise ShapeError(f"feature dictionary: outputs must lie in [0, {S + L})")
        self.make_views()

    def make_views(self) -> None:
        """The kernel's view of the dictionary."""
        self.kernel_dictionary = kernel.FeatureDictionary(self.state_label, self.num_labels, self.ptr, self.output)

    @property
    def num_states(self) -> int:
        return len(self.state_label)

    @property
    def num_predicates(self) -> int:
        return len(self.ptr) - 1

    @property
    def num_features(self) -> int:
        return len(self.output)

    def emissions(self, tokens: kernel.Tokens, theta: np.ndarray, scale: float = 1.0) -> np.ndarray:
        """float [n, S]: scale * state scores of a token block under feature weights theta [F]."""
        emit = np.empty((tokens.num_tokens, self.num_states))
        self.kernel_dictionary.emissions(tokens, theta, scale, emit)
        return emit

    def sentence_emissions(
        self, encoded: EncodedSentences, first: int, last: int, theta: np.ndarray, scale: float = 1.0, threads: int = 1
    ) -> np.ndarray:
        """float [n, S]: :meth:`emissions` of sentences first .. last-1 of ``encoded``, in
        ``threads`` threads (runs of whole sentences) when they have PARALLEL_EMISSION_TOKENS
        tokens or more (the kernel releases the GIL)."""
        if threads <= 1 or int(encoded.offsets[last] - encoded.offsets[first]) < PARALLEL_EMISSION_TOKENS:
            return self.emissions(encoded.tokens(first, last), theta, scale)
        offsets = encoded.offsets[first : last + 1] - encoded.offsets[first]
        emit = np.empty((int(offsets[-1]), self.num_states))

        def run(sentences: tuple[int, int]) -> None:
            a, b = sentences
            rows = emit[int(offsets[a]) : int(offsets[b])]
            self.kernel_dictionary.emissions(encoded.tokens(first + a, first + b), theta, scale, rows)

        run_parallel(run, sentence_runs(offsets, threads))
        return emit

    def accumulate(self, tokens: kernel.Tokens, marginals: np.ndarray, out: np.ndarray, scale: float = 1.0) -> None:
        """Add scale * expected feature counts [F] under state marginals [n, S] to ``out``."""
        self.kernel_dictionary.accumulate(tokens, marginals, scale, out)

    def add_paths(
        self, tokens: kernel.Tokens, plus: np.ndarray, minus: np.ndarray | None, out: np.ndarray, scale: float = 1.0
    ) -> None:
        """Add scale * (feature counts along state path ``plus`` [n] - along ``minus``) to ``out``."""
        self.kernel_dictionary.add_paths(tokens, plus, minus, scale, out)


def token_classes(sentences: Corpus | Sequence[Sentence], column: str, lower_labels: Sequence[str]) -> np.ndarray:
    """int32 [N]: the transition class of each token of ``sentences``, the index of its
    value in ``column`` among lower_labels [L] (L for a value not among them).
    TemplateError for a sentence without ``column``."""
    index = {label: i for i, label in enumerate(lower_labels)}
    unseen = len(lower_labels)
    for sentence in sentences:
        if column not in sentence.columns:
            raise TemplateError(missing_column_message(column, sentence.column_names))
    return np.array([index.get(value, unseen) for sentence in sentences for value in sentence[column]], dtype=np.int32)


class TransitionWeights:
    """The transition part of a weight vector and the kernel scores it makes.

    Without lower labels (L = 0) there is one weight per edge: [E].  A model
    that reads a lower tagger's L labels and lets its transitions depend on
    them has [E + L E] weights: a base row and a deviation row per lower label.
    The transition into a token whose lower label is l scores base +
    deviation[l]; class L, a lower label unseen in training, scores base alone.

    ``active`` bool [E] (None: every edge) limits the transition features to
    some edges (CRFsuite's transitions "seen in training"): the others score 0
    and their weights get no gradient, so they stay at their starting 0.
    """

    def __init__(self, num_edges: int, num_lower_labels: int = 0, active: np.ndarray | None = None):
        self.num_edges = int(num_edges)
        self.num_lower_labels = int(num_lower_labels)
        budget.check_table((1 + self.num_lower_labels, self.num_edges), "the transition weights by lower label:")
        self.size = self.num_edges * (1 + self.num_lower_labels)
        self.num_classes = self.num_lower_labels + 1 if self.num_lower_labels else 1
        if active is not None:
            active = np.asarray(active, dtype=bool)
            if active.shape != (self.num_edges,):
                raise ShapeError(f"active edges have shape {active.shape}, expected ({self.num_edges},)")
        self.active = active

    def _masked(self, table: np.ndarray) -> np.ndarray:
        """table [..., E] with the inactive edges' entries zeroed (a copy), or table itself."""
        return table if self.active is None else table * self.active

    def scores(self, weights: np.ndarray) -> np.ndarray:
        """float [E], or [L + 1, E] by token class: the kernel's scores for weights [size]."""
        if not self.num_lower_labels:
            return self._masked(weights)
        base = weights[: self.num_edges]
        return self._masked(
            np.vstack([base + weights[self.num_edges :].reshape(self.num_lower_labels, self.num_edges), base])
        )

    def gradient(self, counts: np.ndarray) -> np.ndarray:
        """float [size]: the weights' share of counts [E] (or [L + 1, E]) of the kernel's scores."""
        counts = self._masked(counts)
        if not self.num_lower_labels:
            return counts
        return np.concatenate([counts.sum(axis=0), counts[: self.num_lower_labels].ravel()])

    def path_counts(
        self, edges: np.ndarray, token_class: np.ndarray | None, weights: np.ndarray | None = None
    ) -> np.ndarray:
        """float [E] (or [L + 1, E]): the (weighted) uses of edges int [M], each into a
        token of class token_class [M] (inactive edges count 0)."""
        keys = edges if token_class is None else token_class.astype(np.int64) * self.num_edges + edges
        counts = np.bincount(keys, weights=weights, minlength=self.num_classes * self.num_edges)
        return self._masked(counts.reshape(self.num_classes, self.num_edges) if self.num_lower_labels else counts)


def build_features(
    encoded: EncodedSentences,
    states: np.ndarray | None,
    label_ids: np.ndarray | None,
    topology: Topology,
    order: int,
    feature_set: str,
    bias_predicate: int | None,
    min_freq: float = 0.0,
) -> FactoredFeatures:
    """The feature dictionary of a training set (see the module doc) with gold states
    int [N] and labels int [N], -1 where partial labels leave them unknown (the
    supported pairs are those of the tokens whose state, or label, is known).

    ``min_freq`` (CRFsuite's cut-off) keeps only the supported pairs seen at more
    than that many training tokens; the pairs a complete set adds are kept."""
    feature_set = feature_set_to_build(feature_set, encoded.num_predicates, topology, order)
    counts = supported_pair_counts(encoded, states, label_ids, topology, order, feature_set, bias_predicate)
    return features_from_counts(counts, encoded.num_predicates, topology, order, feature_set, bias_predicate, min_freq)


def feature_set_to_build(feature_set: str, num_predicates: int, topology: Topology, order: int) -> str:
    """The feature set to build for P = ``num_predicates`` predicates: "complete-if-fits"
    is "complete" when its P x (S + L) features are at most MAX_FEATURES, else
    "supported" (logged as a warning); any other set is itself."""
    if feature_set != "complete-if-fits":
        return feature_set
    S, L = _outputs(topology, order)
    size = num_predicates * (S + L)
    if size <= MAX_FEATURES:
        return "complete"
    LOG.warning(
        "the complete feature set would have %s features, more than %s: training the supported ones "
        "(raise --min-count for the complete set)",
        f"{size:,}",
        f"{MAX_FEATURES:,}",
    )
    return "supported"


def _outputs(topology: Topology, order: int) -> tuple[int, int]:
    """(S, L): the state outputs and the label outputs (0 in order 1) of features."""
    return topology.num_states, topology.num_labels if order == 2 else 0


def supported_pair_counts(
    encoded: EncodedSentences,
    states: np.ndarray | None,
    label_ids: np.ndarray | None,
    topology: Topology,
    order: int,
    feature_set: str,
    bias_predicate: int | None,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The (predicate, output) pairs the gold tokens support, as {"states": ..., "labels": ...}
    (only the parts the feature set does not complete), each (distinct keys int64 [M],
    ascending, predicate * (S + L) + output; tokens int64 [M] at which each is seen).
    Counts of several training sets add up (:func:`merge_pair_counts`)."""
    S, L = _outputs(topology, order)
    token = np.repeat(np.arange(encoded.num_tokens), np.diff(encoded.indptr))
    predicate = encoded.indices.astype(np.int64)
    bound = encoded.num_predicates * (S + L)
    counts = {}
    if feature_set != "complete" and states is not None:
        known = states[token] >= 0
        counts["states"] = key_counts(predicate[known] * (S + L) + states[token[known]], bound)
    if L and feature_set == "supported" and label_ids is not None:
        on = (predicate != bias_predicate) & (label_ids[token] >= 0)
        counts["labels"] = key_counts(predicate[on] * (S + L) + S + label_ids[token[on]], bound)
    return counts


#: Key ranges up to this size are counted in a table (int64 [bound]) instead of by sorting the keys.
COUNT_TABLE_KEYS = 1 << 24


def key_counts(keys: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct keys int64 [M], ascending, how often each occurs int64 [M]) of keys
    int64 [M'] in [0, bound)."""
    if bound > COUNT_TABLE_KEYS:
        return np.unique(keys, return_counts=True)
    table = np.bincount(keys, minlength=bound)
    distinct = np.flatnonzero(table)
    return distinct, table[distinct]


def merge_pair_counts(
    parts: Sequence[dict[str, tuple[np.ndarray, np.ndarray]]],
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The :func:`supported_pair_counts` of the training sets together."""
    merged = {}
    for part in {name for counts in parts for name in counts}:
        keys = np.concatenate([counts[part][0] for counts in parts])
        distinct, where = np.unique(keys, return_inverse=True)
        tokens = np.concatenate([counts[part][1] for counts in parts])
        merged[part] = distinct, np.bincount(where, weights=tokens, minlength=len(distinct)).astype(np.int64)
    return merged


def features_from_counts(
    counts: dict[str, tuple[np.ndarray, np.ndarray]],
    num_predicates: int,
    topology: Topology,
    order: int,
    feature_set: str,
    bias_predicate: int | None,
    min_freq: float = 0.0,
) -> FactoredFeatures:
    """The feature dictionary (see :func:`build_features`) from the supported pairs'
    counts of :func:`supported_pair_counts` over P = ``num_predicates`` predicates
    (made with the same :func:`feature_set_to_build`)."""
    feature_set = feature_set_to_build(feature_set, num_predicates, topology, order)
    S, L = _outputs(topology, order)
    outputs = S + L
    P = num_predicates
    complete_states = feature_set == "complete"
    complete_tags = feature_set in ("complete", "complete-tags") and L > 0
    size = P * S * complete_states + P * L * complete_tags
    if size > MAX_FEATURES:
        smaller = "'complete-tags' or 'supported'" if complete_states and L else "'supported'"
        raise FstcrfError(
            f"the {feature_set} feature set would have {size:,} features, more "
            f"than {MAX_FEATURES:,}; use features={smaller} or raise min_count"
        )
    keys = [distinct[tokens > min_freq] for distinct, tokens in counts.values()]
    if complete_states:
        keys.append((np.arange(P, dtype=np.int64)[:, None] * outputs + np.arange(S)).ravel())
    if complete_tags:
        tagged = np.setdiff1d(np.arange(P), [] if bias_predicate is None else [bias_predicate])
        keys.append((tagged[:, None] * outputs + S + np.arange(L)).ravel())
    # one part is distinct and ascending already; several may overlap and interleave
    merged = (
        keys[0] if len(keys) == 1 else key_counts(np.concatenate(keys + [np.zeros(0, dtype=np.int64)]), P * outputs)[0]
    )
    ptr = np.searchsorted(merged, np.arange(P + 1, dtype=np.int64) * outputs)
    state_label = topology.state_label if L else np.arange(S)
    return FactoredFeatures(state_label, L, ptr, merged % outputs)


def drop_zero_features(
    features: FactoredFeatures, weights: np.ndarray
) -> tuple[FactoredFeatures, np.ndarray, np.ndarray]:
    """(the dictionary without the features whose weight is 0 (after L1 training)
    nor the predicates left without a feature, the weights float [F' + T] that
    remain, bool [P] the predicates kept); transition weights are all kept."""
    F = features.num_features
    keep = weights[:F] != 0
    kept_before = np.zeros(F + 1, dtype=np.int64)
    np.cumsum(keep, out=kept_before[1:])
    ptr = kept_before[features.ptr]
    used = np.diff(ptr) > 0
    pruned = FactoredFeatures(
        features.state_label, features.num_labels, np.append(ptr[:-1][used], ptr[-1]), features.output[keep]
    )
    return pruned, np.concatenate([weights[:F][keep], weights[F:]]), used


@dataclass
class ReadingFeatures:
    """The features of sentences (N tokens) for a model that reads a lower tagger's K
    labels, extracted once: ``common``, the predicates that do not read them (N
    rows); ``by_value``, those that do, with the lower label set to each of the K
    values (N * K rows, token-major) over M reading predicates; ``dictionary``,
    the feature dictionary of the M predicates; ``feature_index`` int64 [F_M], the
    index of each of its features in the model's weights (all distinct), or None
    when the M predicates are the model's P and ``dictionary`` its own (``whole``);
    ``num_values``, K."""

    common: EncodedSentences
    by_value: EncodedSentences
    dictionary: FactoredFeatures
    feature_index: np.ndarray | None
    num_values: int

    @property
    def whole(self) -> bool:
        """Whether the reading rows are over the model's own feature dictionary."""
        return self.feature_index is None
