"""fstcrf.engine.openfst against pynini: OpenFst's bytes read back exactly, written
bytes equal pynini's, and hostile bytes raise ModelFileError (quickly)."""

from __future__ import annotations

from needs_pynini import pynini
import pywrapfst

import functools
import itertools
import struct
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fstcrf.engine.acceptor import NO_STATE, Acceptor
from fstcrf.engine.bounded import as_arrays, to_fst
from fstcrf.engine.openfst import (
    FST_MAGIC,
    read_acceptor,
    write_acceptor,
    written_properties,
)
from fstcrf.errors import ArgumentTypeError, ModelFileError, TopologyError


ARC_TYPES = ("standard", "log", "log64")
WHERE = "model.npz[constraint]"

# Offsets in the header of a "standard" machine: magic, "vector", "standard", version,
# flags, properties, start, number of states, number of arcs; the states follow.
VERSION_AT, FLAGS_AT, PROPERTIES_AT, START_AT, STATES_AT, ARCS_AT, BODY_AT = 26, 30, 34, 42, 50, 58, 66


@st.composite
def machines(draw, arc_types=ARC_TYPES):
    """(arc type, Acceptor): up to 6 states, up to 4 arcs per state, keys 0..5 (0 is
    epsilon), finals, a start or none, and an optional symbol table."""
    arc_type = draw(st.sampled_from(arc_types))
    Q = draw(st.integers(0, 6))
    start = draw(st.integers(0, Q - 1)) if Q and draw(st.booleans()) else NO_STATE
    final = draw(st.lists(st.booleans(), min_size=Q, max_size=Q))
    arcs = [
        (q, key, dst)
        for q in range(Q)
        for key, dst in draw(st.lists(st.tuples(st.integers(0, 5), st.integers(0, Q - 1)), max_size=4))
    ]
    symbols = None
    if draw(st.booleans()):
        names = draw(st.lists(st.text(max_size=6), unique=True, max_size=6))
        keys = draw(st.lists(st.integers(0, 2**40), unique=True, min_size=len(names), max_size=len(names)))
        symbols = dict(zip(keys, names))
    src, key, dst = (np.array(column, dtype=np.int64) for column in zip(*arcs)) if arcs else ([], [], [])
    return arc_type, Acceptor(Q, start, final, src, key, dst, symbols)


def pynini_machine(arc_type: str, acceptor: Acceptor):
    """The acceptor built with pynini's own calls (independent of acceptor_to_fst)."""
    fst = pynini.Fst(arc_type=arc_type)
    if acceptor.num_states:
        fst.add_states(acceptor.num_states)
    if acceptor.start != NO_STATE:
        fst.set_start(acceptor.start)
    for state, is_final in enumerate(acceptor.final):
        if is_final:
            fst.set_final(state)
    one = pywrapfst.Weight.one(fst.weight_type())
    for src, key, dst in zip(acceptor.arc_src, acceptor.arc_key, acceptor.arc_dst):
        fst.add_arc(int(src), pywrapfst.Arc(int(key), int(key), one, int(dst)))
    if acceptor.symbols is not None:
        table = pywrapfst.SymbolTable()
        for key, symbol in acceptor.symbols.items():  # in any order: OpenFst writes keys ascending
            table.add_symbol(symbol, key)
        fst.set_input_symbols(table)
        fst.set_output_symbols(table)
    return fst


def assert_same(got: Acceptor, expected: Acceptor) -> None:
    assert got.num_states == expected.num_states
    assert got.start == expected.start
    np.testing.assert_array_equal(got.final, expected.final)
    np.testing.assert_array_equal(got.arc_src, expected.arc_src)
    np.testing.assert_array_equal(got.arc_key, expected.arc_key)
    np.testing.assert_array_equal(got.arc_dst, expected.arc_dst)
    assert got.symbols == expected.symbols


def assert_pynini_machine_is(fst, acceptor: Acceptor) -> None:
    """The pynini machine has the acceptor's states, arcs in order, start, finals and
    symbols on both sides, by pynini's own accessors."""
    assert fst.num_states() == acceptor.num_states
    assert fst.start() == acceptor.start
    one = pywrapfst.Weight.one(fst.weight_type())
    finals = [fst.final(state) == one for state in range(fst.num_states())]
    assert finals == acceptor.final.tolist()
    arcs = [
        (state, arc.ilabel, arc.olabel, arc.weight == one, arc.nextstate)
        for state in range(fst.num_states())
        for arc in fst.arcs(state)
    ]
    expected = [
        (s, k, k, True, d)
        for s, k, d in zip(*(a.tolist() for a in (acceptor.arc_src, acceptor.arc_key, acceptor.arc_dst)))
    ]
    assert arcs == expected
    for table in (fst.input_symbols(), fst.output_symbols()):
        assert (None if table is None else dict(table)) == acceptor.symbols


def patched(data: bytes, offset: int, layout: str, value) -> bytes:
    return data[:offset] + struct.pack(layout, value) + data[offset + struct.calcsize(layout) :]


def two_states() -> bytes:
    """0 -1-> 1 (final), no symbols: state 0's arc count is at BODY_AT + 4, its arc at
    BODY_AT + 12 (ilabel, olabel, weight, nextstate at +0, +4, +8, +12)."""
    return write_acceptor(Acceptor(2, 0, [False, True], [0], [1], [1]))


ARC_AT = BODY_AT + 12


@functools.cache
def grammar_bytes() -> bytes:
    """The iob2 grammar over O, B-NP and I-NP, as pynini writes it (a symbol table of 4)."""
    from fstcrf.grammar import compile_grammar, load_grammar

    return compile_grammar(load_grammar("iob2"), ["O", "B-NP", "I-NP"]).write_to_string()


def raises_model_file_error(data: bytes, *fragments: str) -> None:
    with pytest.raises(ModelFileError) as caught:
        read_acceptor(data, WHERE)
    message = str(caught.value)
    assert message.startswith(WHERE + ": ")
    for fragment in fragments:
        assert fragment in message


# -- reading what pynini writes ---------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(machines())
def test_pynini_bytes_read_back_exactly(machine):
    arc_type, acceptor = machine
    assert_same(read_acceptor(pynini_machine(arc_type, acceptor).write_to_string(), WHERE), acceptor)


@settings(max_examples=40, deadline=None)
@given(machines())
def test_acceptor_from_fst_keeps_states_and_arc_order(machine):
    arc_type, acceptor = machine
    fst = pynini_machine(arc_type, acceptor)
    assert_same(as_arrays(fst), acceptor)
    assert_same(as_arrays(pywrapfst.convert(fst, "const")), acceptor)


def test_a_compiled_grammar_reads_back():
    from fstcrf.grammar import accepts, compile_grammar, load_grammar

    labels = ["O", "B-NP", "I-NP", "B-VP", "I-VP"]
    fst = compile_grammar(load_grammar("iob2"), labels)
    acceptor = read_acceptor(fst.write_to_string(), WHERE)
    assert acceptor.symbols == {0: "<eps>", **{i + 1: label for i, label in enumerate(labels)}}
    assert acceptor.num_states == fst.num_states() and acceptor.start == fst.start()

    def accepted(sequence) -> bool:
        states = {acceptor.start}
        for label in sequence:
            key = labels.index(label) + 1
            states = {
                int(d)
                for s, k, d in zip(acceptor.arc_src, acceptor.arc_key, acceptor.arc_dst)
                if s in states and k == key
            }
        return any(acceptor.final[s] for s in states)

    for length in range(1, 4):
        for sequence in itertools.product(labels, repeat=length):
            assert accepted(sequence) == accepts(fst, sequence), sequence


# -- writing what pynini reads ----------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(machines(arc_types=("standard",)))
def test_written_bytes_are_pyninis_bytes(machine):
    _, acceptor = machine
    data = write_acceptor(acceptor)
    assert data == pynini_machine("standard", acceptor).write_to_string()
    assert data == to_fst(acceptor).write_to_string()
    assert_pynini_machine_is(pynini.Fst.read_from_string(data), acceptor)


@settings(max_examples=60, deadline=None)
@given(machines(arc_types=("standard",)))
def test_written_properties_are_true(machine):
    """Every bit written holds: OpenFst recomputes them all from the arcs when the
    stored ones are cleared."""
    _, acceptor = machine
    data = patched(write_acceptor(acceptor), PROPERTIES_AT, "<Q", 0x3)
    computed = int(pynini.Fst.read_from_string(data).properties(pywrapfst.FST_PROPERTIES, True).value)
    assert written_properties(acceptor) & ~computed == 0


@settings(max_examples=60, deadline=None)
@given(machines())
def test_round_trips(machine):
    arc_type, acceptor = machine
    assert_same(read_acceptor(write_acceptor(acceptor), WHERE), acceptor)
    assert_same(as_arrays(to_fst(acceptor)), acceptor)
    pynini_bytes = pynini_machine("standard", acceptor).write_to_string()
    assert write_acceptor(read_acceptor(pynini_bytes, WHERE)) == pynini_bytes


def test_a_compiled_grammar_is_written_back_with_fewer_known_properties():
    """pynini's algorithms know more properties than construction does (not a string
    machine, say); otherwise the bytes are the same, and the known bits agree."""
    data = grammar_bytes()
    written = write_acceptor(read_acceptor(data, WHERE))
    assert len(written) == len(data)
    assert written[:PROPERTIES_AT] + written[START_AT:] == data[:PROPERTIES_AT] + data[START_AT:]
    ours, theirs = (struct.unpack_from("<Q", d, PROPERTIES_AT)[0] for d in (written, data))
    assert ours & ~theirs == 0


def test_an_unknown_number_of_states_reads_to_the_end():
    acceptor = read_acceptor(patched(grammar_bytes(), STATES_AT, "<q", -1), WHERE)
    assert_same(acceptor, read_acceptor(grammar_bytes(), WHERE))


def test_writing_checks_what_openfst_cannot_hold():
    with pytest.raises(ArgumentTypeError):
        write_acceptor("not an acceptor")
    with pytest.raises(TopologyError, match="int32"):
        write_acceptor(Acceptor(1, 0, [True], [0], [2**31], [0]))
    with pytest.raises(TopologyError, match="two keys"):
        write_acceptor(Acceptor(1, 0, [True], [], [], [], {1: "a", 2: "a"}))
    with pytest.raises(TopologyError, match="UTF-8"):
        write_acceptor(Acceptor(1, 0, [True], [], [], [], {1: "\ud800"}))
    with pytest.raises(TopologyError, match="keys"):
        to_fst(Acceptor(1, 0, [True], [], [], [], {-1: "a"}))


# -- hostile bytes ----------------------------------------------------------------


def test_every_truncation_raises():
    data = grammar_bytes()
    began = time.perf_counter()
    for size in range(len(data)):
        raises_model_file_error(data[:size])
    assert time.perf_counter() - began < 1.0


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_byte_flips_read_or_raise_model_file_error(data):
    valid = data.draw(st.sampled_from([grammar_bytes(), two_states()]))
    flipped = bytearray(valid)
    for _ in range(data.draw(st.integers(1, 4))):
        flipped[data.draw(st.integers(0, len(valid) - 1))] = data.draw(st.integers(0, 255))
    try:
        acceptor = read_acceptor(bytes(flipped), WHERE)
    except ModelFileError as error:
        assert str(error).startswith(WHERE + ": ")
    else:
        assert isinstance(acceptor, Acceptor)


@pytest.mark.parametrize(
    "offset, layout, value, fragment",
    [
        (STATES_AT, "<q", 2**60, "claims 1152921504606846976 states"),
        (STATES_AT, "<q", 2**63 - 1, "states"),
        (BODY_AT + 4, "<q", 2**60, "the number of arcs of state 0 is 1152921504606846976"),
        (BODY_AT + 4, "<q", 2**63 - 1, "the number of arcs of state 0"),
        (4, "<i", 2**31 - 1, "the data ends inside the FST type"),
        (STATES_AT, "<q", -2, "the number of states is -2"),
        (BODY_AT + 4, "<q", -1, "is negative"),
        (START_AT, "<q", -2, "the start state is -2"),
        (START_AT, "<q", 2, "the start state 2 is not one of the 2 states"),
        (ARCS_AT, "<q", -1, "the number of arcs is negative"),
        (4, "<i", -1, "the length of the FST type is negative"),
        (ARC_AT + 12, "<i", 2, "leads to a state outside [0, 2)"),
        (ARC_AT + 12, "<i", -1, "leads to a state outside"),
        (ARC_AT, "<i", -3, "not an acceptor"),
        (ARC_AT + 8, "<f", float("nan"), "is weighted"),
        (BODY_AT, "<f", float("nan"), "the final weight nan"),
    ],
)
def test_counts_states_and_lengths_out_of_range_raise_quickly(offset, layout, value, fragment):
    began = time.perf_counter()
    raises_model_file_error(patched(two_states(), offset, layout, value), fragment, "at byte")
    assert time.perf_counter() - began < 0.05


def test_huge_symbol_table_sizes_raise():
    data = grammar_bytes()
    size_at = BODY_AT + 4 + 4 + len("<unspecified>") + 8  # after the table's magic, name and next free key
    assert struct.unpack_from("<q", data, size_at)[0] == 4
    raises_model_file_error(patched(data, size_at, "<q", 2**62), "the number of symbols in the input symbol table")
    raises_model_file_error(patched(data, size_at, "<q", -1), "negative")
    raises_model_file_error(patched(data, size_at - 8, "<q", -5), "next free key")
    raises_model_file_error(patched(data, BODY_AT, "<i", 12345), "the input symbol table has the magic number 12345")


def test_bad_symbols_raise():
    data = write_acceptor(Acceptor(1, 0, [True], [], [], [], {1: "ab", 2: "cd"}))
    first = data.index(b"ab")
    raises_model_file_error(data[:first] + b"\xff\xfe" + data[first + 2 :], "not UTF-8")
    raises_model_file_error(data[:first] + b"cd" + data[first + 2 :], "both the keys 1 and 2")
    raises_model_file_error(patched(data, first + 2, "<q", 2), "the key 2 to both 'ab' and 'cd'")
    raises_model_file_error(patched(data, first + 2, "<q", -3), "negative key -3")


def test_a_transducer_raises():
    fst = pynini.cross("a", "b")
    raises_model_file_error(fst.write_to_string(), "reads and writes different labels")
    with pytest.raises(TopologyError, match="^the acceptor: .*not an acceptor"):
        as_arrays(fst)


@pytest.mark.parametrize("arc_type", ARC_TYPES)
@pytest.mark.parametrize("weight", [1.5, -0.25, float("inf")])
def test_a_weighted_arc_raises(arc_type, weight):
    fst = pynini.Fst(arc_type=arc_type)
    fst.add_states(2)
    fst.set_start(0)
    fst.set_final(1)
    fst.add_arc(0, pywrapfst.Arc(1, 1, pywrapfst.Weight(fst.weight_type(), weight), 1))
    raises_model_file_error(fst.write_to_string(), "arc 0 of state 0", "is weighted")


@pytest.mark.parametrize("arc_type", ARC_TYPES)
def test_a_weighted_final_state_raises(arc_type):
    fst = pynini.accep("a", arc_type=arc_type)
    fst.set_final(1, pywrapfst.Weight(fst.weight_type(), 2.0))
    raises_model_file_error(fst.write_to_string(), "the final weight 2.0")


@pytest.mark.parametrize(
    "data, fragment",
    [
        (b"", "the data ends inside the magic number"),
        (b"\x00" * 66, "not an OpenFst machine: the magic number is 0"),
        (struct.pack(">i", FST_MAGIC) + b"\x00" * 62, "big-endian"),
        (pywrapfst.convert(pynini.accep("ab"), "const").write_to_string(), "the FST type is 'const'"),
    ],
)
def test_foreign_bytes_raise(data, fragment):
    raises_model_file_error(data, fragment)


def test_unknown_arc_types_versions_flags_and_properties_raise():
    data = two_states()
    raises_model_file_error(data[:18] + b"tropical" + data[26:], "the arc type is 'tropical'", "log64")
    raises_model_file_error(patched(data, VERSION_AT, "<i", 1), "version 1")
    raises_model_file_error(patched(data, FLAGS_AT, "<I", 8), "unknown flags 0x8")
    raises_model_file_error(patched(data, PROPERTIES_AT, "<Q", 0x7), "error state")
    raises_model_file_error(patched(data, PROPERTIES_AT, "<Q", 0x30000), "a property and its negation")
    raises_model_file_error(data + b"\x00", "1 bytes follow the last state")
    with pytest.raises(ArgumentTypeError):
        read_acceptor("text", WHERE)
