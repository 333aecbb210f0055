"""Inference under constraints against OpenFst (pynini): the sentence's lattice
(fstcrf.engine.lattice.to_fst, without the constraints) composed with a constraint
acceptor built here, independently of fstcrf.engine.constrained, as the weighted
union of every label string the constraints accept (weight: minus what they add,
read by tests/constraint_oracles.py from their definition).  Tropical shortest
paths are the Viterbi and k-best scores, log-semiring shortest distances log Z, the
label marginals and the span probabilities; hard and weighted rules, first- and
higher-order topologies and topologies under grammars; and the constrained lattice
fstcrf exports has the same distances (and log Z that of enumeration)."""

from needs_pynini import pynini  # noqa: F401  (skips the module without pynini)

import itertools
import math

import numpy as np
import pytest
import pywrapfst
from hypothesis import given

import fstcrf
from fstcrf.engine.constrained import constrain
from fstcrf.engine.constraints import resolve_batch
from fstcrf.engine.lattice import to_fst
from fstcrf.engine.spans import entity_probabilities, state_labels
from fstcrf.engine.topology import first_order
from fstcrf.grammar import constrain as under_grammar, load_grammar

from constraint_oracles import IOB2_LABELS, TOPOLOGIES, chunks_of, constrained_batches, constraint_score
from strategies import oracle_settings

FLOAT32_REL = 1e-4
DELTA = 1e-30

GRAMMAR_TOPOLOGIES = {
    "iob2 grammar": under_grammar(first_order(IOB2_LABELS), load_grammar("iob2")),
    "at most one A": under_grammar(first_order(IOB2_LABELS), load_grammar("at_most_one"), params={"X": "A"}),
}
TOPOLOGIES.update(GRAMMAR_TOPOLOGIES)


def string_acceptor(labels, length: int, score, arc_type: str) -> pynini.Fst:
    """The acceptor of every label string of ``length`` whose ``score`` (a function of
    the label tuple) is > -inf, weighted by minus that score: a trie over label keys."""
    fst = pynini.Fst(arc_type=arc_type)
    fst.set_start(fst.add_state())
    one = pywrapfst.Weight.one(fst.weight_type())
    for keys in itertools.product(range(len(labels)), repeat=length):
        value = score(tuple(labels[k] for k in keys))
        if value == -math.inf:
            continue
        state = fst.start()
        for key in keys:
            following = next((arc.nextstate for arc in fst.arcs(state) if arc.ilabel == key + 1), None)
            if following is None:
                following = fst.add_state()
                fst.add_arc(state, pywrapfst.Arc(key + 1, key + 1, one, following))
            state = following
        fst.set_final(state, pywrapfst.Weight(fst.weight_type(), -value))
    return fst


def lattices(pot, b: int):
    """The log64 and tropical lattices of sentence b (tropical by mapping log64)."""
    log = to_fst(pot, b, "log64", "labels")
    return log, pynini.arcmap(log, map_type="to_std")


def distance(fst) -> float:
    """Minus the shortest distance from the start to the final states (a log-sum or max of scores)."""
    if fst.start() == pywrapfst.NO_STATE_ID:
        return -math.inf
    return -float(pynini.shortestdistance(fst, delta=DELTA, reverse=True)[fst.start()])


def best_paths(fst, k: int) -> list[tuple[tuple[int, ...], float]]:
    shortest = pynini.shortestpath(fst, nshortest=k)
    found, paths = [], shortest.paths()
    while not paths.done():
        found.append((tuple(key for key in paths.ilabels() if key), -float(paths.weight())))
        paths.next()
    return sorted(found, key=lambda item: -item[1])


def holding(labels, length: int, predicate) -> pynini.Fst:
    """The unweighted log64 acceptor of the label strings of ``length`` that satisfy ``predicate``."""
    return string_acceptor(labels, length, lambda y: 0.0 if predicate(y) else -math.inf, "log64")


def close(a: float, b: float, rel: float) -> bool:
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


@pytest.mark.slow
@oracle_settings(40)
@given(constrained_batches(max_length=4, names=sorted(TOPOLOGIES)))
def test_constrained_inference_is_openfst_composition(batch):
    labels = batch.topology.labels
    rules = resolve_batch(batch.constraints, batch.pot.lengths, labels, "test")
    unconstrained = batch.pot
    composed = []
    for b, constraints in enumerate(batch.constraints):
        T = int(unconstrained.lengths[b])
        score = (lambda y: 0.0) if constraints is None else (lambda y, c=constraints: constraint_score(c, y))
        log, tropical = lattices(unconstrained, b)
        composed.append(
            (
                pynini.compose(log, string_acceptor(labels, T, score, "log64")),
                pynini.compose(tropical, string_acceptor(labels, T, score, "standard")),
            )
        )
    if any(distance(log) == -math.inf for log, _ in composed):
        return  # infeasible: test_constraints.py checks the error against enumeration
    lattice = constrain(unconstrained, rules or [None] * unconstrained.num_sequences)
    pot = lattice.potentials
    log_z = fstcrf.log_partition(pot)
    best = fstcrf.viterbi(pot)
    ranked = fstcrf.kbest(pot, 6)
    node = fstcrf.forward_backward(pot, edge_counts=False).node_marginals
    state_names = np.array(labels)[pot.topology.state_label]
    for b, (log, tropical) in enumerate(composed):
        T = int(pot.lengths[b])
        assert close(distance(log), log_z[b], 1e-7)
        assert close(distance(lattices(pot, b)[0]), log_z[b], 1e-7)  # fstcrf's own export of the constrained lattice
        assert close(batch.oracle(b).log_z, log_z[b], 1e-9)  # and enumeration, on grammar topologies too
        theirs = best_paths(tropical, 6)
        assert close(theirs[0][1], best.scores[b], FLOAT32_REL)
        if len(theirs) < 2 or theirs[0][1] - theirs[1][1] > 1e-3:
            assert [labels[k - 1] for k in theirs[0][0]] == list(state_names[best.paths[pot.sentence(b)]])
        assert ranked.found[b] == len(theirs)
        for mine, (_, score) in zip(ranked.scores[b], theirs):
            assert close(mine, score, FLOAT32_REL)
        rows = node[pot.sentence(b)]
        for t in range(T):
            for label in labels:
                at = holding(labels, T, lambda y, t=t, label=label: y[t] == label)
                expected = math.exp(distance(pynini.compose(log, at)) - log_z[b])
                assert abs(rows[t, state_names == label].sum() - expected) < 1e-6
        spans = [(f, last, x) for f in range(T) for last in range(f, T) for x in ("A", "B") if x in "".join(labels)]
        probabilities = entity_probabilities(pot.select([b]), state_labels(pot.topology), [spans])[0]
        for span, p in zip(spans, probabilities):
            held = holding(labels, T, lambda y, span=span: span in chunks_of(y))
            assert abs(p - math.exp(distance(pynini.compose(log, held)) - log_z[b])) < 1e-6
