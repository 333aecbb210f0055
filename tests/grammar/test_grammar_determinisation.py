"""How a grammar's acceptors are determinised and minimised: over one key of each set
of keys with the same arcs, the copies of a part that accepts the empty sequence as
the first copy holding each of its states, in one function for the compiler and for
constraint acceptors, arcs sorted first; and how the product of the operands of '&'
and '-' is bounded before they are determinised, from the arcs of their minimal
acceptors, without refusing a product the budget allows."""

from needs_pynini import pynini  # skips the module without pynini

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstcrf.engine import bounded, budget
from fstcrf.errors import BudgetError, GrammarError
from fstcrf.grammar import compile_grammar, compiler, parse_grammar
from strategies import pynini_acceptors

# the chunk labels of CoNLL-2000 ($FSTCRF_DATA/conll2000/train.txt)
CONLL_CHUNKS = (
    "O B-ADJP B-ADVP B-CONJP B-INTJ B-LST B-NP B-PP B-PRT B-SBAR B-UCP B-VP "
    "I-ADJP I-ADVP I-CONJP I-INTJ I-NP I-PP I-PRT I-SBAR I-UCP I-VP"
).split()


def compiled(text: str, labels=CONLL_CHUNKS) -> pynini.Fst:
    return compile_grammar(parse_grammar(text), labels)


def keys_read(fsa: pynini.Fst) -> set[int]:
    return {arc.ilabel for state in fsa.states() for arc in fsa.arcs(state)}


def minimised_by_pynini(fsa: pynini.Fst) -> pynini.Fst:
    return pynini.determinize(pynini.rmepsilon(fsa)).arcsort("ilabel").minimize()


# -- keys with the same arcs ------------------------------------------------------------


def test_a_repetition_of_a_long_nullable_part_is_determinised_over_one_key(monkeypatch):
    """((.?){1000}){3} is "at most 3000 labels" (3001 states): the sets of states of
    the copies of .{1,1000} that pynini determinised held up to 3,000 states each, over
    the 22 labels (16 s, 14-19 s in all).  Each set is now the first copy holding each
    of the 1,001 states of .{,1000}, over one key of '.', and so is every large
    acceptor the compiler determinises here."""
    determinised = []

    def recorded(fsa, what):
        determinised.append((fsa.num_states(), keys_read(fsa)))
        return bounded_determinize(fsa, what)

    bounded_determinize = bounded.bounded_determinize
    monkeypatch.setattr(bounded, "bounded_determinize", recorded)
    started = time.perf_counter()
    fst = compiled("start = ((.?){1000}){3} ;")
    assert time.perf_counter() - started < 8
    assert pynini.equivalent(fst, compiled("start = .{,1000} .{,1000} .{,1000} ;")) and fst.num_states() == 3001
    assert max(states for states, _ in determinised) == 3001
    assert all(len(keys) == 1 for _, keys in determinised)


def test_more_copies_of_a_long_nullable_part_are_refused_at_once_by_their_table(monkeypatch):
    """((.?){1000}){10}: 10,001 sets of the copies' states, each the first copy holding
    each of 1,001 states, pass max_edges cells (pynini took 18 s to determinise them,
    110 s for twice as many copies); within a larger budget, they are built."""
    started = time.perf_counter()
    with pytest.raises(BudgetError, match=r"<string>:1:21: .*first copy holding each state.*cells.*--max-edges N"):
        compiled("start = ((.?){1000}){10} ;")
    with budget.limits(max_edges=20_000_000):
        assert compiled("start = ((.?){1000}){10} ;").num_states() == 10_001
    assert time.perf_counter() - started < 8


@settings(max_examples=150, deadline=None)
@given(pynini_acceptors((0, 3), max_states=5, max_arcs=12), st.integers(2, 5))
def test_the_copies_of_a_nullable_part_are_those_pynini_chains(fsa, copies):
    """x^n of a minimal x that accepts the empty sequence: the language of pynini's
    closure of n copies, with no more states before minimisation than pynini's
    determinisation of it."""
    fsa.set_final(fsa.start())
    nullable = minimised_by_pynini(fsa)
    states = []

    def recorded(fsa, what):
        states.append(fsa.num_states())
        return bounded_determinize(fsa, what)

    bounded_determinize = bounded.bounded_determinize
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bounded, "bounded_determinize", recorded)
        power = bounded.nullable_power(nullable, copies, "the power")
    chained = pynini.determinize(pynini.rmepsilon(pynini.closure(nullable, copies, copies)))
    assert pynini.equivalent(power, chained)
    assert power.num_states() == chained.copy().arcsort("ilabel").minimize().num_states()
    assert states[0] <= chained.num_states()


def spread(fsa: pynini.Fst, copies: int) -> pynini.Fst:
    """``fsa`` with each arc of key k copied to keys k + 4, k + 8, ... (``copies`` in
    all): keys 1, 5, 9, ... then have the same arcs."""
    out = fsa.copy()
    for state in fsa.states():
        for arc in fsa.arcs(state):
            for copy in range(1, copies) if arc.ilabel else ():
                out.add_arc(state, pynini.Arc(arc.ilabel + 4 * copy, arc.ilabel + 4 * copy, 0, arc.nextstate))
    return out


@settings(max_examples=150, deadline=None)
@given(pynini_acceptors((0, 3), max_states=6, max_arcs=16), st.integers(1, 3), st.booleans())
def test_the_minimal_acceptor_is_the_one_pynini_builds(fsa, copies, shared):
    """Determinised and minimised over one key of each set with the same arcs (for
    every acceptor when ``shared``) or at once, then spread back: pynini's minimal
    acceptor, up to the numbers of its states, with its arcs sorted."""
    fsa = spread(fsa, copies)
    expected = minimised_by_pynini(fsa)
    with pytest.MonkeyPatch.context() as patch:
        if shared:
            patch.setattr(bounded, "_SHARED_KEYS_STATES", 0)
        built = bounded.minimal_acceptor(fsa, "the acceptor")
    assert built.num_states() == expected.num_states()
    assert built.properties(pynini.I_DETERMINISTIC | pynini.I_LABEL_SORTED, True) == (
        pynini.I_DETERMINISTIC | pynini.I_LABEL_SORTED
    )
    assert pynini.equivalent(built, expected)


# -- one minimisation, arcs sorted first ----------------------------------------------


def unsorted_star() -> pynini.Fst:
    """A deterministic acceptor of (a|b|c)* whose two states OpenFst's minimisation
    keeps apart unless their arcs are sorted by label."""
    fsa = pynini.Fst()
    fsa.add_states(2)
    fsa.set_start(0)
    for state, arcs in ((0, [(1, 1), (2, 1), (3, 0)]), (1, [(3, 1), (1, 1), (2, 1)])):
        fsa.set_final(state)
        for key, target in arcs:
            fsa.add_arc(state, pynini.Arc(key, key, 0, target))
    return fsa


def test_a_constraint_acceptor_is_minimised_with_its_arcs_sorted():
    """bounded.minimal (a constraint given as a pynini acceptor) minimised without
    sorting arcs: two states, where the compiler, which sorted them, made one."""
    fsa = unsorted_star()
    assert fsa.copy().minimize().num_states() == 2  # what OpenFst does unsorted
    assert bounded.minimal(fsa, "the constraint").num_states == 1
    assert keys_read(fsa) == {1, 2, 3} and fsa.num_states() == 2  # the caller's acceptor is left as it was


def test_the_compiler_and_constraints_minimise_in_one_place(monkeypatch):
    calls = []

    def recorded(fsa, what):
        calls.append(what)
        return minimal_acceptor(fsa, what)

    minimal_acceptor = bounded.minimal_acceptor
    monkeypatch.setattr(bounded, "minimal_acceptor", recorded)
    monkeypatch.setattr(compiler, "minimal_acceptor", recorded)
    bounded.minimal(unsorted_star(), "the constraint")
    compiled("start = (O | B-NP)* B-VP ;")
    assert calls[0] == "the constraint: the constraint acceptor"
    assert any(what.startswith("<string>:1:9: ") for what in calls[1:])


# -- products bounded before determinisation --------------------------------------------


def test_a_product_of_complements_is_refused_before_they_are_built(monkeypatch):
    """Each complement of !(.* B-NP .{16}) & !(.* B-VP .{16}) has 2^17 states (6 s to
    build each over 22 labels), their product 3^17, refused after 19 s: now counted
    on the 18 states of each part's minimal arcs, before anything is determinised."""
    largest = []

    def recorded(fsa, what):
        built = minimal_acceptor(fsa, what)
        largest.append(built.num_states())
        return built

    minimal_acceptor = bounded.minimal_acceptor
    monkeypatch.setattr(compiler, "minimal_acceptor", recorded)
    started = time.perf_counter()
    with pytest.raises(BudgetError, match=r"<string>:1:26: .*at least \d{3},\d{3} states.*--max-states N"):
        compiled("start = !(.* B-NP .{16}) & !(.* B-VP .{16}) ;")
    assert time.perf_counter() - started < 8
    assert max(largest) <= 17


def test_a_product_within_the_budget_is_the_language_it_was():
    """The same complements, 2^5 states each, and a product of 3^5 within the budget."""
    both = compiled("start = !(.* B-NP .{4}) & !(.* B-VP .{4}) ;")
    assert pynini.equivalent(both, compiled("start = !(.* [B-NP B-VP] .{4}) ;")) and both.num_states() == 32
    rules = compiled("np = .* B-NP .{4} ; vp = .* B-VP .{4} ; start = !np - vp ;")
    assert pynini.equivalent(rules, both)
    with budget.limits(max_states=3**5):
        assert compiled("start = !(.* B-NP .{4}) & !(.* B-VP .{4}) ;").num_states() == 32
    with (
        budget.limits(max_states=3**5 - 2),
        pytest.raises(BudgetError, match=r"<string>:1:25: .*at least 242 states.*max_states"),
    ):
        compiled("start = !(.* B-NP .{4}) & !(.* B-VP .{4}) ;")


def epsilon_free(fsa: pynini.Fst) -> pynini.Fst:
    return pynini.rmepsilon(fsa)


def all_sequences() -> pynini.Fst:
    """The acceptor of every sequence of the keys 1..3."""
    fsa = pynini.Fst()
    fsa.set_start(fsa.add_state())
    fsa.set_final(fsa.start())
    for key in (1, 2, 3):
        fsa.add_arc(fsa.start(), pynini.Arc(key, key, 0, fsa.start()))
    return fsa


@settings(max_examples=200, deadline=None)
@given(pynini_acceptors((0, 3), max_states=6, max_arcs=16), pynini_acceptors((0, 3), max_states=6, max_arcs=16))
def test_the_pairs_of_minimal_states_are_counted_on_the_minimal_arcs(first, second):
    """minimal_arcs (the reverse of a deterministic acceptor of the reversed language)
    determinise to the minimal acceptor: the pairs counted on them are those of the
    minimal acceptors, and the product of these or of their complements (the
    operands of '&' and '-') has at least that count less one states."""
    left, right = epsilon_free(first), epsilon_free(second)
    many = 10**6
    counted = bounded.paired_states(bounded.minimal_arcs(left, False), bounded.minimal_arcs(right, False), many)
    smallest = [minimised_by_pynini(left), minimised_by_pynini(right)]
    assert counted == bounded.paired_states(*(bounded.minimal_arcs(fsa, True) for fsa in smallest), many)
    complements = [pynini.difference(all_sequences(), fsa) for fsa in smallest]
    for one, other in ((smallest[0], complements[1]), (complements[0], smallest[1]), tuple(complements)):
        product = bounded.paired_states(bounded.minimal_arcs(one, True), bounded.minimal_arcs(other, True), many)
        assert product >= counted - 1


OPERANDS = [
    ".* B-NP .{2}",
    ".* B-VP .",
    "O* B-NP",
    "(O | B-NP I-NP*)*",
    ".{,3} O",
    "B-NP .* B-VP",
    ". . .",
    "O | B-VP I-NP",
    "(.* B-NP .) | (O .* B-VP)",
    "!(O*) O",
]
LABELS = ["O", "B-NP", "I-NP", "B-VP"]


def fits(grammar, rule: str) -> bool:
    """Whether ``rule`` compiles within the budget in force."""
    try:
        compile_grammar(grammar, LABELS, rule=rule)
    except BudgetError:
        return False
    return True


@settings(max_examples=150, deadline=None)
@given(
    st.tuples(st.sampled_from(OPERANDS), st.booleans()),
    st.tuples(st.sampled_from(OPERANDS), st.booleans()),
    st.sampled_from(["&", "-"]),
    st.booleans(),
    st.integers(1, 40),
)
def test_a_product_is_refused_before_determinisation_only_where_it_was_after(left, right, operator, as_rules, limit):
    """Under a budget of ``limit`` states, ``x & y`` or ``x - y`` (inline or through
    rules) compiles, to the language it has without a budget, exactly when it did
    with its operands compiled first: when they compile alone within the budget and
    either their sizes' product (one more state on the right of '-') or the pairs of
    states bounded_intersect counts on them is within it.  The bound counted before
    determinisation refuses nothing more, and the rest as before."""
    left_text, right_text = (f"!({text})" if negated else f"({text})" for text, negated in (left, right))
    body = f"left {operator} right" if as_rules else f"{left_text} {operator} {right_text}"
    grammar = parse_grammar(f"left = {left_text} ; right = {right_text} ; start = {body} ;")
    first, second = (compile_grammar(grammar, LABELS, rule=rule) for rule in ("left", "right"))
    sizes = first.num_states() * (second.num_states() + (operator == "-"))
    pairs = bounded.paired_states(bounded.acceptor_arcs(first), bounded.acceptor_arcs(second), 10**6)
    try:
        unbounded = compile_grammar(grammar, LABELS)
    except GrammarError as error:  # accepts nothing: so it says under any budget that lets it say so
        assert "accepts nothing" in str(error)
        return
    with budget.limits(max_states=limit):
        if fits(grammar, "left") and fits(grammar, "right") and min(sizes, pairs) <= limit:
            assert pynini.equivalent(compile_grammar(grammar, LABELS), unbounded)
        else:
            with pytest.raises(BudgetError):
                compile_grammar(grammar, LABELS)
