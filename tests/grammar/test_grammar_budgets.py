"""The work a grammar's compilation does and its budgets: label classes try only the
labels their literal prefix allows, the arcs of a repetition, of a determinisation
and of the branches of ``any`` are budgeted (max_edges) before they are built, with
lower bounds checked against what pynini builds, and a grammar's topology is built
from its compiled acceptor as it is (no second determinisation)."""

from needs_pynini import pynini  # skips the module without pynini

import itertools
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstcrf.engine import bounded, budget
from fstcrf.engine.topology import first_order, intersect, iob2, iob2_labels, second_order
from fstcrf.errors import BudgetError
from fstcrf.grammar import accepts, compile_grammar, constrain, load_grammar, parse_grammar
from fstcrf.grammar.compiler import determinised_arcs, star_arcs
from strategies import pynini_acceptors

CHUNK_LABELS = iob2_labels(["NP", "VP", "PP"])


def joint_labels(components: int) -> list[str]:
    """The joint labels of ``components`` IOB2 NP taggers ("B-NP/O/I-NP", ...)."""
    return ["/".join(parts) for parts in itertools.product(["B-NP", "I-NP", "O"], repeat=components)]


def num_arcs(fst: pynini.Fst) -> int:
    return sum(fst.num_arcs(state) for state in fst.states())


# -- a grammar's topology -----------------------------------------------------------

GRAMMARS = [
    "start = !(.* B-NP .{4}) ;",
    "start = (O | B-NP I-NP*)* - (.* O O .*) ;",
    "start = any T: (O | B-{T} I-{T}*)* ;",
    "start = all T: !(.* B-{T} O .*) ;",
    "start = [B-*] .* & .* [I-*] ;",
    "start = (B-NP | O B-VP+ | [I-*]{2,4})* ;",
]


@pytest.mark.parametrize("text", GRAMMARS)
@pytest.mark.parametrize("base", [first_order, iob2, second_order])
def test_a_grammar_topology_is_built_from_its_compiled_acceptor_as_it_is(monkeypatch, text, base):
    """Its compiled acceptor is minimal and deterministic already: determinising and
    minimising it again (seconds for 10^5 states, before a product over the budget
    was refused) is skipped, and the topology is the one the pynini route builds."""
    grammar = parse_grammar(text)
    topology = (
        first_order(CHUNK_LABELS)
        if base is first_order
        else base(CHUNK_LABELS if base is second_order else ["NP", "VP", "PP"])
    )
    expected = intersect(topology, compile_grammar(grammar, topology.labels), name="expected")

    def minimised_again(*args):
        raise AssertionError("the compiled acceptor was minimised again")

    monkeypatch.setattr(bounded, "minimal", minimised_again)
    built = constrain(topology, grammar)
    for name in ("state_label", "edge_src", "edge_dst", "start", "final"):
        np.testing.assert_array_equal(getattr(built, name), getattr(expected, name), err_msg=name)


# -- label classes ------------------------------------------------------------------


class TracedLabel(str):
    """A label that counts the tests made on its text."""

    tests = 0

    def startswith(self, *args):
        TracedLabel.tests += 1
        return str.startswith(self, *args)

    def endswith(self, *args):
        TracedLabel.tests += 1
        return str.endswith(self, *args)

    def find(self, *args):
        TracedLabel.tests += 1
        return str.find(self, *args)


def test_label_classes_try_only_the_labels_of_their_prefix():
    """nest over six components: 121 values of T, each filling classes such as
    [B-{T}/B-*]; matching every class against all 729 labels made 246 tests a label
    (and 3^n values of T times 3^n labels over n components)."""
    labels = [TracedLabel(label) for label in joint_labels(6)]
    TracedLabel.tests = 0
    assert compile_grammar(load_grammar("nest"), labels).num_states() == 32
    assert TracedLabel.tests < 40 * len(labels)


PIECES = ["B", "I", "-", "/", "A", "*", "{T}"]


def as_regex(pieces: list[str]) -> str:
    """A class pattern as a regular expression: * any text, {T} one non-empty text."""
    parts, seen = [], False
    for piece in pieces:
        if piece == "*":
            parts.append(".*")
        elif piece == "{T}":
            parts.append("(?P=T)" if seen else "(?P<T>.+)")
            seen = True
        else:
            parts.append(re.escape(piece))
    return "".join(parts)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=8), st.lists(st.sampled_from(PIECES), max_size=6))
def test_quantified_classes_match_as_regular_expressions(first, second):
    """``any T: [p] [q]`` accepts the label pairs some one value of T spells."""
    first, second = first + ["{T}"], second + ["{T}"]
    labels = ["B-A", "I-A", "B-A/B-A", "B-A/I-A", "I-A/B-A", "A/A", "B-AA", "A-B/A"]
    grammar = parse_grammar(f"start = any T: [{''.join(first)}] [{''.join(second)}] | O ;")
    both = re.compile(as_regex([*first, "\x00", *second]))
    expected = {(a, b) for a in labels for b in labels if both.fullmatch(f"{a}\x00{b}")}
    if not expected:
        return  # no value of T: refused, as tests/grammar/test_grammar.py checks
    compiled = compile_grammar(grammar, [*labels, "O"])
    assert {(a, b) for a in labels for b in labels if accepts(compiled, [a, b])} == expected


# -- arc budgets ----------------------------------------------------------------------


def test_the_branches_of_any_are_budgeted():
    labels = iob2_labels([f"T{i}" for i in range(30)])
    grammar = parse_grammar("start = any T: B-{T} I-{T}* ;")  # 30 branches of 2 arcs
    with budget.limits(max_edges=50):
        with pytest.raises(
            BudgetError, match=r"1:9: the union of the 30 branches of 'any T:'.*at least 5\d arcs.*max_edges"
        ):
            compile_grammar(grammar, labels)
    with budget.limits(max_edges=60):
        assert compile_grammar(grammar, labels).num_states() == 31


def test_a_repetition_is_budgeted_by_the_arcs_it_repeats():
    grammar = parse_grammar("start = ([B-*] [I-*]? [I-*]? [I-*]?)* ;")  # four final states, each begins again
    operand = compile_grammar(parse_grammar("start = [B-*] [I-*]? [I-*]? [I-*]? ;"), CHUNK_LABELS)
    needed = star_arcs(operand)
    with budget.limits(max_edges=needed - 1):
        with pytest.raises(BudgetError, match=rf"1:37: .*at least {needed} arcs.*max_edges"):
            compile_grammar(grammar, CHUNK_LABELS)
    with budget.limits(max_edges=needed):
        assert compile_grammar(grammar, CHUNK_LABELS).num_states() > 0


def test_a_determinisation_is_budgeted_by_its_arcs():
    grammar = parse_grammar("start = [B-*] [I-*] | [B-*] O ;")  # each B- leads into both branches
    # three B- from the start, then at least the three I- of the first branch: 6 of the 7 arcs
    with budget.limits(max_edges=5):
        with pytest.raises(BudgetError, match=r"1:9: .*at least 6 arcs.*max_edges"):
            compile_grammar(grammar, CHUNK_LABELS)
    with budget.limits(max_edges=6):
        assert compile_grammar(grammar, CHUNK_LABELS).num_states() == 3


def test_nest_over_many_components_is_refused_by_its_arcs():
    """Over n components ``nest`` binds T to a text that spans components
    (3^(n-1)/2 values); over six its acceptor needs 113,420 arcs once the star's
    epsilons are removed, over eight 10 million (default refusal: 1 s)."""
    labels = joint_labels(6)
    with budget.limits(max_edges=100_000):
        with pytest.raises(BudgetError, match=r"nest.fgr:16:26: .*at least 113,420 arcs.*--max-edges N"):
            compile_grammar(load_grammar("nest"), labels)
    assert compile_grammar(load_grammar("nest"), labels).num_states() == 32


def epsilon_free_acceptors():
    """A random epsilon-free pynini acceptor over keys 1..3 (non-determinism allowed)."""
    return pynini_acceptors((1, 3), max_states=6, max_arcs=16)


@settings(max_examples=200, deadline=None)
@given(epsilon_free_acceptors())
def test_the_arc_estimates_are_lower_bounds(fsa):
    """What a budget refuses is at least as large as what pynini would build."""
    assert determinised_arcs(fsa) <= num_arcs(pynini.determinize(fsa))
    deterministic = pynini.determinize(fsa).minimize()  # a compiled part, as the star takes it
    assert star_arcs(deterministic) <= num_arcs(pynini.rmepsilon(pynini.closure(deterministic)))
