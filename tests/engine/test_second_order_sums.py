"""Forward-backward on second-order chains, whose states (b, c) are entered from the
consecutive states (a, b): the kernel reads those rows without their indices and runs
the backward pass by entering edges (csrc/fstcrf_chain.c, fc__plan_lanes), in four
partial sums per state; brute force over every label sequence is the oracle."""

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import fstcrf
from fstcrf.engine import kernel
from fstcrf.corpus.labels import chain_topology
from oracles import BruteForce
from strategies import oracle_settings

#: Four to six tags: states leave by up to six edges, so all four partial sums are used.
TAGS = ["O", "B-NP", "I-NP", "B-VP", "I-VP", "B-PP"]


@oracle_settings(25)
@given(st.integers(4, 6), st.lists(st.integers(1, 4), min_size=1, max_size=3), st.integers(0, 2**32 - 1))
def test_second_order_forward_backward_matches_bruteforce(num_tags, lengths, seed):
    topology = chain_topology(2, TAGS[:num_tags])
    rng = np.random.default_rng(seed)
    S, E = topology.num_states, topology.num_edges
    emissions = rng.normal(0.0, 2.0, (sum(lengths), S))
    transitions = rng.normal(0.0, 2.0, E)
    pot = fstcrf.Potentials(topology, emissions, lengths, transitions)
    result = fstcrf.forward_backward(pot)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    counts = np.zeros(E)
    for b, (first, last) in enumerate(zip(offsets[:-1], offsets[1:])):
        oracle = BruteForce(topology, emissions[first:last], transitions)
        assert math.isclose(result.log_z[b], oracle.log_z, rel_tol=1e-12)
        np.testing.assert_allclose(result.node_marginals[first:last], oracle.node_marginals, rtol=0, atol=1e-12)
        counts += oracle.edge_counts
    np.testing.assert_allclose(result.edge_counts, counts, rtol=0, atol=1e-12)


@oracle_settings(40)
@given(
    st.integers(4, 6),
    st.lists(st.integers(1, 5), min_size=1, max_size=3),
    st.integers(0, 2**32 - 1),
    st.floats(0.0, 1.0),
)
def test_emission_classes_share_exps_with_the_same_results(num_tags, lengths, seed, own_share):
    """Emission classes (each state's label) are a hint: equal scores of a class share
    one exp.  Scores built as in training, a label's score plus a state's own where
    it has one (share ``own_share`` of the states), give the same log Z, marginals and
    edge counts bit for bit with and without the hint."""
    topology = chain_topology(2, TAGS[:num_tags])
    rng = np.random.default_rng(seed)
    S, E, n = topology.num_states, topology.num_edges, sum(lengths)
    labels = topology.state_label.astype(np.int32)
    # whole numbers: one score recurs at other tokens, under other maxima
    emissions = rng.integers(-3, 4, (n, num_tags)).astype(float)[:, labels]
    own = rng.random((n, S)) < own_share
    emissions[own] += rng.integers(-2, 3, int(own.sum()))
    emissions[rng.random((n, S)) < 0.1] = -np.inf  # states a token may not take
    transitions = rng.normal(0.0, 2.0, E)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    graph = kernel.Graph(topology)
    batch = kernel.Batch(offsets, np.ascontiguousarray(emissions), None)
    start = np.where(topology.start, 0.0, -np.inf)
    final = np.where(topology.final, 0.0, -np.inf)
    results = []
    for emit_class in (None, labels):
        scores = kernel.Scores(transitions, start, final, emit_class)
        log_z, marginals, counts = np.empty(len(lengths)), np.empty((n, S)), np.zeros(E)
        workspace = kernel.chain_workspace(topology, 1, max(lengths))
        kernel.forward_backward(graph, scores, batch, log_z, marginals, counts, workspace, allow_infeasible=True)
        results.append((log_z, marginals, counts))
    for plain, hinted in zip(*results):
        assert np.array_equal(plain, hinted)
