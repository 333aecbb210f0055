"""The rows of a template whose lines read value lists (prefixes, n-grams, bags, type
sequences, ``seen_lower``), laid out for the kernel's tagging call on a value store
(``ft_tag_lists``, csrc/fstcrf_tagging.h), which computes the items' values, crosses
and looks up the lines' keys and tags the batch in one call: the steps of
:meth:`fstcrf.features.dictionary.HashedDictionary.list_rows` (token table -> store
rows -> values -> hashes -> rows) with the calls between them left out.  A batch's
token table and store rows are made as for that path (:func:`~fstcrf.features.item_lists.store_inputs`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, cast

import numpy as np

from fstcrf.engine.kernel.tagging import ListLines
from fstcrf.features.dictionary import HashedDictionary
from fstcrf.features.hashing import StoreTables
from fstcrf.features.item_lists import ItemPlan, store_inputs
from fstcrf.features.template import Template
from fstcrf.features.token_table import TokenTable


class ListInputs(NamedTuple):
    """What ``ft_tag_lists`` reads of a batch: sentence offsets int64 [B+1], the store row
    of each token's value of each column, token_rows int64 [C, N], the items int64
    [J, ITEM_FIELDS] placed in the store, the store's tables and the lines' ``grouped``
    (see :class:`ValueListRows`)."""

    offsets: np.ndarray
    token_rows: np.ndarray
    items: np.ndarray
    tables: StoreTables
    grouped: tuple[int, int]


class ValueListRows:
    """A template's lines ``chosen`` under a dictionary, when each of their items is one
    the kernel computes from the value store: ``lines`` (the
    :class:`~fstcrf.engine.kernel.tagging.ListLines` the kernel crosses and looks up,
    reading the items of :meth:`inputs`), ``num_items`` and ``grouped``."""

    def __init__(self, dictionary: HashedDictionary, template: Template, chosen: Sequence[int]):
        plan = dictionary.plan(template, chosen, lists=True)
        self.values = cast(ItemPlan, plan.values)
        if self.values.named:
            raise ValueError("ValueListRows: the lines read items the value store does not compute")
        self.lines = ListLines(dictionary.salt, plan.seeds, plan.item_ptr, plan.items, dictionary.slots)
        self.num_items = len(self.values.items)
        self.salt = dictionary.salt
        #: (the lines that read one column's own value alone, first among ``lines``, and
        #: that column's place among the columns read), whose keys depend on the value alone
        self.grouped = (0, 0)
        if plan.grouped and plan.grouped_column in self.values.columns:
            self.grouped = (plan.grouped, self.values.columns.index(plan.grouped_column))

    def inputs(self, table: TokenTable, resources) -> ListInputs:
        """The :class:`ListInputs` of the batch of ``table`` (``resources`` holds the
        training words of seen_lower); the token table's typed errors for a missing
        column or a value that is not a string."""
        token_rows, items, tables = store_inputs(table, self.values, self.salt, resources)
        return ListInputs(table.offsets, token_rows, items, tables, self.grouped)
