"""Inference under a sentence's constraints (fstcrf.engine.constraints, .constrained)
against brute-force enumeration of every label sequence (tests/constraint_oracles.py):
log Z, label marginals, the best path, k-best scores and span probabilities, on
first- and higher-order chunk topologies, IOB1, IOB2 and BIOES, hard and weighted
rules; infeasible sentences name a minimal set of clashing rules; samples follow the
conditional distribution (chi-square); malformed constraints are typed errors."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import fstcrf
from fstcrf.engine.constrained import constrain
from fstcrf.engine.constraints import Constraints, Span, TokenRange, resolve, resolve_batch
from fstcrf.engine.spans import entity_probabilities, state_labels
from fstcrf.errors import (
    ArgumentTypeError,
    BudgetError,
    ConstraintError,
    ConstraintLabelError,
    InfeasibleError,
    LabelError,
)

from constraint_oracles import (
    IOB2_LABELS,
    TOPOLOGIES,
    SentenceOracle,
    chunks_of,
    constrained_batches,
    random_constraints,
)
from strategies import oracle_settings

REL = 1e-9


def close(a: float, b: float, rel: float = REL) -> bool:
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


def lattice_of(batch):
    rules = resolve_batch(batch.constraints, batch.pot.lengths, batch.topology.labels, "test")
    if rules is None:
        rules = [None] * batch.pot.num_sequences
    return constrain(batch.pot, rules)


@pytest.mark.slow
@oracle_settings(120)
@given(constrained_batches())
def test_inference_under_constraints_is_enumeration(batch):
    oracles = [batch.oracle(b) for b in range(batch.pot.num_sequences)]
    if not all(oracle.feasible for oracle in oracles):
        with pytest.raises(InfeasibleError):
            lattice_of(batch)
        return
    lattice = lattice_of(batch)
    pot = lattice.potentials
    topology = pot.topology
    labels = np.array(topology.labels)[topology.state_label]
    result = fstcrf.forward_backward(pot, edge_counts=False)
    best = fstcrf.viterbi(pot)
    k = 12
    ranked = fstcrf.kbest(pot, k)
    spans = [[(f, last, x) for f in range(T) for last in range(f, T) for x in ("A", "B")] for T in pot.lengths.tolist()]
    probabilities = entity_probabilities(pot, state_labels(topology), spans)
    for b, oracle in enumerate(oracles):
        rows = pot.sentence(b)
        assert close(result.log_z[b], oracle.log_z)
        for t in range(pot.lengths[b]):
            for label in batch.topology.labels:
                expected = oracle.probability(lambda y, t=t, label=label: y[t] == label)
                assert abs(result.node_marginals[rows][t, labels == label].sum() - expected) < 1e-9
        wanted, score, margin = oracle.best()
        assert close(best.scores[b], score)
        if margin > 1e-9:
            assert tuple(labels[best.paths[rows]]) == wanted
        expected_scores = oracle.ranked_scores()[:k]
        assert ranked.found[b] == len(expected_scores)
        for mine, theirs in zip(ranked.scores[b], expected_scores):
            assert close(mine, theirs)
        for (first, last, x), p in zip(spans[b], probabilities[b]):
            expected = oracle.span_probabilities.get((first, last, x), 0.0)
            assert abs(p - expected) < 1e-9, ((first, last, x), p, expected)


@pytest.mark.slow
@oracle_settings(80)
@given(constrained_batches(sentences=(1, 1)))
def test_an_infeasible_sentence_names_a_minimal_clash(batch):
    oracle = batch.oracle(0)
    if oracle.feasible:
        lattice_of(batch)
        return
    with pytest.raises(InfeasibleError) as raised:
        lattice_of(batch)
    source = batch.constraints[0]
    assert source is not None
    by_description = {source.describe(rule): rule for rule in source.hard_rules()}
    clash = [by_description[text] for text in raised.value.clashing]
    assert raised.value.sentence == 0 and clash
    assert not SentenceOracle(batch.pot, source.only(clash)).feasible
    for rule in clash:
        assert SentenceOracle(batch.pot, source.only([other for other in clash if other != rule])).feasible


def test_samples_follow_the_conditional_distribution():
    rng = np.random.default_rng(4)
    topology = TOPOLOGIES["iob2 first order"]
    T = 4
    pot = fstcrf.Potentials(topology, rng.normal(0, 1, (T, 5)), None, rng.normal(0, 1, topology.num_edges))
    constraints = Constraints(
        forbidden=[Span(0, 1, "A"), Span(2, 3, "B", weight=1.0)], spans=[Span(1, 2, "A", weight=0.5)], unbroken=[(2, 3)]
    )
    lattice = constrain(pot, [resolve(constraints, topology.labels, T)])
    draws = fstcrf.sample(lattice.potentials, 20_000, seed=3)
    names = np.array(topology.labels)[lattice.potentials.topology.state_label]
    counts: dict[tuple, int] = {}
    for path in draws:
        key = tuple(names[path])
        counts[key] = counts.get(key, 0) + 1
    oracle = SentenceOracle(pot, constraints)
    expected = {labels: math.exp(score - oracle.log_z) for labels, score in oracle.table}
    assert set(counts) <= set(expected)
    chi2 = sum((counts.get(labels, 0) - 20_000 * p) ** 2 / (20_000 * p) for labels, p in expected.items())
    degrees = len(expected) - 1
    assert chi2 < degrees + 5 * math.sqrt(2 * degrees), (chi2, degrees)


def test_flags_are_reused_along_the_sentence():
    topology = TOPOLOGIES["iob2 first order"]
    pot = fstcrf.Potentials(topology, np.zeros((8, 5)))
    apart = Constraints(forbidden=[Span(0, 1, "A"), Span(3, 4, "A"), Span(6, 7, "B", weight=2.0)])
    overlapping = Constraints(forbidden=[Span(0, 3, "A"), Span(1, 2, "A"), Span(2, 2, "B")])
    assert constrain(pot, [resolve(apart, topology.labels, 8)]).flags == 2
    assert constrain(pot, [resolve(overlapping, topology.labels, 8)]).flags == 4


def test_a_required_span_holds_exactly_that_chunk():
    topology = TOPOLOGIES["iob2 first order"]
    rng = np.random.default_rng(0)
    pot = fstcrf.Potentials(topology, rng.normal(0, 3, (6, 5)))
    lattice = constrain(pot, [resolve(Constraints(spans=[Span(1, 3, "B")]), topology.labels, 6)])
    labels = np.array(topology.labels)[lattice.potentials.topology.state_label]
    for path in fstcrf.kbest(lattice.potentials, 40).paths:
        assert (1, 3, "B") in chunks_of(tuple(labels[path]))


@oracle_settings(25)
@given(st.data())
def test_constraints_round_trip_through_json(data):
    constraints = data.draw(random_constraints(IOB2_LABELS, 6))
    if constraints is None:
        return
    text = json.dumps(constraints.to_dict())
    assert Constraints.from_dict(json.loads(text)) == constraints


def test_constraints_are_normalised():
    constraints = Constraints(
        fixed={np.int64(2): "B-A"}, allowed={0: ["O", "B-A"]}, unbroken=[(1, 2)], spans=[("1", 1, "A")][:0]
    )
    assert constraints.allowed == {0: frozenset({"O", "B-A"})}
    assert constraints.unbroken == (TokenRange(1, 2, None),)
    assert Constraints(spans=[Span(0, 1, "A", math.inf)]).spans == (Span(0, 1, "A"),)
    assert not Constraints() and Constraints(fixed={0: "O"})
    assert Constraints.from_dict({"spans": [{"first": 0, "last": 2, "type": "A", "weight": 1.5}]}).spans == (
        Span(0, 2, "A", 1.5),
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"fixed": {-1: "O"}}, "integer from 0 to 2..62, got -1"),
        ({"fixed": {10**5000: "O"}}, "got an integer of 16610 bits"),
        ({"fixed": {0: ""}}, "non-empty string"),
        ({"allowed": {0: []}}, "empty set"),
        ({"allowed": {0: "O"}}, "set or list"),
        ({"allowed": {0: {"O": 1}}}, "set or list"),
        ({"spans": [Span(3, 1, "A")]}, "ends before it begins"),
        ({"spans": [Span(0, 1, "A", 0.0)]}, "positive number"),
        ({"forbidden": [Span(0, 1, "A", -2.0)]}, "positive number"),
        ({"forbidden": [(0, 1)]}, "a span is Span"),
        ({"unbroken": [(2, 1)]}, "ends before it begins"),
        ({"scores": {0: {"O": math.nan}}}, "number from -1e.06 to 1e.06"),
        ({"scores": {0: {"O": -1e17}}}, "number from -1e.06 to 1e.06"),
        ({"scores": {0: {"O": 10**400}}}, "got an integer of 1329 bits"),
        ({"spans": [Span(0, 1, "A", 1e7)]}, "at most 1e.06"),
        ({"unbroken": [(0, 1, 10**400)]}, "at most 1e.06 .*an integer of 1329 bits"),
        ({"spans": "A"}, "must be a list"),
        ({"fixed": [("0", "O")]}, "dict keyed by token"),
    ],
)
def test_malformed_constraints_are_constraint_errors(kwargs, message):
    with pytest.raises(ConstraintError, match=message):
        Constraints(**kwargs)


def test_a_value_nested_too_deeply_to_show_is_still_a_constraint_error():
    label: list = []
    for _ in range(100_000):  # deeper than repr goes
        label = [label]
    with pytest.raises(ConstraintError, match="got a list nested too deeply to show"):
        Constraints(allowed={0: [label]})


@pytest.mark.parametrize(
    "data, message",
    [
        ({"fixed": {"01": "O"}}, "without leading zeros"),
        ({"fixed": {"1" * 5000: "O"}}, "got 5000 digits"),
        ({"fixed": {"x" * 5000: "O"}}, "got 'xxxx.*\\.\\.\\.$"),
    ],
)
def test_token_keys_of_the_dict_form_are_decimal_indices(data, message):
    with pytest.raises(ConstraintError, match=message):
        Constraints.from_dict(data)


@pytest.mark.parametrize(
    "constraints, error, message",
    [
        (Constraints(fixed={5: "O"}), ConstraintError, "names token 5, but the sentence has 5 tokens"),
        (Constraints(fixed={5: "O"}), ConstraintError, r"has 5 tokens \(0\.\.4\)"),
        (Constraints(spans=[Span(2, 7, "A")]), ConstraintError, "names token 7"),
        (Constraints(fixed={1: "B-C"}), ConstraintLabelError, "'B-C', which the model lacks"),
        (Constraints(scores={1: {"X": 1.0}}), ConstraintLabelError, "'X'"),
        (Constraints(forbidden=[Span(0, 0, "B-A")]), ConstraintLabelError, "names a type .NP., not a label"),
    ],
)
def test_constraints_that_do_not_fit_the_sentence_are_typed_errors(constraints, error, message):
    with pytest.raises(error, match=message) as raised:
        resolve(constraints, IOB2_LABELS, 5, sentence=3)
    assert "sentence 3" in str(raised.value)
    assert isinstance(raised.value, LabelError) == (error is ConstraintLabelError)


def test_spans_need_chunk_labels():
    with pytest.raises(ConstraintLabelError, match="not chunk labels"):
        resolve(Constraints(spans=[Span(0, 1, "NN")]), ("NN", "VB"), 3)
    with pytest.raises(ConstraintLabelError, match="not chunk labels"):
        resolve(Constraints(unbroken=[(0, 1)]), ("NN", "VB"), 3)
    assert resolve(Constraints(fixed={0: "NN"}), ("NN", "VB"), 3).chunks is None


def test_a_batch_needs_one_entry_per_sentence():
    with pytest.raises(ConstraintError, match="2 constraints for 3 sentences"):
        resolve_batch([None, None], [2, 2, 2], IOB2_LABELS, "predict")
    with pytest.raises(ArgumentTypeError, match="one Constraints"):
        resolve_batch(Constraints(), [2], IOB2_LABELS, "predict")
    with pytest.raises(ArgumentTypeError, match="constraints\\[0\\]"):
        resolve_batch(["O"], [2], IOB2_LABELS, "predict")
    assert resolve_batch([None, Constraints()], [2, 2], IOB2_LABELS, "predict") is None
    rules = resolve_batch([None, {"fixed": {"1": "O"}}], [2, 2], IOB2_LABELS, "predict")
    assert rules is not None and rules[0] is None and rules[1].source == Constraints(fixed={1: "O"})


def test_overlapping_weighted_spans_are_budgeted_before_the_lattice_is_built():
    import tracemalloc

    T = 200  # a forbidden chunk from every token to the last: 201 flags, 808,020 edges
    rng = np.random.default_rng(0)
    constraints = Constraints(forbidden=[Span(t, T - 1, "A", 1.0) for t in range(T)])
    tracemalloc.start()
    try:
        with pytest.raises(BudgetError, match="201 flags .*max_work"):
            fstcrf.decode_logits(rng.normal(size=(T, len(IOB2_LABELS))), IOB2_LABELS, "iob2", constraints=[constraints])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 * 2**20  # nothing of the lattice's size was allocated
    fewer = Constraints(forbidden=[Span(t, 9, "A", 1.0) for t in range(10)])
    fstcrf.decode_logits(rng.normal(size=(10, len(IOB2_LABELS))), IOB2_LABELS, "iob2", constraints=[fewer])


def test_a_token_past_a_short_sentence_is_named_in_words():
    for length, has in ((0, "has no tokens"), (1, r"has 1 token \(0\)")):
        with pytest.raises(ConstraintError, match=has):
            resolve(Constraints(fixed={1: "O"}), IOB2_LABELS, length, sentence=0)
