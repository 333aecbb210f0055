"""The training set's entities as a gazetteer: the derived column ``seen_entity``.

A template that reads the column :data:`COLUMN` gets, at each token, the mark of
the longest entity of the training labels that covers it, matched on the words
left to right: ``B-TYPE`` at its first token, ``I-TYPE`` at the others (TYPE the
type the entry has most often in training), ``O`` elsewhere.  When the
extractor is fitted, each training sentence is marked from the entities of the
other FOLDS - 1 of FOLDS contiguous blocks of sentences (jackknifed: an entity
never marks itself, so the weights learn how far a mark from unseen text can
be trusted); every other extraction marks from all the training entities,
which the model keeps.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain, repeat

from fstcrf.corpus.conll import Sentence
from fstcrf.corpus.schemes import read_chunks
from fstcrf.errors import ModelFileError, TemplateError

#: The derived column a template reads the marks from.
COLUMN = "seen_entity"
#: The column whose values the entries are matched on.
WORDS = "word"
#: Blocks of training sentences the marks of the training set are jackknifed over.
FOLDS = 10
#: The mark of a token no entry covers.
OUTSIDE = "O"


@dataclass(frozen=True)
class SeenEntities:
    """Entries: an entity's words (a tuple) -> its type; ``longest``: first word ->
    the most words an entry starting with it has."""

    entries: dict[tuple[str, ...], str]
    longest: dict[str, int]

    @classmethod
    def of(cls, found: Sequence[list[tuple[tuple[str, ...], str]]]) -> SeenEntities:
        """The entities ``found`` in each sentence (:func:`entities_in`), each with its
        most frequent type (the first met among equals)."""
        types: dict[tuple[str, ...], collections.Counter] = {}
        for entities in found:
            for entity, kind in entities:
                types.setdefault(entity, collections.Counter())[kind] += 1
        return cls.from_entries({entity: counts.most_common(1)[0][0] for entity, counts in types.items()})

    @classmethod
    def from_entries(cls, entries: dict[tuple[str, ...], str]) -> SeenEntities:
        """The entities ``entries`` (words -> type), indexed by their first word."""
        longest: dict[str, int] = {}
        for entity in entries:
            longest[entity[0]] = max(longest.get(entity[0], 0), len(entity))
        return cls(entries, longest)

    def marks(self, sentences: Sequence[Sequence[str]]) -> list[str]:
        """The mark of each token [N] of sentences of words ``sentences`` (N tokens in
        all), in order: a match is tried only where an entry's first word stands, past
        the last match, within its sentence."""
        words = [value for values in sentences for value in values]
        ends: list[int] = []  # the end of each token's sentence
        for values in sentences:
            ends.extend([len(ends) + len(values)] * len(values))
        marks = [OUTSIDE] * len(words)
        longest, entries = self.longest, self.entries
        end = 0  # the tokens before it are inside a match
        for position in [p for p, value in enumerate(words) if value in longest]:
            if position < end:
                continue
            size = min(longest[words[position]], ends[position] - position)
            while size:
                kind = entries.get(tuple(words[position : position + size]))
                if kind is not None:
                    marks[position] = "B-" + kind
                    if size > 1:
                        marks[position + 1 : position + size] = ["I-" + kind] * (size - 1)
                    end = position + size
                    break
                size -= 1
        return marks

    def to_payload(self) -> list[list[str]]:
        """JSON-able entries: each entity's words followed by its type."""
        return [[*entity, kind] for entity, kind in self.entries.items()]

    @classmethod
    def from_payload(cls, data) -> SeenEntities:
        """The entities of :meth:`to_payload` data; malformed data raises ModelFileError."""
        if not (
            isinstance(data, list)
            and all(map(isinstance, data, repeat(list)))
            and min(map(len, data), default=2) >= 2
            and all(map(isinstance, chain.from_iterable(data), repeat(str)))
        ):
            raise ModelFileError("the training entities of the model file are not lists of strings")
        return cls.from_entries({tuple(row[:-1]): row[-1] for row in data})


def batch_marks(sentences: Sequence[Sentence], entities: SeenEntities) -> list[str]:
    """The marks [N] of ``entities`` at every token of ``sentences`` (TemplateError if
    they have no column :data:`WORDS`)."""
    if any(WORDS not in sentence.columns for sentence in sentences[:1]):
        raise TemplateError(
            f"the template reads column {COLUMN!r}, marks made on column {WORDS!r}, which the data lacks"
        )
    return entities.marks([sentence.columns[WORDS] for sentence in sentences])


def entities_in(sentence: Sentence, target: str) -> list[tuple[tuple[str, ...], str]]:
    """The entities (words, type) of the chunk labels in column ``target`` of a sentence."""
    words = sentence[WORDS]
    return [(tuple(words[first : last + 1]), kind) for first, last, kind in read_chunks(sentence[target])]


def jackknifed(sentences: Sequence[Sentence], target: str) -> tuple[list[str], SeenEntities]:
    """(the marks [N] of every token of ``sentences``, each sentence's from the entities
    of the other blocks of :data:`FOLDS`; the entities of them all)."""
    for column in (WORDS, target):
        if any(column not in sentence.columns for sentence in sentences[:1]):
            raise TemplateError(
                f"the template reads column {COLUMN!r}: the entities of the training labels "
                f"(column {target!r}) matched on column {WORDS!r}, which the training data lacks"
            )
    found = [entities_in(sentence, target) for sentence in sentences]
    block = [index * FOLDS // max(len(sentences), 1) for index in range(len(sentences))]
    marks: list[str] = []
    for fold in range(FOLDS):
        held_out = [sentence for sentence, b in zip(sentences, block) if b == fold]
        if held_out:
            others = SeenEntities.of([entities for entities, b in zip(found, block) if b != fold])
            marks.extend(batch_marks(held_out, others))
    return marks, SeenEntities.of(found)


def at_fit(
    columns: Sequence[str], sentences: Sequence[Sentence], target: str | None
) -> tuple[dict[str, list[str]] | None, SeenEntities | None]:
    """For an extractor being fitted on ``sentences`` with a template reading
    ``columns``: (the derived columns of its token table, the entities it keeps),
    both None unless the template reads :data:`COLUMN`; TemplateError without the
    labels' column ``target``."""
    if COLUMN not in columns:
        return None, None
    if target is None:
        raise TemplateError(
            f"the template reads column {COLUMN!r}, the marks of the training labels' entities: "
            "give the extractor the labels' column (target=...)"
        )
    marks, entities = jackknifed(sentences, target)
    return {COLUMN: marks}, entities


def at_extraction(
    columns: Sequence[str], sentences: Sequence[Sentence], entities: SeenEntities | None
) -> dict[str, list[str]] | None:
    """The derived columns of the token table of ``sentences`` for a fitted extractor
    keeping ``entities`` whose template reads ``columns``: None unless it reads
    :data:`COLUMN`; TemplateError if it keeps no entities."""
    if COLUMN not in columns:
        return None
    if entities is None:
        raise TemplateError(
            f"the template reads column {COLUMN!r} but the extractor keeps no training entities "
            "(fit it with target=... first)"
        )
    return {COLUMN: batch_marks(sentences, entities)}
