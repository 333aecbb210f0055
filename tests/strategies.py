"""Hypothesis strategies: small random chain-CRF instances for the oracle tests.

An instance is a topology over S <= 5 states (state i has label "s<i>") built
from a random allowed-transition mask and random start / final sets, plus one
or more sentences of T <= 6 tokens with emission, transition, start and final
scores.  Mask families:

    random    any S x S boolean mask, any start / final sets (often infeasible)
    cycle     a directed cycle of length c (start at one cycle state, final at
              one cycle state), so only lengths T = r (mod c) are feasible, plus
              an optional disconnected random component on the other states
    chain     s0 -> s1 -> ... only: lengths > (distance to a final state) die
    complete  every transition allowed
    empty     no transitions: only T = 1 can be feasible

States are relabelled by a random permutation so that state 0 is not special.
Scores are real (floats in [-5, 5], generic or hypothesis' edge values) or
small integers (which make exact ties, for the tie-breaking tests).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import HealthCheck, assume, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import fstcrf
from fstcrf.engine.topology import Topology

from oracles import BruteForce, count_sequences_by_matrix_power

MAX_STATES = 5
MAX_LENGTH = 6
# drawn with these weights; random and complete masks have many paths, the others few
KINDS = ("random", "random", "random", "complete", "cycle", "chain", "empty")


def oracle_settings(max_examples: int) -> settings:
    """Deterministic, deadline-free settings (CI-reproducible, no example database)."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    )


@dataclass
class Spec:
    """A topology-like spec: what the brute-force oracle needs, before compiling."""

    num_states: int
    edge_src: np.ndarray
    edge_dst: np.ndarray
    start: np.ndarray
    final: np.ndarray
    kind: str = "random"

    @property
    def labels(self) -> list[str]:
        return [f"s{i}" for i in range(self.num_states)]

    def topology(self) -> Topology:
        return Topology(
            self.labels,
            state_label=np.arange(self.num_states),
            edge_src=self.edge_src,
            edge_dst=self.edge_dst,
            start=self.start,
            final=self.final,
        )

    def feasible_lengths(self, max_length: int = MAX_LENGTH) -> list[int]:
        return [T for T in range(1, max_length + 1) if count_sequences_by_matrix_power(self, T) > 0]


def _from_adjacency(adjacency: np.ndarray, start, final, kind: str, perm=None) -> Spec:
    S = adjacency.shape[0]
    start = np.asarray(start, dtype=bool)
    final = np.asarray(final, dtype=bool)
    if perm is not None:  # state i of the drawn mask becomes state perm[i]
        perm = np.asarray(perm)
        inverse = np.argsort(perm)
        adjacency = adjacency[np.ix_(inverse, inverse)]
        start, final = start[inverse], final[inverse]
    src, dst = np.nonzero(adjacency)  # source-major: the Topology must re-sort them
    return Spec(S, src.astype(np.int64), dst.astype(np.int64), start, final, kind)


def _bools(size):
    return arrays(np.bool_, size, elements=st.booleans())  # for the small extra components


@st.composite
def specs(draw, kinds=KINDS, max_states=MAX_STATES) -> Spec:
    S = draw(st.sampled_from([s for s in (3, 4, 5, 2, 1) if s <= max_states]))  # not mostly 1
    kind = draw(st.sampled_from(kinds))
    perm = draw(st.permutations(range(S)))
    adjacency = np.zeros((S, S), dtype=bool)
    if kind == "random":
        # a mask of a drawn density from a drawn seed: hypothesis' own booleans
        # lean towards all-False masks, which are almost always infeasible
        density = draw(st.sampled_from([0.5, 0.25, 0.75, 1.0]))
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        adjacency = rng.random((S, S)) < density
        start, final = rng.random(S) < 0.5, rng.random(S) < 0.5
        return _from_adjacency(adjacency, start, final, kind, perm)
    if kind == "cycle":
        c = draw(st.integers(1, S))
        for i in range(c):
            adjacency[i, (i + 1) % c] = True
        start = np.zeros(S, dtype=bool)
        final = np.zeros(S, dtype=bool)
        start[0] = True
        final[draw(st.integers(0, c - 1))] = True  # feasible iff T = that + 1 (mod c)
        if S > c and draw(st.booleans()):  # a separate random component
            rest = S - c
            adjacency[c:, c:] = draw(_bools((rest, rest)))
            start[c:] = draw(_bools(rest))
            final[c:] = draw(_bools(rest))
        return _from_adjacency(adjacency, start, final, kind, perm)
    if kind == "chain":
        for i in range(S - 1):
            adjacency[i, i + 1] = True
        start = np.zeros(S, dtype=bool)
        start[0] = True
        final = draw(_bools(S))
        return _from_adjacency(adjacency, start, final, kind, perm)
    if kind == "complete":
        adjacency[:] = True
    # complete / empty
    start = draw(_bools(S))
    final = draw(_bools(S))
    if draw(st.booleans()):  # often force non-empty sets, so that T = 1 at least is feasible
        start[draw(st.integers(0, S - 1))] = True
        final[draw(st.integers(0, S - 1))] = True
    return _from_adjacency(adjacency, start, final, kind, perm)


def three_cycle_spec(extra_states: int = 0) -> Spec:
    """s0 -> s1 -> s2 -> s0, start {s0}, final {s0}: feasible iff T = 1 (mod 3)."""
    S = 3 + extra_states
    adjacency = np.zeros((S, S), dtype=bool)
    adjacency[0, 1] = adjacency[1, 2] = adjacency[2, 0] = True
    start = np.zeros(S, dtype=bool)
    final = np.zeros(S, dtype=bool)
    start[0] = final[0] = True
    return _from_adjacency(adjacency, start, final, "cycle")


SCORE_KINDS = ("uniform", "float", "integer")


def score_arrays(shape, kind: str):
    """Scores of one of three kinds:

    uniform  reals drawn uniformly from [-5, 5] (numpy, from a drawn seed): generic values
    float    hypothesis floats in [-5, 5]: edge values (0, +-5, tiny, repeated ...)
    integer  small integers in [-2, 2] (as floats): exact ties
    """
    if kind == "uniform":
        return st.integers(0, 2**32 - 1).map(lambda seed: np.random.default_rng(seed).uniform(-5.0, 5.0, shape))
    if kind == "integer":
        elements = st.integers(-2, 2).map(float)
    else:
        elements = st.floats(-5.0, 5.0, allow_nan=False, allow_infinity=False)
    return arrays(np.float64, shape, elements=elements)


@dataclass
class Instance:
    """A topology and a batch of scored sentences."""

    spec: Spec
    topology: Topology
    lengths: list[int]
    emissions: np.ndarray  # [N, S]
    transitions: np.ndarray  # [E], in topology edge order
    start: np.ndarray  # [S]
    final: np.ndarray  # [S]
    score_kind: str
    pass_defaults: bool = False  # build Potentials with transitions/start/final = None when all zero
    _oracles: dict = field(default_factory=dict, repr=False)

    @property
    def offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.lengths)])

    def rows(self, b: int) -> slice:
        return slice(int(self.offsets[b]), int(self.offsets[b + 1]))

    @property
    def feasible(self) -> bool:
        return all(count_sequences_by_matrix_power(self.spec, T) > 0 for T in self.lengths)

    def potentials(self, emissions=None, transitions=None, start=None, final=None, sentences=None) -> fstcrf.Potentials:
        """Potentials of the whole batch (or of the listed sentences), optionally
        with replaced score arrays."""
        emissions = self.emissions if emissions is None else emissions
        transitions = self.transitions if transitions is None else transitions
        start = self.start if start is None else start
        final = self.final if final is None else final
        lengths = self.lengths
        if sentences is not None:
            emissions = np.concatenate([emissions[self.rows(b)] for b in sentences])
            lengths = [self.lengths[b] for b in sentences]
        if self.pass_defaults:
            transitions, start, final = (None if not np.any(a) else a for a in (transitions, start, final))
        return fstcrf.Potentials(self.topology, emissions, lengths, transitions, start, final)

    def oracle(self, b: int = 0) -> BruteForce:
        if b not in self._oracles:
            self._oracles[b] = BruteForce(
                self.topology, self.emissions[self.rows(b)], self.transitions, self.start, self.final
            )
        return self._oracles[b]

    def exact_arithmetic(self) -> bool:
        """Whether every score is a multiple of 2^-30: then every path score
        (at most 2T + 1 terms of magnitude <= 5) is computed exactly, so float
        ties are real ties and the tie-breaking rule applies bit for bit."""
        values = np.concatenate([self.emissions.ravel(), self.transitions, self.start, self.final])
        scaled = np.ldexp(values, 30)
        return bool(np.all(scaled == np.round(scaled)))


@st.composite
def instances(
    draw,
    feasible: bool | None = None,
    num_sentences=(1, 1),
    score_kinds=SCORE_KINDS,
    kinds=KINDS,
    max_length: int = MAX_LENGTH,
    max_states: int = MAX_STATES,
) -> Instance:
    """Random instances.

    feasible: True draws only lengths the topology allows (sentences are then
    compared with brute force); None draws any length 1..max_length (the
    caller checks InfeasibleError when no sequence of that length exists).
    """
    spec = draw(specs(kinds=kinds, max_states=max_states))
    n_min, n_max = num_sentences
    if feasible:
        lengths_ok = spec.feasible_lengths(max_length)
        if draw(st.integers(0, 4)):  # mostly lengths with at least two paths (something to rank)
            lengths_ok = [T for T in lengths_ok if count_sequences_by_matrix_power(spec, T) >= 2]
        assume(lengths_ok)
        length = st.sampled_from(lengths_ok[::-1])  # longest first: hypothesis leans to the first
    else:
        length = st.integers(1, max_length)
    lengths = draw(st.lists(length, min_size=n_min, max_size=n_max))
    topology = spec.topology()
    S, E = spec.num_states, topology.num_edges
    score_kind = draw(st.sampled_from(score_kinds))
    emissions = draw(score_arrays((sum(lengths), S), score_kind))
    transitions = draw(score_arrays((E,), score_kind))
    start = draw(score_arrays((S,), score_kind))
    final = draw(score_arrays((S,), score_kind))
    pass_defaults = False
    if draw(st.integers(0, 9)) == 0:  # sometimes leave transitions/start/final at their defaults
        transitions, start, final = np.zeros(E), np.zeros(S), np.zeros(S)
        pass_defaults = True
    return Instance(spec, topology, lengths, emissions, transitions, start, final, score_kind, pass_defaults)


def feasible_instances(**kwargs):
    return instances(feasible=True, **kwargs)


def batches(**kwargs):
    """Several feasible sentences of different lengths over one topology."""
    return instances(feasible=True, num_sentences=(2, 5), **kwargs)


@st.composite
def pynini_acceptors(draw, keys: tuple[int, int], max_states: int, max_arcs: int):
    """A random pynini acceptor: 1..max_states states (state 0 the start), a non-empty
    set of them final, and up to max_arcs arcs whose keys are in keys = (first, last)
    (a first key of 0 allows epsilons); non-determinism allowed."""
    import pynini  # only the tests that draw these need it

    fsa = pynini.Fst()
    num_states = draw(st.integers(1, max_states))
    for _ in range(num_states):
        fsa.add_state()
    fsa.set_start(0)
    for state in draw(st.lists(st.integers(0, num_states - 1), min_size=1, max_size=num_states)):
        fsa.set_final(state)
    arcs = st.tuples(st.integers(0, num_states - 1), st.integers(*keys), st.integers(0, num_states - 1))
    for source, key, target in draw(st.lists(arcs, max_size=max_arcs)):
        fsa.add_arc(source, pynini.Arc(key, key, 0, target))
    return fsa
