"""The hashed values each item of a template gives each token of a token table: the
lists whose cross products ``ff_list_rows`` looks up
(:meth:`fstcrf.features.extractor.HashedDictionary.list_rows`).  An item read only by
lines looked up once per group of tokens gets its values at the tokens that are
looked up alone."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from fstcrf.features.hashing import SUBSTRING_KINDS, substring_lists, utf8_hashes, value_hashes
from fstcrf.features.resources import Resources
from fstcrf.features.template import Observation
from fstcrf.features.token_table import TokenTable
from fstcrf.features.value_lists import gathered


class ObservationHashes:
    """The hash of the escaped value of observations at each token of a table, under
    one salt (a column's value hashes are computed once for every offset)."""

    def __init__(self, table: TokenTable, salt: int):
        self.table, self.salt = table, salt
        self._by_values: dict[tuple[str, str | None], np.ndarray] = {}
        self._rows: dict[str, tuple[np.ndarray, int]] = {}  # column -> its values' rows in the cache

    def _value_hashes(self, column: str, transform: str | None) -> np.ndarray:
        """uint64 [V]: the hash of each distinct value of ``column`` transformed."""
        cache = value_hashes(self.salt)
        while True:
            if column not in self._rows:
                self._rows[column] = cache.rows(self.table.coded_column(column, None)[1])
            hashes = cache.hashes(*self._rows[column], transform)
            if hashes is not None:
                return hashes
            del self._rows[column]  # the cache started afresh since: look the rows up again

    def at_tokens(
        self, observation: Observation, out: np.ndarray | None = None, tokens: np.ndarray | None = None
    ) -> np.ndarray:
        """uint64 [N]: the hash of the observation's value at each token (at ``tokens``
        int64 [M] only when given), looked up per distinct value of its column
        (:class:`~fstcrf.features.hashing.ValueHashes`); written into ``out`` when given."""
        codes, boundary = self.table.offset_codes(dataclasses.replace(observation, transform=None))
        values = (observation.column, observation.transform)
        if values not in self._by_values:
            self._by_values[values] = self._value_hashes(*values)
        known = np.concatenate([self._by_values[values], utf8_hashes(boundary, self.salt)])
        return np.take(known, codes if tokens is None else codes[tokens], out=out)


class ItemLists(NamedTuple):
    """Item j's values at token t are hashes[value_ptr[j, t] .. value_ptr[j, t+1]-1]
    (value_ptr int64 [J, N+1], hashes uint64 [V]); counts: int64 [N] per item, how many."""

    value_ptr: np.ndarray
    hashes: np.ndarray
    counts: list[np.ndarray]


def item_lists(
    table: TokenTable,
    observations: Sequence[Observation],
    resources: Resources,
    salt: int,
    only_at: dict[int, np.ndarray],
) -> ItemLists:
    """The hashed values of each of the J ``observations`` at every token of ``table``;
    observation j in ``only_at`` has its values at the tokens only_at[j] (int64,
    ascending) alone, none elsewhere."""
    N = table.num_tokens
    hashes = ObservationHashes(table, salt)
    lists: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # j -> (ptr [N+1], its values' hashes or codes)
    for j, observation in enumerate(observations):
        tokens = only_at.get(j)
        if observation.kind in SUBSTRING_KINDS:
            ptr, found = substring_lists(table, observation, salt, tokens)
            lists[j] = (ptr, found) if tokens is None else (spread(ptr, tokens, N), found)
        elif observation.kind is not None:
            item = table.value_lists(observation, resources)
            if tokens is None:
                lists[j] = item.ptr, item.codes
            else:
                ptr, source = gathered(item.ptr, tokens)
                lists[j] = spread(ptr, tokens, N), item.codes[source]
    sizes = [int(lists[j][0][-1]) if j in lists else len(only_at.get(j, range(N))) for j in range(len(observations))]
    value_ptr = np.empty((len(observations), N + 1), dtype=np.int64)
    all_hashes = np.empty(sum(sizes), dtype=np.uint64)  # each item's hashes written in place
    counts, start = [], 0
    for j, observation in enumerate(observations):
        out = all_hashes[start : start + sizes[j]]
        if j not in lists:
            tokens = only_at.get(j)
            ptr = np.arange(N + 1, dtype=np.int64) if tokens is None else spread(np.arange(len(tokens) + 1), tokens, N)
            hashes.at_tokens(observation, out, tokens)
        elif observation.kind in SUBSTRING_KINDS:
            ptr, out[:] = lists[j]
        else:
            ptr, codes = lists[j]
            np.take(utf8_hashes(table.value_lists(observation, resources).names, salt), codes, out=out)
        np.add(ptr, start, out=value_ptr[j])
        counts.append(np.diff(ptr))
        start += sizes[j]
    return ItemLists(value_ptr, all_hashes, counts)


def spread(ptr: np.ndarray, tokens: np.ndarray, num_tokens: int) -> np.ndarray:
    """int64 [num_tokens + 1]: the row pointers of rows whose row tokens[m] is row m of
    ``ptr`` int [M+1] (tokens int [M] ascending), every other row empty."""
    counts = np.zeros(num_tokens, dtype=np.int64)
    counts[tokens] = np.diff(ptr)
    result = np.zeros(num_tokens + 1, dtype=np.int64)
    np.cumsum(counts, out=result[1:])
    return result
