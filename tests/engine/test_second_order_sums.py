"""Forward-backward on second-order chains, whose states (b, c) are entered from the
consecutive states (a, b): the kernel sees the graph as complete bipartite blocks (the
states (a, b) for every a enter the states (b, c) for every c) and runs both passes
and the expected edge counts tile by tile, in four partial sums per state
(csrc/fstcrf_blocks.c); brute force over every label sequence is the oracle, and on
chains too wide to enumerate the log-domain numpy reference is."""

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import fstcrf
from fstcrf.engine import kernel, reference
from fstcrf.corpus.labels import chain_topology
from fstcrf.engine.topology import Topology
from oracles import BruteForce
from strategies import oracle_settings

#: Four to six tags: states leave by up to six edges, so all four partial sums are used.
TAGS = ["O", "B-NP", "I-NP", "B-VP", "I-VP", "B-PP"]


def random_chain(tags, lengths, seed):
    """(topology, potentials, forward_backward's result, token offsets [B+1]) of the
    second-order chain over ``tags`` with normal scores for sentences of ``lengths``."""
    topology = chain_topology(2, tags)
    rng = np.random.default_rng(seed)
    emissions = rng.normal(0.0, 2.0, (sum(lengths), topology.num_states))
    transitions = rng.normal(0.0, 2.0, topology.num_edges)
    pot = fstcrf.Potentials(topology, emissions, lengths, transitions)
    return topology, pot, fstcrf.forward_backward(pot), np.concatenate([[0], np.cumsum(lengths)])


@oracle_settings(25)
@given(st.integers(4, 6), st.lists(st.integers(1, 4), min_size=1, max_size=3), st.integers(0, 2**32 - 1))
def test_second_order_forward_backward_matches_bruteforce(num_tags, lengths, seed):
    topology, pot, result, offsets = random_chain(TAGS[:num_tags], lengths, seed)
    counts = np.zeros(topology.num_edges)
    for b, (first, last) in enumerate(zip(offsets[:-1], offsets[1:])):
        oracle = BruteForce(topology, pot.emissions[first:last], pot.transitions)
        assert math.isclose(result.log_z[b], oracle.log_z, rel_tol=1e-12)
        np.testing.assert_allclose(result.node_marginals[first:last], oracle.node_marginals, rtol=0, atol=1e-12)
        counts += oracle.edge_counts
    np.testing.assert_allclose(result.edge_counts, counts, rtol=0, atol=1e-12)


#: The 23 tags of CoNLL-2000 chunking.
CHUNK_TAGS = ["O"] + [f"{p}-{c}" for p in "BI" for c in "ADJP ADVP CONJP INTJ LST NP PP PRT SBAR UCP VP".split()]


@oracle_settings(12)
@given(st.integers(7, 23), st.lists(st.integers(1, 9), min_size=1, max_size=3), st.integers(0, 2**32 - 1))
def test_wide_second_order_chains_match_the_log_domain_reference(num_tags, lengths, seed):
    """Blocks of up to 23 sources and targets: every tile width of the passes (six, four,
    two and one column; four partial sums and their tail) and of the edge counts (eight,
    two and one source) is taken."""
    topology, pot, result, offsets = random_chain(CHUNK_TAGS[:num_tags], lengths, seed)
    S = topology.num_states
    counts = np.zeros((S, S))
    for b, (first, last) in enumerate(zip(offsets[:-1], offsets[1:])):
        log_z, marginals, edges = reference.forward_backward(pot, b)
        assert math.isclose(result.log_z[b], log_z, rel_tol=1e-12)
        np.testing.assert_allclose(result.node_marginals[first:last], marginals, rtol=0, atol=1e-12)
        counts += edges
    np.testing.assert_allclose(result.edge_counts, counts[topology.edge_src, topology.edge_dst], rtol=0, atol=1e-11)


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


def with_a_dead_end(topology):
    """The topology with one more state, entered from state 0 only and leaving to none:
    state 0 then leaves to other targets than the rest of its block, so the kernel
    finds no blocks and runs the untiled passes; with the new state's emissions -inf
    every sum gains only zero terms at its end, which leave it as it was."""
    S = topology.num_states
    return Topology(
        topology.labels,
        np.append(topology.state_label, 0),
        np.append(topology.edge_src, 0),
        np.append(topology.edge_dst, S),
        np.append(topology.start, False),
        np.append(topology.final, False),
    )


@oracle_settings(12)
@given(st.integers(4, 23), st.lists(st.integers(1, 12), min_size=1, max_size=3), st.integers(0, 2**32 - 1))
def test_tiled_passes_add_what_the_untiled_passes_add(num_tags, lengths, seed):
    """Bit for bit: the tiled passes (csrc/fstcrf_blocks.c) give the log Z, marginals and
    edge counts of the untiled ones (csrc/fstcrf_chain.c, fstcrf_marginals.c)."""
    topology = chain_topology(2, CHUNK_TAGS[:num_tags])
    wider = with_a_dead_end(topology)
    rng = np.random.default_rng(seed)
    S, E, n = topology.num_states, topology.num_edges, sum(lengths)
    emissions = rng.normal(0.0, 2.0, (n, S))
    transitions = rng.normal(0.0, 2.0, E)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    results = []
    for graph_topology, emit, trans in (
        (topology, emissions, transitions),
        (wider, np.hstack([emissions, np.full((n, 1), -np.inf)]), np.append(transitions, 0.0)),
    ):
        size = graph_topology.num_states
        scores = kernel.Scores(
            trans, np.where(graph_topology.start, 0.0, -np.inf), np.where(graph_topology.final, 0.0, -np.inf)
        )
        log_z, marginals, counts = np.empty(len(lengths)), np.empty((n, size)), np.zeros(len(trans))
        workspace = kernel.chain_workspace(graph_topology, 1, max(lengths))
        batch = kernel.Batch(offsets, np.ascontiguousarray(emit), None)
        kernel.forward_backward(kernel.Graph(graph_topology), scores, batch, log_z, marginals, counts, workspace)
        results.append((log_z, marginals[:, :S], counts[:E]))
    for tiled, untiled in zip(*results):
        assert np.array_equal(tiled, untiled)
