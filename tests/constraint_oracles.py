"""Brute-force oracles for sentences under constraints (fstcrf.engine.constraints),
and hypothesis strategies of small chunk-labelled chains with random constraints.

Every label sequence a topology allows is enumerated and scored by the model
(Potentials.path_scores); the constraints are then read straight from their
definition, chunk by chunk, with a chunk reader written here from the spec (a
chunk begins at a label that is not O and does not continue the one before; a
label continues the one before when that is B- or I- and it is I- or E- of the
same type), never with the code under test:

    fixed, allowed   the label at the token is (one of) the label(s), or the path is out
    scores           bonus[token][label] added
    spans            hard: the chunk (first, last, type) must be among the path's chunks;
                     soft: its weight is added when it is
    forbidden        hard: it must not be; soft: its weight is subtracted when it is
    unbroken         each boundary between first and last (neighbours that are neither
                     "continues" nor both O): hard: the path is out; soft: weight lost
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from hypothesis import strategies as st

import fstcrf
from fstcrf.engine.constraints import Constraints, Span
from fstcrf.engine.topology import Topology, bioes, first_order, iob2, kth_order, second_order

from oracles import enumerate_state_paths

IOB2_LABELS = ("O", "B-A", "I-A", "B-B", "I-B")
IOB1_LABELS = ("O", "I-A", "I-B", "B-A")
BIOES_LABELS = ("O", "B-A", "I-A", "E-A", "S-A")


def topologies() -> dict[str, Topology]:
    """The chunk topologies the strategies draw from: first order over each scheme's
    labels, the IOB2 and BIOES validity topologies, second order (Sha & Pereira) and
    a third-order history over three labels."""
    return {
        "iob2 first order": first_order(IOB2_LABELS),
        "iob2 valid": iob2(["A", "B"]),
        "iob1 first order": first_order(IOB1_LABELS),
        "bioes first order": first_order(BIOES_LABELS),
        "bioes valid": bioes(["A"]),
        "second order": second_order(IOB2_LABELS[:3] + ("B-B",)),
        "third order": kth_order(("O", "B-A", "I-A"), 3, pad="O"),
    }


TOPOLOGIES = topologies()


def parts(label: str) -> tuple[str, str]:
    prefix, _, kind = label.partition("-")
    return prefix, kind


def runs_on(before: str, label: str) -> bool:
    """Whether ``label`` continues the chunk of ``before`` (the spec, written out)."""
    (p, x), (q, y) = parts(before), parts(label)
    return x == y and p in {"B", "I"} and q in {"I", "E"}


def chunks_of(labels: tuple[str, ...]) -> set[tuple[int, int, str]]:
    """The chunks (first, last, type) of a label sequence."""
    found, t = set(), 0
    while t < len(labels):
        if labels[t] == "O" or (t and runs_on(labels[t - 1], labels[t])):
            t += 1
            continue
        end = t
        while end + 1 < len(labels) and runs_on(labels[end], labels[end + 1]):
            end += 1
        found.add((t, end, parts(labels[t])[1]))
        t = end + 1
    return found


def constraint_score(constraints: Constraints, labels: tuple[str, ...]) -> float:
    """The log-score the constraints add to a label sequence: -inf when a hard rule is broken."""
    total = 0.0
    for t, label in constraints.fixed.items():
        if labels[t] != label:
            return -math.inf
    for t, allowed in constraints.allowed.items():
        if labels[t] not in allowed:
            return -math.inf
    for t, bonuses in constraints.scores.items():
        total += bonuses.get(labels[t], 0.0)
    held = chunks_of(labels)
    for span in constraints.spans:
        if (span.first, span.last, span.type) in held:
            total += span.weight or 0.0
        elif span.weight is None:
            return -math.inf
    for span in constraints.forbidden:
        if (span.first, span.last, span.type) in held:
            if span.weight is None:
                return -math.inf
            total -= span.weight
    for first, last, weight in constraints.unbroken:
        breaks = sum(
            1
            for t in range(first + 1, last + 1)
            if not (runs_on(labels[t - 1], labels[t]) or labels[t - 1] == labels[t] == "O")
        )
        if breaks:
            total -= breaks * (math.inf if weight is None else weight)
    return total


@dataclass
class SentenceOracle:
    """Every label sequence of one sentence with its score under the model and the
    constraints (-inf ones dropped)."""

    pot: fstcrf.Potentials  # the sentence alone, unconstrained
    constraints: Constraints | None

    @cached_property
    def table(self) -> list[tuple[tuple[str, ...], float]]:
        topology = self.pot.topology
        paths = np.array(enumerate_state_paths(topology, int(self.pot.lengths[0])), dtype=np.int64)
        if not len(paths):
            return []
        model = self.pot.path_scores(paths)[:, 0]
        rows = []
        for path, score in zip(paths, model.tolist()):
            labels = tuple(topology.labels[topology.state_label[s]] for s in path)
            extra = 0.0 if self.constraints is None else constraint_score(self.constraints, labels)
            if score + extra > -math.inf:
                rows.append((labels, score + extra))
        return rows

    @property
    def feasible(self) -> bool:
        return bool(self.table)

    @cached_property
    def log_z(self) -> float:
        scores = np.array([score for _, score in self.table])
        return float(np.logaddexp.reduce(scores)) if len(scores) else -math.inf

    def probability(self, predicate) -> float:
        """P(the label sequence satisfies ``predicate``) under the constraints."""
        return float(sum(math.exp(score - self.log_z) for labels, score in self.table if predicate(labels)))

    @cached_property
    def span_probabilities(self) -> dict[tuple[int, int, str], float]:
        """(first, last, type) -> P(that chunk is in the label sequence), for every chunk
        of some sequence (a span no sequence has is absent: probability 0)."""
        found: dict[tuple[int, int, str], float] = {}
        for labels, score in self.table:
            for span in chunks_of(labels):
                found[span] = found.get(span, 0.0) + math.exp(score - self.log_z)
        return found

    def ranked_scores(self) -> list[float]:
        return sorted((score for _, score in self.table), reverse=True)

    def best(self) -> tuple[tuple[str, ...], float, float]:
        """(the best labels, their score, the margin to the second best)."""
        ranked = sorted(self.table, key=lambda row: -row[1])
        margin = ranked[0][1] - ranked[1][1] if len(ranked) > 1 else math.inf
        return ranked[0][0], ranked[0][1], margin


def label_types(labels: tuple[str, ...]) -> list[str]:
    return sorted({parts(label)[1] for label in labels if label != "O"})


@st.composite
def weights(draw):
    return draw(st.one_of(st.none(), st.sampled_from([0.25, 1.0, 2.5]), st.floats(0.05, 4.0)))


@st.composite
def random_spans(draw, length: int, types: list[str], most: int):
    spans = []
    for _ in range(draw(st.integers(0, most))):
        first = draw(st.integers(0, length - 1))
        last = draw(st.integers(first, length - 1))
        spans.append(Span(first, last, draw(st.sampled_from(types)), draw(weights())))
    return spans


@st.composite
def random_constraints(draw, labels: tuple[str, ...], length: int) -> Constraints | None:
    """None, or a few rules of every kind over a sentence of ``length`` tokens."""
    if draw(st.integers(0, 5)) == 0:
        return None
    tokens = st.integers(0, length - 1)
    types = label_types(labels)
    fixed = draw(st.dictionaries(tokens, st.sampled_from(labels), max_size=1 if length > 2 else 0))
    allowed = draw(
        st.dictionaries(tokens, st.sets(st.sampled_from(labels), min_size=1, max_size=len(labels) - 1), max_size=2)
    )
    scores = draw(
        st.dictionaries(tokens, st.dictionaries(st.sampled_from(labels), st.floats(-3, 3), min_size=1), max_size=2)
    )
    unbroken = []
    if draw(st.booleans()):
        first = draw(tokens)
        unbroken.append((first, draw(st.integers(first, length - 1)), draw(weights())))
    return Constraints(
        fixed=fixed,
        allowed=allowed,
        spans=draw(random_spans(length, types, 2)),
        forbidden=draw(random_spans(length, types, 3)),
        unbroken=unbroken,
        scores=scores,
    )


@dataclass
class ConstrainedBatch:
    name: str
    topology: Topology
    pot: fstcrf.Potentials
    constraints: list[Constraints | None]

    def oracle(self, b: int) -> SentenceOracle:
        return SentenceOracle(self.pot.select([b]), self.constraints[b])


@st.composite
def constrained_batches(draw, max_length: int = 5, sentences: tuple[int, int] = (1, 3), names=None):
    """A topology of TOPOLOGIES, random scores for 1-3 sentences of 1..max_length
    tokens, and random constraints (or None) for each."""
    name = draw(st.sampled_from(sorted(names or TOPOLOGIES)))
    topology = TOPOLOGIES[name]
    lengths = draw(st.lists(st.integers(1, max_length), min_size=sentences[0], max_size=sentences[1]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    S, E = topology.num_states, topology.num_edges
    pot = fstcrf.Potentials(
        topology, rng.normal(0, 1.5, (sum(lengths), S)), lengths, rng.normal(0, 1, E), rng.normal(0, 1, S)
    )
    constraints = [draw(random_constraints(topology.labels, length)) for length in lengths]
    return ConstrainedBatch(name, topology, pot, constraints)
