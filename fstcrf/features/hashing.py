"""The 64-bit hashes of strings that name predicate values (csrc/fstcrf_hashing.h),
and the store of what each column value gives the items of a template, which tagging
reads without naming each value (:class:`ValueStore`).

The store numbers the distinct column values met (rows) and keeps, in tables, the
hash of each value's name under a transform (:class:`SingleTable`, and
:class:`SeenTable` for ``seen_lower``), its prefixes', suffixes' or n-grams' hashes
(:class:`ListTable`, hashed in C from its UTF-8 text by
:func:`fstcrf.engine.kernel.substring_hashes`) and its text under a transform
(:class:`TextTable`, which type sequences join), each computed once when a value is
first met, in one C call for a batch's new values that are ASCII (:func:`kernel_text`,
:class:`fstcrf.engine.kernel.StoreWriter`).  A batch then costs
one dictionary lookup per token and one C call
(:func:`fstcrf.engine.kernel.item_values`, csrc/fstcrf_values.h) for all its items.
Values that escaping would change (a backslash, a bar, an underscore) or that are
longer than the kernel takes get their lists from the named lists of
:func:`fstcrf.features.value_lists.per_value` instead, with the same hashes.
Single values alone (the template lines of single values, looked up by
``fh_predicate_rows``) come from the simpler :class:`ValueHashes`.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate, repeat
from typing import NamedTuple

import numpy as np

from fstcrf.engine import kernel
from fstcrf.errors import HashCollisionError
from fstcrf.features.template import Observation, affix_transform, escaped, transform_function
from fstcrf.features.value_lists import BEGIN, END, SEEN, UNSEEN, missing_from, per_value

#: The kinds of value list whose hashes a :class:`ListTable` keeps (the kernel's).
SUBSTRING_KINDS = tuple(kernel.SUBSTRING_KINDS)

#: Values, and list hashes or text bytes, a :class:`ValueStore` holds before it starts
#: afresh (its memory stays bounded: 32 MiB of list hashes, and the values' tables).
CACHE_HASHES = 1 << 22
CACHE_VALUES = 1 << 18
#: Tables a :class:`ValueStore` holds before it starts afresh (each model's
#: ``seen_lower`` sets are tables of their own).
CACHE_TABLES = 256
#: The room a new :class:`ValueStore` reserves (address space: a page is used when
#: first written), so that a stream of new values grows no array by copies until
#: it holds about this many values, tables of each category, list hashes and text
#: bytes (a document stream's vocabulary, a rich template's tables).
FIRST_VALUES = 1 << 15
FIRST_TABLES = {"single": 32, "list": 8, "text": 8}
FIRST_ENTRIES = 1 << 21

#: Values whose substrings escaping could change (escape_value), hashed from their names.
ESCAPED_CHARACTERS = re.compile(r"[\\|_]")

#: Names :func:`pack_names` offsets in Python (fewer numpy calls), not in numpy.
FEW_NAMES = 256


def pack_names(names: Sequence[str]) -> tuple[str, np.ndarray]:
    """(the names joined, character offsets int64 [P + 1]): one string instead of P
    (CoNLL-2000's CRF++ template has 338k predicates, 24 MiB as separate strings)."""
    if len(names) <= FEW_NAMES:  # one numpy call, not three: a batch's few new values
        offsets = np.fromiter(accumulate(map(len, names), initial=0), dtype=np.int64, count=len(names) + 1)
    else:
        offsets = np.zeros(len(names) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, names), dtype=np.int64, count=len(names)), out=offsets[1:])
    return "".join(names), offsets


def utf8_blob(values: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(uint8 [B + 1], the values' UTF-8 bytes back to back (surrogates passed) and a
    0; byte offsets int64 [n + 1] of each value)."""
    text, offsets = pack_names(values)  # offsets in characters
    if not text.isascii():  # characters to bytes: the UTF-8 length of each code point, summed
        points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        ends = np.zeros(len(points) + 1, dtype=np.int64)
        np.cumsum(1 + (points >= 0x80) + (points >= 0x800) + (points >= 0x10000), out=ends[1:])
        offsets = ends[offsets]
    return np.frombuffer(text.encode("utf-8", "surrogatepass") + b"\0", dtype=np.uint8), offsets  # never empty


def utf8_hashes(values: Sequence[str], salt: int) -> np.ndarray:
    """uint64 [n]: the 64-bit hash of each string's UTF-8 text under ``salt``."""
    blob, offsets = utf8_blob(values)
    hashes = np.empty(len(values), dtype=np.uint64)
    kernel.string_hashes(blob, offsets, salt, hashes)
    return hashes


def kernel_text(values: Sequence[str]) -> bytes | None:
    """``values`` as the kernel's transforms read them (each but the last followed by a
    newline), or None where one is not ASCII; the kernel refuses the rest it does not
    take (a newline or a character escaping could change in a value, one too long)."""
    text = "\n".join(values)
    return text.encode("ascii") if text.isascii() else None


@functools.lru_cache(maxsize=256)  # a few names, asked for at every batch's new values
def kernel_transform(transform: str | None) -> tuple[int, int] | None:
    """(kind, length) of a transform (None: the value itself) for
    :class:`fstcrf.engine.kernel.StoreWriter`, or None where it has no kind."""
    if transform is None:
        return kernel.IDENTITY, 0
    affix = affix_transform(transform)
    if affix is not None:
        return kernel.TRANSFORM_KINDS[affix[0]], affix[1]
    kind = kernel.TRANSFORM_KINDS.get(transform)
    return None if kind is None or transform in ("prefix", "suffix") else (kind, 0)


@functools.lru_cache(maxsize=256)
def mark_hashes(salt: int) -> tuple[int, int]:
    """The hashes of SEEN and UNSEEN under ``salt``."""
    seen_hash, unseen_hash = utf8_hashes([SEEN, UNSEEN], salt).tolist()
    return seen_hash, unseen_hash


def kernel_fields(spec: TableSpec) -> tuple[int, ...] | None:
    """The fields of a table of :class:`fstcrf.engine.kernel.StoreWriter` but its place
    (category, transform, length, marked, kind, low, high) for a table whose entries
    the kernel writes, or None (a transform or lengths it lacks)."""
    transform = kernel_transform(spec.transform)
    if transform is None:
        return None
    category = kernel.STORE_CATEGORIES["seen" if isinstance(spec, SeenTable) else spec.category]
    if not isinstance(spec, ListTable):
        return (category, *transform, 0, 0, 0, 0)
    if spec.high > kernel.MAX_SUBSTRING_SOURCE:
        return None
    return (category, *transform, int(spec.kind == "ngrams"), kernel.SUBSTRING_KINDS[spec.kind], spec.low, spec.high)


def grown(room: np.ndarray, filled: int, new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the buffer, its first filled + len(new) entries): ``new`` written past the
    ``filled`` entries of ``room``, in a copy of twice the size when there is no room
    left (so that adding a few entries costs no copy of all; an entry once written
    is never written again)."""
    total = filled + len(new)
    room = reserved(room, filled, len(new))
    room[filled:total] = new
    return room, room[:total]


def reserved(room: np.ndarray, filled: int, extra: int) -> np.ndarray:
    """``room``, or a copy of its first ``filled`` entries twice the size, with room for
    ``extra`` more entries past them."""
    total = filled + extra
    if len(room) < total:
        room = np.concatenate([room[:filled], np.empty(max(total, 2 * len(room)) - filled, dtype=room.dtype)])
    return room


class SingleTable(NamedTuple):
    """A table of a :class:`ValueStore`: the hash of each value's name under
    ``transform`` (None: the value itself), escaped as a template line names it."""

    transform: str | None
    category: str = "single"

    def unescaped_names(self, values: list[str]) -> list[str]:
        """The name of each of ``values`` before escaping (:func:`escaped` makes it the
        name a template line reads)."""
        function = transform_function(self.transform) if self.transform is not None else None
        return values if function is None else list(map(function, values))


class SeenTable(NamedTuple):
    """A table of a :class:`ValueStore`: the hash of ``seen_lower``'s mark of each value
    under ``transform``, SEEN when ``seen`` holds it lower-cased, else UNSEEN.  Two are
    the same table when they hold the same set object: comparing the contents of two
    models' sets of training words (equal when trained on the same file) would cost a
    pass over them at every lookup; the store keeps the set alive while it keeps the
    table, so its id is not reused meanwhile."""

    transform: str | None
    seen: frozenset[str]
    category: str = "single"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, SeenTable)
            and self.seen is other.seen
            and (self.transform, self.category) == (other.transform, other.category)
        )

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((self.transform, id(self.seen), self.category))

    def hashes(self, values: list[str], salt: int) -> np.ndarray:
        """uint64 [n]: the hash of the mark of each of ``values`` under ``salt``
        (escaping leaves SEEN and UNSEEN as they are)."""
        seen_hash, unseen_hash = mark_hashes(salt)
        function = transform_function(self.transform) if self.transform is not None else None
        transformed = values if function is None else map(function, values)
        seen = self.seen
        marks = (seen_hash if value.lower() in seen else unseen_hash for value in transformed)
        return np.fromiter(marks, dtype=np.uint64, count=len(values))


class ListTable(NamedTuple):
    """A table of a :class:`ValueStore`: the hashes of the prefixes, suffixes or n-grams
    (``kind`` of SUBSTRING_KINDS, lengths low..high) of each value under ``transform``,
    in the order of :func:`fstcrf.features.value_lists.per_value`'s list."""

    kind: str
    low: int
    high: int
    transform: str | None
    category: str = "list"

    def entries(self, values: list[str], salt: int) -> tuple[np.ndarray, np.ndarray]:
        """(ptr int64 [n+1]: value i's hashes are hashes[ptr[i] .. ptr[i+1]-1]; the hashes)."""
        if self.transform is not None:
            values = list(map(transform_function(self.transform), values))  # type: ignore[arg-type]
        marks = self.kind == "ngrams"
        longest = kernel.MAX_SUBSTRING_SOURCE - 2 * marks
        if max(map(len, values), default=0) <= longest and not ESCAPED_CHARACTERS.search("".join(values)):
            return self._hashed(values, marks, salt)  # all of them in C, as most batches' values
        in_c = [len(value) <= longest and not ESCAPED_CHARACTERS.search(value) for value in values]
        named = per_value(Observation("", 0, None, self.kind, self.low, self.high), None)
        ptr = np.zeros(len(values) + 1, dtype=np.int64)
        hashes = []
        for k, (value, fast) in enumerate(zip(values, in_c)):
            own = self._hashed([value], marks, salt)[1] if fast else utf8_hashes(escaped(named(value)), salt)
            ptr[k + 1] = ptr[k] + len(own)
            hashes.append(own)
        return ptr, np.concatenate(hashes)

    def capacity(self, characters: int, count: int) -> int:
        """The most hashes the lists of ``count`` values of ``characters`` code points in
        all (transformed, never longer) hold: at most one of each length per value, or
        per code point for n-grams (marks included)."""
        per_length = characters + 2 * count if self.kind == "ngrams" else count
        return (self.high - self.low + 1) * per_length

    def _hashed(self, values: list[str], marks: bool, salt: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`entries` of values C takes as they are."""
        blob, offsets = utf8_blob([BEGIN + value + END for value in values] if marks else values)
        capacity = self.capacity(sum(map(len, values)), len(values))
        ptr = np.empty(len(values) + 1, dtype=np.int64)
        hashes = np.empty(capacity, dtype=np.uint64)
        kernel.substring_hashes(blob, offsets, self.kind, self.low, self.high, salt, ptr, hashes)
        return ptr, hashes[: ptr[-1]]


class TextTable(NamedTuple):
    """A table of a :class:`ValueStore`: each value's text under ``transform``, UTF-8
    and unescaped (type sequences join them)."""

    transform: str | None
    category: str = "text"

    def entries(self, values: list[str], salt: int) -> tuple[np.ndarray, np.ndarray]:
        """(byte offsets int64 [n+1], the values' texts under the transform, UTF-8 and
        back to back)."""
        function = transform_function(self.transform) if self.transform is not None else None
        blob, offsets = utf8_blob(values if function is None else list(map(function, values)))
        return offsets, blob[: offsets[-1]]


TableSpec = SingleTable | SeenTable | ListTable | TextTable


class StoreTables(NamedTuple):
    """What ``kernel.item_values`` reads of a :class:`ValueStore`: its rows 0 ..
    num_rows-1 of each category's tables (see csrc/fstcrf_values.h), and how many
    times the store had started afresh (a row names the same value while that count
    is the same)."""

    num_rows: int
    single: np.ndarray
    list_span: np.ndarray
    list_hashes: np.ndarray
    text_span: np.ndarray
    text_bytes: np.ndarray
    generation: int = 0


#: The arrays of a :class:`ValueStore` that hold each category's entries: the buffer
#: that doubles as it fills, its filled part, and the spans into it.
ENTRY_ARRAYS = {"list": ("_list_room", "list_hashes", "list_span"), "text": ("_text_room", "text_bytes", "text_span")}

_CACHES_LOCK = threading.Lock()


class ValueHashes:
    """The hash of each single value a transform gives (``escape_value(transform(v))``,
    the name a template line reads) of each column value v met so far, under one
    salt, for every transform asked for: a batch looks each token's value up once
    and gathers each transform's hashes (:meth:`hashes`), instead of the transform,
    its escape and its hash of every value.  Past ``max_values`` values it is
    emptied and filled again."""

    def __init__(self, salt: int, max_values: int = CACHE_VALUES):
        self.salt, self.max_values = salt, max_values
        self.lock = threading.Lock()
        self.clear()

    def clear(self) -> None:
        """Forget every value."""
        self.row: dict[str, int] = {}
        self.values: list[str] = []
        #: per transform (None: the value itself): the hashes of the values' names, a
        #: buffer and its filled part uint64 [rows] (:func:`grown`)
        self.by_transform: dict[str | None, tuple[np.ndarray, np.ndarray]] = {}

    def hashes(
        self,
        values: Sequence[str],
        transforms: Sequence[str | None],
        out: Sequence[np.ndarray] | np.ndarray,
        strings_only: bool = False,
    ) -> None:
        """Write into out[k] (uint64 [n]; ``out`` a list of them, or uint64 [K, n]) the
        hash of the name transforms[k] gives each of ``values`` (strings, repeated or not).
        With ``strings_only``, TypeError, before anything is kept, when a value not met
        before is not a string (a caller that has not checked them)."""
        with self.lock:
            if len(self.row) > self.max_values:
                self.clear()
            try:  # most batches meet no new value: one pass
                rows = np.fromiter(map(self.row.__getitem__, values), dtype=np.int64, count=len(values))
            except KeyError:
                unseen = list(dict.fromkeys(missing_from(self.row, values)))
                if strings_only and not all(map(isinstance, unseen, repeat(str))):
                    raise TypeError("a value is not a string") from None
                self.row.update(zip(unseen, range(len(self.values), len(self.values) + len(unseen))))
                self.values.extend(unseen)
                rows = np.fromiter(map(self.row.__getitem__, values), dtype=np.int64, count=len(values))
            kept = len(self.values)
            by_transform = self.by_transform
            for transform, hashes in zip(transforms, out):
                filled = by_transform.get(transform)
                if filled is None or len(filled[1]) < kept:
                    self._fill(transforms)
                    filled = by_transform[transform]
                # every row < kept, so nothing is clipped; the method, unbuffered: a fraction of np.take's cost
                filled[1].take(rows, out=hashes, mode="clip")

    def _fill(self, transforms: Sequence[str | None]) -> None:
        """Hash the names each of ``transforms`` gives the values kept that it has not
        named yet: the names of all of them hashed in one call."""
        behind = []  # (transform, its buffer, how many it holds, the names of the rest)
        for transform in dict.fromkeys(transforms):
            room, kept = self.by_transform.get(transform, (np.zeros(0, dtype=np.uint64), None))
            done = 0 if kept is None else len(kept)
            if kept is None or done < len(self.values):
                new = self.values[done:]
                function = transform_function(transform) if transform is not None else None
                behind.append((transform, room, done, escaped(new if function is None else list(map(function, new)))))
        if not behind:
            return
        hashed = utf8_hashes([name for *_, names in behind for name in names], self.salt)
        at = 0
        for transform, room, done, names in behind:
            self.by_transform[transform] = grown(room, done, hashed[at : at + len(names)])
            at += len(names)


_VALUE_HASHES: dict[int, ValueHashes] = {}


def value_hashes(salt: int) -> ValueHashes:
    """The shared :class:`ValueHashes` of ``salt``."""
    with _CACHES_LOCK:
        if salt not in _VALUE_HASHES:
            _VALUE_HASHES[salt] = ValueHashes(salt, CACHE_VALUES)
        return _VALUE_HASHES[salt]


@dataclass
class _KernelPlan:
    """What :class:`fstcrf.engine.kernel.StoreWriter` fills of some tables of a
    :class:`ValueStore`: those tables (``specs``) and their fields with their places
    (int64 [J, STORE_FIELDS]); the room their list hashes need, per character and per
    value of the new values, and how many text tables; the other tables (``rest``) are
    filled in Python: seen tables of a second set of words, or of a set two of whose
    words' hashes are equal."""

    specs: list[TableSpec]
    tables: np.ndarray
    list_room: tuple[int, int]
    texts: int
    rest: list[TableSpec]
    #: the seen table's slots and marks of the seen tables among ``specs`` (one set of words)
    seen: tuple[np.ndarray, np.ndarray] | None = None


@dataclass
class _SpecList:
    """A list of table specs a :class:`ValueStore` was asked for: the list, the rows its
    tables were last filled for, each spec's place, its distinct specs and the kernel's
    plan of them."""

    specs: Sequence[TableSpec]
    rows: int
    places: list[int]
    distinct: list[TableSpec]
    plan: _KernelPlan
    #: the store's fills when this list's tables were last filled
    fills: int = -1


class ValueStore:
    """What each column value met so far gives the items of templates, under one salt:
    row r of the store is a value (``values[r]``, ``row[value]``), and each table
    (:data:`TableSpec`) holds an entry per row, computed when a batch first needs
    it: single hashes uint64 [tables, stride], list spans int64 [tables, stride, 2]
    into the list hashes, text spans likewise into the text bytes.  Entries once
    written are never rewritten, and arrays outgrown are replaced, not reused, so a
    batch reads the arrays it was given while others add to the store.  Past
    ``max_values`` values, ``max_entries`` list hashes or text bytes, or CACHE_TABLES
    tables it is emptied and filled again."""

    def __init__(self, salt: int, max_values: int = CACHE_VALUES, max_entries: int = CACHE_HASHES):
        self.salt, self.max_values, self.max_entries = salt, max_values, max_entries
        self.lock = threading.Lock()
        self.writer = kernel.StoreWriter()
        self.clear()

    def clear(self) -> None:
        """Forget every value and table (the rows' ``generation`` counts the times)."""
        self.generation = getattr(self, "generation", -1) + 1
        #: the times tables were filled for new rows
        self.fills = 0
        self.row: dict[str, int] = {}
        self.values: list[str] = []
        self.stride = max(1, min(self.max_values, FIRST_VALUES))
        #: each table's category and place in it, and the rows it holds entries for
        self.place: dict[TableSpec, int] = {}
        self.filled: dict[TableSpec, int] = {}
        #: by id of a list of specs: that list, how many rows it was filled for and its places
        self.complete: dict[int, _SpecList] = {}
        self.counts = {"single": 0, "list": 0, "text": 0}
        self.single = np.zeros((FIRST_TABLES["single"], self.stride), dtype=np.uint64)
        self.list_span = np.zeros((FIRST_TABLES["list"], self.stride, 2), dtype=np.int64)
        self.text_span = np.zeros((FIRST_TABLES["text"], self.stride, 2), dtype=np.int64)
        #: buffers that double as they fill (:func:`grown`), and their filled parts
        entries = max(1, min(self.max_entries, FIRST_ENTRIES))
        self._list_room = np.empty(entries, dtype=np.uint64)
        self._text_room = np.empty(entries, dtype=np.uint8)
        self.list_hashes, self.text_bytes = self._list_room[:0], self._text_room[:0]
        #: by id of a seen table's set of words: the set, and the kernel's table of its
        #: words' hashes with the two marks (None: two of them hash alike)
        self.seen_keys: dict[int, tuple[frozenset[str], tuple[np.ndarray, np.ndarray] | None]] = {}

    def tables(self, values: list[str], specs: Sequence[TableSpec]) -> tuple[np.ndarray, list[int], StoreTables]:
        """(int64 [n]: the row of each of ``values``, added if new; each of ``specs``'
        place in its category, its entries filled for every row; the tables)."""
        with self.lock:
            if (
                len(self.row) > self.max_values
                or max(len(self.list_hashes), len(self.text_bytes)) > self.max_entries
                or len(self.place) > CACHE_TABLES
            ):
                self.clear()
            try:  # a batch of values all met before: one pass
                rows = np.fromiter(map(self.row.__getitem__, values), dtype=np.int64, count=len(values))
            except KeyError:
                unseen = list(dict.fromkeys(missing_from(self.row, values)))
                self.row.update(zip(unseen, range(len(self.values), len(self.values) + len(unseen))))
                self.values.extend(unseen)
                self._widen(len(self.values))
                rows = np.fromiter(map(self.row.__getitem__, values), dtype=np.int64, count=len(values))
            known = self.complete.get(id(specs))
            if known is None or known.specs is not specs:
                places = [self._place(spec) for spec in specs]
                distinct = list(dict.fromkeys(specs))
                if len(self.complete) >= CACHE_TABLES:  # lists made afresh by their callers
                    self.complete.clear()
                known = self.complete[id(specs)] = _SpecList(specs, -1, places, distinct, self._kernel_plan(distinct))
            if known.rows < len(self.values):  # else every table of the list is filled for every row
                self._fill(known)
            places = known.places
            counts = self.counts
            return (
                rows,
                places,
                StoreTables(
                    len(self.values),
                    self.single[: counts["single"]],
                    self.list_span[: counts["list"]],
                    self.list_hashes,
                    self.text_span[: counts["text"]],
                    self.text_bytes,
                    self.generation,
                ),
            )

    def _place(self, spec: TableSpec) -> int:
        """The place of ``spec``'s table in its category, made (empty) if new."""
        place = self.place.get(spec)
        if place is None:
            place = self.place[spec] = self._new_table(spec.category)
            self.filled[spec] = 0
        return place

    def _fill(self, known: _SpecList) -> None:
        """Fill the tables of the list ``known`` for every row: together when no other
        list filled one of them since its last fill (each is then filled to
        ``known.rows``), else :meth:`_fill_by_row`."""
        if known.fills == self.fills:
            self._fill_rows(known.distinct, known.rows, known.plan)
        else:
            self._fill_by_row(known.distinct, known.plan)
        known.rows, known.fills = len(self.values), self.fills

    def _fill_by_row(self, specs: list[TableSpec], plan: _KernelPlan) -> None:
        """Fill the tables ``specs`` (placed; ``plan`` their :meth:`_kernel_plan`) for
        every row: those filled to the same row together (all of them, but for a table
        new to the store)."""
        filled, total = self.filled, len(self.values)
        dones = [filled[spec] for spec in specs]
        if not dones:
            return
        if min(dones) == max(dones):  # as after the first batch
            if dones[0] < total:
                self._fill_rows(specs, dones[0], plan)
            return
        by_row: dict[int, list[TableSpec]] = {}
        for spec, done in zip(specs, dones):
            by_row.setdefault(done, []).append(spec)
        for done, group in by_row.items():
            if done < total:
                self._fill_rows(group, done, self._kernel_plan(group))

    def _fill_rows(self, specs: list[TableSpec], done: int, plan: _KernelPlan) -> None:
        """Fill the tables ``specs``, each filled to row ``done``, for the rows from
        ``done`` on: in one kernel call where it takes the values (:func:`kernel_text`),
        the rest in Python."""
        total = len(self.values)
        new = self.values[done:]
        text = kernel_text(new) if plan.specs else None
        rest = plan.rest if text is not None and self._store_in_kernel(text, len(new), plan, done) else specs
        singles = [spec for spec in rest if isinstance(spec, SingleTable)]
        if singles:  # escaped, hashed and written together
            names = escaped([name for spec in singles for name in spec.unescaped_names(new)])
            rows = [self.place[spec] for spec in singles]
            self.single[rows, done:total] = utf8_hashes(names, self.salt).reshape(len(singles), total - done)
        for spec in rest:
            if isinstance(spec, SeenTable):
                self.single[self.place[spec], done:total] = spec.hashes(new, self.salt)
            elif not isinstance(spec, SingleTable):
                self._fill_entries(spec, done, new)
        self.filled.update(dict.fromkeys(specs, total))
        self.fills += 1

    def _store_in_kernel(self, text: bytes, count: int, plan: _KernelPlan, done: int) -> bool:
        """Fill the tables of ``plan`` for the rows from ``done`` on, the ``count`` new
        values of ``text`` (:func:`kernel_text`), in one kernel call; False, having
        changed no entry a batch reads, where the kernel does not take them."""
        list_start, text_start = len(self.list_hashes), len(self.text_bytes)
        characters = len(text) - count + 1  # the newlines left out
        per_character, per_value = plan.list_room
        self._list_room = reserved(self._list_room, list_start, per_character * characters + per_value * count)
        self._text_room = reserved(self._text_room, text_start, characters * plan.texts)  # never lengthened
        written = self.writer(
            text,
            count,
            plan.tables,
            self.salt,
            done,
            self.single,
            self.list_span,
            list_start,
            self._list_room,
            self.text_span,
            text_start,
            self._text_room,
            plan.seen,
        )
        if written is None:
            return False
        self.list_hashes = self._list_room[: list_start + written[0]]
        self.text_bytes = self._text_room[: text_start + written[1]]
        return True

    def _fill_entries(self, spec: ListTable | TextTable, done: int, new: list[str]) -> None:
        """Fill a list or text table for the rows from ``done`` on (the values ``new``) in
        Python."""
        room_name, filled_name, span_name = ENTRY_ARRAYS[spec.category]
        start = len(getattr(self, filled_name))
        offsets, entries = spec.entries(new, self.salt)
        spans = getattr(self, span_name)[self.place[spec], done : len(self.values)]
        spans[:, 0] = start + offsets[:-1]
        spans[:, 1] = start + offsets[1:]
        room, kept = grown(getattr(self, room_name), start, entries)
        setattr(self, room_name, room)
        setattr(self, filled_name, kept)

    def _kernel_plan(self, specs: list[TableSpec]) -> _KernelPlan:
        """What :class:`fstcrf.engine.kernel.StoreWriter` reads of the tables ``specs``
        (each placed), and those it does not fill."""
        seen_sets = [spec.seen for spec in specs if isinstance(spec, SeenTable)]
        seen = self._seen_table(seen_sets[0]) if seen_sets else None
        fields = [
            (spec, None if isinstance(spec, SeenTable) and (seen is None or spec.seen is not seen_sets[0]) else own)
            for spec, own in zip(specs, map(kernel_fields, specs))
        ]
        in_kernel = [(spec, own) for spec, own in fields if own is not None]
        tables = np.array([(*own, self.place[spec]) for spec, own in in_kernel], dtype=np.int64)
        lists = [spec for spec, _ in in_kernel if isinstance(spec, ListTable)]
        return _KernelPlan(
            [spec for spec, _ in in_kernel],
            tables.reshape(len(in_kernel), kernel.STORE_FIELDS),
            # a list's capacity is linear in the characters and the values
            (sum(spec.capacity(1, 0) for spec in lists), sum(spec.capacity(0, 1) for spec in lists)),
            sum(isinstance(spec, TextTable) for spec, _ in in_kernel),
            [spec for spec, own in fields if own is None],
            seen,
        )

    def _seen_table(self, words: frozenset[str]) -> tuple[np.ndarray, np.ndarray] | None:
        """The kernel's table of the hashes of a seen table's ``words`` and the hashes of
        SEEN and UNSEEN, made once per set; None when two words hash alike."""
        kept = self.seen_keys.get(id(words))
        if kept is None or kept[0] is not words:
            try:
                table = kernel.key_table(utf8_hashes(list(words), self.salt), "seen_lower's words")
                made = (table, np.array(mark_hashes(self.salt), dtype=np.uint64))
            except HashCollisionError:
                made = None
            kept = self.seen_keys[id(words)] = (words, made)
        return kept[1]

    def _new_table(self, category: str) -> int:
        """The place of a new table of ``category`` (its array grown to hold it)."""
        place = self.counts[category]
        self.counts[category] += 1
        name = {"single": "single", "list": "list_span", "text": "text_span"}[category]
        array = getattr(self, name)
        if place == len(array):  # a copy twice the size (an array given to a batch is never changed)
            setattr(self, name, np.concatenate([array, np.zeros_like(array)]))
        return place

    def _widen(self, rows: int) -> None:
        """Room for ``rows`` rows in every table: the stride doubled as needed (copies)."""
        if rows <= self.stride:
            return
        stride = max(rows, 2 * self.stride)
        for name in ("single", "list_span", "text_span"):
            array = getattr(self, name)
            wider = np.zeros((array.shape[0], stride, *array.shape[2:]), dtype=array.dtype)
            wider[:, : self.stride] = array
            setattr(self, name, wider)
        self.stride = stride


_STORES: dict[int, ValueStore] = {}


def value_store(salt: int) -> ValueStore:
    """The shared :class:`ValueStore` of ``salt``."""
    with _CACHES_LOCK:
        if salt not in _STORES:
            _STORES[salt] = ValueStore(salt, CACHE_VALUES)
        return _STORES[salt]
