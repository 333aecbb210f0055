"""The direct construction of every standard topology equals the one pynini built.

The oracle is fstcrf.engine.topology as of PYNINI_TOPOLOGY (the last commit where
every topology was compiled with pynini: history acceptors as pynini.Fst,
intersection by pynini.intersect), read from git.  For random label sets the two
give the same arrays, state for state and edge for edge, so weights and results
are bit-identical; the languages are also compared by pynini itself (equivalent
after determinisation, same number of states after minimisation)."""

from needs_pynini import pynini  # the oracle: the module is skipped without it

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstcrf.engine import topology as direct
from fstcrf.engine.acceptor import Acceptor, intersect
from history import module_at
from strategies import pynini_acceptors


PYNINI_TOPOLOGY = "28dbb5281b3cf6658def068bb40946e53cee6b2f"


@pytest.fixture(scope="module")
def reference():
    """fstcrf.engine.topology as of PYNINI_TOPOLOGY, imported from git."""
    return module_at(PYNINI_TOPOLOGY, "fstcrf/engine/topology.py", "fstcrf.engine.topology_by_pynini", "fstcrf.engine")


def assert_same(built, expected):
    assert built.labels == expected.labels and built.name == expected.name
    for name in ("state_label", "edge_src", "edge_dst", "start", "final"):
        np.testing.assert_array_equal(getattr(built, name), getattr(expected, name), err_msg=name)
    assert built.state_names == expected.state_names


def assert_same_language(built, expected_fst):
    """pynini's view: equivalent languages, equal minimal state counts."""
    mine, theirs = pynini.determinize(built.acceptor).minimize(), pynini.determinize(expected_fst).minimize()
    assert pynini.equivalent(mine, theirs)
    assert mine.num_states() == theirs.num_states()


labels = st.lists(st.sampled_from([f"t{i}" for i in range(9)]), min_size=1, max_size=6, unique=True)
chunk_types = st.lists(st.sampled_from(["NP", "VP", "PP", "ADJP", "X"]), min_size=1, max_size=4, unique=True)


@settings(max_examples=30, deadline=None)
@given(labels, st.integers(1, 3), st.booleans())
def test_kth_order_equals_pynini(reference, names, order, padded):
    pad = names[0] if padded else None
    built, expected = direct.kth_order(names, order, pad), reference.kth_order(names, order, pad)
    assert_same(built, expected)
    assert_same_language(built, expected.acceptor)


@settings(max_examples=30, deadline=None)
@given(labels)
def test_first_order_equals_pynini(reference, names):
    built, expected = direct.first_order(names), reference.first_order(names)
    assert_same(built, expected)
    assert_same_language(built, expected.acceptor)


@settings(max_examples=30, deadline=None)
@given(chunk_types, st.sampled_from(["iob2", "bioes"]))
def test_scheme_validity_equals_pynini(reference, types_, scheme):
    built, expected = getattr(direct, scheme)(types_), getattr(reference, scheme)(types_)
    assert_same(built, expected)
    assert_same_language(built, expected.acceptor)


@settings(max_examples=30, deadline=None)
@given(chunk_types, st.data())
def test_second_order_equals_pynini(reference, types_, data):
    tags = list(direct.iob2_labels(types_))
    order = data.draw(st.permutations(tags))  # the tags in any order
    built, expected = direct.second_order(order), reference.second_order(order)
    assert_same(built, expected)
    assert_same_language(built, expected.acceptor)


def test_second_order_over_the_conll2000_tags_equals_pynini(reference):
    types_ = ["ADJP", "ADVP", "CONJP", "INTJ", "LST", "NP", "PP", "PRT", "SBAR", "UCP", "VP"]
    tags = list(direct.iob2_labels(types_))
    assert_same(direct.second_order(tags), reference.second_order(tags))


def acceptors(num_labels: int):
    """A random pynini acceptor over keys 1..num_labels (epsilons and non-determinism allowed)."""
    return pynini_acceptors((0, num_labels), max_states=5, max_arcs=14)


@settings(max_examples=60, deadline=None)
@given(chunk_types, st.sampled_from(["first", "second"]), st.data())
def test_intersection_with_any_acceptor_equals_pynini(reference, types_, base, data):
    labels_ = direct.iob2_labels(types_)
    fsa = data.draw(acceptors(len(labels_)))
    built_base = direct.first_order(labels_) if base == "first" else direct.second_order(labels_)
    expected_base = reference.first_order(labels_) if base == "first" else reference.second_order(labels_)
    outcomes = []
    for module, topology in ((direct, built_base), (reference, expected_base)):
        try:
            outcomes.append(module.intersect(topology, fsa.copy()))
        except Exception as error:  # both must refuse alike (an empty language)
            outcomes.append(type(error))
    if isinstance(outcomes[0], type) or isinstance(outcomes[1], type):
        assert outcomes[0] == outcomes[1]
        return
    assert_same(*outcomes)
    assert_same_language(outcomes[0], outcomes[1].acceptor)


@pytest.mark.parametrize("grammar", ["iob2", "at_most_one", "at_least_one", "second_order"])
def test_intersection_with_shipped_grammars_equals_pynini(reference, grammar):
    from fstcrf.grammar import compile_grammar, load_grammar

    labels_ = direct.iob2_labels(["NP", "VP", "PP"])
    params = {"X": "NP"} if grammar.startswith("at_") else {}
    acceptor = compile_grammar(load_grammar(grammar), labels_, params=params)
    for base in ("first_order", "second_order"):
        built = direct.intersect(getattr(direct, base)(labels_), acceptor.copy())
        expected = reference.intersect(getattr(reference, base)(labels_), acceptor.copy())
        assert_same(built, expected)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_array_intersection_numbers_states_as_openfst(data):
    """The product of two deterministic acceptors (the left one any deterministic
    machine, not only a topology's) has pynini.intersect's states, arcs and order."""
    from fstcrf.engine.bounded import as_arrays, to_fst

    left = pynini.determinize(pynini.rmepsilon(data.draw(acceptors(4))))
    right = pynini.determinize(pynini.rmepsilon(data.draw(acceptors(4)))).minimize()
    expected = pynini.intersect(left, pynini.arcsort(right, "ilabel"))
    expected.connect()
    built = intersect(as_arrays(left), as_arrays(right))
    theirs = as_arrays(expected)
    assert (built.num_states, built.start) == (theirs.num_states, theirs.start)
    for name in ("final", "arc_src", "arc_key", "arc_dst"):
        np.testing.assert_array_equal(getattr(built, name), getattr(theirs, name), err_msg=name)
    assert to_fst(built).num_states() == expected.num_states()


def test_a_non_deterministic_array_acceptor_is_refused():
    two_ways = Acceptor(2, 0, [False, True], [0, 0], [1, 1], [1, 0])
    with pytest.raises(direct.TopologyError, match="deterministic"):
        direct.from_acceptor(two_ways, ["a"])
    with pytest.raises(direct.TopologyError, match="deterministic"):
        direct.intersect(direct.first_order(["a"]), two_ways)
