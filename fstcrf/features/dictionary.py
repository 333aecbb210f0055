"""The predicate rows of a batch, the last step of feature extraction (columns ->
token table -> values -> hashes -> rows): the fitted predicates as 64-bit keys in
an open-addressing table (:class:`HashedDictionary`), and the rows of known
predicates at every token, looked up in C from the hashes of the items' values
(:mod:`fstcrf.features.item_lists`), without naming a predicate."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import cast

import numpy as np

from fstcrf.engine import kernel
from fstcrf.engine.kernel.features import list_rows
from fstcrf.errors import HashCollisionError, TemplateError
from fstcrf.features.hashing import utf8_hashes
from fstcrf.features.item_lists import ItemPlan, ObservationHashes, WindowPlan, item_values
from fstcrf.features.occurrences import Occurrences
from fstcrf.features.template import (
    SEEN_LOWER,
    Observation,
    Template,
    escape_value,
    transform_function,
)
from fstcrf.features.token_table import TokenTable
from fstcrf.features.value_lists import ItemValues, factorize

logger = logging.getLogger(__name__)


def _split_values(values: str) -> list[str]:
    """Split the escaped values of a predicate name on unescaped "|"."""
    if "\\" not in values:
        return values.split("|")
    parts, current, escaped = [], [], False
    for character in values:
        if escaped:
            current.append(character)
            escaped = False
        elif character == "\\":
            current.append(character)
            escaped = True
        elif character == "|":
            parts.append("".join(current))
            current = []
        else:
            current.append(character)
    parts.append("".join(current))
    return parts


#: ``HashedDictionary.list_rows`` looks the predicates of a table's two halves up in two
#: threads (the C kernel releases the GIL) when each half has at least this many tokens.
LIST_ROWS_HALF = 2048

#: ``HashedDictionary.list_rows`` looks the lines of a token's own value up once per
#: distinct value (:func:`own_value_lines`) from this many tokens on: below, a batch
#: (a sentence or a few) has few repeated values, and grouping would cost more numpy
#: calls than it saves lookups.
GROUPED_TOKENS = 512

#: ``HashedDictionary.reading_rows`` of at most this many tokens takes every token as
#: its own context and looks all lines up at once (a sentence or a few, as one call of
#: a composed model has them: telling contexts apart would cost more than it saves).
TOKENWISE_READING = 256

#: ``fit`` tries this many salts for a dictionary whose 64-bit keys are all distinct.
SALT_TRIES = 16


def predicate_keys(template: Template, names: Sequence[str], salt: int) -> np.ndarray:
    """uint64 [P]: the key of each named predicate (see :class:`HashedDictionary`);
    a name that does not fit ``template`` raises TemplateError."""
    slots = {predicate.name: k for k, predicate in enumerate(template)}
    groups: list[tuple[list[int], list[list[str]]]] = [([], []) for _ in template]
    for column, name in enumerate(names):
        prefix, _, values = name.partition("=")
        k = slots.get(prefix)
        split = _split_values(values) if values else []
        if k is None or len(split) != template.predicates[k].num_values:
            raise TemplateError(f"predicate {name!r} does not fit the template")
        groups[k][0].append(column)
        groups[k][1].append(split)
    keys = np.empty(len(names), dtype=np.uint64)
    seeds = utf8_hashes([predicate.name for predicate in template], salt)
    for k, (columns, splits) in enumerate(groups):
        own = np.full(len(columns), seeds[k], dtype=np.uint64)
        for i in range(template.predicates[k].num_values):
            kernel.chain_keys(own, utf8_hashes([split[i] for split in splits], salt))
        keys[columns] = own
    return keys


def occurrence_keys(
    template: Template, occurrences: Sequence[Occurrences], chosen: np.ndarray, salt: int
) -> np.ndarray:
    """uint64 [P]: the keys of the predicates ``chosen`` (int [P], indices into the
    occurrences of all lines in turn), chained from their value codes."""
    seeds = utf8_hashes([predicate.name for predicate in template], salt)
    hashed: dict[int, np.ndarray] = {}  # the hashes of each list of value names
    parts = []
    for seed, occurrence in zip(seeds, occurrences):
        own = np.full(len(occurrence.names), seed, dtype=np.uint64)
        for codes, value_names in occurrence.values:
            if id(value_names) not in hashed:
                hashed[id(value_names)] = utf8_hashes(value_names, salt)
            kernel.chain_keys(own, hashed[id(value_names)][codes])
        parts.append(own)
    return np.concatenate([np.zeros(0, dtype=np.uint64)] + parts)[chosen]


class HashedDictionary:
    """The fitted predicates as 64-bit keys, so that transform never builds names.

    A predicate's key chains hashes of the UTF-8 text of its template's name and
    of its escaped values (csrc/fstcrf_hashing.h): key = h(template name), then
    key = mix(key ^ h(value)) for each value, every hash under ``salt``.  A token
    computes the same chain from the hashes of its (few, distinct) column values.
    ``keys`` uint64 [P] holds the key of each column; they are all distinct (fit
    changes the salt until they are), and an open-addressing table maps them
    back to columns."""

    def __init__(self, keys: np.ndarray, salt: int):
        self.keys, self.salt = keys, salt
        self.slots = kernel.key_table(keys, f"the predicate keys under salt {salt}")

    @classmethod
    def fit(cls, keys: Callable[[int], np.ndarray], num_predicates: int) -> HashedDictionary:
        """The dictionary of the predicates whose keys under a salt are keys(salt)
        uint64 [P], under the first salt without collisions."""
        for salt in range(SALT_TRIES):
            try:
                return cls(keys(salt), salt)
            except HashCollisionError:
                logger.info("predicate keys collide under salt %d; rehashing", salt)
        raise HashCollisionError(
            f"the keys of the {num_predicates} predicates collide under each of {SALT_TRIES} salts"
        )

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        """int64 [n]: the column of each key uint64 [n], -1 if unknown."""
        columns = np.empty(len(keys), dtype=np.int64)
        kernel.lookup(keys, self.slots, columns)
        return columns

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_plans", None)  # made again on first use
        return state

    def plan(self, template: Template, chosen: Sequence[int], lists: bool = False) -> LinePlan:
        """The :class:`LinePlan` of the lines ``chosen`` of ``template`` under this
        dictionary's salt (``lists``: ordered for :meth:`list_rows`), made once per
        template object and lines."""
        plans = self.__dict__.setdefault("_plans", {})
        key = (tuple(chosen), lists)
        kept = plans.get(key)
        if kept is None or kept[0] is not template:
            kept = plans[key] = (template, LinePlan(template, chosen, self.salt, lists))
        return kept[1]

    def rows(self, table: TokenTable, template: Template, chosen: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """indptr int64 [N + 1] and indices int32 [nnz]: the known predicates of the
        templates ``chosen`` (single-valued) at each token, ascending within a row."""
        plan = self.plan(template, chosen)
        value_hashes = ObservationHashes(table, self.salt).window(cast(WindowPlan, plan.window))
        indptr = np.empty(table.num_tokens + 1, dtype=np.int64)
        indices = np.empty(table.num_tokens * len(plan.chosen), dtype=np.int32)
        kernel.predicate_rows(value_hashes, plan.seeds, plan.item_ptr, plan.items, self.slots, indptr, indices)
        return indptr, indices[: indptr[-1]]

    def list_rows(self, values: ItemValues, template: Template, chosen: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`rows` of templates with value lists (``values`` reads the files and
        training words they read): the cross products of their items in C.  The lines
        that read only a token's own value of one column (:func:`own_value_lines`) come
        first and are looked up once per distinct value of that column."""
        table = values.table
        plan = self.plan(template, chosen, lists=True)
        grouped, items, item_ptr = plan.grouped, plan.item_list, plan.item_ptr_list
        parts = row_parts(table.num_tokens)
        only_at = None  # items only grouped lines read: at each group's first tokens
        if table.num_tokens < GROUPED_TOKENS:
            grouped = 0
        if grouped:
            group, distinct = table.coded_column(cast(str, plan.grouped_column), None)
            part = np.repeat(np.arange(len(parts)), [last - first for first, last in parts])
            firsts = factorize(group * len(parts) + part)[1]  # each group's first token in each part
            mask = np.zeros(table.num_tokens, dtype=np.uint8)
            mask[firsts] = 1
            elsewhere = set(items[item_ptr[grouped] :])
            only_at = (mask, {j for j in items[: item_ptr[grouped]] if j not in elsewhere})
        value_ptr, all_hashes = item_values(table, cast(ItemPlan, plan.values), self.salt, values, only_at)
        sizes = kernel.line_sizes(value_ptr, plan.item_ptr, plan.items, range(grouped, len(plan.chosen)))
        groups = None
        if grouped:  # the keys of the grouped lines: the room of each group, counted at its first tokens
            room = np.zeros(len(distinct), dtype=np.int64)
            room[group[firsts]] = kernel.line_sizes(value_ptr, plan.item_ptr, plan.items, range(grouped), firsts)
            memo_ptr = np.zeros(len(distinct) + 1, dtype=np.int64)
            np.cumsum(room, out=memo_ptr[1:])
            sizes += room[group]
            groups = (group, memo_ptr)

        def rows_of(first: int, last: int) -> tuple[np.ndarray, np.ndarray]:
            """indptr [last - first + 1] (from 0) and indices of tokens first .. last-1."""
            indptr = np.empty(last - first + 1, dtype=np.int64)
            indices = np.empty(int(sizes[first:last].sum()), dtype=np.int32)
            part_ptr = np.ascontiguousarray(value_ptr[:, first : last + 1])
            scratch = int(sizes[first:last].max(initial=0))
            within = None if groups is None else (grouped, np.ascontiguousarray(groups[0][first:last]), groups[1])
            list_rows(
                part_ptr,
                all_hashes,
                plan.seeds,
                plan.item_ptr,
                plan.items,
                self.slots,
                scratch,
                indptr,
                indices,
                within,
            )
            return indptr, indices[: indptr[-1]]

        return _in_parts(parts, rows_of)

    def reading_rows(
        self, table: TokenTable, template: Template, chosen: Sequence[int], column: str, values: Sequence[str]
    ) -> tuple[np.ndarray, np.ndarray]:
        """indptr int64 [N * K + 1] and indices int32 [nnz]: the known predicates of the
        R templates ``chosen`` (each reads ``column`` at offset 0) at each token when
        ``column`` takes each of the K ``values`` there, row n * K + k for token n under
        values[k], ascending within a row.  A few tokens are looked up in one kernel
        call, every token its own context; more have their keys chained once per
        distinct context of a template (the hashes of its other observations: tokens
        alike in them have the same keys) and value, then spread over the tokens of
        each context."""
        plan = self.reading_plan(template, chosen, column, values)
        hashes = ObservationHashes(table, self.salt).window(plan.window)  # [J, N]
        if table.num_tokens <= TOKENWISE_READING:
            return kernel.reading_rows(plan.kernel_lines(self.slots), hashes)
        out = np.empty((table.num_tokens, len(values), len(plan.lines)), dtype=np.int32)
        for j, (seed, links) in enumerate(plan.lines):
            context, first = _contexts(hashes[[row for row, _ in links if row >= 0]])
            keys = _reading_keys(seed, links, hashes, first, len(values))
            by_context = self.lookup(keys).astype(np.int32).reshape(len(first), len(values))
            np.take(by_context, context, axis=0, out=out[:, :, j])
        return column_rows(out.reshape(-1, len(plan.lines)))

    def reading_plan(
        self, template: Template, chosen: Sequence[int], column: str, values: Sequence[str]
    ) -> ReadingPlan:
        """The :class:`ReadingPlan` of :meth:`reading_rows`, made once per template
        object, lines, column and values."""
        plans = self.__dict__.setdefault("_plans", {})
        key = ("reading", tuple(chosen), column, tuple(values))
        kept = plans.get(key)
        if kept is None or kept[0] is not template:
            kept = plans[key] = (template, ReadingPlan(template, chosen, column, values, self.salt))
        return kept[1]


def column_rows(columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """indptr int64 [N + 1] and indices int32 [nnz]: the rows of columns int [N, R]
    (-1: none), ascending within a row."""
    columns = np.sort(columns, axis=1)
    present = columns >= 0
    indptr = np.zeros(len(columns) + 1, dtype=np.int64)
    np.cumsum(np.count_nonzero(present, axis=1), out=indptr[1:])
    return indptr, columns[present]


def _reading_keys(seed, links, hashes: np.ndarray, first: np.ndarray, num_values: int) -> np.ndarray:
    """uint64 [C * K]: a reading line's keys (``seed`` chained with its ``links``, as
    :class:`ReadingPlan` lays them out) at the tokens ``first`` int64 [C], under each
    of the K values of the column it reads, context-major."""
    keys = np.full(len(first) * num_values, seed, dtype=np.uint64)
    for row, value_hashes in links:
        if value_hashes is None:
            link = np.repeat(hashes[row][first], num_values)
        else:
            link = np.tile(value_hashes, len(first))
        kernel.chain_keys(keys, link)
    return keys


def _contexts(hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(context int64 [N] of each token, numbered by first occurrence; the first token
    int64 [C] of each context): the distinct columns of ``hashes`` uint64 [J, N], one
    context for all tokens when J = 0."""
    num_tokens = hashes.shape[1]
    if not len(hashes):
        return np.zeros(num_tokens, dtype=np.int64), np.zeros(1, dtype=np.int64)
    context, first, _ = factorize(hashes[0].view(np.int64))
    for row in hashes[1:]:
        codes, distinct, _ = factorize(row.view(np.int64))
        context, first, _ = factorize(context * len(distinct) + codes)
    return context, first


class ReadingPlan:
    """Template lines that read ``column`` at offset 0, laid out for
    :meth:`HashedDictionary.reading_rows` under ``salt``: ``window``, the distinct
    observations of other columns they read (a
    :class:`~fstcrf.features.item_lists.WindowPlan`), and per line (``lines``) its key
    seed and its observations in order, each (its row in ``window``, None) or, reading
    ``column``, (-1, the hash uint64 [K] of its escaped value when ``column`` takes
    each of the K ``values``).  The same for the kernel: ``seeds`` uint64 [R],
    ``item_ptr`` int32 [R+1] and ``items`` int32 [I], J + v standing for the v-th
    observation of ``column`` (J the window's), whose hashes are ``read_hashes[v]``
    (uint64 [V, K])."""

    def __init__(self, template: Template, chosen: Sequence[int], column: str, values: Sequence[str], salt: int):
        others: dict[Observation, int] = {}
        read: dict[Observation, int] = {}
        hashes: list[np.ndarray] = []
        self.lines: list[tuple[np.uint64, list[tuple[int, np.ndarray | None]]]] = []
        items: list[int] = []
        for seed, k in zip(utf8_hashes([template.predicates[k].name for k in chosen], salt), chosen):
            links: list[tuple[int, np.ndarray | None]] = []
            for observation in template.predicates[k].observations:
                if observation.column != column:
                    links.append((others.setdefault(observation, len(others)), None))
                    items.append(links[-1][0])
                    continue
                if observation not in read:
                    read[observation] = len(hashes)
                    hashes.append(utf8_hashes(_read_values(observation, values), salt))
                links.append((-1, hashes[read[observation]]))
                items.append(-1 - read[observation])  # numbered after the window's, below
            self.lines.append((seed, links))
        self.window = WindowPlan(list(others))
        self.seeds = np.array([seed for seed, _ in self.lines], dtype=np.uint64)
        self.items = np.array([item if item >= 0 else len(others) - 1 - item for item in items], dtype=np.int32)
        self.item_ptr = np.zeros(len(self.lines) + 1, dtype=np.int32)
        np.cumsum([len(links) for _, links in self.lines], out=self.item_ptr[1:])
        self.read_hashes = np.array(hashes, dtype=np.uint64).reshape(len(hashes), len(values))
        self._kernel_lines: kernel.ReadingLines | None = None

    def kernel_lines(self, slots: np.ndarray) -> kernel.ReadingLines:
        """The lines as the kernel reads them, looked up in ``slots`` (the dictionary's
        table, the same at every call: the plan is its own), made once."""
        if self._kernel_lines is None:
            self._kernel_lines = kernel.ReadingLines(
                len(self.window.source), self.read_hashes, self.seeds, self.item_ptr, self.items, slots
            )
        return self._kernel_lines


class LinePlan:
    """Template lines laid out for the kernel, once per dictionary: ``chosen`` (the
    lines, those :func:`own_value_lines` groups first when laid out for value lists,
    ``grouped`` of them, which read ``grouped_column``), the distinct items they read
    (``observations`` [J]), line k reading items[item_ptr[k] .. item_ptr[k+1]-1]
    (int32 [K+1] and [I], and as lists), each line's key seed uint64 [K] under
    ``salt``, the observations as :class:`WindowPlan` (``window``, when all are single
    values) or else laid out for the store's values as an
    :class:`~fstcrf.features.item_lists.ItemPlan` (``values``)."""

    def __init__(self, template: Template, chosen: Sequence[int], salt: int, lists: bool = False):
        column, grouped = own_value_lines(template, chosen) if lists else (None, [])
        self.chosen = grouped + [k for k in chosen if k not in grouped]
        self.grouped, self.grouped_column = len(grouped), column
        observations: dict[Observation, int] = {}
        items, item_ptr = [], [0]
        for k in self.chosen:
            for observation in template.predicates[k].observations:
                items.append(observations.setdefault(observation, len(observations)))
            item_ptr.append(len(items))
        self.observations = list(observations)
        self.item_list, self.item_ptr_list = items, item_ptr
        self.items, self.item_ptr = np.array(items, dtype=np.int32), np.array(item_ptr, dtype=np.int32)
        self.seeds = utf8_hashes([template.predicates[k].name for k in self.chosen], salt)
        self.window = None if lists else WindowPlan(self.observations)
        self.values = ItemPlan(self.observations) if lists else None


#: The value lists whose values at a token depend on its own value alone.
OWN_VALUE_KINDS = (None, "prefixes", "suffixes", "ngrams", "cluster", SEEN_LOWER)


def own_value_lines(template: Template, chosen: Sequence[int]) -> tuple[str | None, list[int]]:
    """(a column, the lines of ``chosen`` whose items all read that column's value at
    the token itself, through single values or OWN_VALUE_KINDS, the bias included):
    two tokens with the same value in the column have the same keys on those lines.
    The column is the one most lines read so (None, [] if none does)."""
    by_column: dict[str, list[int]] = {}
    constant = []
    for k in chosen:
        observations = template.predicates[k].observations
        columns = {observation.column for observation in observations}
        if any(observation.offset != 0 or observation.kind not in OWN_VALUE_KINDS for observation in observations):
            continue
        if not columns:
            constant.append(k)
        elif len(columns) == 1:
            by_column.setdefault(columns.pop(), []).append(k)
    if not by_column:
        return None, []
    column = max(by_column, key=lambda name: len(by_column[name]))
    return column, sorted(constant + by_column[column])


def row_parts(num_tokens: int) -> list[tuple[int, int]]:
    """The (first, last) token ranges whose rows :func:`_in_parts` looks up apart: the
    two halves when each has LIST_ROWS_HALF tokens, else all the tokens."""
    if num_tokens < 2 * LIST_ROWS_HALF:
        return [(0, num_tokens)]
    return [(0, num_tokens // 2), (num_tokens // 2, num_tokens)]


def _in_parts(
    parts: list[tuple[int, int]], rows_of: Callable[[int, int], tuple[np.ndarray, np.ndarray]]
) -> tuple[np.ndarray, np.ndarray]:
    """indptr int64 [N + 1] and indices of N tokens from rows_of(first, last), the rows
    of tokens first .. last-1 (their indptr from 0), for each part of :func:`row_parts`:
    two parts in two threads (rows_of calls C, which releases the GIL)."""
    if len(parts) == 1:
        return rows_of(*parts[0])
    with ThreadPoolExecutor(1, thread_name_prefix="fstcrf-rows") as pool:
        second = pool.submit(rows_of, *parts[1])
        head, tail = rows_of(*parts[0]), second.result()
    return np.concatenate([head[0], tail[0][1:] + head[0][-1]]), np.concatenate([head[1], tail[1]])


def _read_values(observation: Observation, values: Sequence[str]) -> list[str]:
    """The escaped value of ``observation`` when its column takes each of ``values``."""
    transform = cast(Callable[[str], str], transform_function(observation.transform)) if observation.transform else str
    return [escape_value(transform(value)) for value in values]
