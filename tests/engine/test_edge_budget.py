"""Budgets of edges, dense tables and joint state spaces (issue 62): each refusal is a
BudgetError naming the size and the option that raises the limit, raised before
anything of that size is built; what fits is built exactly as before."""

from __future__ import annotations

import time

import numpy as np
import pytest

import fstcrf
from fstcrf.engine import budget
from fstcrf.engine.joint import JointPotentials, JointSpace, tuple_labels
from fstcrf.engine.topology import (
    Topology,
    bioes,
    check_labels,
    first_order,
    iob2,
    iob2_labels,
    kth_order,
)
from fstcrf.errors import BudgetError, InfeasibleError, LabelError
from fstcrf.features.encoding import TransitionWeights

EDGES_REFUSED = r"more than the budget of [\d,]+ \(max_edges\); raise it with --max-edges N"


def _refused_quickly(call, match: str) -> BudgetError:
    started = time.perf_counter()
    with pytest.raises(BudgetError, match=match) as raised:
        call()
    assert time.perf_counter() - started < 1.0
    return raised.value


def test_twenty_thousand_logit_labels_are_refused_before_their_edges_are_built():
    types = [f"T{i}" for i in range(10_000)]
    labels = iob2_labels(types)
    error = _refused_quickly(
        lambda: fstcrf.decode_logits(np.zeros((2, len(labels))), list(labels), scheme="iob2"), EDGES_REFUSED
    )
    assert "first-order topology over 20,001 labels" in str(error) and "400,040,001 edges" in str(error)
    _refused_quickly(lambda: iob2(types), r"20,001 labels would need about 200,050,001 edges")


def test_label_checks_are_linear():
    labels = [f"L{i}" for i in range(50_000)]
    started = time.perf_counter()
    assert check_labels(labels) == tuple(labels)
    with pytest.raises(LabelError, match="duplicate labels: L7, L9$"):
        check_labels(labels + ["L9", "L7"])
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize(
    "build",
    [
        lambda: first_order([f"L{i}" for i in range(9)]),
        lambda: iob2(["NP", "VP", "PP"]),
        lambda: bioes(["PER", "LOC"]),
        lambda: kth_order(["a", "b", "c"], 2),
        lambda: kth_order(["a", "b", "c"], 3, pad="a"),
    ],
)
def test_edge_count_is_exact_at_the_limit(build):
    """The budget counts the edges a builder makes: a limit of exactly that many
    builds it, one fewer refuses it (builders that restrict a larger topology, such as
    with_scheme and second_order, need the larger one's edges)."""
    edges = build().num_edges
    with budget.limits(max_edges=edges):
        assert build().num_edges == edges
    with budget.limits(max_edges=edges - 1), pytest.raises(BudgetError, match=r"\(max_edges\)"):
        build()


def test_scheme_rules_allow_the_pairs_of_their_label_sequences():
    """The vectorised scheme rules against the schemes' definitions, pair by pair."""
    topology = iob2(["X", "Y"])
    names = topology.labels
    pairs = {
        (names[topology.state_label[a]], names[topology.state_label[b]])
        for a, b in zip(topology.edge_src, topology.edge_dst)
    }
    for before in names:
        for after in names:
            inside_allowed = after[0] != "I" or before[2:] == after[2:] and before != "O"
            assert ((before, after) in pairs) == inside_allowed, (before, after)
    starts = {names[topology.state_label[s]] for s in np.flatnonzero(topology.start)}
    assert starts == {"O", "B-X", "B-Y"}
    segments = bioes(["X"])
    allowed = {
        (segments.labels[segments.state_label[a]], segments.labels[segments.state_label[b]])
        for a, b in zip(segments.edge_src, segments.edge_dst)
    }
    assert allowed == {
        (a, b)
        for a in segments.labels
        for b in segments.labels
        if (a[0] in "BI" and b in ("I-X", "E-X")) or (a[0] not in "BI" and b[0] in "OBS")
    }


def test_dense_tables_over_states_are_budgeted():
    topology = first_order(["a", "b", "c"])
    with budget.limits(max_edges=8), pytest.raises(BudgetError, match=r"edge ids of topology.*3 x 3.*9 cells"):
        topology.edge_ids
    assert topology.edge_ids.shape == (3, 3)
    with budget.limits(max_edges=49 * 3 - 1), pytest.raises(BudgetError, match=r"transition weights.*3 x 49"):
        TransitionWeights(49, 2)
    assert TransitionWeights(49, 2).size == 49 * 3


def test_the_torch_layer_of_sixty_thousand_tags_is_refused():
    from needs_torch import torch  # noqa: F401  (skips this test without torch)

    from fstcrf.torch import CRF

    error = _refused_quickly(lambda: CRF(60_000), EDGES_REFUSED)
    assert "60,000 labels" in str(error)


# -- joint state spaces and products ---------------------------------------------------


def _components(*label_counts: int) -> list[Topology]:
    return [first_order([f"c{k}_{i}" for i in range(count)]) for k, count in enumerate(label_counts)]


def test_joint_lengths_are_checked_without_the_dense_product():
    """Two part-of-speech taggers and a chunker under a per-token joint mask (the
    issue's 1764 x 1764 x 400 product of 1.2 billion edges): feasibility is followed
    factorised, and the product is never built."""
    components = _components(42, 42, 20)
    allowed = np.ones(42 * 42 * 20, dtype=bool)
    allowed[::3] = False
    space = JointSpace(components, allowed)
    space.check_lengths(np.array([1, 5, 40]))
    assert "_product" not in vars(space)
    with pytest.raises(BudgetError, match=r"1764 x 1764 x 400 edges.*1,244,678,400 edges.*--max-edges"):
        space.product


@pytest.mark.parametrize("seed", range(12))
def test_factorised_feasibility_matches_the_product(seed):
    rng = np.random.default_rng(seed)
    components = []
    for k in range(int(rng.integers(2, 4))):
        S = int(rng.integers(1, 4))
        mask = rng.random((S, S)) < 0.5
        src, dst = np.nonzero(mask)
        start, final = rng.random(S) < 0.6, rng.random(S) < 0.6
        start[0] = final[-1] = True
        components.append(Topology([f"l{k}_{s}" for s in range(S)], np.arange(S), src, dst, start, final))
    P = int(np.prod([t.num_states for t in components]))
    allowed = rng.random(P) < 0.7
    if not allowed.any():
        allowed[0] = True
    space = JointSpace(components, allowed)
    for length in range(1, 12):
        assert space.feasibility.is_feasible(length) == space.product.is_feasible(length), length
    infeasible = [n for n in range(1, 12) if not space.product.is_feasible(n)]
    if infeasible:
        with pytest.raises(InfeasibleError, match="the joint state space allows no label sequence"):
            space.check_lengths(np.array(infeasible[:1]))


def test_joint_states_and_labels_are_budgeted_in_linear_time():
    sizes = (42, 42, 42, 42, 42, 20)  # six components: 2.6 billion joint labels
    labels = [[f"c{k}_{i}" for i in range(size)] for k, size in enumerate(sizes)]
    error = _refused_quickly(lambda: tuple_labels(labels), r"the joint labels \(42 x 42 x 42 x 42 x 42 x 20\)")
    assert "2,613,824,640 states" in str(error) and "--max-states N" in str(error)
    with budget.limits(max_states=1000):
        _refused_quickly(lambda: JointSpace(_components(42, 42, 42, 20)), r"joint state space.*1,481,760 states")


def test_constrained_products_and_joint_scores_are_budgeted():
    from fstcrf.engine.acceptor import Acceptor

    components = _components(3, 2)
    labels = tuple_labels([t.labels for t in components])
    keys = np.arange(1, len(labels) + 1)
    two_states = Acceptor(
        2, 0, [True, True], np.repeat([0, 1], len(keys)), np.tile(keys, 2), np.repeat([1, 0], len(keys))
    )
    edges = 9 * 4 * 2  # the product's edges, from each of the constraint's two states
    with budget.limits(max_edges=edges - 1), pytest.raises(BudgetError, match=r"under the joint constraint.*72 edges"):
        JointSpace(components, constraint=two_states)
    assert JointSpace(components, constraint=two_states).decoder.startswith("product")
    space = JointSpace(components)
    with budget.limits(max_work=6 * 10 - 1), pytest.raises(BudgetError, match=r"joint scores of 10 tokens x 6"):
        JointPotentials(space, fstcrf.engine.joint.joint_emissions(space, [np.zeros((10, 3)), np.zeros((10, 2))]))
