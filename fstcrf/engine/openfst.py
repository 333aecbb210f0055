"""OpenFst's binary VectorFst format for unweighted acceptors, in numpy, without pynini.

Model files keep a compiled grammar as the bytes of ``pynini.Fst.write_to_string()``.
:func:`read_acceptor` parses such bytes into an :class:`~fstcrf.engine.acceptor.Acceptor`,
checking every count, offset, label and state against the data before it reads or
allocates anything, so that hostile bytes raise ModelFileError and nothing else;
:func:`write_acceptor` writes the bytes pynini writes for the same machine.
:func:`acceptor_from_fst` and :func:`acceptor_to_fst` convert for callers that have
pynini, keeping state numbers and arc order.

The layout, from OpenFst's fst.h and fst.cc (FstHeader), vector-fst.h
(VectorFst::Read and WriteFst), symbol-table.cc (SymbolTable::Read and Write) and
util.h (strings); numbers are little-endian (OpenFst writes the host's order)::

    header   int32 magic 2125659606, string FST type "vector", string arc type,
             int32 version 2, uint32 flags (1 input symbols, 2 output symbols,
             4 aligned: no effect on a VectorFst), uint64 properties, int64 start
             (-1: none), int64 states (-1: unknown, states run to the end),
             int64 arcs (VectorFst leaves it 0)
    symbols  the input table, then the output table, each if flagged: int32 magic
             2125658996, string name, int64 available key, int64 size, then size
             times (string symbol, int64 key)
    states   per state: weight final, int64 arcs, then per arc int32 ilabel,
             int32 olabel, weight, int32 nextstate

A string is its int32 length and its bytes.  A weight is a float32 (arc types
"standard", the tropical semiring, and "log") or a float64 ("log64"); in all three
One = 0.0 and Zero = +inf.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from typing import Any, NoReturn

import numpy as np

from fstcrf.engine.acceptor import NO_STATE, Acceptor
from fstcrf.errors import ArgumentTypeError, FstcrfError, ModelFileError, TopologyError

FST_MAGIC = 2125659606
SYMBOL_TABLE_MAGIC = 2125658996
VECTOR_VERSION = 2
HAS_INPUT_SYMBOLS, HAS_OUTPUT_SYMBOLS, IS_ALIGNED = 1, 2, 4
#: The name pynini gives a new symbol table.
SYMBOL_TABLE_NAME = b"<unspecified>"
INT32_MAX = 2**31 - 1

#: arc type -> the numpy type of its weights
WEIGHT_TYPES = {"standard": "<f4", "log": "<f4", "log64": "<f8"}
WRITTEN_ARC_TYPE = "standard"

# Property bits, from OpenFst's properties.h.  A trinary property has a positive bit
# and the negative bit above it; neither set means unknown.
EXPANDED, MUTABLE, ERROR = 0x1, 0x2, 0x4
ACCEPTOR = 0x1_0000
I_DETERMINISTIC, O_DETERMINISTIC = 0x4_0000, 0x10_0000
EPSILONS, NO_EPSILONS = 0x40_0000, 0x80_0000
I_EPSILONS, NO_I_EPSILONS = 0x100_0000, 0x200_0000
O_EPSILONS, NO_O_EPSILONS = 0x400_0000, 0x800_0000
I_LABEL_SORTED, NOT_I_LABEL_SORTED = 0x1000_0000, 0x2000_0000
O_LABEL_SORTED, NOT_O_LABEL_SORTED = 0x4000_0000, 0x8000_0000
UNWEIGHTED = 0x2_0000_0000
ACYCLIC = 0x8_0000_0000
INITIAL_ACYCLIC = 0x20_0000_0000
TOP_SORTED, NOT_TOP_SORTED = 0x40_0000_0000, 0x80_0000_0000
ACCESSIBLE = 0x100_0000_0000
COACCESSIBLE = 0x400_0000_0000
STRING = 0x1000_0000_0000
UNWEIGHTED_CYCLES = 0x8000_0000_0000
#: the properties of an empty machine
NULL_PROPERTIES = (
    (ACCEPTOR | I_DETERMINISTIC | O_DETERMINISTIC | NO_EPSILONS | NO_I_EPSILONS | NO_O_EPSILONS | I_LABEL_SORTED)
    | (O_LABEL_SORTED | UNWEIGHTED | ACYCLIC | INITIAL_ACYCLIC | TOP_SORTED | ACCESSIBLE | COACCESSIBLE | STRING)
    | (UNWEIGHTED_CYCLES)
)
TRINARY_PROPERTIES = 0x0000_FFFF_FFFF_0000
POSITIVE_PROPERTIES = TRINARY_PROPERTIES & 0x5555_5555_5555_5555

INT32 = struct.Struct("<i")
UINT32 = struct.Struct("<I")
INT64 = struct.Struct("<q")
UINT64 = struct.Struct("<Q")
#: a written state's final weight and arc count ("standard" arcs)
STATE_HEAD = struct.Struct("<fq")


def arc_dtype(weight_type: str) -> np.dtype:
    """The packed record of one stored arc: ilabel, olabel, weight, nextstate."""
    return np.dtype([("ilabel", "<i4"), ("olabel", "<i4"), ("weight", weight_type), ("nextstate", "<i4")])


def _shown(raw: bytes) -> str:
    """Stored bytes as text for a message, never raising."""
    text = raw[:40].decode("utf-8", "backslashreplace")
    return repr(text + ("..." if len(raw) > 40 else ""))


class _Reader:
    """A cursor over the bytes that raises ``error`` ("where: what is wrong, at the
    offset of the item read last") instead of reading past the end."""

    def __init__(self, data: bytes, where: str, error: type[FstcrfError]) -> None:
        self.data = data
        self.where = where
        self.error = error
        self.pos = 0
        self.item = 0

    @property
    def left(self) -> int:
        return len(self.data) - self.pos

    def fail(self, what: str) -> NoReturn:
        raise self.error(f"{self.where}: {what} (at byte {self.item} of {len(self.data)})")

    def skip(self, size: int, what: str) -> int:
        """The offset of the next ``size`` bytes, which the cursor moves past."""
        self.item = self.pos
        if size > self.left:
            self.fail(f"the data ends inside {what}: it needs {size} bytes, {self.left} are left")
        self.pos += size
        return self.item

    def unpack(self, layout: struct.Struct, what: str) -> tuple[Any, ...]:
        return layout.unpack_from(self.data, self.skip(layout.size, what))

    def number(self, layout: struct.Struct, what: str) -> int:
        return int(self.unpack(layout, what)[0])

    def count(self, what: str, item_size: int) -> int:
        """An int64 count of items of at least ``item_size`` bytes each, which the rest
        of the data must be able to hold."""
        value = self.number(INT64, what)
        if value < 0:
            self.fail(f"{what} is negative ({value})")
        if value > self.left // item_size:
            self.fail(f"{what} is {value}, but the {self.left} bytes left hold at most {self.left // item_size}")
        return value

    def string(self, what: str) -> bytes:
        size = self.number(INT32, f"the length of {what}")
        if size < 0:
            self.fail(f"the length of {what} is negative ({size})")
        start = self.skip(size, what)
        return self.data[start : start + size]

    def symbol_table(self, which: str) -> dict[int, str]:
        """The symbol table that starts here as {key: symbol}."""
        what = f"the {which} symbol table"
        magic = self.number(INT32, f"the magic number of {what}")
        if magic != SYMBOL_TABLE_MAGIC:
            self.fail(f"{what} has the magic number {magic}, expected {SYMBOL_TABLE_MAGIC}")
        self.string(f"the name of {what}")
        available = self.number(INT64, f"the next free key of {what}")
        if available < 0:
            self.fail(f"the next free key of {what} is negative ({available})")
        size = self.count(f"the number of symbols in {what}", INT32.size + INT64.size)
        table: dict[int, str] = {}
        keys: dict[str, int] = {}
        for i in range(size):
            raw = self.string(f"symbol {i} of {what}")
            key = self.number(INT64, f"the key of symbol {i} of {what}")
            try:
                symbol = raw.decode("utf-8")
            except UnicodeDecodeError:
                self.fail(f"symbol {i} of {what} is not UTF-8: {_shown(raw)}")
            if key < 0:
                self.fail(f"symbol {symbol!r} of {what} has the negative key {key}")
            if key in table:
                self.fail(f"{what} gives the key {key} to both {table[key]!r} and {symbol!r}")
            if symbol in keys:
                self.fail(f"{what} gives the symbol {symbol!r} both the keys {keys[symbol]} and {key}")
            table[key] = symbol
            keys[symbol] = key
        return table


def read_acceptor(data: bytes, where: str) -> Acceptor:
    """The unweighted acceptor stored in OpenFst's binary VectorFst format.

    ``where`` names the data in messages (a model file and its entry, say).  Arcs of
    the arc types "standard", "log" and "log64" are read; every arc must read and
    write one label and weigh One (0.0), and every final weight must be One or Zero
    (+inf).  ``symbols`` is the input symbol table ({key: symbol}) or None; an output
    table is checked but not kept.  Raises ModelFileError, with a message that starts
    with ``where``, for anything else, for truncated or trailing bytes and for a
    count, state or label out of range."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ArgumentTypeError(f"{where}: expected the bytes of an OpenFst machine, got {type(data).__name__}")
    return parse_acceptor(bytes(data), where, ModelFileError)


def parse_acceptor(data: bytes, where: str, error: type[FstcrfError]) -> Acceptor:
    """The acceptor OpenFst bytes ``data`` hold; ``error`` (named after ``where``) for
    bytes that are not an unweighted vector acceptor."""
    reader = _Reader(data, where, error)
    magic = reader.number(INT32, "the magic number")
    if magic != FST_MAGIC:
        if magic == INT32.unpack(struct.pack(">i", FST_MAGIC))[0]:
            reader.fail("this machine was written big-endian; only little-endian OpenFst files are read")
        reader.fail(f"not an OpenFst machine: the magic number is {magic}, expected {FST_MAGIC}")
    fst_type = reader.string("the FST type")
    if fst_type != b"vector":
        reader.fail(f"the FST type is {_shown(fst_type)}; only 'vector' machines are read")
    arc_type = reader.string("the arc type")
    weight_type = WEIGHT_TYPES.get(arc_type.decode("latin-1"))
    if weight_type is None:
        reader.fail(f"the arc type is {_shown(arc_type)}; expected one of {', '.join(WEIGHT_TYPES)}")
    version = reader.number(INT32, "the version")
    if version != VECTOR_VERSION:
        reader.fail(f"VectorFst version {version} is not supported (expected {VECTOR_VERSION})")
    flags = reader.number(UINT32, "the flags")
    if flags & ~(HAS_INPUT_SYMBOLS | HAS_OUTPUT_SYMBOLS | IS_ALIGNED):
        reader.fail(f"unknown flags {flags:#x} in the header")
    properties = reader.number(UINT64, "the properties")
    if properties & ERROR:
        reader.fail("the machine was written in OpenFst's error state")
    if properties & POSITIVE_PROPERTIES & (properties >> 1):
        reader.fail(f"the properties {properties:#x} claim a property and its negation")
    start = reader.number(INT64, "the start state")
    start_at = reader.item
    if start < NO_STATE:
        reader.fail(f"the start state is {start}")
    num_states = reader.number(INT64, "the number of states")
    states_at = reader.item
    if num_states < -1:
        reader.fail(f"the number of states is {num_states}")
    if reader.number(INT64, "the number of arcs") < 0:  # unused: VectorFst leaves it 0
        reader.fail("the number of arcs is negative")
    symbols = reader.symbol_table("input") if flags & HAS_INPUT_SYMBOLS else None
    if flags & HAS_OUTPUT_SYMBOLS:
        reader.symbol_table("output")

    record = arc_dtype(weight_type)
    final_weight = struct.Struct("<" + np.dtype(weight_type).char)
    state_size = final_weight.size + INT64.size  # at least: a final weight and an arc count
    if num_states > reader.left // state_size:
        reader.item = states_at
        reader.fail(
            f"the header claims {num_states} states, but the {reader.left} bytes left hold at most "
            f"{reader.left // state_size}"
        )
    final, arc_offsets, arc_counts = _states(reader, num_states, final_weight, record.itemsize)
    if reader.left:
        reader.item = reader.pos
        reader.fail(f"{reader.left} bytes follow the last state")
    Q = len(final)
    if start >= Q:
        reader.item = start_at
        reader.fail(f"the start state {start} is not one of the {Q} states")
    view = memoryview(data)  # the states' arcs in a row, read at once (concatenating them by state took 0.8 s)
    arcs = np.frombuffer(
        b"".join(view[offset : offset + count * record.itemsize] for offset, count in zip(arc_offsets, arc_counts)),
        record,
    )
    src = np.repeat(np.arange(Q, dtype=np.int64), arc_counts)

    def arc_fault(bad: np.ndarray, what: str) -> None:
        if bad.any():
            i = int(np.argmax(bad))
            state = int(src[i])
            position = i - sum(arc_counts[:state])
            reader.item = arc_offsets[state] + position * record.itemsize
            arc = arcs[i]
            reader.fail(
                f"arc {position} of state {state} ({arc['ilabel']}:{arc['olabel']}/"
                f"{arc['weight']} -> {arc['nextstate']}) {what}"
            )

    arc_fault(arcs["ilabel"] != arcs["olabel"], "reads and writes different labels: not an acceptor")
    arc_fault(arcs["ilabel"] < 0, "has a negative label")
    arc_fault(arcs["weight"] != 0.0, "is weighted: an unweighted acceptor's arcs weigh 0")
    arc_fault((arcs["nextstate"] < 0) | (arcs["nextstate"] >= Q), f"leads to a state outside [0, {Q})")
    return Acceptor(
        num_states=Q,
        start=start,
        final=np.array(final, dtype=bool),
        arc_src=src,
        arc_key=arcs["ilabel"].astype(np.int64),
        arc_dst=arcs["nextstate"].astype(np.int64),
        symbols=symbols,
    )


def _states(
    reader: _Reader, num_states: int, final_weight: struct.Struct, arc_size: int
) -> tuple[list[bool], list[int], list[int]]:
    """(final, arc offsets, arc counts) of the states that start at the cursor (all
    that are left when ``num_states`` is -1), which it moves past: each read in one
    unpacking, and one that is not whole and unweighted again by
    :func:`_checked_state`, which names what is wrong (reading every state in
    checked steps took most of the time of reading a large acceptor)."""
    head = struct.Struct("<" + final_weight.format.lstrip("<") + "q")  # final weight, arc count
    data, pos, end = reader.data, reader.pos, len(reader.data)
    final: list[bool] = []
    arc_offsets: list[int] = []
    arc_counts: list[int] = []
    while (len(final) < num_states) if num_states != -1 else (pos < end):
        weight, narcs = head.unpack_from(data, pos) if end - pos >= head.size else (math.nan, -1)
        arcs_at = pos + head.size
        if (weight == 0.0 or weight == math.inf) and 0 <= narcs <= (end - arcs_at) // arc_size:
            arc_offsets.append(arcs_at)
            pos = arcs_at + narcs * arc_size
        else:
            reader.pos = pos
            weight, narcs, offset = _checked_state(reader, len(final), final_weight, arc_size)
            arc_offsets.append(offset)
            pos = reader.pos
        final.append(weight == 0.0)
        arc_counts.append(narcs)
    reader.pos = pos
    return final, arc_offsets, arc_counts


def _checked_state(reader: _Reader, state: int, final_weight: struct.Struct, arc_size: int) -> tuple[float, int, int]:
    """(final weight, arc count, arc offset) of ``state`` at the cursor, read in checked
    steps that raise what is wrong with it."""
    weight = float(reader.unpack(final_weight, f"the final weight of state {state}")[0])
    if weight not in (0.0, math.inf):
        reader.fail(f"state {state} has the final weight {weight}; an unweighted acceptor's are 0 or inf")
    narcs = reader.count(f"the number of arcs of state {state}", arc_size)
    return weight, narcs, reader.skip(narcs * arc_size, f"the arcs of state {state}")


def symbol_entries(acceptor: Acceptor) -> list[tuple[int, str]]:
    """The acceptor's symbols as (key, symbol) by key, after checking that the acceptor
    fits OpenFst's int32 states and labels and its table has distinct UTF-8 symbols."""
    if not isinstance(acceptor, Acceptor):
        raise ArgumentTypeError(f"expected an Acceptor, got {type(acceptor).__name__}")
    if acceptor.num_states > INT32_MAX:
        raise TopologyError(f"OpenFst numbers states with int32; the acceptor has {acceptor.num_states}")
    if acceptor.num_arcs and int(acceptor.arc_key.max()) > INT32_MAX:
        raise TopologyError(f"OpenFst labels are int32; the acceptor has the key {int(acceptor.arc_key.max())}")
    if acceptor.symbols is None:
        return []
    if not isinstance(acceptor.symbols, Mapping):
        raise ArgumentTypeError(f"an acceptor's symbols must be a mapping, got {type(acceptor.symbols).__name__}")
    entries = []
    keys: dict[str, int] = {}
    for key, symbol in acceptor.symbols.items():
        if not isinstance(key, (int, np.integer)) or isinstance(key, bool) or not 0 <= key < 2**63:
            raise TopologyError(f"symbol keys must be integers in [0, 2**63), got {key!r}")
        if not isinstance(symbol, str):
            raise ArgumentTypeError(f"the symbol of key {key} must be a str, got {type(symbol).__name__}")
        try:
            if len(symbol.encode("utf-8")) > INT32_MAX:
                raise TopologyError(f"the symbol of key {key} is longer than OpenFst's int32 lengths")
        except UnicodeEncodeError:
            raise TopologyError(f"the symbol of key {key} cannot be written as UTF-8: {symbol!r}") from None
        if symbol in keys:
            raise TopologyError(f"the symbol {symbol!r} has two keys, {keys[symbol]} and {key}")
        keys[symbol] = int(key)
        entries.append((int(key), symbol))
    return sorted(entries)


def _string(raw: bytes) -> bytes:
    return INT32.pack(len(raw)) + raw


def _symbol_table_bytes(entries: list[tuple[int, str]]) -> bytes:
    """The table as SymbolTable::Write stores it: keys ascending, the next free key
    one past the largest."""
    available = entries[-1][0] + 1 if entries else 0
    parts = [
        INT32.pack(SYMBOL_TABLE_MAGIC),
        _string(SYMBOL_TABLE_NAME),
        INT64.pack(available),
        INT64.pack(len(entries)),
    ]
    parts.extend(_string(symbol.encode("utf-8")) + INT64.pack(key) for key, symbol in entries)
    return b"".join(parts)


def written_properties(acceptor: Acceptor) -> int:
    """The property bits written for the acceptor: those OpenFst itself knows after
    building it with add_states, set_start, set_final and add_arc (properties.h:
    AddStateProperties, SetStartProperties, SetFinalProperties, AddArcProperties),
    each a fact read off the arcs.  Determinism, accessibility, coaccessibility and
    the cycles of a machine that is not top-sorted stay unknown, as in OpenFst."""
    if acceptor.num_states == 0:  # a new VectorFst
        return EXPANDED | MUTABLE | NULL_PROPERTIES
    src, key, dst = acceptor.arc_src, acceptor.arc_key, acceptor.arc_dst
    properties = EXPANDED | MUTABLE | ACCEPTOR | UNWEIGHTED
    if not acceptor.num_arcs:  # nothing has been added that could break these
        properties |= I_DETERMINISTIC | O_DETERMINISTIC | UNWEIGHTED_CYCLES
    if np.any(key == 0):
        properties |= EPSILONS | I_EPSILONS | O_EPSILONS
    else:
        properties |= NO_EPSILONS | NO_I_EPSILONS | NO_O_EPSILONS
    if np.any((src[1:] == src[:-1]) & (key[1:] < key[:-1])):
        properties |= NOT_I_LABEL_SORTED | NOT_O_LABEL_SORTED
    else:
        properties |= I_LABEL_SORTED | O_LABEL_SORTED
    if np.any(dst <= src):
        properties |= NOT_TOP_SORTED
    else:
        properties |= TOP_SORTED | ACYCLIC | INITIAL_ACYCLIC
    return properties


def write_acceptor(acceptor: Acceptor) -> bytes:
    """The acceptor in OpenFst's binary VectorFst format with "standard" arcs (the
    bytes ``acceptor_to_fst(acceptor).write_to_string()`` gives), its symbols, if
    any, as both input and output symbol table.

    Raises TopologyError when a state, label or symbol does not fit OpenFst."""
    entries = symbol_entries(acceptor)
    table = _symbol_table_bytes(entries) if acceptor.symbols is not None else b""
    flags = HAS_INPUT_SYMBOLS | HAS_OUTPUT_SYMBOLS if table else 0
    header = b"".join(
        [
            INT32.pack(FST_MAGIC),
            _string(b"vector"),
            _string(WRITTEN_ARC_TYPE.encode()),
            INT32.pack(VECTOR_VERSION),
            UINT32.pack(flags),
            UINT64.pack(written_properties(acceptor)),
            INT64.pack(acceptor.start),
            INT64.pack(acceptor.num_states),
            INT64.pack(0),
        ]
    )
    # States and arcs as one byte array: state q's head (final weight, arc count)
    # starts after q heads and the arcs before it, and arc i (of state src[i]) after
    # src[i] + 1 heads and i arcs.
    Q, A = acceptor.num_states, acceptor.num_arcs
    record = arc_dtype(WEIGHT_TYPES[WRITTEN_ARC_TYPE])
    heads = np.zeros(Q, np.dtype([("final", "<f4"), ("narcs", "<i8")]))
    heads["final"] = np.where(acceptor.final, 0.0, np.inf)
    ptr = acceptor.arc_ptr()
    heads["narcs"] = np.diff(ptr)
    arcs = np.zeros(A, record)
    arcs["ilabel"] = arcs["olabel"] = acceptor.arc_key
    arcs["nextstate"] = acceptor.arc_dst
    body = np.empty(Q * STATE_HEAD.size + A * record.itemsize, np.uint8)
    head_at = STATE_HEAD.size * np.arange(Q) + record.itemsize * ptr[:-1]
    arc_at = STATE_HEAD.size * (acceptor.arc_src + 1) + record.itemsize * np.arange(A)
    body[head_at[:, None] + np.arange(STATE_HEAD.size)] = heads.view(np.uint8).reshape(Q, STATE_HEAD.size)
    body[arc_at[:, None] + np.arange(record.itemsize)] = arcs.view(np.uint8).reshape(A, record.itemsize)
    return header + table + table + body.tobytes()
