"""The rows of a template with value lists for a small batch (a sentence or a few: a
served request, a pipeline fed one document at a time), by the steps of
:meth:`~fstcrf.features.extractor.FeatureExtractor.transform_rows` (columns ->
values -> hashes -> rows) without the objects made for a large batch between them
(a token table, its value lists, a sparse matrix): each column the items read is
taken from the sentences as they hold it (a derived column made as the token table
makes it), the values of its strings read from the shared store
(:func:`~fstcrf.features.item_lists.stored_values`) and their products looked up
(:meth:`~fstcrf.features.dictionary.HashedDictionary.small_list_rows`).  Those are
the calls transform_rows makes, on the same arrays, so the rows are its rows, bit
for bit (tests/features/test_list_rows.py)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate, repeat
from typing import cast

import numpy as np

from fstcrf.corpus.conll import Sentence
from fstcrf.features import seen_entities
from fstcrf.features.dictionary import HashedDictionary
from fstcrf.features.item_lists import ItemPlan, stored_values
from fstcrf.features.resources import Resources
from fstcrf.features.template import Template


class ListRows:
    """The binary lines ``chosen`` of a template with value lists under a fitted
    dictionary and the files and training words (``resources``) its items read;
    ``direct``: whether every item is one the kernel computes from the store
    (``fv_item_values``), which :meth:`rows` needs."""

    def __init__(self, dictionary: HashedDictionary, template: Template, chosen: Sequence[int], resources: Resources):
        self.dictionary, self.resources = dictionary, resources
        self.plan = dictionary.plan(template, chosen, lists=True)
        self.items = cast(ItemPlan, self.plan.values)
        self.direct = not self.items.named
        #: every column the template reads (the derived ones are made when it reads them)
        self.template_columns = template.columns

    def rows(self, sentences: Sequence[Sentence]) -> tuple[np.ndarray, np.ndarray] | None:
        """indptr int64 [N+1] and indices int32 [nnz] of the N tokens of ``sentences``
        (none empty), what transform_rows gives them; None when a column the items read
        is missing or holds other than strings (transform_rows says what is wrong) or
        the lines are not all ``direct``."""
        if not self.direct:
            return None
        derived = seen_entities.at_extraction(self.template_columns, sentences, self.resources.entities) or {}
        columns = []
        for column in self.items.columns:
            values = derived.get(column)
            if values is None:
                values = _column(sentences, column)
                if values is None:
                    return None
            if not all(map(isinstance, values, repeat(str))):
                return None
            columns.append(values)
        lengths = [len(sentence) for sentence in sentences]
        offsets = np.fromiter(accumulate(lengths, initial=0), dtype=np.int64, count=len(lengths) + 1)
        value_ptr, hashes = stored_values(offsets, columns, self.items, self.dictionary.salt, self.resources)
        return self.dictionary.small_list_rows(self.plan, value_ptr, hashes)


def _column(sentences: Sequence[Sentence], column: str) -> list | None:
    """The values of ``column`` at every token of ``sentences``, None if one lacks it."""
    if len(sentences) == 1:
        return sentences[0].columns.get(column)
    values: list = []
    for sentence in sentences:
        own = sentence.columns.get(column)
        if own is None:
            return None
        values.extend(own)
    return values
