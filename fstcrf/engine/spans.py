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

computed in the linear domain with per-token scales, the tables and every span of
a batch in one call (in C: ``fc_chunk_probabilities``, csrc/fstcrf_chunks.c).
A sentence whose scores span more than the linear domain holds (a row of its
scaled tables with less than 1e-100 of mass: a small temperature) is computed in
the log domain instead, from the kernel's log-domain tables, so that the
probabilities are exact to rounding for any finite scores.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import NamedTuple
from collections.abc import Sequence

import numpy as np

from fstcrf.engine import kernel
from fstcrf.engine.inference import ChunkStructs, Potentials, check_type
from fstcrf.engine.joint import JointSpace
from fstcrf.engine.chunks import chunks_of_parts, continues, parse_chunk_label
from fstcrf.engine.topology import Topology
from fstcrf.errors import LabelError, ShapeError


class Entity(NamedTuple):
    """A labelled span: tokens ``first`` .. ``last`` (inclusive) of chunk type ``type``,
    and the probability that the output holds exactly this chunk."""

    first: int
    last: int
    type: str
    probability: float


def state_labels(topology: Topology) -> list[str]:
    """The label of each of the topology's S states (read once per topology)."""
    kept = _state_labels.get(topology)
    if kept is None:
        kept = _state_labels[topology] = tuple(topology.labels[label] for label in topology.state_label.tolist())
    return list(kept)


#: The label of each state of each topology in use.
_state_labels: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def chunk_parts(label: str) -> tuple[str, str]:
    """(prefix, type) of a chunk label; ("O", "") for O.  LabelError for any other label."""
    parts = parse_chunk_label(label)
    if parts is None:
        raise LabelError(
            f"label {label!r} is not O or B-, I-, E-, S- followed by a type, so it has no "
            "entities (span probabilities need chunk labels: IOB1, IOB2 or BIOES)"
        )
    return parts


#: The label prefixes whose state marginals :class:`ChunkEdges` sums by type, in the order of
#: its ``prefix_mass`` columns: a chunk runs into the token (I-, E-), runs on from it (B-,
#: I-), begins there (B-, S-), ends there (E-, S-), and any label of the type.
MASS_PREFIXES = ("IE", "BI", "BS", "ES", "BIES")


@dataclass(frozen=True)
class ChunkEdges:
    """A topology's states and edges read as chunks, and what MBR decoding reads of them.

    ``types``: the K chunk types; ``state_type`` int [S]: each state's type index,
    -1 for O; ``continuing`` bool [E]: the edge continues its source's chunk;
    ``prefix_mass`` float [S, 5K]: for each prefix set of MASS_PREFIXES in turn,
    1 where the state's label has such a prefix and the column's type;
    ``begins_chunk`` bool [E]: the edge enters a chunk's first token;
    ``adjacent`` bool [K]: a chunk of the type may begin right after one of the same
    type ends (an edge from a state of the type into one that does not continue it);
    ``reading``, the kernel's view of them (:class:`~fstcrf.engine.kernel.ChunkReading`);
    and ``state_parts``, the (prefix, type) of each state's label (:func:`chunk_parts`)."""

    types: tuple[str, ...]
    state_type: np.ndarray
    continuing: np.ndarray
    prefix_mass: np.ndarray
    begins_chunk: np.ndarray
    adjacent: np.ndarray
    reading: kernel.ChunkReading
    state_parts: tuple[tuple[str, str], ...]

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
        K = len(types)
        prefix_mass = np.zeros((len(labels), len(MASS_PREFIXES) * K))
        prefix_bits = np.zeros(len(labels), dtype=np.int32)  # the kernel's: a bit per prefix set but the last
        for s, label in enumerate(labels):
            prefix, x = parts[label][0], int(state_type[s])
            for column, wanted in enumerate(MASS_PREFIXES):
                if x >= 0 and prefix in wanted:
                    prefix_mass[s, column * K + x] = 1.0
                    prefix_bits[s] |= kernel.PREFIX_BITS[column] if column < len(kernel.PREFIX_BITS) else 0
        src, dst = state_type[topology.edge_src], state_type[topology.edge_dst]
        restart = ~continuing & (src == dst) & (src >= 0)
        for array in (state_type, continuing, prefix_mass):
            array.flags.writeable = False
        return cls(
            types,
            state_type,
            continuing,
            prefix_mass,
            ~continuing & (dst >= 0),
            np.bincount(src[restart], minlength=K) > 0,
            kernel.ChunkReading(K, state_type.astype(np.int32), prefix_bits, continuing.view(np.uint8)),
            tuple(parts[label] for label in labels),
        )


#: The ChunkEdges of each topology in use, with the labels they read.
_chunk_edges: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

#: The span passes of the log domain gather at most this many (row, edge) values at once.
LOG_CELLS = 1 << 22


def _log(values: np.ndarray) -> np.ndarray:
    """log of non-negative values, -inf for 0."""
    with np.errstate(divide="ignore"):
        return np.log(values)


def kernel_structs(pot: Potentials) -> tuple[kernel.Graph, kernel.Scores, kernel.BatchArrays]:
    """The kernel's graph and scores of ``pot``, and its batch's arrays (offsets,
    emissions, token classes), as the calls of :mod:`fstcrf.engine.kernel.chunks` take them."""
    return (
        kernel.topology_graph(pot.topology),
        kernel.kept_scores(pot.transitions, pot.start, pot.final),
        (pot.offsets, pot.emissions, pot.token_class),
    )


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
    for b, sentence_spans in enumerate(spans):
        T = int(pot.lengths[b])
        for first, last, _ in sentence_spans:
            if not 0 <= first <= last < T:
                raise ShapeError(f"sentence {b}: span ({first}, {last}) is outside its {T} tokens")
    return _probabilities_of(pot, ChunkEdges.of(pot.topology, labels), spans)


def _probabilities_of(
    pot: Potentials, chunks: ChunkEdges, spans: Sequence[Sequence[tuple[int, int, str]]]
) -> list[np.ndarray]:
    """:func:`entity_probabilities` of spans within their sentences."""
    index = {chunk_type: i for i, chunk_type in enumerate(chunks.types)}
    columns = [  # (sentence, first, last, type) of the spans of known types: another type has probability 0
        (b, first, last, index[chunk_type])
        for b, sentence_spans in enumerate(spans)
        for first, last, chunk_type in sentence_spans
        if chunk_type in index
    ]
    results = [np.zeros(len(sentence_spans)) for sentence_spans in spans]
    if not columns:
        return results
    sentence, firsts, lasts, kinds = zip(*columns)
    in_kernel = (
        np.array(sentence, dtype=np.int32),
        np.array(firsts, dtype=np.int64),
        np.array(lasts, dtype=np.int64),
        np.array(kinds, dtype=np.int32),
    )
    values = iter(span_probability_array(pot, chunks, in_kernel).tolist())
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
    type that start at one token share one pass, whose values do not depend on the
    other spans or sentences of the batch: in the linear domain, or in the log domain
    for the sentences whose scores span too wide a range for it (a small
    temperature), so that they are exact to rounding for any finite scores."""
    sentence, first, last, kind = spans
    if not len(sentence):
        return np.zeros(0)
    in_kernel = (
        sentence.astype(np.int32, copy=False),
        first.astype(np.int64, copy=False),
        last.astype(np.int64, copy=False),
        kind.astype(np.int32, copy=False),
    )
    probability, exact = kernel.chunk_probabilities(*kernel_structs(pot), chunks.reading, in_kernel)
    redo = ~exact[sentence]
    if np.count_nonzero(redo):  # (ndarray.any costs more than the call on a sentence)
        log_tables = _LogTables(pot, np.unique(sentence[redo]))
        probability[redo] = _log_probabilities(log_tables, chunks, tuple(part[redo] for part in spans))
    return probability


class _LogTables:
    """The scaled forward and backward tables of the sentences ``which`` (int [R]) of
    a batch (as csrc/fstcrf_chunks.c makes them in the linear domain), computed in
    the log domain: exact to rounding for any finite scores, at
    any temperature.  alpha, beta: the logs of the rows normalised to sum 1 (a mass
    is a log mass here throughout); log_prefix, log_suffix and log_z in the
    potentials' own units; the other sentences' rows are not set."""

    def __init__(self, pot: Potentials, which: np.ndarray):
        topology = pot.topology
        N, S = pot.num_tokens, topology.num_states
        self.topology = topology
        self.emissions = pot.emissions
        self.transitions = np.atleast_2d(pot.transitions)
        self.token_class = np.zeros(N, dtype=np.int64) if pot.token_class is None else pot.token_class
        self.start, self.final = pot.start, pot.final
        self.offsets, self.lengths = pot.offsets, pot.lengths
        self.alpha, self.beta = np.full((N, S), np.nan), np.full((N, S), np.nan)
        self.log_prefix, self.log_suffix = np.full(N, np.nan), np.zeros(N + 1)
        self.log_z = np.full(pot.num_sequences, np.nan)
        chosen = pot.select(which)
        chunk = ChunkStructs(chosen, 0, chosen.num_sequences)
        log_alpha, log_beta = np.empty((chosen.num_tokens, S)), np.empty((chosen.num_tokens, S))
        kernel.log_tables(chunk.graph, chunk.scores, chunk.batch, log_alpha, log_beta, chunk.workspace)
        rows = np.repeat(self.offsets[which] - chosen.offsets[:-1], chosen.lengths) + np.arange(chosen.num_tokens)
        self._keep(rows, log_alpha, self.alpha, self.log_prefix)
        self._keep(rows, log_beta, self.beta, self.log_suffix)
        self.log_z[which] = _logsumexp(log_alpha[chosen.offsets[1:] - 1] + self.final)

    @staticmethod
    def _keep(rows: np.ndarray, log_rows: np.ndarray, table: np.ndarray, log_scale: np.ndarray) -> None:
        """Store log_rows [R, S] as rows of ``table`` normalised to sum 1 (logs) and
        their log sums in ``log_scale``."""
        total = _logsumexp(log_rows)
        log_scale[rows] = total
        table[rows] = log_rows - total[:, None]

    def first(self, of_type: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """mass [R, S]: the start scores into the states ``of_type`` bool [S] at the
        sentences' first tokens ``rows``, their emissions included."""
        return np.where(of_type, self.start, -np.inf) + self.emissions[rows]

    @staticmethod
    def normalised(mass: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(mass [R, S] shifted so that each row's exponentials sum to 1, the log of
        that sum [R]); a row without mass has log sum -inf (and is dropped)."""
        total = _logsumexp(mass)
        with np.errstate(invalid="ignore"):
            return mass - total[:, None], total

    def end(self, mass: np.ndarray) -> np.ndarray:
        """float [R]: log of each mass [R, S] closed by the final scores."""
        return _logsumexp(mass + self.final)

    def edges(self, mask: np.ndarray) -> _LogEdges:
        """The moves along the edges ``mask`` bool [E]."""
        return _LogEdges(self, mask)


def _logsumexp(values: np.ndarray, axis: int = -1) -> np.ndarray:
    """log sum exp of ``values`` along ``axis``, -inf where every value is -inf."""
    peak = np.max(values, axis=axis, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    return np.squeeze(peak, axis) + _log(np.sum(np.exp(values - peak), axis=axis))


class _LogEdges:
    """Moves of a chunk's mass along the edges ``mask`` bool [E] (its beginning,
    inside or end), in the log domain (``tables`` a :class:`_LogTables`)."""

    def __init__(self, tables: _LogTables, mask: np.ndarray):
        topology = tables.topology
        self.edge = np.flatnonzero(mask)  # by destination, as edge ids are
        self.source, self.target = topology.edge_src[self.edge], topology.edge_dst[self.edge]
        self.tables = tables
        self.scores = tables.transitions[:, self.edge]  # [C, E'] by token class
        self.num_states = topology.num_states
        self.groups = np.flatnonzero(np.r_[True, self.target[1:] != self.target[:-1]]) if len(self.edge) else None

    def _values(self, log_mass: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """float [R, E']: each row's log mass at the edges' sources plus the edges' scores into token rows."""
        scores = self.scores[0] if len(self.scores) == 1 else self.scores[self.tables.token_class[rows]]
        return log_mass[:, self.source] + scores

    def gather(self, log_mass: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """float [R, S]: log of each log_mass[r] [S] moved along the edges into token
        rows[r] (the emissions there not included), -inf where no edge leads."""
        result = np.full((len(rows), self.num_states), -np.inf)
        if self.groups is None:
            return result
        block = max(1, LOG_CELLS // len(self.edge))
        for first in range(0, len(rows), block):
            part = slice(first, first + block)
            values = self._values(log_mass[part], rows[part])
            peak = np.maximum.reduceat(values, self.groups, axis=1)
            peak = np.where(np.isfinite(peak), peak, 0.0)
            widths = np.diff(np.r_[self.groups, len(self.edge)])
            sums = np.add.reduceat(np.exp(values - np.repeat(peak, widths, axis=1)), self.groups, axis=1)
            result[part, self.target[self.groups]] = peak + _log(sums)
        return result

    def step(self, mass: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """log mass [R, S]: each mass[r] [S] moved along the edges into token rows[r],
        its emissions included."""
        return self.gather(mass, rows) + self.tables.emissions[rows]

    def close(self, mass: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """float [R]: for each r, log of the sum over the edges into token rows[r] of
        the mass at their sources, their scores, the emissions and the backward table."""
        return _logsumexp(self.gather(mass, rows) + self.tables.emissions[rows] + self.tables.beta[rows])


def _log_probabilities(tables: _LogTables, chunks: ChunkEdges, spans: tuple[np.ndarray, ...]) -> np.ndarray:
    """span_probability_array of spans whose sentences ``tables`` hold (in the log domain)."""
    sentence, first, last, kind = spans
    result = np.zeros(len(sentence))
    topology = tables.topology
    ending = tables.edges(~chunks.continuing)
    row = tables.offsets[sentence] + first  # each span's first token in the batch
    for x in sorted(set(kind.tolist())):
        of_kind = np.flatnonzero(kind == x)
        heads, seen_first, at = np.unique(row[of_kind], return_index=True, return_inverse=True)  # a pass per head
        reach = np.zeros(len(heads), dtype=np.int64)
        np.maximum.at(reach, at, last[of_kind] - first[of_kind])
        of_type = chunks.state_type == x
        entering = of_type[topology.edge_dst]
        begin = tables.edges(entering & ~chunks.continuing)
        inside = tables.edges(entering & chunks.continuing)
        heads_sentence = sentence[of_kind][seen_first]
        starts = (heads_sentence, heads - tables.offsets[heads_sentence], reach)
        flat, cuts = _spans_from(tables, of_type, (begin, inside, ending), starts)
        result[of_kind] = flat[cuts[at] + last[of_kind] - first[of_kind]]
    return result


def _spans_from(
    tables: _LogTables,
    of_type: np.ndarray,
    moves: tuple,
    starts: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """(flat, cuts): for each start r of ``starts`` = (b, first, reach) (int [R]),
    flat[cuts[r] + j] = P(a chunk of the type whose states are ``of_type`` [S] spans
    tokens first .. first + j of sentence b) for j = 0 .. reach, ``moves`` being the
    tables' edges (begin, inside, end) of such a chunk.  All the starts advance
    together, a token at a time; each keeps its log mass normalised and its log scale."""
    begin, inside, ending = moves
    b, first, reach = starts
    last = first + reach
    offset, length = tables.offsets[b], tables.lengths[b]
    rows = offset + first
    mass = np.empty((len(b), len(of_type)))
    log_scale = np.zeros(len(b))
    heads, inner = first == 0, np.flatnonzero(first > 0)
    mass[heads] = tables.first(of_type, rows[heads])
    mass[inner] = begin.step(tables.alpha[rows[inner] - 1], rows[inner])
    log_scale[inner] = tables.log_prefix[rows[inner] - 1]
    cuts = np.concatenate([[0], np.cumsum(last - first + 1)])  # start r's values: flat[cuts[r] : cuts[r + 1]]
    flat = np.zeros(int(cuts[-1]))
    active = np.arange(len(b))  # the starts still extending, and their state
    for step in range(int((last - first).max()) + 1):
        if step > 0:
            keep = first[active] + step <= last[active]
            active, mass, log_scale = active[keep], mass[keep], log_scale[keep]
            if not len(active):
                break
            mass = inside.step(mass, offset[active] + first[active] + step)
        mass, log_total = tables.normalised(mass)
        alive = log_total > -np.inf  # no mass left: no longer chunk of the type from this start
        active, mass, log_scale = active[alive], mass[alive], log_scale[alive] + log_total[alive]
        position = first[active] + step
        rows = offset[active] + position
        log_closing, log_after = np.empty(len(active)), np.zeros(len(active))
        at_end = position == length[active] - 1
        log_closing[at_end] = tables.end(mass[at_end])
        within = np.flatnonzero(~at_end)
        after_rows = rows[within] + 1
        log_closing[within] = ending.close(mass[within], after_rows)
        log_after[within] = tables.log_suffix[after_rows]
        values = np.exp(log_scale + log_closing + log_after - tables.log_z[b[active]])
        flat[cuts[active] + step] = np.minimum(values, 1.0)
    return flat, cuts


def decoded_entities(pot: Potentials, labels: Sequence[str], paths: np.ndarray) -> list[list[Entity]]:
    """The chunks of each sentence's state path ``paths`` int [N] (e.g. Viterbi's),
    each with its exact probability (see :func:`entity_probabilities`)."""
    check_type(pot, Potentials, "pot", "a Potentials")
    paths = np.asarray(paths)
    if paths.shape != (pot.num_tokens,):
        raise ShapeError(f"paths must have shape ({pot.num_tokens},), got {paths.shape}")
    chunks = ChunkEdges.of(pot.topology, labels)
    parts, states, bounds = chunks.state_parts, paths.tolist(), pot.offsets.tolist()
    spans = [chunks_of_parts([parts[s] for s in states[a:b]]) for a, b in zip(bounds[:-1], bounds[1:])]
    probabilities = _probabilities_of(pot, chunks, spans)
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
