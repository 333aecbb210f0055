"""A batch's entity probabilities and MBR candidate chunks, each in one call
(csrc/fstcrf_chunks.h), and whether a batch's state paths have finite scores:
:class:`ChunkReading` and one function per call.  The arrays'
sizes are checked here against the graph, scores and batch before C reads them."""

from __future__ import annotations

import itertools

import numpy as np

from fstcrf._kernel import ffi, lib
from fstcrf.engine.kernel.buffers import KernelBuffers, check_status, input_pointer, output_pointer
from fstcrf.engine.kernel.chain import Batch, Graph, Scores
from fstcrf.errors import ShapeError

#: The bits of a state's prefix in :class:`ChunkReading`, by what a chunk does there:
#: runs into the token (I-, E-), runs on from it (B-, I-), begins (B-, S-), ends (E-, S-).
PREFIX_BITS = (lib.FC_CHUNK_RUNS_IN, lib.FC_CHUNK_RUNS_ON, lib.FC_CHUNK_BEGINS, lib.FC_CHUNK_ENDS)


class ChunkReading(KernelBuffers):
    """fc_chunk_reading: K chunk types, each state's type int32 [S] (-1: O), its prefix
    bits int32 [S] (of PREFIX_BITS) and the edges that continue a chunk uint8 [E]."""

    def __init__(self, num_types: int, state_type: np.ndarray, state_prefix: np.ndarray, continuing: np.ndarray):
        super().__init__()
        if len(state_type) != len(state_prefix):
            raise ShapeError("a chunk reading needs a type and a prefix for every state")
        self.num_states, self.num_edges = len(state_type), len(continuing)
        reading = self.struct = ffi.new("fc_chunk_reading *")
        reading.num_types = num_types
        reading.state_type = self.pin(state_type)
        reading.state_prefix = self.pin(state_prefix)
        reading.continuing = self.pin(continuing)


#: A batch as the calls take it: offsets int64 [B+1], emissions float [N, S], token classes int32 [N] or None.
BatchArrays = tuple[np.ndarray, np.ndarray, np.ndarray | None]


def _batch(graph: Graph, arrays: BatchArrays) -> Batch:
    """The kernel batch of ``arrays``, once their sizes agree with each other and the
    graph (ShapeError if not; the kernel checks the offsets rise)."""
    offsets, emissions, token_class = arrays
    S = graph.struct.num_states
    N = len(emissions)
    if (
        emissions.ndim != 2
        or emissions.shape[1] != S
        or offsets.ndim != 1
        or len(offsets) < 1
        or offsets[0] != 0
        or offsets[-1] != N
        or (token_class is not None and token_class.shape != (N,))
    ):
        raise ShapeError(f"a batch of emissions [N, {S}] cut at offsets from 0 to N, a token class per token")
    return Batch(offsets, emissions, token_class)


def _work(graph: Graph, scores: Scores, batch: Batch, reading: ChunkReading) -> np.ndarray:
    """The work array of a call, once the reading's sizes agree with the graph (ShapeError if not)."""
    S, E = graph.struct.num_states, graph.struct.num_edges
    if (reading.num_states, reading.num_edges) != (S, E):
        raise ShapeError(f"the chunk reading must be of {S} states and {E} edges")
    return np.empty(lib.fc_chunk_work_doubles(graph.struct, scores.struct, batch.struct, reading.struct.num_types))


def chunk_probabilities(
    graph: Graph,
    scores: Scores,
    arrays: BatchArrays,
    reading: ChunkReading,
    spans: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """fc_chunk_probabilities: (float [M] the probability of each span (sentence int32,
    first int64, last int64, type int32, [M] each), bool [B] the sentences held
    exactly in the linear domain: the others' spans get 0) of the batch ``arrays``
    (offsets, emissions, token classes) under ``scores``."""
    batch = _batch(graph, arrays)
    work = _work(graph, scores, batch, reading)
    sentence, first, last, kind = spans
    if not len(sentence) == len(first) == len(last) == len(kind):
        raise ShapeError("the spans' sentences, first and last tokens and types must be as many")
    probability = np.empty(len(sentence))
    exact = np.empty(batch.struct.num_sequences, dtype=np.int32)
    status = lib.fc_chunk_probabilities(
        graph.struct,
        scores.struct,
        batch.struct,
        reading.struct,
        len(sentence),
        input_pointer(sentence),
        input_pointer(first),
        input_pointer(last),
        input_pointer(kind),
        output_pointer(probability),
        output_pointer(exact),
        output_pointer(work),
    )
    check_status(status, "chunk_probabilities")
    return probability, exact.astype(bool)


def chunk_candidates(
    graph: Graph, scores: Scores, arrays: BatchArrays, reading: ChunkReading, floor: float
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray, np.ndarray, np.ndarray]:
    """fc_chunk_candidates: ((sentence int32, first int64, last int64, type int32) [M],
    probability float [M], exact bool [B], expected chunks float [B], NaN where not
    exact) of the candidates above ``floor`` of the exact sentences of the batch
    ``arrays`` (offsets, emissions, token classes) under ``scores``."""
    batch = _batch(graph, arrays)
    work = _work(graph, scores, batch, reading)
    B = batch.struct.num_sequences
    exact, expected, count = np.empty(B, dtype=np.int32), np.empty(B), np.zeros(1, dtype=np.int64)
    capacity = 4 * len(arrays[1]) + 16
    while True:
        sentence, kind = np.empty(capacity, dtype=np.int32), np.empty(capacity, dtype=np.int32)
        first, last = np.empty(capacity, dtype=np.int64), np.empty(capacity, dtype=np.int64)
        probability = np.empty(capacity)
        status = lib.fc_chunk_candidates(
            graph.struct,
            scores.struct,
            batch.struct,
            reading.struct,
            float(floor),
            capacity,
            output_pointer(sentence),
            output_pointer(first),
            output_pointer(last),
            output_pointer(kind),
            output_pointer(probability),
            output_pointer(count),
            output_pointer(exact),
            output_pointer(expected),
            output_pointer(work),
        )
        check_status(status, "chunk_candidates")
        found = int(count[0])
        if found <= capacity:
            spans = (sentence[:found], first[:found], last[:found], kind[:found])
            return spans, probability[:found], exact.astype(bool), expected
        capacity = found


def finite_paths(graph: Graph, scores: Scores, arrays: BatchArrays, path: np.ndarray) -> np.ndarray:
    """fc_finite_paths: bool [B], whether each sentence's state path int32 [N] of the
    batch ``arrays`` (offsets, emissions, token classes) has a finite score under
    ``scores`` (a state out of range has none)."""
    batch = _batch(graph, arrays)
    if path.shape != (len(arrays[1]),):
        raise ShapeError(f"expected a state path of {len(arrays[1])} tokens")
    finite = np.empty(batch.struct.num_sequences, dtype=np.int32)
    status = lib.fc_finite_paths(
        graph.struct, scores.struct, batch.struct, input_pointer(path.astype(np.int32)), output_pointer(finite)
    )
    check_status(status, "finite_paths")
    return finite.astype(bool)


class PathChunks(KernelBuffers):
    """A thread's room for fc_path_chunks on batches of up to ``max_tokens`` tokens of a
    graph's S states whose emissions a tagging call leaves in ``emissions`` (flat
    float [max_tokens * S], a :class:`~fstcrf.engine.kernel.tagging.TagBuffers`' own),
    scored under scores of ``num_classes`` classes, with a chunk ``reading``: the
    batch struct over those emissions, the work array and the outputs, made once, so
    that a call on one sentence allocates nothing."""

    def __init__(self, graph: Graph, reading: ChunkReading, emissions: np.ndarray, num_classes: int, max_tokens: int):
        super().__init__()
        S, E = graph.struct.num_states, graph.struct.num_edges
        if (reading.num_states, reading.num_edges) != (S, E) or len(emissions) < max_tokens * S:
            raise ShapeError(f"a chunk reading of {S} states and {E} edges, emissions for {max_tokens} tokens")
        self.graph, self.reading, self.emissions, self.max_tokens = graph, reading, emissions, max_tokens
        self.offsets = np.zeros(max_tokens + 1, dtype=np.int64)
        batch = self.struct = ffi.new("fc_batch *")
        batch.offsets = self.pin(self.offsets)
        batch.emit = self.pin(emissions)
        K = reading.struct.num_types
        # fc_chunk_work_doubles of the largest batch: max_tokens tokens in as many sentences
        self.work = np.empty(3 * max_tokens * S + 3 * max_tokens + 1 + num_classes * E + 4 * S + 6 * max_tokens * K + K)
        self.sentence = np.empty(max_tokens, dtype=np.int32)
        self.first = np.empty(max_tokens, dtype=np.int64)
        self.last = np.empty(max_tokens, dtype=np.int64)
        self.kind = np.empty(max_tokens, dtype=np.int32)
        self.probability = np.empty(max_tokens)
        self.count = np.zeros(1, dtype=np.int64)
        self.exact = np.empty(max_tokens, dtype=np.int32)
        self._outputs = tuple(
            self.pin(array)
            for array in (self.sentence, self.first, self.last, self.kind, self.probability, self.count, self.exact)
        )
        self._work = self.pin(self.work)

    def found(self, scores: Scores, path, lengths: list[int]) -> int:
        """fc_path_chunks of the batch of sentences of ``lengths`` (their tokens at most
        max_tokens) whose state path ``path`` (a cffi int32 view of at least N) and
        emissions the tagging call left: the number of chunks, whose sentence, first
        and last tokens, type and probability are the first of ``sentence``, ``first``,
        ``last``, ``kind`` and ``probability``, and ``exact`` [B] as
        :func:`chunk_probabilities` gives them."""
        if sum(lengths) > self.max_tokens:
            raise ShapeError(f"a batch of at most {self.max_tokens} tokens")
        self.offsets[1 : len(lengths) + 1] = list(itertools.accumulate(lengths))  # np.cumsum converts a list slower
        self.struct.num_sequences = len(lengths)
        status = lib.fc_path_chunks(
            self.graph.struct, scores.struct, self.struct, self.reading.struct, path, *self._outputs, self._work
        )
        check_status(status, "path_chunks")
        return int(self.count[0])
