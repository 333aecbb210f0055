"""Exact probabilities of labelled spans (entities, chunks) under a chain's distribution.

A span (first, last, type) is an entity of a label sequence when the labels
read as chunks (IOB1, IOB2 or BIOES, as ``fstcrf.corpus.schemes.read_chunks``
reads them) hold a chunk of that type from token ``first`` to token ``last``
(inclusive).  Whether it does depends on label pairs only: the chunk begins at
``first`` (the label there is not O and does not continue the previous one),
every later label continues it, and the label after ``last`` does not.  Each
condition is a mask over the topology's edges, so the probability is one
forward pass restricted to the span's edges between the chain's forward and
backward tables:

    P(span) = alpha[first-1] W_begin psi[first] (W_cont psi)... W_end beta[last+1] / Z

computed in the linear domain with per-token scales, for every span of a
sentence that starts at one token in one pass.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import NamedTuple
from collections.abc import Sequence

import numpy as np

from fstcrf.engine import kernel
from fstcrf.engine.inference import Potentials, check_type
from fstcrf.engine.joint import JointSpace
from fstcrf.engine.chunks import chunks_of_parts, continues, parse_chunk_label
from fstcrf.engine.topology import Topology
from fstcrf.errors import LabelError, ScoreError, ShapeError


class Entity(NamedTuple):
    """A labelled span: tokens ``first`` .. ``last`` (inclusive) of chunk type ``type``,
    and the probability that the output holds exactly this chunk."""

    first: int
    last: int
    type: str
    probability: float


def state_labels(topology: Topology) -> list[str]:
    """The label of each of the topology's S states."""
    return [topology.labels[label] for label in topology.state_label]


def chunk_parts(label: str) -> tuple[str, str]:
    """(prefix, type) of a chunk label; ("O", "") for O.  LabelError for any other label."""
    parts = parse_chunk_label(label)
    if parts is None:
        raise LabelError(
            f"label {label!r} is not O or B-, I-, E-, S- followed by a type, so it has no "
            "entities (span probabilities need chunk labels: IOB1, IOB2 or BIOES)"
        )
    return parts


@dataclass(frozen=True)
class ChunkEdges:
    """A topology's states and edges read as chunks.

    ``types``: the chunk types; ``state_type`` int [S]: each state's type index,
    -1 for O; ``continuing`` bool [E]: the edge continues its source's chunk."""

    types: tuple[str, ...]
    state_type: np.ndarray
    continuing: np.ndarray

    @classmethod
    def of(cls, topology: Topology, labels: Sequence[str]) -> ChunkEdges:
        """Chunk masks of ``topology`` whose state s carries label ``labels[s]``, made
        once per topology and labels (a batch of one sentence reads them as a batch
        of many does)."""
        key = tuple(labels)
        kept = _chunk_edges.get(topology)
        if kept is not None and kept[0] == key:
            return kept[1]
        chunks = cls._made(topology, key)
        _chunk_edges[topology] = (key, chunks)
        return chunks

    @classmethod
    def _made(cls, topology: Topology, labels: tuple[str, ...]) -> ChunkEdges:
        if len(labels) != topology.num_states:
            raise ShapeError(f"expected {topology.num_states} state labels, got {len(labels)}")
        parts = {label: chunk_parts(label) for label in dict.fromkeys(labels)}
        types = tuple(sorted({chunk_type for prefix, chunk_type in parts.values() if prefix != "O"}))
        index = {chunk_type: i for i, chunk_type in enumerate(types)}
        state_type = np.array(
            [-1 if parts[label][0] == "O" else index[parts[label][1]] for label in labels], dtype=np.int64
        )
        pair_continues = {(a, b): continues(parts[a], parts[b]) for a in parts for b in parts}
        continuing = np.array(
            [
                pair_continues[labels[src], labels[dst]]
                for src, dst in zip(topology.edge_src.tolist(), topology.edge_dst.tolist())
            ],
            dtype=bool,
        )
        return cls(types, state_type, continuing)


#: The ChunkEdges of each topology in use, with the labels they read.
_chunk_edges: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class _Tables:
    """Scaled forward and backward tables of a batch, in the linear domain (C,
    ``kernel.scaled_tables``), and what they were made of.

    psi float [N, S]: exp(emissions - the token's maximum); weights float [C, E]:
    exp(transitions - their maximum); start, final float [S] likewise; alpha, beta
    float [N, S], each row summing to 1; log_prefix float [N]: the log scale of the
    forward table up to and including each token; log_suffix float [N + 1]: that of
    the backward table from each token to its sentence's end (0 past it); log_z
    float [B] in these shifted units (each sentence's alone, so that it does not
    depend on the batch)."""

    def __init__(self, pot: Potentials):
        topology = pot.topology
        S = topology.num_states
        emissions = pot.emissions
        self.psi = np.exp(emissions - emissions.max(axis=1, keepdims=True))
        self.start = _shifted_exp(pot.start)
        self.final = _shifted_exp(pot.final)
        shift = pot.transitions.max() if pot.transitions.size else 0.0
        self.weights = np.exp(np.atleast_2d(pot.transitions) - shift)
        self.graph = kernel.topology_graph(topology)
        self.batch = kernel.Batch(pot.offsets, self.psi, pot.token_class)  # Potentials keeps it int32
        N = len(emissions)
        self.alpha = np.empty((N, S))
        self.beta = np.empty((N, S))
        self.log_prefix = np.empty(N)
        self.log_suffix = np.zeros(N + 1)
        if not kernel.scaled_tables(
            self.graph,
            self.weights,
            self.start,
            self.final,
            self.batch,
            self.alpha,
            self.beta,
            self.log_prefix,
            self.log_suffix[:N],
        ):
            raise ScoreError(
                "span probabilities: the scores span too wide a range for the linear domain "
                "(a token's mass underflowed); rescale the scores"
            )
        last = (pot.offsets[1:] - 1).tolist()
        self.log_z = self.log_prefix[last] + np.log([float(self.alpha[n] @ self.final) for n in last])


def _shifted_exp(scores: np.ndarray) -> np.ndarray:
    """exp(scores - max finite score), 0 where the score is -inf."""
    finite = scores[np.isfinite(scores)]
    return np.exp(scores - (finite.max() if len(finite) else 0.0))


def entity_probabilities(
    pot: Potentials, labels: Sequence[str], spans: Sequence[Sequence[tuple[int, int, str]]]
) -> list[np.ndarray]:
    """float [len(spans[b])] for each sentence b: the probability that the output's
    chunks hold the span (first, last, type) (last inclusive).

    ``labels``: the label of each state of ``pot.topology`` (see :func:`state_labels`;
    a joint model passes one component's labels of the product states)."""
    check_type(pot, Potentials, "pot", "a Potentials")
    if len(spans) != pot.num_sequences:
        raise ShapeError(f"expected spans for {pot.num_sequences} sentences, got {len(spans)}")
    chunks = ChunkEdges.of(pot.topology, labels)
    index = {chunk_type: i for i, chunk_type in enumerate(chunks.types)}
    columns: list[tuple[int, int, int, int]] = []  # (sentence, first, last, type) of the spans of known types
    results = []
    for b, sentence_spans in enumerate(spans):
        T = int(pot.lengths[b])
        results.append(np.zeros(len(sentence_spans)))
        for first, last, chunk_type in sentence_spans:
            if not 0 <= first <= last < T:
                raise ShapeError(f"sentence {b}: span ({first}, {last}) is outside its {T} tokens")
            if chunk_type in index:  # a type no state carries has probability 0
                columns.append((b, first, last, index[chunk_type]))
    if not columns:
        return results
    sentence, firsts, lasts, kinds = (np.array(column, dtype=np.int64) for column in zip(*columns))
    values = iter(span_probability_array(pot, chunks, (sentence, firsts, lasts, kinds)).tolist())
    for b, sentence_spans in enumerate(spans):
        for slot, (_, _, chunk_type) in enumerate(sentence_spans):
            if chunk_type in index:
                results[b][slot] = next(values)
    return results


def span_probability_array(
    pot: Potentials, chunks: ChunkEdges, spans: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
) -> np.ndarray:
    """float [M]: the probability of each span of ``spans`` = (sentence, first, last,
    kind) (int [M] each): sentence[m]'s tokens first[m] .. last[m] (inclusive, within
    the sentence) as a chunk of type index kind[m] of ``chunks``.  The spans of a
    type that start at one token share one pass (``fc_span_probabilities``), whose
    values do not depend on the other spans or sentences of the batch."""
    sentence, first, last, kind = spans
    result = np.zeros(len(sentence))
    if not len(sentence):
        return result
    tables = _Tables(pot)
    row = pot.offsets[sentence] + first  # each span's first token in the batch
    key = kind.astype(np.int64) * (pot.num_tokens + 1) + row
    heads, at = np.unique(key, return_inverse=True)  # a pass per type and first token
    reach = np.zeros(len(heads), dtype=np.int64)
    np.maximum.at(reach, at, last - first)
    head_kind, head_row = np.divmod(heads, pot.num_tokens + 1)
    head_sentence = np.searchsorted(pot.offsets, head_row, side="right") - 1
    head_ptr = np.zeros(len(heads) + 1, dtype=np.int64)
    np.cumsum(reach + 1, out=head_ptr[1:])
    flat = np.empty(int(head_ptr[-1]))
    kernel.span_probabilities(
        tables.graph,
        tables.weights,
        tables.start,
        tables.final,
        tables.batch,
        (tables.alpha, tables.beta, tables.log_prefix, tables.log_suffix, tables.log_z),
        chunks.state_type.astype(np.int32),
        chunks.continuing.view(np.uint8),
        (
            head_sentence.astype(np.int32),
            head_row - pot.offsets[head_sentence],
            reach,
            head_kind.astype(np.int32),
        ),
        head_ptr,
        flat,
    )
    return flat[head_ptr[at] + last - first]


def decoded_entities(pot: Potentials, labels: Sequence[str], paths: np.ndarray) -> list[list[Entity]]:
    """The chunks of each sentence's state path ``paths`` int [N] (e.g. Viterbi's),
    each with its exact probability (see :func:`entity_probabilities`)."""
    paths = np.asarray(paths)
    if paths.shape != (pot.num_tokens,):
        raise ShapeError(f"paths must have shape ({pot.num_tokens},), got {paths.shape}")
    spans = [path_chunks([labels[s] for s in paths[pot.sentence(b)]]) for b in range(pot.num_sequences)]
    probabilities = entity_probabilities(pot, labels, spans)
    return [
        [Entity(first, last, chunk_type, float(p)) for (first, last, chunk_type), p in zip(sentence, values)]
        for sentence, values in zip(spans, probabilities)
    ]


def path_chunks(sequence: Sequence[str]) -> list[tuple[int, int, str]]:
    """The chunks (first, last, type) of one label sequence, by the pairwise rule."""
    return chunks_of_parts([chunk_parts(label) for label in sequence])


def joint_state_labels(space: JointSpace, component: int) -> list[str]:
    """Component ``component``'s label of each of the P states of a joint space, in
    the numbering of its dense product (``space.product``, ``JointPotentials.to_product``)."""
    check_type(space, JointSpace, "space", "a JointSpace")
    if not 0 <= component < len(space.components):
        raise ShapeError(f"component must be in [0, {len(space.components)}), got {component}")
    topology = space.components[component]
    states = space.component_states(np.arange(space.num_states))[:, component]
    return [topology.labels[label] for label in topology.state_label[states]]
