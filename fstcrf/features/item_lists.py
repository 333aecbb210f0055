"""The hashed values each item of a template gives each token of a token table, the
fourth step of feature extraction (columns -> token table -> values -> hashes ->
rows): the lists whose cross products ``ff_list_rows`` looks up
(:meth:`fstcrf.features.dictionary.HashedDictionary.list_rows`), and a single value's
hash at every token (:class:`ObservationHashes`).

The items of the common kinds (single values, prefixes, suffixes, n-grams, bags, type
sequences, ``seen_lower``) take their values from the shared
:class:`~fstcrf.features.hashing.ValueStore` in one C call for all of them
(``fv_item_values``): a batch costs a dictionary lookup per token and column and a
few calls, whatever the number of items, so one sentence costs about what its share
of a large batch costs.  The others (gazetteer marks, cluster prefixes, embeddings)
hash the names of their value lists (:mod:`fstcrf.features.value_lists`)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from itertools import chain
from typing import NamedTuple

import numpy as np

from fstcrf.engine import kernel
from fstcrf.features.hashing import (
    SUBSTRING_KINDS,
    ListTable,
    SeenTable,
    SingleTable,
    StoreTables,
    TableSpec,
    TextTable,
    utf8_hashes,
    value_hashes,
    value_store,
)
from fstcrf.features.template import SEEN_LOWER, Observation
from fstcrf.features.token_table import TokenTable
from fstcrf.features.value_lists import ItemValues

#: Where each field of an item lies in a row of ``ItemPlan.items``.
KIND, COLUMN, TABLE, LOW, HIGH, MASKED = range(kernel.ITEM_FIELDS)
#: Values per token and item that the hashes of a batch first get room for (a batch
#: that needs more is given exactly what it needs, and later batches as much).
FIRST_ROOM = 8


class SeenColumn(NamedTuple):
    """The :class:`SeenTable` of a ``seen_lower`` item, once the training words are known."""

    transform: str | None
    column: str


def kernel_item(observation: Observation) -> tuple[int, TableSpec | SeenColumn, int, int] | None:
    """(kind, table, low, high) of the item in ``fv_item_values``, or None for an item
    it does not compute."""
    kind = observation.kind
    offset = observation.offset
    if kind is None:
        return kernel.ITEM_KINDS["single"], SingleTable(observation.transform), offset, offset
    if kind in SUBSTRING_KINDS:
        lists = ListTable(kind, observation.low, observation.high, observation.transform)
        return kernel.ITEM_KINDS["list"], lists, offset, offset
    if kind == SEEN_LOWER:
        return kernel.ITEM_KINDS["single"], SeenColumn(observation.transform, observation.column), offset, offset
    if kind == "bag":
        return kernel.ITEM_KINDS["bag"], SingleTable(observation.transform), observation.low, observation.high
    if kind == "types":
        texts = TextTable(observation.transform or "shape")
        return kernel.ITEM_KINDS["types"], texts, observation.low, observation.high
    return None


class ItemPlan:
    """Observations laid out for ``fv_item_values``, once per template's lines: the
    columns they read (``columns``), the store tables (``specs``, seen_lower's as
    :class:`SeenColumn`), the observations it computes (``direct``, their rows of
    ``items`` int64 [len(direct), ITEM_FIELDS], whose TABLE field is a place in
    ``specs`` until a store's places replace it) and the others (``named``)."""

    def __init__(self, observations: Sequence[Observation]):
        self.observations = list(observations)
        columns: dict[str, int] = {}
        specs: dict[TableSpec | SeenColumn, int] = {}
        rows: list[list[int]] = []
        self.direct: list[int] = []
        self.named: list[int] = []
        for j, observation in enumerate(self.observations):
            item = kernel_item(observation)
            if item is None:
                self.named.append(j)
                continue
            kind, spec, low, high = item
            column = columns.setdefault(observation.column, len(columns))
            rows.append([kind, column, specs.setdefault(spec, len(specs)), low, high, 0])
            self.direct.append(j)
        self.columns = list(columns)
        self.specs = list(specs)
        self.items = np.array(rows, dtype=np.int64).reshape(len(rows), kernel.ITEM_FIELDS)
        self.room = FIRST_ROOM * len(rows)
        self._seen_tables: tuple[object, list[TableSpec]] | None = None
        self._placed: tuple[list[int], np.ndarray] | None = None

    def tables(self, resources) -> list[TableSpec]:
        """The store tables of ``specs``, seen_lower's reading the training words of
        ``resources`` (:class:`fstcrf.features.resources.Resources`)."""
        kept = self._seen_tables
        if kept is not None and kept[0] is resources:
            return kept[1]
        tables = [
            SeenTable(spec.transform, resources.seen_lower(spec.column)) if isinstance(spec, SeenColumn) else spec
            for spec in self.specs
        ]
        self._seen_tables = (resources, tables)
        return tables

    def placed(self, places: list[int]) -> np.ndarray:
        """``items`` with each table's place in the store (``places``, by spec)."""
        kept = self._placed
        if kept is not None and kept[0] == places:
            return kept[1]
        items = self.items.copy()
        items[:, TABLE] = np.array(places, dtype=np.int64)[self.items[:, TABLE]]
        self._placed = (places, items)
        return items


def store_inputs(table: TokenTable, plan: ItemPlan, salt: int, resources) -> tuple[np.ndarray, np.ndarray, StoreTables]:
    """(token_rows int64 [C, N]: the row in the shared store of ``salt`` of each token's
    value of each column ``plan`` reads, added if new; ``plan``'s items int64 [J,
    ITEM_FIELDS] placed in the store; the store's tables, filled for every row): what
    ``fv_item_values`` reads of a batch.  ``resources`` holds the training words of
    seen_lower."""
    columns = [table.string_values(column) for column in plan.columns]
    words = columns[0] if len(columns) == 1 else list(chain.from_iterable(columns))
    rows, places, tables = value_store(salt).tables(words, plan.tables(resources))
    return rows.reshape(len(columns), table.num_tokens), plan.placed(places), tables


def item_values(
    table: TokenTable,
    plan: ItemPlan,
    salt: int,
    values: ItemValues,
    only_at: tuple[np.ndarray, Collection[int]] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(value_ptr int64 [J, N+1], hashes uint64): observation j of ``plan`` gives token t
    the values hashes[value_ptr[j, t] .. value_ptr[j, t+1]-1], read from the shared
    store of ``salt``.  ``values`` (the table's ItemValues) reads the training words of
    seen_lower and the lists of the items the kernel does not compute.  ``only_at``
    (mask uint8 [N], observations): those observations have values only at the
    tokens the mask marks."""
    N = table.num_tokens
    token_rows, items, tables = store_inputs(table, plan, salt, values.resources)
    mask = None
    if only_at is not None:
        mask, masked = only_at
        items = items.copy()
        items[[k for k, j in enumerate(plan.direct) if j in masked], MASKED] = 1
    value_ptr = np.empty((len(items), N + 1), dtype=np.int64)

    def computed(hashes: np.ndarray) -> int | None:
        store = (tables.single, tables.list_span, tables.list_hashes, tables.text_span, tables.text_bytes)
        return kernel.item_values(
            table.offsets, token_rows, tables.num_rows, *store, items, mask, salt, value_ptr, hashes
        )

    hashes = np.empty(max(plan.room * N, 1), dtype=np.uint64)
    needed = computed(hashes)
    if needed is not None:  # room for what this batch needs, and as much per token for later ones
        plan.room = max(plan.room, -(-needed // max(N, 1)))
        hashes = np.empty(needed, dtype=np.uint64)
        computed(hashes)
    if not plan.named:
        return value_ptr, hashes
    return _with_named(values, plan, salt, value_ptr, hashes, only_at)


def _with_named(
    values: ItemValues,
    plan: ItemPlan,
    salt: int,
    direct_ptr: np.ndarray,
    direct_hashes: np.ndarray,
    only_at: tuple[np.ndarray, Collection[int]] | None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`item_values`' result for every observation of ``plan``: the kernel's
    (direct_ptr [len(direct), N+1] into direct_hashes), then the hashes of the named
    lists of the others (:meth:`ItemValues.lists`)."""
    N = values.table.num_tokens
    value_ptr = np.empty((len(plan.observations), N + 1), dtype=np.int64)
    value_ptr[plan.direct] = direct_ptr
    end = int(direct_ptr[-1, -1]) if len(plan.direct) else 0
    parts = [direct_hashes[:end]]
    for j in plan.named:
        lists = values.lists(plan.observations[j])
        counts, codes = np.diff(lists.ptr), lists.codes
        if only_at is not None and j in only_at[1]:
            marked = only_at[0].astype(bool)
            codes = codes[np.repeat(marked, counts)]
            counts = np.where(marked, counts, 0)
        value_ptr[j, 0] = end
        np.cumsum(counts, out=value_ptr[j, 1:])
        value_ptr[j, 1:] += end
        parts.append(utf8_hashes(lists.names, salt)[codes])
        end += len(codes)
    return value_ptr, np.concatenate(parts)


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
