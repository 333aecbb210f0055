"""The hashed values each item of a template gives each token of a token table, the
fourth step of feature extraction (columns -> token table -> values -> hashes ->
rows): a single value's hash at every token (:class:`ObservationHashes`), and the
lists whose cross products ``ff_list_rows`` looks up
(:meth:`fstcrf.features.dictionary.HashedDictionary.list_rows`).  An item read only
by lines looked up once per group of tokens gets its values at the tokens that are
looked up alone."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, cast

import numpy as np

from fstcrf.engine import kernel
from fstcrf.features.hashing import SUBSTRING_KINDS, substring_lists, utf8_hashes, value_hashes
from fstcrf.features.template import Observation
from fstcrf.features.token_table import TokenTable
from fstcrf.features.value_lists import ItemValues, gathered


class WindowPlan:
    """Single-valued observations laid out for ``fh_window_hashes``: the distinct
    (column, transform) pairs they read (``sources``), and per observation the one it
    reads, source int32 [J], at offset int64 [J]."""

    def __init__(self, observations: Sequence[Observation]):
        sources: dict[tuple[str, str | None], int] = {}
        reads = [
            sources.setdefault((observation.column, observation.transform), len(sources))
            for observation in observations
        ]
        self.sources = list(sources)
        self.source = np.array(reads, dtype=np.int32)
        self.offset = np.array([observation.offset for observation in observations], dtype=np.int64)


class ObservationHashes:
    """The hash of the escaped value of observations at each token of a table, under
    one salt: the fourth step of feature extraction (columns -> token table -> values
    -> hashes -> rows) for single values.  Each column's values are looked up once
    per batch in the shared :class:`~fstcrf.features.hashing.ValueHashes`, which
    gives each transform's hashes, and each observation's offset is applied in C
    (``fh_window_hashes``, which hashes the boundary values past a sentence)."""

    def __init__(self, table: TokenTable, salt: int):
        self.table, self.salt = table, salt

    def sources(self, pairs: Sequence[tuple[str, str | None]]) -> np.ndarray:
        """uint64 [G, N]: per (column, transform) pair the hash of the name of each
        token's value of the column transformed."""
        wanted: dict[str, list[int]] = {}
        for g, (column, _) in enumerate(pairs):
            wanted.setdefault(column, []).append(g)
        out = np.empty((len(pairs), self.table.num_tokens), dtype=np.uint64)
        cache = value_hashes(self.salt)
        for column, rows in wanted.items():
            cache.hashes(self.table.string_values(column), [pairs[g][1] for g in rows], [out[g] for g in rows])
        return out

    def window(self, plan: WindowPlan) -> np.ndarray:
        """uint64 [J, N]: the hash of each observation of ``plan`` at each token, a
        boundary value's past the sentence."""
        out = np.empty((len(plan.source), self.table.num_tokens), dtype=np.uint64)
        kernel.window_hashes(self.table.offsets, self.sources(plan.sources), plan.source, plan.offset, self.salt, out)
        return out

    def at_tokens(self, observation: Observation, tokens: np.ndarray | None = None) -> np.ndarray:
        """uint64 [N]: the hash of the observation's value at each token (at ``tokens``
        int64 [M] only when given)."""
        hashes = self.window(WindowPlan([observation]))[0]
        return hashes if tokens is None else hashes[tokens]


class ItemLists(NamedTuple):
    """Item j's values at token t are hashes[value_ptr[j, t] .. value_ptr[j, t+1]-1]
    (value_ptr int64 [J, N+1], hashes uint64 [V]); counts: int64 [N] per item, how many."""

    value_ptr: np.ndarray
    hashes: np.ndarray
    counts: list[np.ndarray]


def item_lists(
    values: ItemValues,
    observations: Sequence[Observation],
    salt: int,
    only_at: dict[int, np.ndarray],
    singles: WindowPlan,
) -> ItemLists:
    """The hashed values of each of the J ``observations`` at every token of the table
    of ``values``; observation j in ``only_at`` has its values at the tokens
    only_at[j] (int64, ascending) alone, none elsewhere.  ``singles`` lays out the
    single-valued ones (``kind`` None), in order: their hashes come from one
    ``fh_window_hashes`` call, and those at every token are laid out first, as one
    block, so that a batch of one sentence costs as few numpy calls as one of many."""
    table = values.table
    N = table.num_tokens
    single = [j for j, observation in enumerate(observations) if observation.kind is None]
    single_hashes = ObservationHashes(table, salt).window(singles) if single else None  # [len(single), N]
    full = [j for j in single if j not in only_at]  # at every token: rows 0 .. len(full)-1 of all_hashes
    lists: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # j -> (ptr [N+1], its values' hashes or codes)
    for j, observation in enumerate(observations):
        tokens = only_at.get(j)
        if observation.kind in SUBSTRING_KINDS:
            ptr, found = substring_lists(table, observation, salt, tokens)
            lists[j] = (ptr, found) if tokens is None else (spread(ptr, tokens, N), found)
        elif observation.kind is not None:
            item = values.lists(observation)
            if tokens is None:
                lists[j] = item.ptr, item.codes
            elif len(tokens):
                ptr, source = gathered(item.ptr, tokens)
                lists[j] = spread(ptr, tokens, N), item.codes[source]
            else:
                lists[j] = np.zeros(N + 1, dtype=np.int64), item.codes[:0]
    rest = [j for j in range(len(observations)) if j not in full]
    sizes = [int(lists[j][0][-1]) if j in lists else len(only_at[j]) for j in rest]
    value_ptr = np.empty((len(observations), N + 1), dtype=np.int64)
    all_hashes = np.empty(len(full) * N + sum(sizes), dtype=np.uint64)  # each item's hashes written in place
    every = np.arange(N + 1, dtype=np.int64)
    ones = np.ones(N, dtype=np.int64)
    counts: list[np.ndarray] = [ones] * len(observations)
    if full:
        rows = [single.index(j) for j in full]
        all_hashes[: len(full) * N] = cast(np.ndarray, single_hashes)[rows].reshape(-1)
        value_ptr[full] = every[None, :] + (np.arange(len(full)) * N)[:, None]
    start = len(full) * N
    for j, size in zip(rest, sizes):
        out = all_hashes[start : start + size]
        observation = observations[j]
        if j not in lists:  # a single value at some tokens only
            tokens = only_at[j]
            ptr = spread(np.arange(len(tokens) + 1), tokens, N)
            out[:] = cast(np.ndarray, single_hashes)[single.index(j)][tokens]
        elif observation.kind in SUBSTRING_KINDS:
            ptr, out[:] = lists[j]
        else:
            ptr, codes = lists[j]
            np.take(utf8_hashes(values.lists(observation).names, salt), codes, out=out)
        np.add(ptr, start, out=value_ptr[j])
        counts[j] = np.diff(ptr)
        start += size
    return ItemLists(value_ptr, all_hashes, counts)


def spread(ptr: np.ndarray, tokens: np.ndarray, num_tokens: int) -> np.ndarray:
    """int64 [num_tokens + 1]: the row pointers of rows whose row tokens[m] is row m of
    ``ptr`` int [M+1] (tokens int [M] ascending), every other row empty."""
    counts = np.zeros(num_tokens, dtype=np.int64)
    counts[tokens] = np.diff(ptr)
    result = np.zeros(num_tokens + 1, dtype=np.int64)
    np.cumsum(counts, out=result[1:])
    return result
