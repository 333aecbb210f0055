"""Pictures of automata read back by Graphviz are the automata: a grammar's picture,
its states, start, finals and arc label sets (read back with the grammar language
itself), accepts exactly the grammar's language with as few states as pynini's
minimisation leaves; a topology's picture has its states, names and transitions; an
automaton over the limit is refused with its size and the option that raises it."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fstcrf.engine.acceptor import from_arcs
from fstcrf.engine.topology import bioes_labels, first_order, iob2, iob2_labels, kth_order, second_order
from fstcrf.errors import PictureError
from fstcrf.grammar import constrain, load_grammar, parse_grammar
from fstcrf.pictures.automata import acceptor_dot, check_size, grammar_dot, topology_dot
from drawn import read_picture
from strategies import oracle_settings

#: Chunk types with characters that the grammar language and dot both treat as syntax.
TYPES = st.lists(st.text('abNP"\\{}[]*é.#^,', min_size=1, max_size=3), min_size=1, max_size=3, unique=True)


def label_keys(text: str, labels) -> set[int]:
    """The label keys an arc's label set names, read by compiling it as a grammar rule."""
    from fstcrf.engine.bounded import as_arrays
    from fstcrf.grammar import compile_grammar

    expression = text if text == "." or text.startswith("[") else f"[{text}]"
    acceptor = as_arrays(compile_grammar(parse_grammar(f"start = {expression} ;"), labels))
    leaving = acceptor.arc_src == acceptor.start
    assert acceptor.final[acceptor.arc_dst[leaving]].all()
    return set(acceptor.arc_key[leaving].tolist())


def picture_acceptor(dot_text: str, labels):
    """The acceptor a grammar picture shows, as pynini reads it, and its alphabet legend."""
    from fstcrf.engine.bounded import to_fst

    picture = read_picture(dot_text)
    states = sorted(int(name[1:]) for name in picture.nodes if name.startswith("q"))
    assert states == list(range(len(states)))
    final = [picture.nodes[f"q{q}"].attributes["peripheries"] == "2" for q in states]
    (start,) = [int(head[1:]) for tail, head, _ in picture.arcs if tail == "start"]
    pairs = [(tail, head) for tail, head, _ in picture.arcs if tail != "start"]
    assert len(pairs) == len(set(pairs)), "the arcs between two states are drawn as one"
    arcs = [
        (int(tail[1:]), key, int(head[1:]))
        for tail, head, arc in picture.arcs
        if tail != "start"
        for key in label_keys(" ".join(arc.text), labels)
    ]
    fsa = from_arcs(len(states), start, final, arcs)
    return to_fst(fsa), picture.nodes["alphabet"].text


def check_grammar_picture(grammar, labels, rule="start", params=None):
    from fstcrf.grammar import compile_grammar

    import pynini

    drawn, legend = picture_acceptor(grammar_dot(grammar, labels, rule, params), labels)
    compiled = compile_grammar(grammar, labels, rule, params)
    assert pynini.equivalent(drawn, compiled)
    assert drawn.num_states() == pynini.determinize(compiled).minimize().num_states()
    assert legend[0] == f"labels ({len(labels)}):"
    words = " ".join(legend[1:]).split(" ")
    assert [label_keys(word, labels) for word in words] == [{key} for key in range(1, len(labels) + 1)]


@pytest.mark.pynini
@oracle_settings(max_examples=12)
@given(TYPES, st.sampled_from(["iob2", "bioes"]))
def test_a_scheme_grammars_picture_is_its_minimal_acceptor(types, scheme):
    labels = iob2_labels(types) if scheme == "iob2" else bioes_labels(types)
    check_grammar_picture(load_grammar(scheme), labels)


@pytest.mark.pynini
@pytest.mark.parametrize(
    "name, rule", [("at_most_one", "start"), ("at_least_one", "start"), ("at_most_one", "other"), ("iob2", "chunk")]
)
def test_parameterised_and_inner_rules_are_drawn_as_compiled(name, rule):
    params = {"X": "NP"} if name.startswith("at_") else None
    check_grammar_picture(load_grammar(name), iob2_labels(["NP", "VP", "PP"]), rule, params)


@pytest.mark.pynini
def test_quoted_labels_and_complements_read_back():
    labels = ["O", 'q"x', "a\\b", "[^", ".", "any", "B-NP", "I-NP"]
    grammar = parse_grammar('start = "q\\"x" ("a\\\\b" | [^O "."])* "any"? . ;')
    check_grammar_picture(grammar, labels)


@pytest.mark.pynini
def test_the_caption_names_the_grammar_rule_parameters_and_size():
    dot_text = grammar_dot(load_grammar("at_most_one"), iob2_labels(["NP"]), params={"X": "NP"})
    assert read_picture(dot_text).title == ["at_most_one.fgr, rule start with X = NP", "2 states, 5 arcs"]


@pytest.mark.pynini
def test_a_grammar_over_the_limit_is_refused_with_its_size_and_the_option():
    with pytest.raises(PictureError, match=r"has 4 states, more than the 3 .*--max-states 4"):
        grammar_dot(load_grammar("iob2"), iob2_labels(["NP", "VP", "PP"]), max_states=3)


def topologies():
    labels = ["O", "B-NP", "I-NP"]
    yield first_order(labels)
    yield iob2(["NP", "VP"])
    yield second_order(labels)
    yield kth_order(["a", "b"], 3)


@pytest.mark.parametrize("topology", list(topologies()), ids=lambda topology: topology.name)
def test_a_topologys_picture_has_its_states_names_and_transitions(topology):
    check_topology_picture(topology)


@pytest.mark.pynini
def test_a_topology_under_a_grammar_is_drawn_with_its_product_states():
    topology = constrain(first_order(iob2_labels(["NP"])), load_grammar("at_most_one"), params={"X": "NP"})
    check_topology_picture(topology)


def check_topology_picture(topology):
    picture = read_picture(topology_dot(topology, "model"))
    S = topology.num_states
    assert picture.title == ["model: topology " + topology.name, f"{S} states, {topology.num_edges} edges"]
    assert [picture.nodes[f"q{q}"].text for q in range(S + 1)] == [["start"]] + [[n] for n in topology.state_names]
    assert [picture.nodes[f"q{q + 1}"].attributes["peripheries"] == "2" for q in range(S)] == topology.final.tolist()
    arcs = [(tail, head) for tail, head, arc in picture.arcs if not arc.text]
    assert len(arcs) == len(picture.arcs), "a topology's arcs carry no labels: the states name them"
    expected = {("start", "q0")} | {("q0", f"q{s + 1}") for s in np.flatnonzero(topology.start)}
    expected |= {(f"q{a + 1}", f"q{b + 1}") for a, b in zip(topology.edge_src.tolist(), topology.edge_dst.tolist())}
    assert sorted(arcs) == sorted(expected)


def test_a_topology_over_the_limit_is_refused_with_its_size_and_the_option():
    with pytest.raises(PictureError, match=r"the topology of m\.model has 8 states, more than the 7 .*--max-states 8"):
        topology_dot(second_order(["O", "B-NP", "I-NP"]), "m.model", max_states=7)
    topology_dot(second_order(["O", "B-NP", "I-NP"]), "m.model", max_states=8)


def test_check_size_passes_at_the_limit():
    check_size(5, "x", 5)
    with pytest.raises(PictureError, match="x has 6 states"):
        check_size(6, "x", 5)


def test_epsilon_arcs_are_drawn_apart_and_an_empty_acceptor_has_no_start_arrow():
    fsa = from_arcs(2, 0, [False, True], [(0, 1, 1), (0, 0, 1), (1, 2, 1)])
    picture = read_picture(acceptor_dot(fsa, "eps"))
    labels = sorted(" ".join(arc.text) for tail, head, arc in picture.arcs if tail == "q0" and head == "q1")
    assert labels == ["1", "ε"]  # keys without symbols are shown as numbers
    empty = from_arcs(1, -1, [False], [])
    assert "start" not in read_picture(acceptor_dot(empty, "nothing")).nodes
