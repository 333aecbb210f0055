"""Chains of '&' and '-' nest a grammar's tree as deep as parentheses do, so they
count against the same limit (MAX_NESTING) with the same located GrammarError; and
walks take time linear in what they walk: :func:`fstcrf.grammar.accepts` over an
acceptor's arrays (deciding as pynini, and the scan of every arc at each label it
replaces, do), and :func:`fstcrf.grammar.state_map` over a restriction's edges."""

from needs_pynini import pynini  # skips the module without pynini

import re
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstcrf.engine.acceptor import Acceptor
from fstcrf.engine.bounded import as_arrays
from fstcrf.engine.topology import first_order
from fstcrf.errors import GrammarError
from fstcrf.grammar import accepts, compile_grammar, constrain, load_grammar, parse_grammar, state_map
from fstcrf.grammar.parser import MAX_NESTING
from strategies import pynini_acceptors

# -- chains of '&' and '-' ------------------------------------------------------------


def nested_chains(levels: list[tuple[int, int]]) -> tuple[str, int]:
    """(a rule's body, its depth): level i, innermost first, is p_i parentheses around
    a chain of k_i operands whose first is the level inside it (the rest are O).  The
    body nests one level, each parenthesis one, and each operator one above the
    operands before it: the innermost O lies 1 + sum of p_i + k_i - 1 deep, the
    deepest of all."""
    body, depth = "O", 1
    for parentheses, operands in levels:
        chain = " & ".join([body] + ["O"] * (operands - 1))
        body = "(" * parentheses + chain + ")" * parentheses
        depth += parentheses + operands - 1
    return body, depth


def test_chains_of_intersections_inside_parentheses_are_refused_where_they_go_too_deep(tmp_path):
    """40 levels of parentheses, each around a chain of 100 operands: 4,000 levels that
    the parser's limit missed, refused by Python's recursion without a line."""
    body, _ = nested_chains([(1, 100)] * 40)
    with pytest.raises(GrammarError, match=r"^<string>:1:\d+: the chain of '&' and '-' nests more than 100 levels"):
        parse_grammar(f"start = {body} ;")
    chains = tmp_path / "chains.fgr"
    chains.write_text(f"other = O ;\nstart = {body} ;\n")
    with pytest.raises(GrammarError, match=rf"^{re.escape(str(chains.resolve()))}:2:\d+: the chain of '&'"):
        load_grammar(chains)


@pytest.mark.parametrize("operator, operand", [("&", "O"), ("-", "B-NP")])
def test_a_chain_as_deep_as_the_limit_is_read_and_compiled(operator, operand):
    """O & O & ... and O - B-NP - ...: the body's level and 99 operators."""
    deepest = "O" + f" {operator} {operand}" * (MAX_NESTING - 1)
    assert compile_grammar(parse_grammar(f"start = {deepest} ;"), ["O", "B-NP"]).num_states() == 2
    with pytest.raises(GrammarError, match=r"^<string>:1:\d+: the chain of '&' and '-' nests more than 100"):
        parse_grammar(f"start = {deepest} {operator} O ;")


@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(1, 60)), min_size=1, max_size=6))
def test_nesting_through_chains_and_parentheses_is_refused_exactly_past_the_limit(levels):
    body, depth = nested_chains(levels)
    text = f"start = {body} ;"
    if depth > MAX_NESTING:
        with pytest.raises(GrammarError, match=r"^<string>:1:\d+: .*more than 100"):
            parse_grammar(text)
    else:
        assert compile_grammar(parse_grammar(text), ["O", "B-NP"]).num_states() == 2


# -- accepts ---------------------------------------------------------------------------


def chain(length: int) -> Acceptor:
    """O{length} B-NP as arrays: length + 2 states in a row."""
    keys = np.full(length + 1, 1)
    keys[-1] = 2
    final = np.zeros(length + 2, dtype=bool)
    final[-1] = True
    states = np.arange(length + 1)
    return Acceptor(length + 2, 0, final, states, keys, states + 1, {0: "<eps>", 1: "O", 2: "B-NP"})


def test_accepts_walks_only_the_arcs_of_the_states_it_reaches():
    """100,000 labels through 100,002 states: a scan of every arc at each label took
    10 s for 50,000 of them (and four times that for twice as many)."""
    acceptor = chain(100_000)
    started = time.perf_counter()
    assert accepts(acceptor, ["O"] * 100_000 + ["B-NP"])
    assert not accepts(acceptor, ["O"] * 99_999 + ["B-NP"])
    assert not accepts(acceptor, ["O"] * 100_001)
    assert time.perf_counter() - started < 8


SYMBOLS = ["a", "b", "c"]


def with_symbols(fsa: pynini.Fst) -> pynini.Fst:
    table = pynini.SymbolTable()
    table.add_symbol("<eps>", 0)
    for key, symbol in enumerate(SYMBOLS, start=1):
        table.add_symbol(symbol, key)
    fsa = fsa.copy()
    fsa.set_input_symbols(table)
    fsa.set_output_symbols(table)
    return fsa


def pynini_accepts(fsa: pynini.Fst, keys: list[int]) -> bool:
    sequence = pynini.Fst()
    sequence.add_states(len(keys) + 1)
    sequence.set_start(0)
    sequence.set_final(len(keys))
    for position, key in enumerate(keys):
        sequence.add_arc(position, pynini.Arc(key, key, 0, position + 1))
    return pynini.intersect(pynini.rmepsilon(fsa), sequence).num_states() > 0


@settings(max_examples=200, deadline=None)
@given(pynini_acceptors((0, 3), max_states=6, max_arcs=16), st.lists(st.integers(1, 3), max_size=7))
def test_accepts_decides_as_pynini(fsa, keys):
    """Over random acceptors with epsilons and non-determinism, given as pynini or as
    arrays: what pynini's intersection with the sequence says."""
    fsa = with_symbols(fsa)
    labels = [SYMBOLS[key - 1] for key in keys]
    expected = pynini_accepts(fsa, keys)
    assert accepts(fsa, labels) == expected
    arrays = as_arrays(fsa)
    assert accepts(arrays, labels) == expected


def test_a_long_restriction_is_mapped_back_one_edge_at_a_time():
    """A first-order chunker over the 22 CoNLL-2000 labels under ((.?){1000}){3}: 66,000
    states 3,000 edges deep, mapped back in a pass over every edge at each depth in
    22 s."""
    labels = (
        "O B-ADJP B-ADVP B-CONJP B-INTJ B-LST B-NP B-PP B-PRT B-SBAR B-UCP B-VP "
        "I-ADJP I-ADVP I-CONJP I-INTJ I-NP I-PP I-PRT I-SBAR I-UCP I-VP"
    ).split()
    original = first_order(labels)
    constrained = constrain(original, parse_grammar("start = ((.?){1000}){3} ;"))
    started = time.perf_counter()
    mapping = state_map(original, constrained)
    assert time.perf_counter() - started < 8
    np.testing.assert_array_equal(original.state_label[mapping], constrained.state_label)
    assert constrained.num_states == 3000 * len(labels)
