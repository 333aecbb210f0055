"""The rows of a template whose lines read single values only, laid out for the
kernel's tagging call (``ft_tag``, csrc/fstcrf_tagging.h), which looks them up
itself: the same steps as :meth:`fstcrf.features.dictionary.HashedDictionary.rows`
(columns -> value hashes -> window hashes -> rows), with the token table left out.
A batch's columns are read straight from its sentences, and each column's values
hashed through the shared :class:`~fstcrf.features.hashing.ValueHashes`, as the
token table's are."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import cast

import numpy as np

from fstcrf.corpus.conll import Sentence
from fstcrf.engine.kernel.features import line_hashes
from fstcrf.engine.kernel.tagging import WindowLines
from fstcrf.features.dictionary import HashedDictionary
from fstcrf.features.hashing import ValueHashes, value_hashes
from fstcrf.features.item_lists import WindowPlan
from fstcrf.features.template import Template, plainly_joined


class WindowRows:
    """A template's single-valued lines ``chosen`` under a dictionary: ``lines`` (the
    :class:`~fstcrf.engine.kernel.tagging.WindowLines` the kernel looks rows up with)
    and, per column read, the sources (rows of the [G, N] value hashes) and
    transforms of its values."""

    def __init__(self, dictionary: HashedDictionary, template: Template, chosen: Sequence[int]):
        plan = dictionary.plan(template, chosen)
        window = cast(WindowPlan, plan.window)  # a plan for single values, not laid out for lists
        self.lines = WindowLines(
            len(window.sources),
            window.source,
            window.offset,
            dictionary.salt,
            plan.seeds,
            plan.item_ptr,
            plan.items,
            dictionary.slots,
        )
        by_column: dict[str, tuple[list[int], list[str | None]]] = {}
        for g, (column, transform) in enumerate(window.sources):
            rows, transforms = by_column.setdefault(column, ([], []))
            rows.append(g)
            transforms.append(transform)
        #: per column: its sources' rows of source_hashes' array (a slice when they follow each other), transforms
        self.columns: list[tuple[str, slice | list[int], list[str | None]]] = [
            (column, slice(rows[0], rows[-1] + 1) if rows == list(range(rows[0], rows[-1] + 1)) else rows, transforms)
            for column, (rows, transforms) in by_column.items()
        ]
        self.num_sources = len(window.sources)
        self.salt = dictionary.salt
        self.cache: ValueHashes = value_hashes(dictionary.salt)
        #: the columns of the sources in order when each is a column's values as they
        #: are (no transform; then one source per column), else None
        self.plain: list[str] | None = [column for column, _ in window.sources]
        if any(transform is not None for _, transform in window.sources):
            self.plain = None

    def source_hashes(self, sentences: Sequence[Sentence], num_tokens: int) -> np.ndarray:
        """uint64 [G, N]: the hash of each token's value in each source.  KeyError for a
        column a sentence lacks, TypeError for a value that is not a string (the token
        table's path names them)."""
        out = np.empty((self.num_sources, num_tokens), dtype=np.uint64)
        if self.plain is not None and self._plain_hashes(sentences, out):
            return out
        for column, rows, transforms in self.columns:
            if len(sentences) == 1:
                values = sentences[0].columns[column]
            else:
                values = [value for sentence in sentences for value in sentence.columns[column]]
            targets = out[rows] if isinstance(rows, slice) else [out[g] for g in rows]
            self.cache.hashes(values, transforms, targets, strings_only=True)
        return out

    def _plain_hashes(self, sentences: Sequence[Sentence], out: np.ndarray) -> bool:
        """Write the sources' hashes into ``out`` [G, N] from the columns' values
        joined, in one kernel call (no lookup per value): False, having written
        nothing, when a value needs escaping or holds a newline."""
        if len(sentences) == 1:
            values = list(chain.from_iterable(map(sentences[0].columns.__getitem__, cast(list, self.plain))))
        else:
            values = [value for column in cast(list, self.plain) for s in sentences for value in s.columns[column]]
        text = plainly_joined(values)
        return text is not None and line_hashes(text.encode("utf-8", "surrogatepass"), self.salt, out)
