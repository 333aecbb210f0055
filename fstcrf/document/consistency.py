"""Finkel, Grenager & Manning (2005)'s label-consistency factor for named entities.

Within a document, entity occurrences with the same token sequence rarely get
different types, and an entity is rarely typed differently from an occurrence
of a part of it elsewhere.  The factor multiplies a labelling's probability by
a penalty θ in (0, 1] per violation, raised to the length of the offending
entity:

* same sequence: for every unordered pair of entity occurrences with equal
  words and types A != B, θ_same(A, B)^len;
* sub-sequence: for every entity occurrence of type A and every other entity
  occurrence of type B != A whose words are a proper contiguous part of the
  first one's words (each distinct part counted once per containing
  occurrence), θ_sub(A, B)^len, len being the shorter entity's length.

The penalties are estimated from counts in training documents as in the paper
(its Tables 3 and 4): c(A, B) counts pairs of occurrences of one sequence
typed A and B (a symmetric table), n_A = Σ_B c(A, B), and

    θ_same(A, B) = sqrt(P(B | A) · P(A | B)),  P(B | A) = max(c(A, B), 1) / (n_A + 1),

("PER also ORG" is 5 / 3151 in the paper: zero counts become 1, and 1 is
added to the total); s(A, B) counts an A entity with a part typed B elsewhere,
m_A = Σ_B s(A, B), and θ_sub(A, B) = max(s(A, B), 1) / (m_A + 1).  A
``scale`` multiplies every log penalty (1 is the paper's model; choose
another on development data).

The document state keeps, per token sequence, how many occurrences each type
has and how many occurrences of each type contain the sequence, so a move's
change costs O(length² of the entities it touches), not O(document).
"""

from __future__ import annotations

import math

from collections import defaultdict
from operator import mul
from dataclasses import dataclass, field
from collections.abc import Sequence

import numpy as np

from fstcrf.errors import ModelFileError, PenaltyError
from fstcrf.document.entities import EntityReader
from fstcrf.document.factors import DocumentFactor, FactorState, LabelledDocument


@dataclass(frozen=True, eq=False)
class ConsistencyPenalties:
    """Penalty tables over K entity types.

    ``same``: float [K, K], θ for one token sequence typed A and B (symmetric);
    ``sub``: float [K, K], θ for an A entity with a part typed B elsewhere;
    both in (0, 1], 1 on the diagonal.  ``scale`` >= 0 multiplies the log penalties.
    """

    types: tuple[str, ...]
    same: np.ndarray
    sub: np.ndarray
    scale: float = 1.0
    counts: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        K = len(self.types)
        for name in ("same", "sub"):
            table = np.asarray(getattr(self, name), dtype=float)
            if table.shape != (K, K):
                raise PenaltyError(
                    f"the {name!r} penalty table has shape {table.shape}, expected ({K}, {K}) "
                    f"for the types {', '.join(self.types)}"
                )
            bad = np.argwhere(~((table > 0) & (table <= 1)))
            if len(bad):
                a, b = bad[0]
                raise PenaltyError(
                    f"penalty {name}[{self.types[a]}, {self.types[b]}] = {float(table[a, b])!r} is outside (0, 1]"
                )
            object.__setattr__(self, name, table)
        if not (np.isfinite(self.scale) and self.scale >= 0):
            raise PenaltyError(f"the penalty scale must be a finite number >= 0, got {self.scale!r}")

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, ConsistencyPenalties)
            and self.types == other.types
            and self.scale == other.scale
            and np.array_equal(self.same, other.same)
            and np.array_equal(self.sub, other.sub)
        )

    __hash__ = None  # type: ignore[assignment]  # mutable tables: not hashable

    def with_scale(self, scale: float) -> ConsistencyPenalties:
        """The same tables with another scale."""
        return ConsistencyPenalties(self.types, self.same, self.sub, float(scale), self.counts)

    def to_dict(self) -> dict:
        """A JSON-able description (for model files)."""
        return {
            "types": list(self.types),
            "same": self.same.tolist(),
            "sub": self.sub.tolist(),
            "scale": self.scale,
            "counts": self.counts,
        }

    @classmethod
    def from_dict(cls, described, where: str) -> ConsistencyPenalties:
        """Rebuild from :meth:`to_dict`; ModelFileError naming ``where`` if malformed."""
        try:
            return cls(
                tuple(described["types"]),
                np.array(described["same"], dtype=float),
                np.array(described["sub"], dtype=float),
                float(described["scale"]),
                dict(described.get("counts", {})),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise ModelFileError(f"{where}: the stored consistency penalties are malformed: {error}") from None


def _occurrences(
    reader: EntityReader, words: list[list[str]], labels: Sequence[Sequence[int]]
) -> list[tuple[tuple[str, ...], int]]:
    """(words, type index) of every entity of a document."""
    return [
        (tuple(sentence_words[first:end]), entity_type)
        for sentence_words, sentence_labels in zip(words, labels)
        for first, end, entity_type in reader.entities(sentence_labels)
    ]


def proper_parts(key: tuple) -> set[tuple]:
    """The distinct proper contiguous sub-sequences of ``key``."""
    n = len(key)
    return {key[i:j] for i in range(n) for j in range(i + 1, n + 1) if j - i < n}


def count_violations(reader: EntityReader, documents: Sequence[LabelledDocument]) -> tuple[np.ndarray, np.ndarray]:
    """(int [K, K] same-sequence pair counts, symmetric; int [K, K] sub-sequence counts,
    row = the containing entity's type) over labelled documents (the paper's Tables 3, 4)."""
    K = len(reader.types)
    same = np.zeros((K, K), dtype=np.int64)
    sub = np.zeros((K, K), dtype=np.int64)
    for document in documents:
        by_key: dict[tuple, list[int]] = defaultdict(lambda: [0] * K)
        for key, entity_type in _occurrences(reader, document.words, document.labels):
            by_key[key][entity_type] += 1
        for key, counts in by_key.items():
            for a in range(K):
                same[a, a] += counts[a] * (counts[a] - 1) // 2
                for b in range(a + 1, K):
                    same[a, b] += counts[a] * counts[b]
                    same[b, a] += counts[a] * counts[b]
            for part in proper_parts(key):
                part_counts = by_key.get(part)
                if part_counts is not None:
                    sub += np.outer(counts, part_counts)
    return same, sub


def is_penalty_scale(value) -> bool:
    """Whether ``value`` is a penalty scale: a finite number (not a bool) >= 0."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and value >= 0


def estimate_penalties(documents: Sequence[LabelledDocument], scale: float = 1.0) -> ConsistencyPenalties:
    """The paper's smoothed estimates from labelled training documents (see the module doc)."""
    if not documents:
        raise PenaltyError("estimating consistency penalties needs at least one labelled document")
    reader = EntityReader(documents[0].label_names)
    if not reader.types:
        raise PenaltyError("the labels have no entity types (only O); consistency needs chunk labels")
    same, sub = count_violations(reader, documents)
    conditional = np.maximum(same, 1) / (same.sum(axis=1, keepdims=True) + 1)
    theta_same = np.sqrt(conditional * conditional.T)
    theta_sub = np.maximum(sub, 1) / (sub.sum(axis=1, keepdims=True) + 1)
    np.fill_diagonal(theta_same, 1.0)
    np.fill_diagonal(theta_sub, 1.0)
    return ConsistencyPenalties(
        reader.types, theta_same, theta_sub, float(scale), {"same": same.tolist(), "sub": sub.tolist()}
    )


class ConsistencyFactor(DocumentFactor):
    """Finkel et al.'s label-consistency factor with the given penalties, over models whose
    labels carry the penalties' entity types."""

    name = "consistency"

    def __init__(self, penalties: ConsistencyPenalties):
        if not isinstance(penalties, ConsistencyPenalties):
            raise PenaltyError(f"penalties must be ConsistencyPenalties, got {type(penalties).__name__}")
        self.penalties = penalties
        self._readers: dict[tuple[str, ...], tuple[EntityReader, list[list[float]], list[list[float]]]] = {}

    def _for_labels(self, label_names: tuple[str, ...]):
        """(reader, log same-penalties [K][K], log sub-penalties [K][K]) in the reader's type order."""
        if label_names not in self._readers:
            reader = EntityReader(label_names)
            missing = sorted(set(reader.types) - set(self.penalties.types))
            if missing:
                raise PenaltyError(
                    f"the labels have entity types {', '.join(missing)} that the consistency "
                    f"penalties lack (they know {', '.join(self.penalties.types)})"
                )
            order = [self.penalties.types.index(entity_type) for entity_type in reader.types]
            scale = self.penalties.scale
            same = (scale * np.log(self.penalties.same[np.ix_(order, order)])).tolist()
            sub = (scale * np.log(self.penalties.sub[np.ix_(order, order)])).tolist()
            self._readers[label_names] = reader, same, sub
        return self._readers[label_names]

    def log_score(self, document: LabelledDocument) -> float:
        """Σ over violating pairs of len · log θ, by enumerating pairs (for checking)."""
        reader, same, sub = self._for_labels(document.label_names)
        occurrences = _occurrences(reader, document.words, document.labels)
        total = 0.0
        for i, (key_i, type_i) in enumerate(occurrences):
            parts = proper_parts(key_i)
            for j, (key_j, type_j) in enumerate(occurrences):
                if i < j and key_i == key_j:
                    total += len(key_i) * same[type_i][type_j]
                if key_j in parts:
                    total += len(key_j) * sub[type_i][type_j]
        return total

    def attach(self, document: LabelledDocument) -> FactorState:
        reader, same, sub = self._for_labels(document.label_names)
        return _ConsistencyState(reader, same, sub, document)


class _ConsistencyState(FactorState):
    """Counts of one document's entities: per token sequence, occurrences per type and
    occurrences per type of the entities that properly contain it."""

    def __init__(
        self, reader: EntityReader, same: list[list[float]], sub: list[list[float]], document: LabelledDocument
    ):
        self.reader, self.same, self.sub = reader, same, sub
        self.sub_into = [list(column) for column in zip(*sub)]  # sub_into[b][a] = sub[a][b]
        self.K = len(reader.types)
        self.words = document.words
        self.labels = [list(sentence) for sentence in document.labels]
        self.counts: dict[tuple, list[int]] = {}
        self.containing: dict[tuple, list[int]] = {}
        self._parts: dict[tuple, set[tuple]] = {}
        for key, entity_type in _occurrences(reader, self.words, self.labels):
            self._add(key, entity_type)

    def _parts_of(self, key: tuple) -> set[tuple]:
        parts = self._parts.get(key)
        if parts is None:
            parts = self._parts[key] = proper_parts(key)
        return parts

    def _change_of(self, key: tuple, entity_type: int) -> float:
        """Change in log score from one more occurrence (key, type), given the others."""
        counts = self.counts.get(key)
        total = 0.0
        if counts is not None:
            total += len(key) * sum(map(mul, counts, self.same[entity_type]))
        for part in self._parts_of(key):
            part_counts = self.counts.get(part)
            if part_counts is not None:
                total += len(part) * sum(map(mul, part_counts, self.sub[entity_type]))
        containing = self.containing.get(key)
        if containing is not None:
            total += len(key) * sum(map(mul, containing, self.sub_into[entity_type]))
        return total

    def _add(self, key: tuple, entity_type: int) -> float:
        change = self._change_of(key, entity_type)
        self.counts.setdefault(key, [0] * self.K)[entity_type] += 1
        for part in self._parts_of(key):
            self.containing.setdefault(part, [0] * self.K)[entity_type] += 1
        return change

    def _remove(self, key: tuple, entity_type: int) -> float:
        self.counts[key][entity_type] -= 1
        for part in self._parts_of(key):
            self.containing[part][entity_type] -= 1
        return -self._change_of(key, entity_type)

    def _region_entities(self, sentence: int, first: int, new_labels: Sequence[int]):
        """(entities before, entities after) of the region the move can change, as (key, type)."""
        old = self.labels[sentence]
        lo, hi = self.reader.region(old, first, first + len(new_labels))
        new = old[lo:first] + list(new_labels) + old[first + len(new_labels) : hi]
        words = self.words[sentence]
        before = [(tuple(words[a:b]), k) for a, b, k in self.reader.entities(old, lo, hi)]
        after = [(tuple(words[lo + a : lo + b]), k) for a, b, k in self.reader.entities(new)]
        return before, after

    def _move(self, before, after) -> float:
        return sum(self._remove(key, k) for key, k in before) + sum(self._add(key, k) for key, k in after)

    def delta(self, sentence, first, new_labels) -> float:
        before, after = self._region_entities(sentence, first, new_labels)
        if before == after:
            return 0.0
        change = self._move(before, after)
        self._move(after, before)
        return change

    def apply(self, sentence, first, new_labels) -> None:
        before, after = self._region_entities(sentence, first, new_labels)
        if before != after:
            self._move(before, after)
        self.labels[sentence][first : first + len(new_labels)] = list(new_labels)
