"""Linear-chain CRFs with Sha & Pereira's factored features.

Features
--------
A feature is an observation predicate p (a column of the predicate matrix X
[N, P] of :class:`~fstcrf.features.FeatureExtractor`) paired with an output
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

Weights
-------
``weights_`` float [F + E]: first the F (predicate, output) features grouped
by predicate -- feature f = ``features_.ptr[p]`` .. ``ptr[p+1]-1`` pairs
predicate p with output ``features_.output[f]`` -- then the E transition
weights in the topology's edge order.

Model files
-----------
:func:`save_model` writes one self-describing binary file, atomically:

    magic        16 bytes  b"FSTCRF MODEL\\r\\n\\x1a\\n"
    version      uint32    FORMAT_VERSION
    header size  uint64    H
    data size    uint64    A
    header       H bytes   UTF-8 JSON (padded with spaces): labels, order,
                           topology, template, predicate dictionary, training
                           parameters and history, and the name, dtype, shape
                           and offset in the data of each array
    data         A bytes   the arrays, little-endian, 8-byte aligned
    digest       32 bytes  SHA-256 of everything before it

All integers are little-endian.  :func:`load_model` checks magic, version,
size and digest before it reads anything else, and raises ModelFileError
for any file that is not an intact model of a version it knows.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
from pathlib import Path
from typing import Sequence

import numpy as np
import pynini
import scipy.sparse

from . import train
from ._kernel import ffi, lib
from .files import write_atomically
from .conll import Corpus, Sentence
from .errors import (EmptySequenceError, FstcrfError, InfeasibleError, LabelError, ModelFileError,
                     ShapeError, TemplateError)
from .evaluate import ChunkScores, score_chunks
from .features import (CHUNKING_EXTENDED, CHUNKING_READS_POS, CRFPP_CHUNKING, POS_TAGGING,
                       SHA_PEREIRA_CHUNKING, FeatureExtractor, Template, parse_template)
from .grammar import (Grammar, compile_grammar, constrain, load_grammar, restrict_to, restriction_maps,
                      sum_per_original_edge)
from .mce import SegmentFScore
from .inference import (KernelBuffers, Potentials, SentenceBatch, blas_single_threaded,
                        forward_backward, kbest, lengths_to_offsets, run_parallel, thread_chunks,
                        viterbi)
from .topology import Topology, first_order, second_order

#: Template names ``ChainCRF`` accepts besides Template objects and template text.
TEMPLATES = {"sha-pereira": SHA_PEREIRA_CHUNKING, "crfpp": CRFPP_CHUNKING, "pos": POS_TAGGING,
             "chunking-reads-pos": CHUNKING_READS_POS, "chunking-extended": CHUNKING_EXTENDED}
ALGORITHMS = ("lbfgs", "perceptron", "sgd", "mce-f")
FEATURE_SETS = ("supported", "complete", "complete-tags")
#: The name of the always-true predicate.
BIAS = "bias"
#: The gold-column value of a token whose label is unknown (partial labels, training only).
UNKNOWN_LABEL = "?"
#: Separates the labels a token may take in a gold column: "B-NP|I-NP" (training only).
LABEL_SET_SEPARATOR = "|"
#: The outside tag, c_0 of second-order models.
OUTSIDE = "O"
#: Complete feature sets larger than this are refused: L-BFGS needs about 260 bytes per
#: weight (its 10 correction pairs, gradients and copies), so 2**24 weights take ~4.4 GB.
MAX_FEATURES = 2 ** 24
#: Cells (tokens x states) of one block of sentences scored at once per thread.
BLOCK_CELLS = 2 ** 19

MAGIC = b"FSTCRF MODEL\r\n\x1a\n"
#: The header's "format": one model, or a composition of models.
MODEL_KIND = "fstcrf-model"
JOINT_KIND = "fstcrf-joint"
FORMAT_VERSION = 1
_PREAMBLE = struct.Struct("<16sIQQ")
_DIGEST_SIZE = 32


def _check_kernel(status: int, what: str) -> None:
    if status != lib.FC_OK:
        raise RuntimeError(f"fstcrf feature loop {what} rejected its arguments; this is a bug in fstcrf")


def _pointer(ctype: str, array: np.ndarray):
    """A cffi view of a C-contiguous array's data; it keeps the array alive, but
    a struct field or a cast it is stored in does not."""
    return ffi.from_buffer(ctype + "[]", array)


class EncodedSentences(SentenceBatch):
    """Sentences as predicate rows: X [N, P] in CSR form cut into sentences.

    Attributes: ``indptr`` int64 [N+1], ``indices`` int32 [nnz] (predicates),
    ``values`` float [nnz]; ``lengths`` int64 [B] and ``offsets`` int64 [B+1];
    ``token_class`` int32 [N], the class of each token's transition scores (see
    :class:`TransitionWeights`), or None.
    When every value is 1 (binary predicates) the kernel is not given the
    values, which halves the memory its feature loops stream.
    """

    def __init__(self, matrix: scipy.sparse.csr_matrix, lengths: Sequence[int],
                 token_class: np.ndarray | None = None):
        matrix = scipy.sparse.csr_matrix(matrix)
        self.token_class = None if token_class is None else np.ascontiguousarray(token_class, dtype=np.int32)
        self.num_predicates = matrix.shape[1]
        self.indptr = np.ascontiguousarray(matrix.indptr, dtype=np.int64)
        self.indices = np.ascontiguousarray(matrix.indices, dtype=np.int32)
        self.values = np.ascontiguousarray(matrix.data, dtype=np.float64)
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.offsets = lengths_to_offsets(self.lengths)
        if self.offsets[-1] != matrix.shape[0]:
            raise ShapeError(f"{matrix.shape[0]} token rows for sentences of "
                             f"{int(self.offsets[-1])} tokens")
        if np.any(self.lengths <= 0):
            raise EmptySequenceError(f"sentence {int(np.flatnonzero(self.lengths <= 0)[0])} "
                                     "is empty; every sentence needs at least one token")
        self._indptr = _pointer("int64_t", self.indptr)
        self._indices = _pointer("int32_t", self.indices)
        self._values = ffi.NULL if np.all(self.values == 1.0) else _pointer("double", self.values)

    @classmethod
    def from_corpus(cls, extractor: FeatureExtractor, corpus: Corpus | Sequence[Sentence],
                    fit: bool = False, token_class: np.ndarray | None = None) -> EncodedSentences:
        """Encode a corpus with a fitted extractor (or fit it first)."""
        matrix = extractor.fit_transform(corpus) if fit else extractor.transform(corpus)
        return cls(matrix, [len(sentence) for sentence in corpus], token_class)

    def tokens(self, first: int, last: int):
        """The cffi ff_tokens of sentences first .. last-1."""
        block = ffi.new("ff_tokens *")
        start, stop = int(self.offsets[first]), int(self.offsets[last])
        block.num_tokens = stop - start
        block.indptr = self._indptr + start
        block.indices = self._indices
        block.values = self._values
        return block


class FactoredFeatures:
    """The feature dictionary: which (predicate, output) pairs carry a weight.

    Attributes: ``state_label`` int32 [S]; ``num_labels`` L (label outputs, 0
    in order 1); ``ptr`` int64 [P+1], the features of predicate p being
    ptr[p] .. ptr[p+1]-1; ``output`` int32 [F], each feature's output in
    [0, S + L).  Inconsistent arrays raise ShapeError.
    """

    def __init__(self, state_label, num_labels: int, ptr, output):
        self.state_label = np.ascontiguousarray(state_label, dtype=np.int32)
        self.num_labels = int(num_labels)
        self.ptr = np.ascontiguousarray(ptr, dtype=np.int64)
        self.output = np.ascontiguousarray(output, dtype=np.int32)
        S, L = len(self.state_label), self.num_labels
        if S == 0 or L < 0 or (L and (self.state_label.min() < 0 or self.state_label.max() >= L)):
            raise ShapeError(f"feature dictionary: bad state labels for {L} label outputs")
        if self.ptr.ndim != 1 or len(self.ptr) == 0 or self.ptr[0] != 0 \
                or np.any(np.diff(self.ptr) < 0) or self.ptr[-1] != len(self.output):
            raise ShapeError("feature dictionary: ptr must rise from 0 to the number of features")
        if len(self.output) and (self.output.min() < 0 or self.output.max() >= S + L):
            raise ShapeError(f"feature dictionary: outputs must lie in [0, {S + L})")
        self._dictionary = ffi.new("ff_dictionary *")
        self._dictionary.num_states = S
        self._dictionary.num_labels = L
        self._dictionary.state_label = _pointer("int32_t", self.state_label)
        self._dictionary.num_predicates = self.num_predicates
        self._dictionary.ptr = _pointer("int64_t", self.ptr)
        self._dictionary.output = _pointer("int32_t", self.output)
        self._work_size = int(lib.ff_work_doubles(self._dictionary))

    @property
    def num_states(self) -> int:
        return len(self.state_label)

    @property
    def num_predicates(self) -> int:
        return len(self.ptr) - 1

    @property
    def num_features(self) -> int:
        return len(self.output)

    def emissions(self, tokens, theta: np.ndarray, scale: float = 1.0) -> np.ndarray:
        """float [n, S]: scale * state scores of a token block under feature weights theta [F]."""
        emit = np.empty((tokens.num_tokens, self.num_states))
        work = np.empty(self._work_size)
        _check_kernel(lib.ff_emissions(self._dictionary, tokens, _pointer("double", theta), scale,
                                       _pointer("double", emit), _pointer("double", work)),
                      "ff_emissions")
        return emit

    def accumulate(self, tokens, marginals: np.ndarray, out: np.ndarray, scale: float = 1.0) -> None:
        """Add scale * expected feature counts [F] under state marginals [n, S] to ``out``."""
        work = np.empty(self._work_size)
        _check_kernel(lib.ff_accumulate(self._dictionary, tokens, _pointer("double", marginals), scale,
                                        _pointer("double", out), _pointer("double", work)),
                      "ff_accumulate")

    def add_paths(self, tokens, plus: np.ndarray, minus: np.ndarray | None, out: np.ndarray,
                  scale: float = 1.0) -> None:
        """Add scale * (feature counts along state path ``plus`` [n] - along ``minus``) to ``out``."""
        _check_kernel(lib.ff_add_paths(self._dictionary, tokens, _pointer("int32_t", plus),
                                       ffi.NULL if minus is None else _pointer("int32_t", minus),
                                       scale, _pointer("double", out)), "ff_add_paths")


class TransitionWeights:
    """The transition part of a weight vector and the kernel scores it makes.

    Without lower labels (L = 0) there is one weight per edge: [E].  A model
    that reads a lower tagger's L labels and lets its transitions depend on
    them has [E + L E] weights: a base row and a deviation row per lower label.
    The transition into a token whose lower label is l scores base +
    deviation[l]; class L, a lower label unseen in training, scores base alone.
    """

    def __init__(self, num_edges: int, num_lower_labels: int = 0):
        self.num_edges = int(num_edges)
        self.num_lower_labels = int(num_lower_labels)
        self.size = self.num_edges * (1 + self.num_lower_labels)
        self.num_classes = self.num_lower_labels + 1 if self.num_lower_labels else 1

    def scores(self, weights: np.ndarray) -> np.ndarray:
        """float [E], or [L + 1, E] by token class: the kernel's scores for weights [size]."""
        if not self.num_lower_labels:
            return weights
        base = weights[:self.num_edges]
        return np.vstack([base + weights[self.num_edges:].reshape(self.num_lower_labels, self.num_edges),
                          base])

    def gradient(self, counts: np.ndarray) -> np.ndarray:
        """float [size]: the weights' share of counts [E] (or [L + 1, E]) of the kernel's scores."""
        if not self.num_lower_labels:
            return counts
        return np.concatenate([counts.sum(axis=0), counts[:self.num_lower_labels].ravel()])

    def path_counts(self, edges: np.ndarray, token_class: np.ndarray | None,
                    weights: np.ndarray | None = None) -> np.ndarray:
        """float [E] (or [L + 1, E]): the (weighted) uses of edges int [M], each into a
        token of class token_class [M]."""
        keys = edges if token_class is None else token_class.astype(np.int64) * self.num_edges + edges
        counts = np.bincount(keys, weights=weights, minlength=self.num_classes * self.num_edges)
        return counts.reshape(self.num_classes, self.num_edges) if self.num_lower_labels else counts


def build_features(encoded: EncodedSentences, states: np.ndarray, label_ids: np.ndarray,
                   topology: Topology, order: int, feature_set: str,
                   bias_predicate: int | None) -> FactoredFeatures:
    """The feature dictionary of a training set (see the module doc) with gold states
    int [N] and labels int [N], -1 where partial labels leave them unknown (the
    supported pairs are those of the tokens whose state, or label, is known)."""
    S = topology.num_states
    L = topology.num_labels if order == 2 else 0
    outputs = S + L
    P = encoded.num_predicates
    complete_states = feature_set == "complete"
    complete_tags = feature_set in ("complete", "complete-tags") and L > 0
    size = P * S * complete_states + P * L * complete_tags
    if size > MAX_FEATURES:
        smaller = "'complete-tags' or 'supported'" if complete_states and L else "'supported'"
        raise FstcrfError(f"the {feature_set} feature set would have {size:,} features, more "
                          f"than {MAX_FEATURES:,}; use features={smaller} or raise min_count")
    token = np.repeat(np.arange(encoded.num_tokens), np.diff(encoded.indptr))
    predicate = encoded.indices.astype(np.int64)
    if complete_states:
        keys = [(np.arange(P, dtype=np.int64)[:, None] * outputs + np.arange(S)).ravel()]
    else:
        known = states[token] >= 0
        keys = [predicate[known] * outputs + states[token[known]]]
    if L:
        if complete_tags:
            tagged = np.setdiff1d(np.arange(P), [] if bias_predicate is None else [bias_predicate])
            keys.append((tagged[:, None] * outputs + S + np.arange(L)).ravel())
        else:
            on = (predicate != bias_predicate) & (label_ids[token] >= 0)
            keys.append(predicate[on] * outputs + S + label_ids[token[on]])
    keys = np.unique(np.concatenate(keys))
    ptr = np.searchsorted(keys, np.arange(P + 1, dtype=np.int64) * outputs)
    state_label = topology.state_label if L else np.arange(S)
    return FactoredFeatures(state_label, L, ptr, keys % outputs)


def label_states(topology: Topology, label_ids: np.ndarray, offsets: np.ndarray,
                 sentence_numbers: np.ndarray | None = None) -> np.ndarray:
    """int32 [N]: the state sequence of label index sequences int [N] (sentences cut at offsets).

    The topology is deterministic, so labels fix states; raises LabelError
    naming the first sentence whose labels it does not allow (numbered by
    ``sentence_numbers`` [B] when the sentences are a selection)."""
    S, L = topology.num_states, topology.num_labels
    successor = np.full((S + 1, L), -1, dtype=np.int64)   # row S: no state (a dead path)
    successor[topology.edge_src, topology.state_label[topology.edge_dst]] = topology.edge_dst
    entry = np.full(L, -1, dtype=np.int64)
    starts = np.flatnonzero(topology.start)
    entry[topology.state_label[starts]] = starts
    lengths = np.diff(offsets)
    states = np.empty(len(label_ids), dtype=np.int64)
    states[offsets[:-1]] = entry[label_ids[offsets[:-1]]]
    for t in range(1, int(lengths.max(initial=0))):
        rows = offsets[:-1][lengths > t] + t
        states[rows] = successor[states[rows - 1], label_ids[rows]]
    ends = offsets[1:] - 1
    bad = np.flatnonzero((np.minimum.reduceat(states, offsets[:-1]) < 0)
                         | ~topology.final[states[ends]]) if len(lengths) else []
    if len(bad):
        sentence = int(bad[0])
        labels = [topology.labels[i] for i in label_ids[offsets[sentence]:offsets[sentence + 1]]]
        number = sentence if sentence_numbers is None else int(sentence_numbers[sentence])
        raise LabelError(f"sentence {number} ({' '.join(labels)}) is not allowed by the "
                         f"{topology.name} topology ({len(bad)} such sentences)")
    return states.astype(np.int32)


def _path_edges(table: np.ndarray, states: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """int64 [N - B]: the edge ids along state paths [N] cut into sentences at offsets."""
    inside = np.ones(len(states), dtype=bool)
    inside[offsets[:-1]] = False
    return table[states[np.flatnonzero(inside) - 1], states[inside]]


def _thread_plans(encoded: SentenceBatch, threads: int, max_tokens: int) -> list[list[tuple[int, int]]]:
    """Sentence blocks (first, last): one list per thread (the threads' runs as in
    :func:`~fstcrf.inference.thread_chunks`), each block at most ``max_tokens``
    tokens (or one sentence)."""
    offsets = encoded.offsets
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


class Scorer:
    """Scores encoded sentences with a feature dictionary, a topology and weights
    [F + T] (T transition weights, laid out by ``transitions``).

    With ``constraint`` (a pynini acceptor over the topology's labels) every
    inference runs on the topology restricted to the accepted label sequences
    (Z sums over those only) and reports results on the original states."""

    def __init__(self, features: FactoredFeatures, topology: Topology, threads: int,
                 constraint: pynini.Fst | None = None, transitions: TransitionWeights | None = None):
        self.features = features
        self.topology = topology
        self.threads = threads
        self.transitions = transitions or TransitionWeights(topology.num_edges)
        self.num_weights = features.num_features + self.transitions.size
        self.constrained = None if constraint is None else constrain(topology, constraint)

    def potentials(self, encoded: EncodedSentences, weights: np.ndarray, first: int, last: int,
                   scale: float = 1.0) -> Potentials:
        """The potentials of sentences first .. last-1 under scale * weights."""
        F = self.features.num_features
        emit = self.features.emissions(encoded.tokens(first, last), weights[:F], scale)
        token_class = (None if encoded.token_class is None
                       else encoded.token_class[encoded.token_rows(first, last)])
        return Potentials(self.topology, emit, encoded.lengths[first:last],
                          self.transitions.scores(scale * weights[F:]), token_class=token_class)

    def decoding_topology(self, grammar=None, params: dict | None = None) -> Topology:
        """The topology decoding runs on: the model's, restricted to the training
        constraint and to ``grammar`` when there are ones."""
        topology = self.constrained or self.topology
        return topology if grammar is None else constrain(topology, grammar, params=params)

    def sum_product(self, pot: Potentials, allowed_labels: np.ndarray | None = None,
                    topology: Topology | None = None):
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
        return (result.log_z, restriction.original_marginals(result.node_marginals),
                restriction.original_edge_counts(result.edge_counts))

    def plans(self, encoded: EncodedSentences, topology: Topology | None = None) -> list[list[tuple[int, int]]]:
        """Per-thread sentence blocks.  Checks first that every length is feasible, which
        also fills the topology's caches before threads share it."""
        topology = topology or self.constrained or self.topology
        topology.check_lengths(encoded.lengths)
        return _thread_plans(encoded, self.threads, max(1, BLOCK_CELLS // topology.num_states))

    def paths(self, encoded: EncodedSentences, weights: np.ndarray, grammar=None,
              params: dict | None = None) -> np.ndarray:
        """int32 [N]: the Viterbi state paths of all sentences, among the label
        sequences the training constraint and ``grammar`` accept."""
        paths = np.empty(encoded.num_tokens, dtype=np.int32)
        topology = self.decoding_topology(grammar, params)

        def work(blocks):
            for first, last in blocks:
                pot = self.potentials(encoded, weights, first, last)
                if topology is self.topology:
                    best = viterbi(pot).paths
                else:
                    restriction = restrict_to(pot, topology)
                    best = restriction.state_map[viterbi(restriction.potentials).paths]
                paths[encoded.token_rows(first, last)] = best

        run_parallel(work, self.plans(encoded, topology))
        return paths

    def marginals(self, encoded: EncodedSentences, weights: np.ndarray, grammar=None,
                  params: dict | None = None) -> np.ndarray:
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


class _GradientBlock:
    """One thread's run of sentences first .. last-1 and its buffers for ``ft_gradient``."""

    def __init__(self, driver: _GradientDriver, first: int, last: int, group_tokens: int,
                 with_outputs: bool = True):
        encoded = driver.encoded
        self.tokens = encoded.tokens(first, last)
        self._offsets = np.ascontiguousarray(encoded.offsets[first:last + 1] - encoded.offsets[first])
        self.sentences = ffi.new("ft_sentences *")
        self.sentences.num_sequences = last - first
        self.sentences.offsets = _pointer("int64_t", self._offsets)
        if encoded.token_class is not None:
            self._token_class = encoded.token_class[encoded.token_rows(first, last)]
            self.sentences.token_class = _pointer("int32_t", self._token_class)
        if driver.partial is not None and driver.partial[first:last].any():
            rows = encoded.token_rows(first, last)
            self._partial = np.ascontiguousarray(driver.partial[first:last], dtype=np.uint8)
            self._allowed = np.ascontiguousarray(driver.allowed_labels[rows], dtype=np.uint8)
            self.sentences.partial = _pointer("uint8_t", self._partial)
            self.sentences.num_labels = self._allowed.shape[1]
            self.sentences.state_label = _pointer("int32_t", driver.state_label)
            self.sentences.allowed = _pointer("uint8_t", self._allowed)
        t_max = int(encoded.lengths[first:last].max())
        self.workspace = ffi.new("ft_workspace *")
        self.workspace.group_tokens = group_tokens
        self.workspace.t_max = t_max
        dictionary, graph = driver.features._dictionary, driver.graph
        self._doubles = np.empty(lib.ft_workspace_doubles(dictionary, graph, driver.num_classes,
                                                          group_tokens, t_max))
        self._ints = np.empty(lib.ft_workspace_ints(graph, group_tokens, t_max), dtype=np.int32)
        self._int64s = np.empty(lib.ft_workspace_int64s(group_tokens, t_max), dtype=np.int64)
        self.workspace.doubles = _pointer("double", self._doubles)
        self.workspace.ints = _pointer("int32_t", self._ints)
        self.workspace.int64s = _pointer("int64_t", self._int64s)
        self._loss = np.zeros(1)
        if with_outputs:
            self.gradient = np.zeros(driver.features.num_features)
            self.edge_counts = np.zeros(driver.edge_count_shape)

    def run(self, driver: _GradientDriver, scores, theta: np.ndarray, theta_scale: float,
            grad_scale: float, grad: np.ndarray, edge_counts: np.ndarray) -> float:
        """Add the block's Z-dependent terms to grad [F] and edge_counts [E'] or [C, E']
        (see ``ft_gradient``) and return its log Z sum minus its partial sentences'
        clamped log Z."""
        self._loss[0] = 0.0
        status = lib.ft_gradient(driver.features._dictionary, self.tokens, self.sentences, driver.graph,
                                 scores[0], driver.state_map_pointer, _pointer("double", theta), theta_scale,
                                 grad_scale, _pointer("double", self._loss), _pointer("double", grad),
                                 _pointer("double", edge_counts), self.workspace)
        if status != lib.FC_OK:
            raise RuntimeError(f"ft_gradient returned status {status} on a validated training set; "
                               "this is a bug in fstcrf")
        return float(self._loss[0])


class _GradientDriver:
    """The training gradient in C (``ft_gradient``): one call per thread's run of
    sentences, on the decoding topology (the model's, or its restriction to the
    training constraint), with the partial sentences' clamps."""

    def __init__(self, scorer: Scorer, encoded: EncodedSentences, partial: np.ndarray,
                 allowed_labels: np.ndarray | None):
        self.features = scorer.features
        self.encoded = encoded
        self.layout = scorer.transitions
        self.num_classes = self.layout.num_classes
        model = scorer.topology
        decoding = scorer.constrained or model
        self.state_map, self.edge_map = (None, None) if decoding is model else restriction_maps(model, decoding)
        self._buffers = KernelBuffers()
        self.graph = ffi.new("fc_graph *")
        self._buffers.fill_graph(self.graph, decoding)
        self.edge_count_shape = ((decoding.num_edges,) if self.layout.num_classes == 1
                                 else (self.layout.num_classes, decoding.num_edges))
        self.state_map_pointer = ffi.NULL if self.state_map is None else self._buffers._ptr("int32_t[]", self.state_map)
        starts = decoding.start if self.state_map is None else decoding.start & model.start[self.state_map]
        finals = decoding.final if self.state_map is None else decoding.final & model.final[self.state_map]
        self._start = np.where(starts, 0.0, -np.inf)
        self._final = np.where(finals, 0.0, -np.inf)
        self.partial = partial if partial.any() else None
        self.allowed_labels = allowed_labels
        self.state_label = np.ascontiguousarray(model.state_label, dtype=np.int32)
        self.blocks = [_GradientBlock(self, first, last, GROUP_TOKENS)
                       for first, last in thread_chunks(encoded, scorer.threads)]

    def scores(self, weights: np.ndarray) -> tuple:
        """(fc_scores of the decoding graph for transition weights [T], the arrays it
        points into, which must outlive its use)."""
        table = self.layout.scores(weights)
        trans = np.ascontiguousarray(table if self.edge_map is None else table[..., self.edge_map])
        scores = ffi.new("fc_scores *")
        arrays = (trans, self._start, self._final)
        scores.trans, scores.start, scores.final = (_pointer("double", array) for array in arrays)
        scores.num_classes = self.num_classes
        return scores, arrays

    def weight_gradient(self, counts: np.ndarray) -> np.ndarray:
        """float [T]: the transition weights' share of decoding-graph edge counts [E']
        (or [C, E'])."""
        if self.edge_map is not None:
            counts = sum_per_original_edge(self.edge_map, self.layout.num_edges, counts)
        return self.layout.gradient(counts)

    def sentence_block(self, index: int) -> _GradientBlock:
        """A block of sentence ``index`` alone (for the online algorithms)."""
        return _GradientBlock(self, index, index + 1, int(self.encoded.lengths[index]), with_outputs=False)


class TrainingSet:
    """Encoded sentences with gold labels, scored by a :class:`Scorer`: the
    :class:`fstcrf.train.Problem` of a model (weights theta float [F + E]).

    Args:
        states: int32 [N] gold states, -1 throughout a partially labelled sentence.
        allowed_labels: bool [N, L], the labels each token may take (None when
            every sentence is fully labelled).  A partially labelled sentence
            contributes log Z - log Z(paths keeping to its allowed labels).
    """

    def __init__(self, scorer: Scorer, encoded: EncodedSentences, states: np.ndarray,
                 allowed_labels: np.ndarray | None = None):
        self.scorer = scorer
        self.encoded = encoded
        self.states = states
        self.allowed_labels = allowed_labels
        self.num_weights = scorer.num_weights
        self.num_sequences = encoded.num_sequences
        self.partial = np.minimum.reduceat(states, encoded.offsets[:-1]) < 0
        self._plans = scorer.plans(encoded)
        self._driver = _GradientDriver(scorer, encoded, self.partial, allowed_labels)
        self._edge_table = scorer.topology.edge_ids
        self._num_features = scorer.features.num_features
        self.observed = np.zeros(self.num_weights)
        complete = np.flatnonzero(~self.partial)
        for first, last in _runs(complete):
            self._add_paths(first, last, states[encoded.token_rows(first, last)], None,
                            self.observed, 1.0)
        self._check_gold()

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
            allowed[~complete] = self.allowed_labels[~complete]
        for blocks in self._plans:
            for first, last in blocks:
                pot = self.scorer.potentials(self.encoded, zero, first, last)
                log_z = self.scorer.sum_product(pot, allowed[self.encoded.token_rows(first, last)])[0]
                bad = np.flatnonzero(np.isneginf(log_z))
                if len(bad):
                    what = "the training grammar" if self.scorer.constrained else "the topology"
                    raise LabelError(f"training sentence {first + int(bad[0])}: no label sequence "
                                     f"allowed by {what} fits its gold labels")

    def loss_and_gradient(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        F = self._num_features
        scores = self._driver.scores(theta[F:])

        def work(block):
            block.gradient[:] = 0.0
            block.edge_counts[:] = 0.0
            return block.run(self._driver, scores, theta, 1.0, 1.0, block.gradient, block.edge_counts)

        losses = run_parallel(work, self._driver.blocks)
        gradient = np.empty(self.num_weights)
        gradient[:F] = self._driver.blocks[0].gradient
        for block in self._driver.blocks[1:]:
            gradient[:F] += block.gradient
        gradient[F:] = self._driver.weight_gradient(np.sum([block.edge_counts for block in self._driver.blocks],
                                                           axis=0))
        gradient -= self.observed
        return sum(losses) - float(theta @ self.observed), gradient

    def add_gradient(self, weights: np.ndarray, scale: float, index: int, out: np.ndarray,
                     out_scale: float) -> float:
        F = self._num_features
        gold_score = 0.0
        if not self.partial[index]:     # scored before ``out``, which may be ``weights``, changes
            pot = self.scorer.potentials(self.encoded, weights, index, index + 1, scale)
            gold = self.gold(index)
            gold_edges = _path_edges(self._edge_table, gold, np.array([0, len(gold)]))
            gold_score = float(pot.emissions[np.arange(len(gold)), gold].sum()
                               + pot.transitions_into(slice(1, None))[np.arange(len(gold_edges)), gold_edges].sum())
        edge_counts = np.zeros(self._driver.edge_count_shape)
        loss = self._driver.sentence_block(index).run(
            self._driver, self._driver.scores(scale * weights[F:]), weights, scale, out_scale,
            out[:F], edge_counts)
        out[F:] += self._driver.weight_gradient(edge_counts)
        if not self.partial[index]:
            self._add_paths(index, index + 1, gold, None, out, -out_scale)
        return loss - gold_score

    def rival(self, theta: np.ndarray, index: int) -> np.ndarray | None:
        pot = self.scorer.potentials(self.encoded, theta, index, index + 1)
        if self.scorer.constrained is None:
            best = kbest(pot, 2)
            paths = best.paths
        else:
            restriction = restrict_to(pot, self.scorer.constrained)
            best = kbest(restriction.potentials, 2)
            paths = restriction.state_map[np.maximum(best.paths, 0)]
        gold = self.gold(index)
        if not np.array_equal(paths[0], gold):
            return paths[0]
        if best.found[0] == 2 and best.scores[0, 1] >= best.scores[0, 0]:
            return paths[1]
        return None

    def gold(self, index: int) -> np.ndarray:
        if self.partial[index]:
            raise FstcrfError(f"training sentence {index} is partially labelled; the perceptron "
                              "needs full labels (use algorithm='lbfgs' or 'sgd')")
        return self.states[self.encoded.token_rows(index, index + 1)]

    def add_path_difference(self, index: int, plus: np.ndarray, minus: np.ndarray,
                            out: np.ndarray, scale: float) -> None:
        self._add_paths(index, index + 1, plus, minus, out, scale)

    def _add_paths(self, first: int, last: int, plus: np.ndarray, minus: np.ndarray | None,
                   out: np.ndarray, scale: float) -> None:
        """Add scale * (feature counts along state path ``plus`` [n] of sentences first ..
        last-1, minus those along ``minus``) to ``out`` [F + E]."""
        F = self._num_features
        self.scorer.features.add_paths(self.encoded.tokens(first, last), plus, minus, out[:F], scale)
        offsets = self.encoded.offsets[first:last + 1] - self.encoded.offsets[first]
        token_class = None
        if self.encoded.token_class is not None:
            inside = np.ones(len(plus), dtype=bool)
            inside[offsets[:-1]] = False
            token_class = self.encoded.token_class[self.encoded.token_rows(first, last)][inside]
        layout = self.scorer.transitions
        counts = layout.path_counts(_path_edges(self._edge_table, plus, offsets), token_class)
        if minus is not None:
            counts = counts - layout.path_counts(_path_edges(self._edge_table, minus, offsets), token_class)
        out[F:] += scale * layout.gradient(counts)


def _runs(indices: np.ndarray) -> list[tuple[int, int]]:
    """Maximal runs (first, last) of consecutive integers in sorted ``indices``."""
    if len(indices) == 0:
        return []
    breaks = np.flatnonzero(np.diff(indices) != 1)
    firsts = np.concatenate([[indices[0]], indices[breaks + 1]])
    lasts = np.concatenate([indices[breaks], [indices[-1]]]) + 1
    return list(zip(firsts.tolist(), lasts.tolist()))


def _resolve_template(template) -> Template:
    if isinstance(template, Template):
        return template
    if isinstance(template, str):
        return TEMPLATES[template] if template in TEMPLATES else parse_template(template)
    raise TemplateError(f"template must be a Template, template text or one of "
                        f"{', '.join(TEMPLATES)}; got {type(template).__name__}")


def _check_reading_template(template: Template, reads: str, target: str,
                            column_names: Sequence[str]) -> None:
    """A model reading a lower tagger's labels in column ``reads`` may use them at offset 0 only."""
    if reads == target:
        raise FstcrfError(f"a model cannot read the labels of the column it predicts ({target!r})")
    if reads not in column_names:
        raise TemplateError(f"the model reads column {reads!r}, which the training data lacks; its "
                            f"columns are {', '.join(column_names)}")
    offsets = {observation.offset for predicate in template for observation in predicate.observations
               if observation.column == reads}
    if not offsets:
        raise TemplateError(f"the model reads column {reads!r} but its template never uses it")
    if offsets != {0}:
        raise TemplateError(f"the template uses the lower labels {reads!r} at offsets "
                            f"{', '.join(f'{o:+d}' for o in sorted(offsets - {0}))}; a model that "
                            f"reads a lower tagger's labels may use them at offset 0 only (e.g. "
                            f"{reads}[0]|word[-1]), because joint decoding scores each token's "
                            "lower label one token at a time")


def _build_topology(order: int, labels: Sequence[str]) -> Topology:
    if order == 1:
        return first_order(labels)
    if OUTSIDE not in labels:
        raise LabelError(f"a second-order model needs the outside tag {OUTSIDE!r} among the "
                         f"labels (it is c_0 before every sentence); the labels are {', '.join(labels)}")
    return second_order(labels, outside=OUTSIDE)


def _label_options(value: str) -> list[str] | None:
    """The labels a gold-column value allows: None for UNKNOWN_LABEL (any label)."""
    if value == UNKNOWN_LABEL:
        return None
    if LABEL_SET_SEPARATOR in value:
        options = value.split(LABEL_SET_SEPARATOR)
        if not all(options) or UNKNOWN_LABEL in options:
            raise LabelError(f"label set {value!r} has an empty member or {UNKNOWN_LABEL!r}; "
                             f"write labels separated by {LABEL_SET_SEPARATOR!r}, e.g. 'B-NP|I-NP'")
        return options
    return [value]


def _gold_label_set(sentences: Sequence[Sequence[str]]) -> list[str]:
    """The sorted labels a gold column mentions (in single labels and label sets)."""
    labels = set()
    for values in sentences:
        for value in set(values):
            labels.update(_label_options(value) or ())
    if not labels:
        raise LabelError("the gold column names no label: every token is unknown "
                         f"({UNKNOWN_LABEL!r})")
    return sorted(labels)


def _gold_labels(topology: Topology, sentences: Sequence[Sequence[str]]
                 ) -> tuple[np.ndarray, np.ndarray | None]:
    """(label index int64 [N], -1 where the gold value is not one label; the labels
    each token allows, bool [N, L], or None if every token has one label)."""
    index = {label: i for i, label in enumerate(topology.labels)}
    values = [value for labels in sentences for value in labels]
    label_ids = np.array([index.get(value, -1) for value in values], dtype=np.int64)
    unresolved = np.flatnonzero(label_ids < 0)
    if len(unresolved) == 0:
        return label_ids, None
    allowed = np.zeros((len(values), topology.num_labels), dtype=bool)
    allowed[np.flatnonzero(label_ids >= 0), label_ids[label_ids >= 0]] = True
    for row in unresolved.tolist():
        options = _label_options(values[row])
        if options is None:
            allowed[row] = True
            continue
        unknown = [label for label in options if label not in index]
        if unknown:
            raise LabelError(f"unknown label {unknown[0]!r}; the model knows {', '.join(topology.labels)}")
        allowed[row, [index[label] for label in options]] = True
    resolved = allowed.sum(axis=1) == 1
    label_ids[resolved] = allowed[resolved].argmax(axis=1)
    return label_ids, allowed


def _label_ids(topology: Topology, sentences: Sequence[Sequence[str]]) -> np.ndarray:
    """int64 [N]: the label index of every token (every token must have one label)."""
    label_ids, allowed = _gold_labels(topology, sentences)
    if allowed is not None:
        row = int(np.flatnonzero(label_ids < 0)[0])
        raise LabelError(f"token {row} has a partial label; only training data may leave labels "
                         f"unknown ({UNKNOWN_LABEL!r}) or give label sets ('A{LABEL_SET_SEPARATOR}B')")
    return label_ids


def gold_states(topology: Topology, label_ids: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """int32 [N]: the gold state of every token of the fully labelled sentences,
    -1 throughout a sentence with a token whose label is not known (label_ids -1)."""
    states = np.full(len(label_ids), -1, dtype=np.int32)
    complete = np.flatnonzero(np.minimum.reduceat(label_ids, offsets[:-1]) >= 0)
    if len(complete):
        rows = np.concatenate([np.arange(offsets[b], offsets[b + 1]) for b in complete])
        sub_offsets = lengths_to_offsets(np.diff(offsets)[complete])
        states[rows] = label_states(topology, label_ids[rows], sub_offsets, complete)
    return states


def _split_labels(topology: Topology, states: np.ndarray, offsets: np.ndarray) -> list[list[str]]:
    """The label strings of state paths [N], one list per sentence."""
    labels = np.array(topology.labels, dtype=object)[topology.state_label[states]]
    return [sentence.tolist() for sentence in np.split(labels, offsets[1:-1])]


_PARAMS = ("template", "order", "algorithm", "sigma", "max_iter", "features", "min_count",
           "threads", "tol", "learning_rate", "seed", "grammar", "grammar_params", "reads",
           "read_transitions", "mce_c", "mce_iter")


class ChainCRF:
    """A linear-chain CRF over CoNLL columns with Sha & Pereira's factored features.

    Args:
        template: a :class:`~fstcrf.features.Template`, template text, or a
            name: "sha-pereira" (Sha & Pereira's Table 1) or "crfpp".
        order: 1 (states are labels) or 2 (states are tag pairs, which needs
            the outside tag "O" among the labels).
        algorithm: "lbfgs", "perceptron" or "sgd" (see :mod:`fstcrf.train`), or
            "mce-f": penalised log-likelihood by L-BFGS (``sigma``, ``max_iter``),
            then the smoothed segment F-score of Suzuki et al. 2006 from those
            weights (see :mod:`fstcrf.mce`), with prior ||theta||^2 / (2 mce_c)
            for ``mce_iter`` L-BFGS iterations.  ``fit(init=model)`` skips the
            first stage.  Needs IOB2 chunk labels and full labels.
        sigma: standard deviation of the Gaussian prior on every weight
            (lbfgs, sgd).  10 (variance 100) is a mild prior.
        max_iter: L-BFGS iterations or online epochs.
        features: "supported", "complete" or (order 2) "complete-tags" (see the
            module doc).
        min_count: keep predicates true at this many training tokens or more.
        threads: threads for the L-BFGS gradient, decoding and dev scoring (the
            online algorithms update one sentence at a time, in one thread).
        tol: L-BFGS stops when an iteration lowers the objective by less than
            this fraction of it.
        learning_rate: the initial SGD step size.
        seed: the shuffling seed of the online algorithms.
        grammar: train and decode under a grammar (a shipped grammar name such
            as "iob2" or a grammar file): Z sums only over the label sequences
            it accepts, and predictions are always accepted by it.
        grammar_params: values for the grammar's parameters, e.g. {"X": "NP"}.
        reads: a column holding a lower tagger's labels (e.g. "pos") that this
            model reads at the same token only: the template may use it at
            offset 0 only, so that :func:`fstcrf.compose.compose` can decode
            the two models jointly (the predicates reading it are conjoined
            with the lower label).  Trained on the column as given (gold, or
            jackknifed predictions).
        read_transitions: with ``reads``, the transition weights depend on the
            lower label at the new token too, f(y_{t-1}, y_t, lower_t): a base
            weight per edge plus a deviation per (lower label, edge).
        mce_c: C of the F-score stage's prior (algorithm "mce-f").
        mce_iter: L-BFGS iterations of the F-score stage (algorithm "mce-f").

    The gold column may leave labels unknown, "?", or give the labels a token
    may take, "B-NP|I-NP" (training only): those positions are marginalised.

    Learned attributes: ``labels_`` (L labels), ``topology_``, ``extractor_``
    (the fitted FeatureExtractor), ``features_`` (the FactoredFeatures
    dictionary), ``weights_`` float [F + E], ``target_`` (the column
    trained on), ``columns_`` (the column names of the training file),
    ``n_iter_``, ``best_iteration_`` (whose weights were kept),
    ``interrupted_`` and ``history_`` (one record per iteration, see
    :mod:`fstcrf.train`), ``constraint_`` (the compiled training grammar, a
    pynini acceptor over ``labels_``, or None), ``lower_labels_`` (the values
    of the ``reads`` column seen in training, or None).
    """

    def __init__(self, template: Template | str = "sha-pereira", order: int = 1,
                 algorithm: str = "lbfgs", sigma: float = 10.0, max_iter: int = 100,
                 features: str = "supported", min_count: int = 1, threads: int = 2,
                 tol: float = 1e-7, learning_rate: float = 0.1, seed: int = 0,
                 grammar: str | None = None, grammar_params: dict | None = None,
                 reads: str | None = None, read_transitions: bool = True, mce_c: float = 1e5,
                 mce_iter: int = 50):
        self.template = template
        self.order = order
        self.algorithm = algorithm
        self.sigma = sigma
        self.max_iter = max_iter
        self.features = features
        self.min_count = min_count
        self.threads = threads
        self.tol = tol
        self.learning_rate = learning_rate
        self.seed = seed
        self.grammar = grammar
        self.grammar_params = grammar_params
        self.reads = reads
        self.read_transitions = read_transitions
        self.mce_c = mce_c
        self.mce_iter = mce_iter

    def get_params(self) -> dict:
        """The constructor arguments, by name."""
        return {name: getattr(self, name) for name in _PARAMS}

    def _check_params(self) -> None:
        if isinstance(self.order, bool) or self.order not in (1, 2):
            raise FstcrfError(f"order must be 1 or 2, got {self.order!r}")
        if self.algorithm not in ALGORITHMS:
            raise FstcrfError(f"algorithm must be one of {', '.join(ALGORITHMS)}, got {self.algorithm!r}")
        if self.features not in FEATURE_SETS:
            raise FstcrfError(f"features must be one of {', '.join(FEATURE_SETS)}, got {self.features!r}")
        if self.features == "complete-tags" and self.order != 2:
            raise FstcrfError("features='complete-tags' needs order=2 (in order 1 states are "
                              "tags: use 'complete')")
        if isinstance(self.threads, bool) or not isinstance(self.threads, (int, np.integer)) \
                or self.threads < 1:
            raise FstcrfError(f"threads must be a positive integer, got {self.threads!r}")
        if self.algorithm == "mce-f":
            train._check_positive("mce_c", self.mce_c)
            train._check_positive("mce_iter", self.mce_iter, integer=True)

    def _check_fitted(self) -> None:
        if not hasattr(self, "weights_"):
            raise FstcrfError("this ChainCRF is not fitted; call fit or load_model first")

    def _transition_layout(self, num_edges: int, lower_labels: Sequence[str] | None) -> TransitionWeights:
        """How the transition weights are laid out, given the lower labels seen in training."""
        reading = self.reads is not None and self.read_transitions
        return TransitionWeights(num_edges, len(lower_labels or ()) if reading else 0)

    def _token_classes(self, sentences: Sequence[Sentence], lower_labels: Sequence[str] | None
                       ) -> np.ndarray | None:
        """int32 [N]: the transition class of each token, the index of its ``reads`` value
        among lower_labels (len(lower_labels) for a value unseen in training); None when
        the transitions do not read a lower label."""
        if self.reads is None or not self.read_transitions:
            return None
        index = {label: i for i, label in enumerate(lower_labels)}
        unseen = len(lower_labels)
        return np.array([index.get(value, unseen) for sentence in sentences for value in sentence[self.reads]],
                        dtype=np.int32)

    def _encode(self, sentences: Sequence[Sentence]) -> EncodedSentences:
        """Sentences encoded by the fitted extractor, with their transition classes."""
        return EncodedSentences.from_corpus(self.extractor_, sentences,
                                            token_class=self._token_classes(sentences, self.lower_labels_))

    def _scorer(self) -> Scorer:
        return Scorer(self.features_, self.topology_, int(self.threads), self.constraint_,
                      self._transition_layout(self.topology_.num_edges, self.lower_labels_))

    def transition_scores(self, lower_labels: Sequence[str]) -> np.ndarray:
        """float [K, E]: the transition scores when the lower label at the new token is
        each of ``lower_labels`` (K of them); rows are equal when the transitions do
        not read a lower label."""
        self._check_fitted()
        F = self.features_.num_features
        table = self._scorer().transitions.scores(self.weights_[F:])
        classes = self._token_classes([Sentence({self.reads: list(lower_labels)})], self.lower_labels_) \
            if table.ndim == 2 else np.zeros(len(lower_labels), dtype=np.int64)
        return np.atleast_2d(table)[classes]

    # -- training ------------------------------------------------------------
    @blas_single_threaded()
    def fit(self, corpus: Corpus, target: str = "chunk", dev: Corpus | None = None,
            callback: train.Callback | None = None, init: ChainCRF | None = None) -> ChainCRF:
        """Learn the labels of column ``target`` of ``corpus``.

        With ``dev`` the weights of the iteration with the best dev chunk F1
        are kept.  ``callback(record)`` sees each iteration's record (see
        :mod:`fstcrf.train`) and may return True to stop.  Ctrl-C stops
        training and keeps the best weights so far (``interrupted_`` is True).
        ``init``, a fitted model (algorithms "lbfgs" and "mce-f"), is the
        starting point: its template, order, feature dictionary and weights
        are used, and the gold labels must be among its labels.
        """
        self._check_params()
        if len(corpus) == 0:
            raise EmptySequenceError("the training corpus has no sentences")
        if init is not None:
            if self.algorithm not in ("lbfgs", "mce-f"):
                raise FstcrfError(f"init (a warm start) works with algorithm 'lbfgs' or 'mce-f', "
                                  f"not {self.algorithm!r}")
            init._check_fitted()
            if (init.order, init.reads, init.read_transitions) != (self.order, self.reads, self.read_transitions):
                raise FstcrfError(f"init is a model of order {init.order} reading {init.reads!r} "
                                  f"(read_transitions={init.read_transitions}); give this ChainCRF the same "
                                  f"order, reads and read_transitions (it has {self.order}, {self.reads!r}, "
                                  f"{self.read_transitions})")
            template = init.extractor_._template()
        else:
            template = _resolve_template(self.template)
        if target in template.columns:
            raise TemplateError(f"the template reads column {target!r}, the column the model "
                                "learns to predict; at tagging time that column is unknown")
        if self.reads is not None:
            _check_reading_template(template, self.reads, target, corpus.column_names)
        gold_labels = corpus.column(target)
        if init is not None:
            topology, extractor = init.topology_, init.extractor_
        else:
            topology = _build_topology(self.order, _gold_label_set(gold_labels))
            extractor = FeatureExtractor(template, self.min_count)
        constraint = None
        if self.grammar is not None:
            grammar = self.grammar if isinstance(self.grammar, Grammar) else load_grammar(self.grammar)
            constraint = compile_grammar(grammar, topology.labels, params=self.grammar_params)
        lower_labels = (init.lower_labels_ if init is not None else None if self.reads is None else
                        sorted({value for values in corpus.column(self.reads) for value in values}))
        encoded = EncodedSentences.from_corpus(extractor, corpus, fit=init is None,
                                               token_class=self._token_classes(corpus, lower_labels))
        label_ids, allowed_labels = _gold_labels(topology, gold_labels)
        states = gold_states(topology, label_ids, encoded.offsets)
        if allowed_labels is not None and self.algorithm in ("perceptron", "mce-f"):
            raise FstcrfError(f"algorithm {self.algorithm!r} needs fully labelled training data; train "
                              "partially labelled data with algorithm='lbfgs' or 'sgd'")
        features = init.features_ if init is not None else build_features(
            encoded, label_ids if self.order == 1 else states, label_ids, topology, self.order,
            self.features, extractor.vocabulary_.get(BIAS))
        scorer = Scorer(features, topology, int(self.threads), constraint,
                        self._transition_layout(topology.num_edges, lower_labels))
        problem = TrainingSet(scorer, encoded, states, allowed_labels)
        evaluate = None
        if dev is not None:
            dev_encoded = EncodedSentences.from_corpus(extractor, dev,
                                                       token_class=self._token_classes(dev, lower_labels))
            dev_gold = dev.column(target)

            def evaluate(weights: np.ndarray) -> float:
                predicted = _split_labels(topology, scorer.paths(dev_encoded, weights),
                                          dev_encoded.offsets)
                return score_chunks(dev_gold, predicted).f1

        if self.algorithm == "perceptron":
            result = train.averaged_perceptron(problem, self.max_iter, self.seed, evaluate, callback)
        elif self.algorithm == "sgd":
            result = train.sgd(problem, self.sigma, self.max_iter, self.learning_rate, self.seed,
                               evaluate, callback)
        else:
            initial = None if init is None else init.weights_
            stages = []
            if self.algorithm == "lbfgs" or init is None:
                stages.append(train.lbfgs(problem, self.sigma, self.max_iter, self.tol, evaluate, callback,
                                          initial))
                initial = stages[-1].weights
            if self.algorithm == "mce-f" and not (stages and stages[-1].interrupted):
                stages.append(train.lbfgs(SegmentFScore(scorer, encoded, states), float(np.sqrt(self.mce_c)),
                                          self.mce_iter, self.tol, evaluate, callback, initial, name="mce-f"))
            result = stages[-1]
            result.history = [record for stage in stages for record in stage.history]
        self.labels_ = topology.labels
        self.topology_ = topology
        self.constraint_ = constraint
        self.lower_labels_ = lower_labels
        self.extractor_ = extractor
        self.features_ = features
        self.target_ = target
        self.columns_ = tuple(corpus.column_names)
        self.weights_ = result.weights
        self.n_iter_ = result.n_iter
        self.best_iteration_ = result.best_iteration
        self.interrupted_ = result.interrupted
        self.history_ = result.history
        return self

    # -- prediction ----------------------------------------------------------
    @blas_single_threaded()
    def predict(self, corpus: Corpus | Sequence[Sentence], grammar=None, params: dict | None = None,
                on_infeasible: str = "error") -> list[list[str]]:
        """The best label sequence of every sentence [B][T].

        With ``grammar`` (a :class:`~fstcrf.grammar.Grammar`, a grammar file or a
        shipped grammar name such as "iob2"; ``params`` sets its parameters)
        the best sequence among those the grammar accepts.  A sentence whose
        length no accepted sequence has raises InfeasibleError naming it, or,
        with ``on_infeasible="unconstrained"``, is tagged without the grammar
        (and a warning is logged)."""
        self._check_fitted()
        sentences = list(corpus)
        if not sentences:
            return []
        if grammar is None:
            encoded = self._encode(sentences)
            return _split_labels(self.topology_, self._scorer().paths(encoded, self.weights_),
                                 encoded.offsets)
        if on_infeasible not in ("error", "unconstrained"):
            raise FstcrfError(f"on_infeasible must be 'error' or 'unconstrained', got {on_infeasible!r}")
        if not isinstance(grammar, Grammar):
            grammar = load_grammar(grammar)
        constrained = self._scorer().decoding_topology(grammar, params)
        infeasible = [i for i, sentence in enumerate(sentences) if not constrained.is_feasible(len(sentence))]
        if infeasible and on_infeasible == "error":
            shown = ", ".join(f"{i} (length {len(sentences[i])})" for i in infeasible[:10])
            raise InfeasibleError(f"grammar {grammar.source} accepts no label sequence as long as sentence "
                                  f"{shown}{' ...' if len(infeasible) > 10 else ''}; fix the grammar, or tag "
                                  "those sentences without it (on_infeasible='unconstrained', "
                                  "CLI --on-infeasible unconstrained)")
        result: list[list[str] | None] = [None] * len(sentences)
        feasible = sorted(set(range(len(sentences))) - set(infeasible))
        if feasible:
            encoded = self._encode([sentences[i] for i in feasible])
            paths = self._scorer().paths(encoded, self.weights_, grammar, params)
            for i, labels in zip(feasible, _split_labels(self.topology_, paths, encoded.offsets)):
                result[i] = labels
        if infeasible:
            logging.getLogger(__name__).warning(
                "grammar %s accepts no sequence as long as %d sentence(s); tagged them without it",
                grammar.source, len(infeasible))
            for i, labels in zip(infeasible, self.predict([sentences[i] for i in infeasible])):
                result[i] = labels
        return result

    def potentials(self, corpus: Corpus | Sequence[Sentence]) -> Potentials:
        """The scores of a batch of sentences on ``topology_`` (for lattice export,
        k-best lists, sampling or marginals with :mod:`fstcrf.inference`)."""
        self._check_fitted()
        encoded = self._encode(list(corpus))
        return self._scorer().potentials(encoded, self.weights_, 0, encoded.num_sequences)

    def reading_emissions(self, sentences: Sequence[Sentence], lower_labels: Sequence[str]) -> np.ndarray:
        """float [N, K, S]: the emission scores of every state at every token when the
        ``reads`` column takes the k-th of ``lower_labels`` there (K of them)."""
        self._check_fitted()
        if self.reads is None:
            raise FstcrfError("this model reads no lower tagger's labels (train it with reads=...)")
        base, by_value = self.extractor_.transform_reading(sentences, self.reads, lower_labels)
        lengths = [len(sentence) for sentence in sentences]
        F = self.features_.num_features

        def state_scores(matrix, copies: int) -> np.ndarray:
            encoded = EncodedSentences(matrix, lengths * copies)
            return self.features_.emissions(encoded.tokens(0, encoded.num_sequences), self.weights_[:F])

        common = state_scores(base, 1)                                           # [N, S]
        per_value = state_scores(by_value, len(lower_labels))                    # [K * N, S]
        return common[:, None, :] + per_value.reshape(len(lower_labels), len(common), -1).transpose(1, 0, 2)

    @blas_single_threaded()
    def predict_marginals(self, corpus: Corpus | Sequence[Sentence], grammar=None,
                          params: dict | None = None) -> list[np.ndarray]:
        """float [T, L] per sentence: p(label at token t = l | sentence), columns in
        ``labels_`` order (state marginals summed over the states of each label);
        with ``grammar``, p(label | sentence, the labels are accepted by it)."""
        self._check_fitted()
        if len(corpus) == 0:
            return []
        if grammar is not None and not isinstance(grammar, (Grammar, pynini.Fst)):
            grammar = load_grammar(grammar)
        encoded = self._encode(list(corpus))
        state_marginals = self._scorer().marginals(encoded, self.weights_, grammar, params)
        by_label = np.zeros((self.topology_.num_states, self.topology_.num_labels))
        by_label[np.arange(self.topology_.num_states), self.topology_.state_label] = 1.0
        return np.split(state_marginals @ by_label, encoded.offsets[1:-1])

    def score(self, corpus: Corpus, target: str | None = None) -> ChunkScores:
        """conlleval scores of the predictions against column ``target`` (default: the
        column trained on)."""
        self._check_fitted()
        return score_chunks(corpus.column(target or self.target_), self.predict(corpus))

    # -- files ---------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write the fitted model to ``path`` atomically (see :func:`save_model`)."""
        save_model(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> ChainCRF:
        """Read a model written by :meth:`save` (see :func:`load_model`)."""
        return load_model(path)


# -- model files ---------------------------------------------------------------

def model_payload(model: ChainCRF) -> tuple[dict, dict[str, np.ndarray]]:
    """The JSON-able description and the arrays of a fitted model."""
    model._check_fitted()
    arrays = {"weights": model.weights_.astype("<f8"),
              "feature_ptr": model.features_.ptr.astype("<i8"),
              "feature_output": model.features_.output.astype("<i4")}
    if model.constraint_ is not None:
        arrays["constraint"] = np.frombuffer(model.constraint_.write_to_string(), dtype=np.uint8)
    params = model.get_params()
    if isinstance(params["template"], Template):
        params["template"] = params["template"].text
    if isinstance(params["grammar"], Grammar):
        params["grammar"] = params["grammar"].source
    header = {"params": params, "target": model.target_, "columns": list(model.columns_),
              "topology": {"kind": model.topology_.name, "labels": list(model.topology_.labels),
                           "num_states": model.topology_.num_states,
                           "num_edges": model.topology_.num_edges},
              "extractor": model.extractor_.to_dict(), "lower_labels": model.lower_labels_,
              "training": {"n_iter": model.n_iter_, "best_iteration": model.best_iteration_,
                           "interrupted": model.interrupted_, "history": model.history_}}
    return header, arrays


def write_container(path: str | os.PathLike, kind: str, header: dict,
                    arrays: dict[str, np.ndarray]) -> None:
    """Write a header and 1-D arrays as one model file (layout in the module doc), atomically."""
    table, pieces, offset = {}, [], 0
    for name, array in arrays.items():
        data = memoryview(np.ascontiguousarray(array)).cast("B")
        padding = b"\0" * (-len(data) % 8)
        table[name] = {"dtype": array.dtype.str, "shape": list(array.shape), "offset": offset}
        pieces += [data, padding]
        offset += len(data) + len(padding)
    header = {"format": kind, **header, "arrays": table}
    header_bytes = json.dumps(header, ensure_ascii=False).encode("utf-8")
    header_bytes += b" " * (-(_PREAMBLE.size + len(header_bytes)) % 8)
    preamble = _PREAMBLE.pack(MAGIC, FORMAT_VERSION, len(header_bytes), offset)

    def write(stream) -> None:
        """The pieces, then a SHA-256 digest of them."""
        digest = hashlib.sha256()
        for piece in (preamble, header_bytes, *pieces):
            digest.update(piece)
            stream.write(piece)
        stream.write(digest.digest())

    write_atomically(path, write)


def save_model(model: ChainCRF, path: str | os.PathLike) -> None:
    """Write a fitted model to one self-describing file (layout in the module doc)."""
    header, arrays = model_payload(model)
    write_container(path, MODEL_KIND, header, arrays)


#: dtypes an array of a model file may have.
_ARRAY_DTYPES = ("<f8", "<i8", "<i4", "|u1")


def read_container(path: str | os.PathLike) -> tuple[dict, dict[str, np.ndarray]]:
    """The JSON header and the arrays of an intact model file (of any kind)."""
    where = os.fspath(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as error:
        raise ModelFileError(f"{where}: cannot read the model file: {error.strerror}") from None
    if raw[:len(MAGIC)] != MAGIC:
        if len(raw) < len(MAGIC) and MAGIC.startswith(raw) and raw:
            raise ModelFileError(f"{where}: the model file is truncated ({len(raw)} bytes)")
        raise ModelFileError(f"{where}: not an fstcrf model file (it does not start with the "
                             f"fstcrf magic bytes)")
    if len(raw) < _PREAMBLE.size:
        raise ModelFileError(f"{where}: the model file is truncated ({len(raw)} bytes)")
    _, version, header_size, data_size = _PREAMBLE.unpack_from(raw)
    if version != FORMAT_VERSION:
        newer = " (written by a newer fstcrf; upgrade fstcrf to read it)" if version > FORMAT_VERSION else ""
        raise ModelFileError(f"{where}: model file format version {version} is not supported; "
                             f"this fstcrf reads version {FORMAT_VERSION}{newer}")
    expected = _PREAMBLE.size + header_size + data_size + _DIGEST_SIZE
    if len(raw) != expected:
        raise ModelFileError(f"{where}: the model file is truncated or corrupt: its preamble "
                             f"announces {expected} bytes but it has {len(raw)}")
    if hashlib.sha256(memoryview(raw)[:-_DIGEST_SIZE]).digest() != raw[-_DIGEST_SIZE:]:
        raise ModelFileError(f"{where}: the model file is corrupt (SHA-256 checksum mismatch)")
    try:
        header = json.loads(raw[_PREAMBLE.size:_PREAMBLE.size + header_size].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ModelFileError(f"{where}: the model header is not UTF-8 JSON: {error}") from None
    if not isinstance(header, dict) or header.get("format") not in (MODEL_KIND, JOINT_KIND):
        raise ModelFileError(f"{where}: the model header does not describe an fstcrf model")
    data_start = _PREAMBLE.size + header_size
    arrays = {}
    for name, entry in _field(header, "arrays", dict, where).items():
        dtype, shape, offset = (entry.get(key) if isinstance(entry, dict) else None
                                for key in ("dtype", "shape", "offset"))
        if dtype not in _ARRAY_DTYPES or not isinstance(shape, list) or len(shape) != 1 \
                or not all(isinstance(n, int) and n >= 0 for n in shape) \
                or not isinstance(offset, int) or offset < 0 \
                or offset + shape[0] * np.dtype(dtype).itemsize > data_size:
            raise ModelFileError(f"{where}: array {name!r} is described wrongly in the header")
        arrays[name] = np.frombuffer(raw, dtype=dtype, count=shape[0],
                                     offset=data_start + offset).astype(dtype[1:])
    return header, arrays


def _field(mapping, key: str, kind: type, where: str):
    """mapping[key], which must be a ``kind``; else ModelFileError."""
    value = mapping.get(key) if isinstance(mapping, dict) else None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ModelFileError(f"{where}: the model header lacks a valid {key!r} "
                             f"({kind.__name__} expected)")
    return value


def model_from_payload(header: dict, arrays: dict[str, np.ndarray], where: str) -> ChainCRF:
    """Rebuild a fitted model from :func:`model_payload`'s output; ModelFileError if inconsistent."""
    for name, dtype in (("weights", "float64"), ("feature_ptr", "int64"), ("feature_output", "int32")):
        if name not in arrays or arrays[name].dtype != dtype:
            raise ModelFileError(f"{where}: the model file lacks a valid {name!r} array")
    params = dict(_field(header, "params", dict, where))
    params.setdefault("grammar", None)          # written before training grammars existed
    params.setdefault("grammar_params", None)
    params.setdefault("reads", None)
    params.setdefault("read_transitions", False)   # written before transitions could read labels
    params.setdefault("mce_c", 1e5)             # written before F-score training existed
    params.setdefault("mce_iter", 50)
    if set(params) != set(_PARAMS):
        raise ModelFileError(f"{where}: the model parameters are {', '.join(sorted(params))}; "
                             f"expected {', '.join(_PARAMS)}")
    model = ChainCRF(**params)
    described = _field(header, "topology", dict, where)
    labels = _field(described, "labels", list, where)
    training = _field(header, "training", dict, where)
    try:
        model._check_params()
        topology = _build_topology(model.order, labels)
        extractor = FeatureExtractor.from_dict(header.get("extractor"))
        num_labels = topology.num_labels if model.order == 2 else 0
        state_label = topology.state_label if num_labels else np.arange(topology.num_states)
        features = FactoredFeatures(state_label, num_labels, arrays["feature_ptr"],
                                    arrays["feature_output"])
        constraint = None
        if "constraint" in arrays:
            constraint = pynini.Fst.read_from_string(arrays["constraint"].tobytes())
            constrain(topology, constraint)
    except (FstcrfError, pynini.FstIOError) as error:
        raise ModelFileError(f"{where}: the model file is inconsistent: {error}") from None
    if (topology.name, topology.num_states, topology.num_edges) != \
            (described.get("kind"), described.get("num_states"), described.get("num_edges")):
        raise ModelFileError(f"{where}: the model's {described.get('kind')} topology does not "
                             f"rebuild to the stored state space")
    if features.num_predicates != len(extractor.predicate_names_):
        raise ModelFileError(f"{where}: the feature dictionary has {features.num_predicates} "
                             f"predicates but the extractor {len(extractor.predicate_names_)}")
    lower_labels = header.get("lower_labels")
    layout = model._transition_layout(topology.num_edges, lower_labels if isinstance(lower_labels, list) else None)
    if len(arrays["weights"]) != features.num_features + layout.size:
        raise ModelFileError(f"{where}: {len(arrays['weights'])} weights for "
                             f"{features.num_features} features and {layout.size} transition weights")
    model.labels_ = topology.labels
    model.topology_ = topology
    model.constraint_ = constraint
    model.extractor_ = extractor
    model.features_ = features
    model.target_ = _field(header, "target", str, where)
    columns = _field(header, "columns", list, where)
    if not all(isinstance(name, str) for name in columns) or model.target_ not in columns:
        raise ModelFileError(f"{where}: the model's column names {columns!r} are invalid")
    model.columns_ = tuple(columns)
    model.lower_labels_ = header.get("lower_labels")
    if (model.reads is None) != (model.lower_labels_ is None) or not (
            model.lower_labels_ is None or all(isinstance(label, str) for label in model.lower_labels_)):
        raise ModelFileError(f"{where}: the model's lower labels {model.lower_labels_!r} do not fit "
                             f"reads={model.reads!r}")
    model.weights_ = arrays["weights"]
    model.n_iter_ = _field(training, "n_iter", int, where)
    model.best_iteration_ = _field(training, "best_iteration", int, where)
    model.interrupted_ = _field(training, "interrupted", bool, where)
    model.history_ = _field(training, "history", list, where)
    return model


def load_model(path: str | os.PathLike) -> ChainCRF:
    """Read a model written by :func:`save_model`.

    Raises ModelFileError if the file cannot be read, is not an fstcrf model,
    is truncated or corrupt, or has a format version this fstcrf does not read.
    """
    header, arrays = read_container(path)
    if header["format"] != MODEL_KIND:
        raise ModelFileError(f"{os.fspath(path)}: this is a joint model (from fstcrf compose); "
                             "load it with fstcrf.load_joint")
    return model_from_payload(header, arrays, os.fspath(path))
