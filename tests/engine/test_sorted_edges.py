"""A topology whose edges come already in (destination, source) order is not sorted
again, and is the same topology as the one the sorting path builds.

The oracle is fstcrf.engine.topology as of SORTING_TOPOLOGY (the last version that
sorted every topology's edges, and built first_order from the complete
acceptor), read from git: for random small edge sets, given in order or shuffled,
the two give the same arrays."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstcrf.engine.acceptor import from_arcs
from fstcrf.engine.topology import Topology, first_order, from_acceptor, kth_order
from fstcrf.errors import TopologyError
from history import module_at


SORTING_TOPOLOGY = "54872f82c6847e1ace8eec1a5b1623db30a51164"

ARRAYS = ("state_label", "edge_src", "edge_dst", "start", "final", "in_ptr", "out_ptr", "out_dst", "out_edge")


@pytest.fixture(scope="module")
def sorting():
    """fstcrf.engine.topology as of SORTING_TOPOLOGY, imported from git."""
    return module_at(SORTING_TOPOLOGY, "fstcrf/engine/topology.py", "fstcrf.engine.topology_sorting", "fstcrf.engine")


def assert_same(built, expected):
    assert built.labels == expected.labels and built.name == expected.name
    for name in ARRAYS:
        np.testing.assert_array_equal(getattr(built, name), getattr(expected, name), err_msg=name)
        assert getattr(built, name).dtype == getattr(expected, name).dtype, name
    assert built.state_names == expected.state_names


@st.composite
def edge_sets(draw):
    """(labels, state_label, edge pairs (dst, src) in order, start, final) of a random small topology."""
    num_labels = draw(st.integers(1, 4))
    num_states = draw(st.integers(1, 6))
    state_label = draw(st.lists(st.integers(0, num_labels - 1), min_size=num_states, max_size=num_states))
    pairs = draw(st.sets(st.tuples(st.integers(0, num_states - 1), st.integers(0, num_states - 1))))
    start = draw(st.lists(st.booleans(), min_size=num_states, max_size=num_states))
    final = draw(st.lists(st.booleans(), min_size=num_states, max_size=num_states))
    return [f"l{i}" for i in range(num_labels)], state_label, sorted(pairs), start, final


@settings(max_examples=60, deadline=None)
@given(edge_sets(), st.randoms(use_true_random=False))
def test_edges_in_order_or_shuffled_give_the_sorting_paths_topology(sorting, edges, random):
    labels, state_label, pairs, start, final = edges
    shuffled = random.sample(pairs, len(pairs))
    expected = sorting.Topology(labels, state_label, [s for _, s in pairs], [d for d, _ in pairs], start, final)
    for given_pairs in (pairs, shuffled):
        src = np.array([s for _, s in given_pairs], dtype=np.int64)
        dst = np.array([d for d, _ in given_pairs], dtype=np.int64)
        assert_same(Topology(labels, state_label, src, dst, start, final), expected)


@settings(max_examples=30, deadline=None)
@given(edge_sets(), st.randoms(use_true_random=False))
def test_a_repeated_edge_is_refused_in_order_or_not(edges, random):
    labels, state_label, pairs, start, final = edges
    if not pairs:
        return
    repeated = sorted(pairs + [random.choice(pairs)])
    for given_pairs in (repeated, random.sample(repeated, len(repeated))):
        with pytest.raises(TopologyError, match="duplicate edges"):
            Topology(labels, state_label, [s for _, s in given_pairs], [d for d, _ in given_pairs], start, final)


def complete_acceptor(num_labels: int):
    """Every label after every label: state 0 the start, state i + 1 after label i."""
    keys = range(1, num_labels + 1)
    arcs = [(source, key, key) for source in range(num_labels + 1) for key in keys]
    return from_arcs(num_labels + 1, 0, [False] + [True] * num_labels, arcs)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from([f"t{i}" for i in range(12)]), min_size=1, max_size=8, unique=True))
def test_first_order_built_from_its_arrays_equals_the_complete_acceptors(sorting, labels):
    assert_same(first_order(labels), sorting.first_order(labels))
    assert_same(first_order(labels), from_acceptor(complete_acceptor(len(labels)), labels, name="first-order"))
    assert_same(kth_order(labels, 1), sorting.kth_order(labels, 1))
