"""Constraints at a size a hostile caller chooses: many rules, duplicates, long
sentences, wide label sets.  The work stays linear in the rules and the tokens, rows
are shared and budgeted before they are built, and naming a clash takes a few
feasibility tests, stopping at the work budget with a clash still named."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import fstcrf
from fstcrf.engine import budget, constrained
from fstcrf.engine.constraints import Constraints, Span, resolve
from fstcrf.errors import BudgetError, InfeasibleError

from constraint_oracles import IOB2_LABELS, TOPOLOGIES

T = 64
#: Every range of 2 to 17 tokens of a 64-token sentence unbroken (888 rules), and two
#: fixed labels that put a chunk boundary between tokens 0 and 1.
MANY_RANGES = Constraints(unbroken=[(i, i + d) for d in range(1, 17) for i in range(T - d)], fixed={0: "B-A", 1: "B-B"})


def decoded(constraints: Constraints, length: int = T, labels=IOB2_LABELS):
    logits = np.random.default_rng(0).normal(size=(length, len(labels)))
    return fstcrf.decode_logits(logits, labels, "iob2", constraints=[constraints])


def test_a_clash_among_many_rules_takes_few_feasibility_tests(monkeypatch):
    calls = []
    counted = constrained.viterbi

    def counting(*args, **kwargs):
        calls.append(1)
        return counted(*args, **kwargs)

    monkeypatch.setattr(constrained, "viterbi", counting)
    with pytest.raises(InfeasibleError) as raised:
        decoded(MANY_RANGES)
    assert len(calls) < 100  # one test per rule made 890
    clash = [rule for rule in MANY_RANGES.hard_rules() if MANY_RANGES.describe(rule) in raised.value.clashing]
    assert len(clash) == len(raised.value.clashing) and "not reduced" not in str(raised.value)
    with pytest.raises(InfeasibleError):
        decoded(MANY_RANGES.only(clash))
    for rule in clash:  # every one is needed
        decoded(MANY_RANGES.only([other for other in clash if other != rule]))


def test_the_clash_search_stops_at_the_work_budget_still_naming_a_clash():
    with budget.limits(max_work=1000), pytest.raises(InfeasibleError) as raised:
        decoded(MANY_RANGES)
    message = str(raised.value)
    assert "not reduced further within the work budget" in message
    named = raised.value.clashing
    assert len(named) > constrained.SHOWN_RULES and f"({len(named) - constrained.SHOWN_RULES} more)" in message
    assert message.count(" unbroken") <= constrained.SHOWN_RULES
    with pytest.raises(InfeasibleError):  # what it names still clashes
        decoded(MANY_RANGES.only([rule for rule in MANY_RANGES.hard_rules() if MANY_RANGES.describe(rule) in named]))


def test_tokens_under_the_same_rules_share_one_transition_row():
    types = [f"T{i}" for i in range(60)]  # 121 labels, 7,501 edges
    labels = ["O"] + [f"{prefix}-{kind}" for kind in types for prefix in ("B", "I")]
    length = 2000
    tracemalloc.start()
    try:
        decoded(Constraints(unbroken=[(1600, length - 1)], spans=[Span(10, 1500, "T3")]), length, labels)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 60 * 2**20  # a row per token was 2,000 x 7,501 x 8 bytes (120 MB), twice
    with budget.limits(max_work=5_000), pytest.raises(BudgetError, match="transition rows"):
        decoded(Constraints(unbroken=[(0, length - 1)]), length, labels)


def test_rules_given_twice_are_one_rule():
    rules = resolve(
        Constraints(spans=[Span(0, 999, "A")] * 5000, unbroken=[(0, 999)] * 5000), IOB2_LABELS, 1000, sentence=0
    )
    assert rules.required == ((0, 999, 0),)
    keys = constrained.token_rule_keys(rules)
    assert len(set(keys.values())) == 1 and len(keys) == 999


def test_soft_ranges_sum_their_losses_per_token_and_nothing_outside_them():
    rules = resolve(
        Constraints(unbroken=[(0, 5, 0.1), (2, 9, 0.2), (2, 9, 0.2)], spans=[Span(12, 14, "B")]),
        IOB2_LABELS,
        16,
        sentence=0,
    )
    keys = constrained.token_rule_keys(rules)
    losses = {t: key[3] for t, key in keys.items()}
    assert losses[1] == pytest.approx(0.1) and losses[3] == pytest.approx(0.5) and losses[7] == pytest.approx(0.4)
    assert set(losses) == set(range(1, 10)) | {12, 13, 14, 15}
    assert losses[12] == 0.0 and keys[12][0] == frozenset({1}) and keys[13][1] and keys[15][2]


def test_viterbi_may_leave_a_sentence_without_a_path():
    rng = np.random.default_rng(1)
    topology = TOPOLOGIES["iob2 valid"]
    pot = fstcrf.Potentials(topology, rng.normal(size=(5, topology.num_states)), np.array([2, 3]), None)
    pot.emissions[1, topology.state_label != IOB2_LABELS.index("I-A")] = -np.inf  # I-A after token 0...
    pot.emissions[0, topology.state_label != IOB2_LABELS.index("B-B")] = -np.inf  # ... which is B-B
    with pytest.raises(InfeasibleError):
        fstcrf.viterbi(pot)
    best = fstcrf.viterbi(pot, allow_infeasible=True)
    assert best.scores[0] == -np.inf and (best.paths[:2] == -1).all()
    assert best.scores[1] == fstcrf.viterbi(pot.select([1])).scores[0]
