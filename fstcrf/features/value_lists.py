"""The values of the value-list items of a template (``prefixes``, ``suffixes``,
``ngrams``, ``bag``, ``types``, ``gazetteer``, ``cluster``, ``embedding`` and
``seen_lower``, :mod:`fstcrf.features.template`) at every token of a token table.

Each item gives each token a list of distinct values, held as compressed rows
(:class:`ValueLists`).  The items that depend on one token's value only compute
the list of each distinct value once, in Python, and spread it over the tokens
with numpy (prefixes, suffixes and n-grams from a cache kept across batches,
:class:`ListCache`; tagging hashes those in C, :mod:`fstcrf.features.hashing`);
``bag`` and ``types`` combine the codes of a window with numpy; ``gazetteer``
walks each sentence in Python.  What grows with the tokens of a line, the cross
product of its items, their keys and their lookup, is the C kernel's
(:func:`fstcrf.engine.kernel.features.list_rows`).
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Sequence
from itertools import chain, compress
from typing import NamedTuple, cast

import numpy as np

from fstcrf.engine import kernel
from fstcrf.features.resources import Clusters, Embeddings, Gazetteer
from fstcrf.features.template import EMBEDDING, SEEN_LOWER, Observation, escape_value, escaped, transform_function

#: Boundary marks of character n-grams and of type sequences.
BEGIN, END = "<", ">"
#: The values of ``seen_lower``.
SEEN, UNSEEN = "seen", "unseen"


class ValueLists(NamedTuple):
    """Token t's values are names[codes[ptr[t] .. ptr[t+1]-1]] (ptr int64 [N+1], codes
    int64 [nnz], names the escaped values); ``numbers`` float [nnz] holds the number of
    each entry of an embedding (None for binary items)."""

    ptr: np.ndarray
    codes: np.ndarray
    names: list[str]
    numbers: np.ndarray | None = None

    @property
    def counts(self) -> np.ndarray:
        """int64 [N]: how many values each token has."""
        return np.diff(self.ptr)


def single(codes: np.ndarray, names: list[str]) -> ValueLists:
    """The value lists of a single-valued item: one value, codes int [N], per token."""
    return ValueLists(np.arange(len(codes) + 1, dtype=np.int64), codes.astype(np.int64, copy=False), names)


def gathered(ptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ptr int64 [M+1], source int64 [nnz]): row t of the result is row rows[t] of
    compressed rows with pointers ``ptr``, its entries those at positions ``source``."""
    starts = ptr[rows]
    counts = ptr[rows + 1] - starts
    out = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out, np.repeat(starts - out[:-1], counts) + np.arange(out[-1], dtype=np.int64)


def gather(lists: ValueLists, rows: np.ndarray) -> ValueLists:
    """The lists of rows[t] of ``lists`` for each t (rows int [M])."""
    ptr, source = gathered(lists.ptr, rows)
    numbers = None if lists.numbers is None else lists.numbers[source]
    return ValueLists(ptr, lists.codes[source], lists.names, numbers)


def from_lists(
    per_row: Sequence[Sequence[int]], names: list[str], numbers: Sequence[float] | None = None
) -> ValueLists:
    """ValueLists of Python lists of codes (and, for an embedding, all their numbers in order)."""
    ptr = np.zeros(len(per_row) + 1, dtype=np.int64)
    np.cumsum([len(row) for row in per_row], out=ptr[1:])
    codes = np.fromiter((code for row in per_row for code in row), dtype=np.int64, count=int(ptr[-1]))
    return ValueLists(ptr, codes, names, None if numbers is None else np.asarray(numbers, dtype=np.float64))


def with_single_rows(ptr: np.ndarray, count: int) -> np.ndarray:
    """int64 [M + count + 1]: row pointers ``ptr`` [M+1] followed by ``count`` rows of one entry each."""
    return np.concatenate([ptr, ptr[-1] + np.arange(1, count + 1)])


def shifted(lists: ValueLists, table, offset: int, boundary: bool = True) -> ValueLists:
    """Token t's lists are those of token t + offset, and outside the sentence one
    boundary value (``__BOS-1__``, ... ``__EOS+1__``, ...), or none unless ``boundary``."""
    if offset == 0:
        return lists
    rows, names = table.neighbours(offset)
    if not boundary:
        padded = lists._replace(ptr=np.append(lists.ptr, lists.ptr[-1]))  # an empty row past the last
        return gather(padded, np.minimum(rows, table.num_tokens))
    extended = ValueLists(
        with_single_rows(lists.ptr, len(names)),
        np.concatenate([lists.codes, len(lists.names) + np.arange(len(names))]),
        lists.names + names,
    )
    return gather(extended, rows)


def _distinct(values) -> list[str]:
    return list(dict.fromkeys(values))


def prefixes(value: str, low: int, high: int) -> list[str]:
    """The prefixes of ``value`` of lengths low..high (those it has)."""
    return [value[:n] for n in range(low, min(high, len(value)) + 1)]


def suffixes(value: str, low: int, high: int) -> list[str]:
    """The suffixes of ``value`` of lengths low..high (those it has)."""
    return [value[-n:] for n in range(low, min(high, len(value)) + 1)]


def ngrams(value: str, low: int, high: int) -> list[str]:
    """The distinct character n-grams of lengths low..high of ``value`` between the
    marks BEGIN and END, shortest first, then from left to right."""
    marked = BEGIN + value + END
    size = len(marked)
    return list(
        dict.fromkeys([marked[i : i + n] for n in range(low, min(high, size) + 1) for i in range(size - n + 1)])
    )


def cluster_prefixes(paths: dict[str, str], value: str, lengths: Sequence[int]) -> list[str]:
    """The prefixes of the given lengths of ``value``'s Brown cluster path (none if it has none)."""
    path = paths.get(value)
    return [] if path is None else _distinct(path[:n] for n in lengths)


def per_value(observation: Observation, resource) -> Callable[[str], list[str]]:
    """The list of values a value-list item of one token's value gives that value
    (not for bag, types, gazetteer, embedding and seen_lower)."""
    kind, low, high = observation.kind, observation.low, observation.high
    if kind == "prefixes":
        return lambda value: prefixes(value, low, high)
    if kind == "suffixes":
        return lambda value: suffixes(value, low, high)
    if kind == "ngrams":
        return lambda value: ngrams(value, low, high)
    if kind == "cluster":
        paths = cast(Clusters, resource.content).paths
        return lambda value: cluster_prefixes(paths, value, observation.lengths)
    raise ValueError(f"no per-value list for {kind!r}")


def by_value(codes: np.ndarray, values: Sequence[str], function: Callable[[str], list[str]]) -> ValueLists:
    """Value lists at tokens whose value codes are codes int [N] (values[code] the value),
    the list of each distinct value computed once by ``function``."""
    index: dict[str, int] = {}
    per_code = [[index.setdefault(name, len(index)) for name in function(value)] for value in values]
    return gather(from_lists(per_code, escaped(list(index))), codes)


def missing_from(kept: dict, values: Sequence[str]) -> list[str]:
    """Those of ``values`` that are not keys of ``kept``, in order."""
    return list(compress(values, map(operator.not_, map(kept.__contains__, values))))


#: Names a :class:`ListCache` holds before it starts afresh (its memory stays bounded).
CACHE_NAMES = 1 << 19


class ListCache:
    """The lists of the values seen so far, for the items whose list depends on the
    value alone and on nothing read from the training data (prefixes, suffixes,
    n-grams), by name: fits in one process (a jackknife's folds, a two-stage
    tagger's stages) compute each word's list once.  (Tagging needs only their
    hashes: :class:`fstcrf.features.hashing.ValueStore`.)  Each list is held as
    the codes of its escaped names in one vocabulary per cache; past CACHE_NAMES
    names the cache is emptied and filled again."""

    def __init__(self, function: Callable[[str], list[str]], limit: int = CACHE_NAMES):
        self.function = function
        self.limit = limit
        self.lock = threading.Lock()
        self.clear()

    def clear(self) -> None:
        """Forget every list and name."""
        self.lists: dict[str, list[int]] = {}
        self.codes: dict[str, int] = {}
        self.names: list[str] = []

    def _add(self, values: list[str]) -> None:
        """Compute and keep the lists of ``values`` (not yet kept), their new names coded
        in order of first occurrence: one dictionary pass in C over all their names."""
        lists = list(map(self.function, values))
        lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
        names = escaped(list(chain.from_iterable(lists)))
        # a name met before gets its code; a new one the placeholder -1 - (its first position)
        placeholders = range(-1, -len(names) - 1, -1)
        found = np.fromiter(map(self.codes.setdefault, names, placeholders), dtype=np.int64, count=len(names))
        new = np.flatnonzero(found == np.arange(-1, -len(names) - 1, -1))
        first = len(self.names)
        added = list(map(names.__getitem__, new.tolist()))
        self.codes.update(zip(added, range(first, first + len(added))))
        self.names += added
        code_at = np.empty(len(names), dtype=np.int64)
        code_at[new] = np.arange(first, first + len(added))
        codes = found.copy()
        codes[found < 0] = code_at[-1 - found[found < 0]]
        flat, ends = codes.tolist(), np.cumsum(lengths).tolist()
        self.lists.update(zip(values, map(flat.__getitem__, map(slice, [0, *ends[:-1]], ends))))

    def value_lists(self, codes: np.ndarray, values: Sequence[str]) -> ValueLists:
        """What by_value(codes, values, function) gives, from the cache."""
        with self.lock:
            if len(self.names) > self.limit:
                self.clear()
            unseen = missing_from(self.lists, values)
            if unseen:
                self._add(unseen)
            per_code = list(map(self.lists.__getitem__, values))
            names = self.names
        ptr = np.zeros(len(per_code) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, per_code), dtype=np.int64, count=len(per_code)), out=ptr[1:])
        global_codes = np.fromiter(chain.from_iterable(per_code), dtype=np.int64, count=int(ptr[-1]))
        present = np.zeros(len(names), dtype=bool)
        present[global_codes] = True
        local = np.cumsum(present) - 1  # the batch's names numbered in the vocabulary's order
        used = list(map(names.__getitem__, np.flatnonzero(present).tolist()))
        return gather(ValueLists(ptr, local[global_codes], used), codes)


_CACHES: dict[tuple, ListCache] = {}


def list_cache(observation: Observation) -> ListCache | None:
    """The shared cache of an item's lists (one per kind and bounds), or None for the
    items whose lists depend on more than the value."""
    if observation.kind not in ("prefixes", "suffixes", "ngrams"):
        return None
    key = (observation.kind, observation.low, observation.high)
    if key not in _CACHES:
        _CACHES[key] = ListCache(per_value(observation, None))
    return _CACHES[key]


def seen_marks(codes: np.ndarray, values: Sequence[str], seen: frozenset[str]) -> ValueLists:
    """The lists of ``seen_lower``: SEEN or UNSEEN at each token (whose value code is
    codes int [N], values[code] the value), whether ``seen`` holds the value
    lower-cased; the marks numbered by first occurrence among ``values``."""
    known = np.fromiter(map(seen.__contains__, map(str.lower, values)), dtype=bool, count=len(values))
    order = list(dict.fromkeys(known.tolist()))  # the marks numbered by first occurrence, as by_value
    code_of = np.zeros(2, dtype=np.int64)
    code_of[np.array(order, dtype=np.int64)] = np.arange(len(order))
    return single(code_of[known.astype(np.int64)][codes], [SEEN if mark else UNSEEN for mark in order])


def embedding_lists(codes: np.ndarray, values: Sequence[str], embeddings: Embeddings) -> ValueLists:
    """The nonzero dimensions ("0", "1", ...) of the vector of each token's value, with
    their numbers; a value without a vector has none."""
    dimension = embeddings.vectors.shape[1]
    per_code: list[list[int]] = []
    numbers: list[float] = []
    for value in values:
        row = embeddings.rows.get(value)
        vector = embeddings.vectors[row] if row is not None else np.zeros(dimension)
        nonzero = np.flatnonzero(vector)
        per_code.append(nonzero.tolist())
        numbers.extend(vector[nonzero].tolist())
    return gather(from_lists(per_code, [str(k) for k in range(dimension)], numbers), codes)


def bag(table, codes: np.ndarray, names: list[str], low: int, high: int) -> ValueLists:
    """The distinct values (codes int [N], escaped names) at offsets low..high within
    the sentence, ascending by code."""
    window = np.full((table.num_tokens, high - low + 1), -1, dtype=np.int64)
    for column, offset in enumerate(range(low, high + 1)):
        target = table.position + offset
        inside = (target >= 0) & (target < table.sentence_length)
        rows = np.flatnonzero(inside)
        window[rows, column] = codes[rows + offset]
    window.sort(axis=1)
    keep = window >= 0
    keep[:, 1:] &= window[:, 1:] != window[:, :-1]
    ptr = np.zeros(table.num_tokens + 1, dtype=np.int64)
    np.cumsum(np.count_nonzero(keep, axis=1), out=ptr[1:])
    return ValueLists(ptr, window[keep], names)


def type_sequences(table, codes: np.ndarray, types: Sequence[str], low: int, high: int) -> ValueLists:
    """One value per token: the types (codes int [N] of the values ``types``) at
    offsets low..high joined by spaces, BEGIN before the sentence and END after it."""
    marked = list(types) + [BEGIN, END]
    key = np.zeros(table.num_tokens, dtype=np.int64)
    parts = []
    for offset in range(low, high + 1):
        target = table.position + offset
        rows = np.clip(np.arange(table.num_tokens) + offset, 0, max(table.num_tokens - 1, 0))
        part = np.where(target < 0, len(types), np.where(target >= table.sentence_length, len(types) + 1, codes[rows]))
        parts.append(part)
        key, first, _ = factorize(key * len(marked) + part)  # compact, so the product stays small
    names = [escape_value(" ".join(marked[int(part[t])] for part in parts)) for t in first.tolist()]
    return ValueLists(np.arange(table.num_tokens + 1, dtype=np.int64), key, names)


def gazetteer_marks(
    codes: np.ndarray, values: Sequence[str], lengths: np.ndarray, gazetteer: Gazetteer, transform
) -> ValueLists:
    """Per token (values[codes[t]] its value, sentences of ``lengths`` tokens), the
    marks of the entries covering it: "B" on an entry's first token, "I" on the
    others, and "B-CATEGORY" / "I-CATEGORY" too for an entry with a category.  Entry
    tokens go through ``transform`` (the item's, or None) as the token values did."""
    entries: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    for listed in gazetteer.entries.values():
        for tokens, category in listed:
            tokens = tuple(map(transform, tokens)) if transform else tokens
            entries.setdefault(tokens[0], []).append((tokens, category))
    starts_entry = np.array([value in entries for value in values] + [False])
    ends = np.repeat(np.cumsum(lengths), lengths)
    index: dict[str, int] = {}
    marked: dict[tuple[int, int], None] = {}  # (token, code) in order of marking
    for start in np.flatnonzero(starts_entry[codes]).tolist():
        for tokens, category in entries[values[codes[start]]]:
            stop = start + len(tokens)
            if stop > ends[start] or tuple(values[code] for code in codes[start:stop].tolist()) != tokens:
                continue
            for position in range(start, stop):
                mark = "B" if position == start else "I"
                marked[position, index.setdefault(mark, len(index))] = None
                if category:
                    marked[position, index.setdefault(f"{mark}-{category}", len(index))] = None
    pairs = np.array(sorted(marked), dtype=np.int64).reshape(-1, 2)
    ptr = np.zeros(len(codes) + 1, dtype=np.int64)
    np.cumsum(np.bincount(pairs[:, 0], minlength=len(codes)), out=ptr[1:])
    return ValueLists(ptr, pairs[:, 1], escaped(list(index)))


def observation_lists(table, observation: Observation, resources) -> ValueLists:
    """The value lists of a value-list item at every token of a token table (see
    fstcrf.features.extractor), reading its files and training words from
    ``resources`` (:class:`fstcrf.features.resources.Resources`)."""
    kind = observation.kind
    if kind == "types":
        codes, types = table.coded_column(observation.column, observation.transform or "shape")
        return type_sequences(table, codes, types, observation.low, observation.high)
    codes, values = table.coded_column(observation.column, observation.transform)
    if kind == "bag":
        names = table.value_names(observation.column, observation.transform)
        return bag(table, codes, names, observation.low, observation.high)
    if kind == "gazetteer":
        gazetteer = cast(Gazetteer, resources.resource(observation).content)
        transform = transform_function(observation.transform) if observation.transform else None
        marks = gazetteer_marks(codes, values, table.lengths, gazetteer, transform)
        return shifted(marks, table, observation.offset)
    if kind == EMBEDDING:
        embeddings = cast(Embeddings, resources.resource(observation).content)
        return shifted(embedding_lists(codes, values, embeddings), table, observation.offset, boundary=False)
    cache = list_cache(observation)
    if cache is not None:
        return shifted(cache.value_lists(codes, values), table, observation.offset)
    if kind == SEEN_LOWER:
        return shifted(seen_marks(codes, values, resources.seen_lower(observation.column)), table, observation.offset)
    resource = resources.resource(observation) if kind == "cluster" else None
    function = per_value(observation, resource)
    return shifted(by_value(codes, values, function), table, observation.offset)


class ItemValues:
    """The values the items of a template give the tokens of a token table, each item's
    computed once (:func:`observation_lists`) and kept: the third step of feature
    extraction (columns -> token table -> values -> hashes -> rows), reading the
    table and the files and training words of ``resources``
    (:class:`fstcrf.features.resources.Resources`)."""

    def __init__(self, table, resources):
        self.table, self.resources = table, resources
        self._lists: dict[Observation, ValueLists] = {}

    def lists(self, observation: Observation) -> ValueLists:
        """The values the item gives each token: a value list's, or a single value's."""
        if observation not in self._lists:
            if observation.kind is None:
                self._lists[observation] = single(*self.table.observation_codes(observation))
            else:
                self._lists[observation] = observation_lists(self.table, observation, self.resources)
        return self._lists[observation]


def factorize(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(codes int64 [n], numbered by first occurrence; where each code first occurs
    int64 [K], ascending; how often each occurs int64 [K]) of keys int64 [n] (any 64 bits:
    hashes pass as their int64 view)."""
    keys = np.ascontiguousarray(keys, dtype=np.int64)
    n = len(keys)
    if n == 0:
        return keys, keys, keys
    capacity = 1 << max(1, (2 * n).bit_length())
    slots = np.empty(2 * capacity, dtype=np.uint64)
    codes, first, counts = (np.empty(n, dtype=np.int64) for _ in range(3))
    distinct = kernel.factorize(keys.view(np.uint64), slots, codes, first, counts)
    return codes, first[:distinct], counts[:distinct]
