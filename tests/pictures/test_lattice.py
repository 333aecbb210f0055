"""Lattices hold exact posteriors: every node and per-position edge probability equals
brute-force enumeration (with one transition table, or one per token class), the edge
probabilities summed over the positions are forward-backward's expected edge counts,
and a model's lattice has its Viterbi path and marginals (a composed model's
components: the joint Viterbi path and the joint model's marginals)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fstcrf
from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.engine.inference import forward_backward
from fstcrf.engine.topology import iob2
from fstcrf.model.compose import load_any
from fstcrf.pictures.lattice import chain_lattice, gold_path, joint_lattices, position_posteriors
from oracles import BruteForce
from strategies import feasible_instances, oracle_settings

TEST = read_conll(DATA_DIR / "demo_test.txt")


def brute_force_edges(oracle: BruteForce, num_edges: int) -> np.ndarray:
    """float [T, E]: p(edge e into token t), summed over the enumerated paths."""
    edges = np.zeros((oracle.T, num_edges))
    for t in range(1, oracle.T):
        ids = oracle.edges[oracle.paths[:, t - 1], oracle.paths[:, t]]
        edges[t] = np.bincount(ids, weights=oracle.probabilities, minlength=num_edges)
    return edges


@oracle_settings(max_examples=150)
@given(feasible_instances(), st.booleans(), st.integers(0, 2**32 - 1))
def test_position_posteriors_equal_brute_force(instance, by_class, seed):
    pot, topology = instance.potentials(), instance.topology
    oracle = instance.oracle(0)
    if by_class:  # two transition tables, each token scored by one of them
        rng = np.random.default_rng(seed)
        table = np.stack([instance.transitions, rng.uniform(-3, 3, topology.num_edges)])
        token_class = rng.integers(0, 2, pot.num_tokens)
        pot = fstcrf.Potentials(topology, instance.emissions, None, table, instance.start, instance.final, token_class)
        oracle = BruteForce(topology, instance.emissions, table, instance.start, instance.final, token_class)
    node, edge = position_posteriors(pot)
    np.testing.assert_allclose(node, oracle.node_marginals, atol=1e-9)
    np.testing.assert_allclose(edge, brute_force_edges(oracle, topology.num_edges), atol=1e-9)
    np.testing.assert_allclose(edge[1:].sum(axis=1), 1.0, atol=1e-9)
    counts = forward_backward(pot).edge_counts
    np.testing.assert_allclose(edge.sum(axis=0), counts.sum(axis=0) if counts.ndim == 2 else counts, atol=1e-9)


def test_position_posteriors_take_one_sentence():
    pot = fstcrf.Potentials(iob2(["NP"]), np.zeros((5, 3)), [2, 3])
    with pytest.raises(fstcrf.ShapeError, match="one sentence's; the potentials hold 2"):
        position_posteriors(pot)


def by_label(marginals: np.ndarray, topology) -> np.ndarray:
    """State marginals [T, S] summed into label marginals [T, L]."""
    table = np.zeros((topology.num_states, topology.num_labels))
    table[np.arange(topology.num_states), topology.state_label] = 1.0
    return marginals @ table


@pytest.mark.parametrize("fixture", ["demo_chunker", "demo_order2_chunker", "demo_pos_tagger"])
def test_a_models_lattice_has_its_viterbi_path_and_marginals(fixture, request):
    model = load_any(request.getfixturevalue(fixture))
    for index in (0, 3, 11):
        sentence = TEST[index]
        lattice = chain_lattice(model, sentence)
        topology = lattice.topology
        assert lattice.tokens == tuple(sentence["word"])
        assert [topology.labels[topology.state_label[s]] for s in lattice.best] == model.predict([sentence])[0]
        np.testing.assert_allclose(by_label(lattice.node, topology), model.predict_marginals([sentence])[0], atol=1e-10)
        gold = sentence[model.target_]
        assert lattice.gold_labels == tuple(gold)
        assert [topology.labels[topology.state_label[s]] for s in lattice.gold] == gold


def test_a_composed_models_lattices_have_the_joint_path_and_marginals(demo_joint):
    joint = load_any(demo_joint)
    for index in (0, 5):
        sentence = TEST[index]
        lattices = joint_lattices(joint, sentence)
        predicted = joint.predict([sentence])
        marginals = joint.predict_marginals([sentence])
        assert [lattice.name for lattice in lattices] == list(joint.targets)
        for k, lattice in enumerate(lattices):
            topology = lattice.topology
            assert lattice.edge is None
            assert [topology.labels[topology.state_label[s]] for s in lattice.best] == predicted[k][0]
            np.testing.assert_allclose(by_label(lattice.node, topology), marginals[k][0], atol=1e-10)


def test_a_gold_path_the_topology_forbids_is_none():
    topology = iob2(["NP"])
    assert gold_path(topology, ["B-NP", "I-NP", "O"]).tolist() == [1, 2, 0]
    assert gold_path(topology, ["I-NP", "O"]) is None  # IOB2 starts no chunk with I-
    assert gold_path(topology, ["B-VP", "O"]) is None  # a label the topology lacks
