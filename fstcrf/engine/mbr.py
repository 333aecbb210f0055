"""F1-optimal (minimum Bayes risk) decoding of chunks: the set of chunks that maximises
the model's expected chunk F1 over a batch, written as a label sequence.

Over a batch (a corpus, or a batch of ``fstcrf tag``) with chunk sets G_b drawn
from the model and a prediction S_b per sentence, the expected F1 is
approximated by the ratio of expectations (Jansche 2007; Ye et al. 2012 show it
is the limit for large batches)::

    F(S) = 2 E[sum |S_b & G_b|] / (sum |S_b| + E[sum |G_b|]) = 2 sum_{s in S} p(s) / (|S| + E[#chunks])

where p(s) is the exact probability of span s (:mod:`fstcrf.engine.spans`) and
E[#chunks] is exact (a sum of edge marginals).  F is maximised exactly by
Dinkelbach's iteration: for lambda = F(S_k), the set maximising
2 sum p - lambda (|S| + E[#chunks]), that is sum (p - lambda / 2) over
non-overlapping spans, is found per sentence by weighted interval scheduling,
and lambda rises until no set does better.  The threshold t = lambda / 2 at the
optimum is half the expected F1 (Lipton et al. 2014's F*/2 rule, here with
overlap constraints).  A fixed threshold skips the iteration.

Only spans with probability at least a floor are candidates: those whose
beginning, end and every continuation the token marginals do not bound below
it (see :class:`ChunkMarginals`; in C, :func:`chunk_candidates`).  No span at or
below the threshold is ever chosen, so the candidates lose nothing while every
threshold tried is >= floor: a fixed threshold is its own floor, and the search's
thresholds never fall below half the expected F1 of its starting set, the spans
more probable than 1/2.

The chosen chunks are written in the labels' own scheme (:func:`writing_scheme`:
IOB2, IOB1 or BIOES, O elsewhere), and :func:`labelled_paths` finds the state
path of those labels in the lattice, which checks that its topology and any
grammar restricting it hold them.  Interval scheduling lets a chunk follow one
of the same type directly only when the lattice has an edge that starts a new
chunk of that type after one (IOB1 without ``B-PER`` cannot); a set the lattice
still cannot hold (a grammar that forbids it) raises InfeasibleError.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from typing import cast

import numpy as np

from fstcrf.engine.inference import Potentials, check_type, forward_backward, viterbi
from fstcrf.engine import kernel
from fstcrf.engine.spans import ChunkEdges, Entity, chunk_parts, kernel_structs, span_probability_array
from fstcrf.errors import InfeasibleError, ScoreError, ShapeError

#: Spans less probable than this are never candidates, so never chosen (the threshold
#: search stops at it; a fixed threshold sets the floor itself).
SPAN_FLOOR = 0.01

#: The candidates' floor the threshold search starts with: enough unless the model
#: expects an F1 below twice this (see :func:`mbr_decode`).
FIRST_FLOOR = 0.2

#: A batch of at most this many tokens (a sentence or a few) takes its candidates above
#: the search's lowest floor in its first kernel call: a second call would cost it more
#: than the candidates between that floor and FIRST_FLOOR.
ONE_CALL_TOKENS = 512

#: Dinkelbach's iteration converges in a few steps; this bounds it whatever happens.
MAX_ROUNDS = 100


@dataclass(frozen=True)
class MbrDecoding:
    """The result of :func:`mbr_decode`: ``chunks`` [B], the chosen spans of each sentence
    with their probabilities, in order; ``threshold``, the threshold t they maximise
    sum (p - t) at; ``expected_f1``, the model's expected F1 of them (ratio of
    expectations); ``expected_chunks``, E[#chunks] of the batch."""

    chunks: list[list[Entity]]
    threshold: float
    expected_f1: float
    expected_chunks: float

    def __str__(self) -> str:
        """The decoding in a line of the log: its threshold, expected F1 and chunks."""
        chosen = sum(map(len, self.chunks))
        return (
            f"threshold {self.threshold:.4f}, expected F1 {self.expected_f1:.4f} "
            f"({chosen} chunks chosen, {self.expected_chunks:.1f} expected)"
        )


@dataclass(frozen=True)
class ChunkMarginals:
    """What the token marginals of a batch bound about its chunks, each float [N, K] (token
    n, chunk type k): ``begins``, the probability that a chunk of the type begins at the
    token, or more; ``ends``, that one ends there, or more; ``continues``, that the
    token's label is I- or E- of the type (a chunk can run into it); ``continued``, that
    it is B- or I- of the type (a chunk can run on from it); and ``expected_chunks``,
    the exact expected number of chunks of the batch."""

    begins: np.ndarray
    ends: np.ndarray
    continues: np.ndarray
    continued: np.ndarray
    expected_chunks: float

    @classmethod
    def of(cls, pot: Potentials, chunks: ChunkEdges, threads: int = 1) -> ChunkMarginals:
        """One forward-backward pass over ``pot``, whose states ``chunks`` reads.

        A chunk begins at token n only if its label is B- or S- of the type, or I- or E-
        of it after a label that is not B- or I- of it; it ends there only if the label
        is E- or S-, or B- or I- before one that is not I- or E- of it."""
        result = forward_backward(pot, marginals=True, edge_counts=True, threads=threads)
        marginals, edge_counts = result.node_marginals, result.edge_counts
        assert marginals is not None and edge_counts is not None  # both were asked for
        K = len(chunks.types)
        # [N, 5K]: the probability of a label of each type with each prefix set of MASS_PREFIXES
        mass = marginals @ chunks.prefix_mass
        continues, continued, firsts = mass[:, :K], mass[:, K : 2 * K], pot.offsets[:-1]
        lasts = pot.offsets[1:] - 1
        before, after = np.empty_like(continued), np.empty_like(continues)  # the neighbours' rows (first, last: unread)
        before[1:], before[:1] = continued[:-1], 0.0
        after[:-1], after[-1:] = continues[1:], 0.0
        begins = mass[:, 2 * K : 3 * K] + np.minimum(continues, 1.0 - before)
        ends = mass[:, 3 * K : 4 * K] + np.minimum(continued, 1.0 - after)
        of_type = mass[:, 4 * K :]
        begins[firsts], ends[lasts] = of_type[firsts], of_type[lasts]
        begun = np.atleast_2d(edge_counts)[:, chunks.begins_chunk]  # the chunks begun after a sentence's first token
        expected_chunks = float(np.sum(begun) + of_type[firsts].sum())
        return cls(begins, ends, continues, continued, expected_chunks)


def mbr_decode(
    pot: Potentials,
    labels: Sequence[str],
    threshold: float | None = None,
    floor: float = SPAN_FLOOR,
    threads: int = 1,
) -> MbrDecoding:
    """The chunks that maximise the expected F1 over the batch (``threshold`` None), or
    sum (p - threshold) per sentence (write them with :func:`writing_scheme` and
    :func:`labelled_paths`).

    ``labels``: the label of each state of ``pot.topology`` (chunk labels).  The search
    starts from the spans more probable than 1/2, whose expected F1 F_0 bounds every
    threshold it tries from below by F_0 / 2, so only spans at least that probable
    (and at least ``floor``) need be candidates: those of probability >= FIRST_FLOOR
    first, and more when F_0 / 2 is below it (a small batch takes all of them at once,
    see ONE_CALL_TOKENS)."""
    check_type(pot, Potentials, "pot", "a Potentials")
    if threshold is not None and not 0.0 < threshold < 1.0:
        raise ScoreError(f"the MBR threshold must be strictly between 0 and 1, got {threshold}")
    chunks = ChunkEdges.of(pot.topology, labels)
    if threshold is not None:
        batch, expected_chunks = chunk_candidates(pot, chunks, threshold, threads)
        chosen = batch.best(threshold)
    else:
        first_floor = floor if pot.num_tokens <= ONE_CALL_TOKENS else max(floor, FIRST_FLOOR)
        batch, expected_chunks = chunk_candidates(pot, chunks, first_floor, threads)
        if first_floor > floor:  # the thresholds tried are at least F_0 / 2
            lowest = max(floor, batch.ratio(batch.above(0.5), expected_chunks) / 2)
            if lowest < first_floor:  # a model expecting an F1 below 2 FIRST_FLOOR: more candidates
                batch = chunk_candidates(pot, chunks, lowest, threads)[0]
        threshold, chosen = batch.kernel.search(expected_chunks, floor, MAX_ROUNDS)
    spans = batch.entities(chosen)
    return MbrDecoding(spans, float(threshold), expected_f1(spans, expected_chunks), expected_chunks)


def expected_f1(chosen: Sequence[Sequence[Entity]], expected_chunks: float) -> float:
    """2 sum p / (|chosen| + E[#chunks]): the ratio-of-expectations F1 of a batch's chosen
    chunks (0 when both are 0)."""
    return f1_ratio(*_chosen_totals(chosen), expected_chunks)


def _chosen_totals(chosen: Sequence[Sequence[Entity]]) -> tuple[float, int]:
    """(the probabilities of a batch's chosen chunks summed, their number)."""
    return sum(entity.probability for sentence in chosen for entity in sentence), sum(map(len, chosen))


def f1_ratio(mass: float, count: int, expected_chunks: float) -> float:
    """2 mass / (count + E[#chunks]) (0 when both are 0): the expected F1 of ``count``
    chosen chunks whose probabilities sum to ``mass``."""
    total = count + expected_chunks
    return 2.0 * mass / total if total else 0.0


class StreamThreshold:
    """The MBR threshold of a stream's short batches (those a pause of the input ends:
    a sentence or a few).  Searched over a single sentence, the threshold follows that
    sentence's own expectations alone, and one that most likely holds no chunk gets
    its least unlikely one.  Instead it is half the expected F1 (:func:`f1_ratio`) of
    the chunks chosen in the stream's batches so far, counted as if one certain chunk
    had been chosen first (so 1/2 at the start): the threshold that maximises the
    expected F1 of a batch whose best expected F1 is the stream's."""

    def __init__(self) -> None:
        self.mass = 1.0  # the chosen chunks' probabilities, summed (with the certain one)
        self.count = 1  # the chosen chunks
        self.expected_chunks = 1.0  # E[#chunks] of the batches

    def threshold(self) -> float:
        """Half the stream's expected F1 so far, in (0, 1/2]."""
        return max(f1_ratio(self.mass, self.count, self.expected_chunks) / 2.0, 1e-6)

    def add(self, decoded: MbrDecoding) -> None:
        """Count the chunks a batch's decoding chose and its expected chunks."""
        mass, count = _chosen_totals(decoded.chunks)
        self.mass += mass
        self.count += count
        self.expected_chunks += decoded.expected_chunks


def chunk_candidates(
    pot: Potentials, chunks: ChunkEdges, floor: float, threads: int = 1
) -> tuple[CandidateBatch, float]:
    """(the candidates more probable than ``floor`` (:func:`candidates`), the batch's
    exact expected number of chunks): the tables, marginals, candidates and their
    probabilities of every sentence in one kernel call (csrc/fstcrf_chunks.c), each
    sentence's from it alone; the sentences whose scores span too wide a range for
    the linear domain (a small temperature) by :class:`ChunkMarginals` and
    :func:`candidates` in the log domain."""
    spans, probability, exact, expected = kernel.chunk_candidates(*kernel_structs(pot), chunks.reading, floor)
    if np.count_nonzero(exact) == len(exact):  # (ndarray.all costs more than the call on a sentence)
        return CandidateBatch(spans, probability, pot.lengths, chunks.types, chunks.adjacent), float(expected.sum())
    stuck = np.flatnonzero(~exact)
    part = pot.select(stuck)
    marginals = ChunkMarginals.of(part, chunks, threads)
    rest = candidates(part, chunks, marginals, floor)
    rest_spans = (stuck[rest.sentence], rest.first, rest.last, rest.kind)
    order = np.argsort(np.concatenate([spans[0], rest_spans[0]]), kind="stable")  # each part is in order
    merged = tuple(np.concatenate([mine, theirs])[order] for mine, theirs in zip(spans, rest_spans))
    batch = CandidateBatch(
        cast(tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], merged),
        np.concatenate([probability, rest.probability])[order],
        pot.lengths,
        chunks.types,
        chunks.adjacent,
    )
    return batch, float(expected[exact].sum()) + marginals.expected_chunks


def candidates(pot: Potentials, chunks: ChunkEdges, marginals: ChunkMarginals, floor: float) -> CandidateBatch:
    """Every span more probable than ``floor``, with its exact probability, found among
    those whose beginning, end and continuations the token marginals do not bound
    below it: a chunk of type x may run from a token where it may begin over tokens it
    may continue into, and end where it may end.  All types at once: a (type, token)
    pair is numbered x N + n."""
    N, K = marginals.begins.shape
    heads = np.flatnonzero(marginals.begins.T >= floor)
    if not len(heads):  # no chunk may begin anywhere
        none = np.zeros(0, dtype=np.int64)
        return CandidateBatch((none, none, none, none), np.zeros(0), pot.lengths, chunks.types, chunks.adjacent)
    link = np.zeros((K, N), dtype=bool)  # a chunk of the type may run on from token t to t + 1
    link[:, :-1] = (marginals.continued[:-1].T >= floor) & (marginals.continues[1:].T >= floor)
    link[:, pot.offsets[1:-1] - 1] = False  # nor across sentences
    breaks = np.flatnonzero(~link)  # holds x N + N - 1 for every x
    reach = breaks[np.searchsorted(breaks, heads)]  # the furthest (type, token) a run from each head reaches
    ends = np.flatnonzero(marginals.ends.T >= floor)
    low, high = np.searchsorted(ends, heads), np.searchsorted(ends, reach, side="right")
    count = high - low
    total = int(count.sum())
    within = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
    kind, first = np.divmod(np.repeat(heads, count), N)
    last = ends[np.repeat(low, count) + within] - kind * N
    order = np.lexsort((kind, last, first))  # by first token, last token, type
    first, last, kind = first[order], last[order], kind[order]
    sentence = np.searchsorted(pot.offsets, first, side="right") - 1
    local = (sentence, first - pot.offsets[sentence], last - pot.offsets[sentence], kind)
    probability = span_probability_array(pot, chunks, local)
    kept = probability > floor  # a span at or below the floor is never chosen (every threshold is at least it)
    spans = (local[0][kept], local[1][kept], local[2][kept], local[3][kept])
    return CandidateBatch(spans, probability[kept], pot.lengths, chunks.types, chunks.adjacent)


class CandidateBatch:
    """The candidates of a batch's sentences as flat arrays [M] (``sentence``, ``first``,
    ``last`` -- within the sentence -- ``kind``, the type index, and ``probability``),
    ordered by sentence, first and last token, for choosing them all at one threshold."""

    def __init__(
        self,
        spans: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
        probability: np.ndarray,
        lengths: np.ndarray,
        types: Sequence[str],
        adjacent: np.ndarray,
    ):
        self.sentence, self.first, self.last, self.kind = spans
        self.probability, self.lengths, self.types, self.adjacent = probability, lengths, types, adjacent
        # sentence b's candidates are starts[b] .. starts[b+1]-1
        self.starts = np.searchsorted(self.sentence, np.arange(len(lengths) + 1))

    def above(self, threshold: float) -> np.ndarray:
        """bool [M]: the candidates more probable than ``threshold``."""
        return self.probability > threshold

    @functools.cached_property
    def kernel(self) -> kernel.MbrCandidates:
        """The candidates as the kernel reads them (csrc/fstcrf_mbr.h), made once."""
        return kernel.MbrCandidates(
            kernel.kernel_array(self.lengths, np.int64),
            kernel.kernel_array(self.starts, np.int64),
            kernel.kernel_array(self.first, np.int64),
            kernel.kernel_array(self.last, np.int64),
            kernel.kernel_array(self.kind, np.int32),
            kernel.kernel_array(self.probability, np.float64),
            kernel.kernel_array(self.adjacent.view(np.uint8), np.uint8),
        )

    def best(self, threshold: float) -> np.ndarray:
        """bool [M]: in each sentence, the non-overlapping candidates maximising sum (p -
        threshold): those above the threshold where they can all be chunks of one
        output, else the best set by weighted interval scheduling (in C)."""
        return self.kernel.best(threshold)

    def ratio(self, chosen: np.ndarray, expected_chunks: float) -> float:
        """The expected F1 (:func:`expected_f1`) of the candidates ``chosen`` (bool [M])."""
        return f1_ratio(sum(self.probability[chosen].tolist()), int(np.count_nonzero(chosen)), expected_chunks)

    def entities(self, chosen: np.ndarray) -> list[list[Entity]]:
        """The chosen candidates (bool [M]) of each sentence, in order."""
        result: list[list[Entity]] = [[] for _ in range(len(self.lengths))]
        at = np.flatnonzero(chosen)
        for b, first, last, kind, probability in zip(
            self.sentence[at].tolist(),
            self.first[at].tolist(),
            self.last[at].tolist(),
            self.kind[at].tolist(),
            self.probability[at].tolist(),
        ):
            result[b].append(Entity(first, last, self.types[kind], probability))
        return result


def writing_scheme(labels: Sequence[str]) -> str:
    """The scheme chunks are written in with these labels: "bioes" if one has an E- or S-
    prefix, else "iob2" if every type has a B- label, else "iob1" (B- only between two
    chunks of a type, as CoNLL-2003's files, where B-PER never occurs).  Read once per
    label set."""
    return _scheme_of(tuple(labels))


@functools.lru_cache(maxsize=64)
def _scheme_of(labels: tuple[str, ...]) -> str:
    parts = [chunk_parts(label) for label in labels]
    prefixes = {prefix for prefix, _ in parts}
    if prefixes & {"E", "S"}:
        return "bioes"
    types = {chunk_type for prefix, chunk_type in parts if prefix != "O"}
    begun = {chunk_type for prefix, chunk_type in parts if prefix == "B"}
    return "iob2" if types <= begun else "iob1"


def labelled_paths(
    pot: Potentials,
    labels: Sequence[str],
    wanted: Sequence[Sequence[str]],
    threads: int = 1,
    best_instead: bool = False,
) -> np.ndarray:
    """int32 [N]: the best state path of each sentence b whose labels are ``wanted[b]``
    (``labels``: the label of each state); InfeasibleError naming the first sentence
    the lattice (its topology or grammar) has no such path for, or with
    ``best_instead`` its best path (a sentence's constraints may hold labels that no
    set of chunks written out gives)."""
    flat = list(chain.from_iterable(wanted))
    if len(flat) != pot.num_tokens or any(len(w) != T for w, T in zip(wanted, pot.lengths.tolist())):
        raise ShapeError(f"expected labels for {pot.num_sequences} sentences of lengths {pot.lengths.tolist()}")
    if len(set(labels)) == len(labels):  # one state per label: the path is the labels' states
        state_of = {label: s for s, label in enumerate(labels)}
        path = np.fromiter(map(state_of.get, flat, repeat(-1)), dtype=np.int32, count=len(flat))
        infeasible = ~finite_paths(pot, path)  # -1: a label no state has
    else:
        path, infeasible = _clamped_path(pot, labels, flat, threads)
    if not np.count_nonzero(infeasible):  # (ndarray.any costs more than the rest on a sentence)
        return path
    if best_instead:
        return _best_where_infeasible(pot, labels, wanted, infeasible, threads)
    b = int(np.argmax(infeasible))
    raise InfeasibleError(
        f"sentence {b}: the lattice has no path with the labels {' '.join(wanted[b])} (the F1-optimal "
        "chunks); its labels or grammar cannot write them (decode with Viterbi instead)"
    )


def finite_paths(pot: Potentials, path: np.ndarray) -> np.ndarray:
    """bool [B]: whether each sentence's state path (int [N]) has a finite score
    (``pot.path_scores``' is finite): states in range, a finite start, end and
    emission at each token, and a topology edge of finite score into each later
    token (in C)."""
    return kernel.finite_paths(*kernel_structs(pot), path)


def _best_where_infeasible(
    pot: Potentials, labels: Sequence[str], wanted: Sequence[Sequence[str]], infeasible: np.ndarray, threads: int
) -> np.ndarray:
    """int32 [N]: the best path of the ``infeasible`` sentences (bool [B]), the path of
    the wanted labels of the others."""
    path = np.empty(pot.num_tokens, dtype=np.int32)

    def rows(sentences: np.ndarray) -> np.ndarray:
        return np.concatenate([np.arange(pot.offsets[b], pot.offsets[b + 1]) for b in sentences])

    stuck, kept = np.flatnonzero(infeasible), np.flatnonzero(~infeasible)
    path[rows(stuck)] = viterbi(pot.select(stuck), threads).paths
    if len(kept):
        path[rows(kept)] = labelled_paths(pot.select(kept), labels, [wanted[int(b)] for b in kept], threads)
    return path


def _clamped_path(
    pot: Potentials, labels: Sequence[str], flat: list[str], threads: int
) -> tuple[np.ndarray, np.ndarray]:
    """(the best state path int32 [N] whose labels are ``flat`` [N], bool [B]: the
    sentences without such a path) when several states share a label."""
    state_label = np.array(labels, dtype=object)
    allowed = state_label[None, :] == np.array(flat, dtype=object)[:, None]
    missing = np.flatnonzero(~allowed.any(axis=1))
    held = pot.clamp(allowed | ~allowed.any(axis=1, keepdims=True))  # a label no state has is caught below
    log_z = forward_backward(held, marginals=False, edge_counts=False, threads=threads, allow_infeasible=True).log_z
    infeasible = log_z == -np.inf
    if len(missing):
        infeasible[np.searchsorted(pot.offsets, missing, side="right") - 1] = True
    if infeasible.any():
        return np.full(pot.num_tokens, -1, dtype=np.int32), infeasible
    return viterbi(held, threads).paths, infeasible
