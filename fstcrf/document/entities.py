"""Entities read from label ids, as conlleval reads chunks, and the region of a
sentence whose entities a relabelling can change.

Labels are ``O`` or ``P-TYPE`` with P in B, I, E, S (IOB1, IOB2 and BIOES
alike).  Token t *continues* token t-1 when its prefix is I or E, the types
agree and token t-1 is B- or I-; an entity is a maximal run of entity tokens
in which each token continues the one before (so ``E-``/``S-`` end one, and
an ``I-`` that does not continue starts one, as conlleval reads them).
"""

from __future__ import annotations

from collections.abc import Sequence

from fstcrf.engine.chunks import continues, parse_chunk_label
from fstcrf.errors import LabelError


class EntityReader:
    """Reads entities from label ids [T] over a label set.

    Attributes (plain lists: the readers index them one label at a time):
        types: the entity types, sorted (K of them).
        type_of: [L], the type index of each label, -1 for ``O``.
        continues: [L][L], ``continues[a][b]``: label b continues label a.
    """

    def __init__(self, labels: Sequence[str]):
        parts = []
        for label in labels:
            label_parts = parse_chunk_label(label)
            if label_parts is None:
                raise LabelError(
                    f"label {label!r} is not O or B-, I-, E-, S- followed by a type; "
                    "non-local entity factors need chunk labels"
                )
            parts.append(label_parts)
        self.labels = tuple(labels)
        self.types = tuple(sorted({entity_type for _, entity_type in parts if entity_type}))
        index = {entity_type: k for k, entity_type in enumerate(self.types)}
        self.type_of = [index[t] if t else -1 for _, t in parts]
        self.continues = [[continues(a, b) for b in parts] for a in parts]

    def entities(self, labels: Sequence[int], first: int = 0, last: int | None = None) -> list[tuple[int, int, int]]:
        """The entities (first token, end token exclusive, type index) of ``labels[first:last]``,
        read as if the slice were a sentence (callers give region bounds from :meth:`region`)."""
        last = len(labels) if last is None else last
        found = []
        type_of, continues = self.type_of, self.continues
        start = -1
        for t in range(first, last):
            label = labels[t]
            if start >= 0 and not continues[labels[t - 1]][label]:
                found.append((start, t, type_of[labels[start]]))
                start = -1
            if start < 0 and type_of[label] >= 0:
                start = t
        if start >= 0:
            found.append((start, last, type_of[labels[start]]))
        return found

    def region(self, labels: Sequence[int], first: int, last: int) -> tuple[int, int]:
        """[lo, hi): the tokens whose entities may change when ``labels[first:last]`` is
        replaced: the span widened to whole entities on both sides.  The bounds hold for
        the labels before and after the change alike, because only the continuations
        into and out of the replaced tokens change."""
        continues = self.continues
        lo = max(first - 1, 0)
        while lo > 0 and continues[labels[lo - 1]][labels[lo]]:
            lo -= 1
        hi = min(last + 1, len(labels))
        while hi < len(labels) and continues[labels[hi - 1]][labels[hi]]:
            hi += 1
        return lo, hi
