"""The 64-bit hashes of strings that name predicate values (csrc/fstcrf_hashing.h),
and those of the prefixes, suffixes and character n-grams of token values, which
tagging looks up without naming each one.

A token value's prefixes, suffixes or n-grams are hashed in C from its UTF-8 text
(:func:`fstcrf.engine.kernel.substring_hashes`) and kept across batches by a
:class:`SubstringCache`, so a word met again costs one dictionary lookup.  Values
that escaping would change (a backslash, a bar, an underscore) or that are longer
than the kernel takes go through the named lists of
:func:`fstcrf.features.value_lists.per_value` instead, with the same hashes.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from itertools import compress, repeat

import numpy as np

from fstcrf.engine import kernel
from fstcrf.features.template import Observation, escaped, transform_function
from fstcrf.features.value_lists import (
    BEGIN,
    END,
    gathered,
    missing_from,
    per_value,
    with_single_rows,
)

#: The kinds of value list whose hashes :func:`substring_lists` gives (the kernel's).
SUBSTRING_KINDS = tuple(kernel.SUBSTRING_KINDS)

#: Hashes, and values, a :class:`SubstringCache` holds before it starts afresh (its
#: memory stays bounded: about 32 MiB of hashes, and the values' dictionary).
CACHE_HASHES = 1 << 22
CACHE_VALUES = 1 << 18

#: Values whose substrings escaping could change (escape_value), hashed from their names.
ESCAPED_CHARACTERS = re.compile(r"[\\|_]")


def pack_names(names: Sequence[str]) -> tuple[str, np.ndarray]:
    """(the names joined, character offsets int64 [P + 1]): one string instead of P
    (CoNLL-2000's CRF++ template has 338k predicates, 24 MiB as separate strings)."""
    lengths = np.fromiter(map(len, names), dtype=np.int64, count=len(names))
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
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


def grown(room: np.ndarray, filled: int, new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the buffer, its first filled + len(new) entries): ``new`` written past the
    ``filled`` entries of ``room``, in a copy of twice the size when there is no room
    left (so that adding a few entries costs no copy of all; an entry once written
    is never written again)."""
    total = filled + len(new)
    if len(room) < total:
        room = np.concatenate([room[:filled], np.empty(max(total, 2 * len(room)) - filled, dtype=room.dtype)])
    room[filled:total] = new
    return room, room[:total]


class SubstringCache:
    """The hashes of the prefixes, suffixes or n-grams (one ``observation``'s kind and
    lengths) of each value met so far, under one salt: value v's are
    hashes[ptr[row[v]] .. ptr[row[v] + 1] - 1].  Past ``limit`` hashes or
    ``max_values`` values it is emptied and filled again."""

    def __init__(self, observation: Observation, salt: int, limit: int = CACHE_HASHES, max_values: int = CACHE_VALUES):
        if observation.kind not in SUBSTRING_KINDS:
            raise ValueError(f"no substrings for {observation.kind!r}")
        self.kind: str = observation.kind
        self.low, self.high = observation.low, observation.high
        self.named = per_value(observation, None)
        self.salt = salt
        self.limit, self.max_values = limit, max_values
        self.lock = threading.Lock()
        self.clear()

    def clear(self) -> None:
        """Forget every value."""
        self.row: dict[str, int] = {}
        #: row pointers int64 [rows + 1] and hashes uint64, the filled parts of buffers
        #: that double as they fill (:func:`grown`)
        self.ptr = self._ptr_room = np.zeros(1, dtype=np.int64)
        self.hashes = self._hash_room = np.zeros(0, dtype=np.uint64)

    def rows(self, values: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(int64 [V]: the row of each of ``values`` (distinct), computed for those not
        kept; the row pointers and hashes those rows index, which a later call may replace)."""
        with self.lock:
            if len(self.hashes) > self.limit or len(self.row) > self.max_values:
                self.clear()
            unseen = missing_from(self.row, values)
            if unseen:
                self._add(unseen)
            rows = np.fromiter(map(self.row.__getitem__, values), dtype=np.int64, count=len(values))
            return rows, self.ptr, self.hashes

    def _add(self, values: list[str]) -> None:
        marks = self.kind == "ngrams"
        longest = kernel.MAX_SUBSTRING_SOURCE - 2 * marks
        in_c = [len(value) <= longest and not ESCAPED_CHARACTERS.search(value) for value in values]
        direct = list(compress(values, in_c))
        named = [value for value, fast in zip(values, in_c) if not fast]
        parts = [self._hashed(direct, marks)] if direct else []
        if named:
            lists = [escaped(self.named(value)) for value in named]
            counts = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
            parts.append((counts, utf8_hashes([name for names in lists for name in names], self.salt)))
        first = len(self.ptr) - 1
        self.row.update(zip(direct + named, range(first, first + len(values))))
        ends = self.ptr[-1] + np.cumsum(np.concatenate([counts for counts, _ in parts]))
        self._ptr_room, self.ptr = grown(self._ptr_room, len(self.ptr), ends)
        added = np.concatenate([hashes for _, hashes in parts])
        self._hash_room, self.hashes = grown(self._hash_room, len(self.hashes), added)

    def _hashed(self, values: list[str], marks: bool) -> tuple[np.ndarray, np.ndarray]:
        """(int64 [n]: how many hashes each of ``values`` has; their hashes) from C."""
        blob, offsets = utf8_blob([BEGIN + value + END for value in values] if marks else values)
        points = np.fromiter(map(len, values), dtype=np.int64, count=len(values)) + 2 * marks
        lengths = np.arange(self.low, self.high + 1)
        starts = points[:, None] - lengths[None, :] + 1  # substrings of each length (or 1)
        fits = starts > 0
        capacity = int(np.where(fits, starts if self.kind == "ngrams" else 1, 0).sum())
        ptr = np.empty(len(values) + 1, dtype=np.int64)
        hashes = np.empty(capacity, dtype=np.uint64)
        kernel.substring_hashes(blob, offsets, self.kind, self.low, self.high, self.salt, ptr, hashes)
        return np.diff(ptr), hashes[: ptr[-1]]

    def token_hashes(self, codes: np.ndarray, values: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(ptr int64 [N+1], hashes uint64 [nnz]) of tokens whose value codes are codes
        int [N] (values[code] the value): token t's are hashes[ptr[t] .. ptr[t+1]-1]."""
        rows, row_ptr, hashes = self.rows(values)
        ptr, source = gathered(row_ptr, rows[codes])
        return ptr, hashes[source]


_CACHES: dict[tuple, SubstringCache] = {}
_CACHES_LOCK = threading.Lock()


def substring_cache(observation: Observation, salt: int) -> SubstringCache:
    """The shared cache of an item of kind prefixes, suffixes or ngrams under ``salt``
    (one per kind, lengths and salt)."""
    key = (observation.kind, observation.low, observation.high, salt)
    with _CACHES_LOCK:
        if key not in _CACHES:
            _CACHES[key] = SubstringCache(observation, salt)
        return _CACHES[key]


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
        out: Sequence[np.ndarray],
        strings_only: bool = False,
    ) -> None:
        """Write into out[k] (uint64 [n]) the hash of the name transforms[k] gives each
        of ``values`` (strings, repeated or not).  With ``strings_only``, TypeError,
        before anything is kept, when a value not met before is not a string (a caller
        that has not checked them)."""
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
                np.take(filled[1], rows, out=hashes)

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


def substring_lists(
    table, observation: Observation, salt: int, tokens: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(ptr int64 [N+1], hashes uint64 [nnz]): the hashes of the values an item of kind
    prefixes, suffixes or ngrams gives each token of a token table, token t's at
    ptr[t] .. ptr[t+1]-1; a boundary value's past the sentence.  With ``tokens`` int
    [M], those of the tokens tokens[m] instead, ptr int64 [M+1]."""
    codes, values = table.coded_column(observation.column, observation.transform)
    if observation.offset == 0:
        return substring_cache(observation, salt).token_hashes(codes if tokens is None else codes[tokens], values)
    ptr, hashes = substring_cache(observation, salt).token_hashes(codes, values)
    rows, names = table.neighbours(observation.offset)
    ptr, source = gathered(with_single_rows(ptr, len(names)), rows if tokens is None else rows[tokens])
    return ptr, np.concatenate([hashes, utf8_hashes(names, salt)])[source]
