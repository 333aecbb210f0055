"""The work a grammar's compilation does and its budgets: label classes try only the
labels their literal prefix allows, the arcs of a concatenation, a repetition, a
determinisation and the branches of ``any`` are budgeted (max_edges) before they
are built, with lower bounds checked against what pynini builds; repetitions,
long concatenations and complements build nothing much larger than their result;
and a grammar's topology is built from its compiled acceptor as it is (no second
determinisation)."""

from needs_pynini import pynini  # skips the module without pynini

import itertools
import re
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstcrf.engine import bounded, budget
from fstcrf.engine.topology import first_order, intersect, iob2, iob2_labels, second_order
from fstcrf.errors import BudgetError
from fstcrf.grammar import accepts, compile_grammar, compiler, constrain, load_grammar, parse_grammar
from fstcrf.grammar.compiler import concatenation_arcs, determinised_arcs, num_arcs, repetition_arcs, star_arcs
from strategies import pynini_acceptors

CHUNK_LABELS = iob2_labels(["NP", "VP", "PP"])


def joint_labels(components: int) -> list[str]:
    """The joint labels of ``components`` IOB2 NP taggers ("B-NP/O/I-NP", ...)."""
    return ["/".join(parts) for parts in itertools.product(["B-NP", "I-NP", "O"], repeat=components)]


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


def compiled_within_its_arcs(text: str, labels, where: str, needed: int) -> pynini.Fst:
    """The acceptor of ``text`` compiled under max_edges = ``needed``, after checking
    that one arc less is refused at ``where`` with "at least ``needed`` arcs"."""
    grammar = parse_grammar(text)
    with budget.limits(max_edges=needed - 1):
        with pytest.raises(BudgetError, match=rf"{where}: .*at least {needed:,} arcs.*max_edges"):
            compile_grammar(grammar, labels)
    with budget.limits(max_edges=needed):
        return compile_grammar(grammar, labels)


def test_a_repetition_is_budgeted_by_the_arcs_it_repeats():
    operand = compile_grammar(parse_grammar("start = . O? O? O? ;"), CHUNK_LABELS)
    # four final states, each begins again by the 7 labels of '.'
    assert compiled_within_its_arcs("start = (. O? O? O?)* ;", CHUNK_LABELS, "1:21", star_arcs(operand)).num_states()


SEVENTEEN_LABELS = iob2_labels([f"T{i}" for i in range(8)])


def compiled(text: str, labels) -> pynini.Fst:
    return compile_grammar(parse_grammar(text), labels)


@pytest.fixture
def determinised(monkeypatch) -> list[tuple[int, int]]:
    """(states, arcs) of each acceptor the compiler determinises, as it comes."""
    sizes = []

    def counted(fsa, what):
        sizes.append((fsa.num_states(), num_arcs(fsa)))
        return bounded.minimal_acceptor(fsa, what)

    monkeypatch.setattr(compiler, "minimal_acceptor", counted)
    return sizes


@pytest.mark.parametrize(
    "text",
    [
        "start = (.?){60} ;",
        "start = (.*){100} ;",
        "start = (.?){1000} ;",
        "start = (O? B-T1?){50} ;",
        "start = (O | B-T1 I-T1*){3,700} ;",
        "start = (.? B-T1){2,90} ;",
    ],
)
def test_a_repetition_determinises_about_the_arcs_of_its_result(determinised, text):
    """What is determinised holds at most three times the arcs of the result: a
    nullable x repeats as x - "" (removing the epsilons between copies of a
    nullable x led each copy into every later one: 30 times the arcs of the result
    for (.?){60}, 5,000 times for (.*){100}, and (.?){300} ran for minutes)."""
    result = compiled(text, SEVENTEEN_LABELS)
    assert max(arcs for _, arcs in determinised) <= 3 * num_arcs(result)


@pytest.mark.parametrize(
    "text, simple",
    [
        ("start = (.?){1000} ;", "start = .{,1000} ;"),
        ("start = (.*){1000} ;", "start = .* ;"),
        ("start = (O?){1000} ;", "start = O{,1000} ;"),
        ("start = (.*){400} ;", "start = .* ;"),
        ("start = (.? .?){500} ;", "start = .{,1000} ;"),
        ("start = (. .?){500} ;", "start = .{500,1000} ;"),
        ("start = (O* | B-T1)+{2,} ;", "start = (O | B-T1)* ;"),
    ],
)
def test_a_long_repetition_is_the_language_of_its_simple_form(text, simple):
    assert pynini.equivalent(compiled(text, SEVENTEEN_LABELS), compiled(simple, SEVENTEEN_LABELS))


SMALL_OPERANDS = ["O", "B-NP I-NP*", ".?", "O* B-NP", "(O | B-NP)?", "[I-*]+", "O | B-VP I-VP | .", "(O | B-NP)*"]


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(SMALL_OPERANDS), st.integers(0, 5), st.one_of(st.none(), st.integers(1, 7)))
def test_a_repetition_is_the_closure_of_its_operand(operand, low, high):
    """x{m,n} and x{m,} accept what pynini's closure of x does."""
    high = None if high is None else max(low, high)
    bounds = f"{low}," + ("" if high is None else str(high))
    repeated = compiled(f"start = ({operand}){{{bounds}}} | O ;", CHUNK_LABELS)
    single = compiled(f"start = {operand} ;", CHUNK_LABELS)
    closure = pynini.closure(single, low) if high is None else pynini.closure(single, low, high)
    expected = pynini.union(closure, compiled("start = O ;", CHUNK_LABELS))
    assert pynini.equivalent(repeated, pynini.determinize(pynini.rmepsilon(expected)).minimize())


def test_a_bounded_repetition_is_budgeted_by_its_arcs_once_its_epsilons_are_removed():
    """(.?){100} over 17 labels repeats '.' up to 100 times, 1,700 arcs (no arc of a
    bounded repetition was budgeted: it compiled under any max_edges)."""
    assert num_arcs(compiled_within_its_arcs("start = (.?){100} ;", SEVENTEEN_LABELS, "1:13", 1_700)) == 1_700


def test_a_concatenation_is_budgeted_by_its_arcs_once_its_epsilons_are_removed():
    """Each of the 41 final states of O{,40} also leaves by the 7 labels of '.' (only
    the determinisation was budgeted, by the 14 arcs counted from its start)."""
    assert compiled_within_its_arcs("start = O{,40} . ;", CHUNK_LABELS, "1:9", 327).num_states() == 42


def test_a_long_concatenation_is_compiled_in_about_linear_time():
    """50,000 labels in a row: joined as a balanced tree of pairs (n log n states
    handled) where joining them left to right copied the growing acceptor at each
    label (over 200 s; the bound leaves a loaded CI machine room)."""
    count = 50_000
    grammar = parse_grammar("start = " + " O" * count + " B-NP ;")
    started = time.perf_counter()
    fst = compile_grammar(grammar, CHUNK_LABELS)
    assert time.perf_counter() - started < 60
    chain = pynini.Fst()
    chain.add_states(count + 2)
    chain.set_start(0)
    chain.set_final(count + 1)
    for state, key in enumerate([CHUNK_LABELS.index("O") + 1] * count + [CHUNK_LABELS.index("B-NP") + 1]):
        chain.add_arc(state, pynini.Arc(key, key, 0, state + 1))
    assert pynini.equivalent(fst, chain)


@pytest.mark.parametrize("operand", [".* B-NP .{4}", "O*", "(O | B-NP I-NP*)*", ".* O", "!(O B-NP)", "[B-*]", "O{2,5}"])
def test_a_complement_is_minimal_as_the_difference_leaves_it(determinised, operand):
    """!x is .* - x of a minimal x, which is minimal once trimmed: nothing of it is
    determinised or minimised again (3 s for the 131,072 states of !(.* B-NP .{16}))."""
    compiled(f"start = {operand} ;", CHUNK_LABELS)
    alone = len(determinised)
    fst = compiled(f"start = !({operand}) ;", CHUNK_LABELS)
    assert len(determinised) == 2 * alone
    assert fst.properties(pynini.I_DETERMINISTIC, True)
    assert fst.num_states() == fst.copy().arcsort("ilabel").minimize().num_states()


@settings(max_examples=100, deadline=None)
@given(pynini_acceptors((0, 3), max_states=6, max_arcs=16))
def test_an_acceptor_is_read_as_its_arcs_in_order(fsa):
    """acceptor_arcs reads the OpenFst bytes: the states and arcs pynini lists."""
    num_states, src, key, dst, initial = bounded.acceptor_arcs(fsa)
    listed = [(state, arc.ilabel, arc.nextstate) for state in fsa.states() for arc in fsa.arcs(state)]
    assert (num_states, initial.tolist()) == (fsa.num_states(), [fsa.start()])
    assert list(zip(src.tolist(), key.tolist(), dst.tolist())) == listed


def test_a_determinisation_is_budgeted_by_its_arcs():
    # each B- leads into both branches: three B- from the start, then at least the
    # three I- of the first branch, 6 of the 7 arcs
    assert compiled_within_its_arcs("start = [B-*] [I-*] | [B-*] O ;", CHUNK_LABELS, "1:9", 6).num_states() == 3


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


@settings(max_examples=200, deadline=None)
@given(epsilon_free_acceptors(), epsilon_free_acceptors(), st.integers(1, 4), st.integers(0, 3))
def test_the_arcs_of_concatenations_and_repetitions_are_bounded_from_below(first, second, copies, fewer):
    """Compiled parts are minimal (trim and deterministic), as concatenations and
    repetitions take them."""
    left, right = (pynini.determinize(fsa).minimize() for fsa in (first, second))
    assert concatenation_arcs(left, right) <= num_arcs(pynini.rmepsilon(pynini.concat(left, right)))
    low = max(0, copies - fewer)
    assert repetition_arcs(left, copies) <= num_arcs(pynini.rmepsilon(pynini.closure(left, low, copies)))
    unbounded = num_arcs(pynini.rmepsilon(pynini.closure(left, copies)))
    assert max(repetition_arcs(left, copies), star_arcs(left)) <= unbounded
    assert repetition_arcs(left, 1) <= num_arcs(pynini.rmepsilon(pynini.closure(left)))
