"""A tag dictionary: the labels each frequent word took in training, which decoding
may keep the word to (Ratnaparkhi 1996's trick for part-of-speech tagging).

Words seen at least ``min_count`` times (with one known label: "?" and label sets do
not count) keep their set of training labels; other words stay free.  At tagging
time the dictionary gives each sentence its :class:`~fstcrf.engine.constraints.Constraints`
(``allowed`` labels at its known words).  A model file stores it as arrays:
``tag_dictionary.words`` (the words' UTF-8 text, each ended by a line break) and
``tag_dictionary.labels`` (uint8 [W * L], row-major [W, L]: word w may take label l).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from fstcrf.corpus.conll import Sentence
from fstcrf.engine.constraints import Constraints, per_sentence
from fstcrf.errors import FstcrfError, ModelFileError, ShapeError

ARRAY_PREFIX = "tag_dictionary."


@dataclass(frozen=True)
class TagDictionary:
    """``words`` {word: the labels it took}, for the words of column ``column`` seen at
    least ``min_count`` times in training."""

    column: str
    min_count: int
    words: dict[str, frozenset[str]]

    @classmethod
    def of(cls, sentences: Sequence[Sentence], target: str, min_count: int, column: str) -> TagDictionary:
        """The dictionary of the words of ``column`` and the labels of ``target`` in
        training ``sentences`` (ConllFormatError for a sentence without either column)."""
        if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 1:
            raise FstcrfError(f"a tag dictionary needs a count of at least 1, got {min_count!r}")
        counts: Counter[str] = Counter()
        labels: dict[str, set[str]] = {}
        for b, sentence in enumerate(sentences):
            words, targets = (
                sentence.values_of(column, b, "TagDictionary.of"),
                sentence.values_of(target, b, "TagDictionary.of"),
            )
            for word, label in zip(words, targets):
                if label == "?" or "|" in label:
                    continue
                counts[word] += 1
                labels.setdefault(word, set()).add(label)
        kept = {word: frozenset(labels[word]) for word, count in counts.items() if count >= min_count}
        return cls(column, min_count, kept)

    def constraints(self, sentences: Sequence[Sentence], given=None) -> list[Constraints | None]:
        """Each sentence's constraints: its known words keep to their labels, except at
        the tokens that ``given`` (one Constraints, its dict form or None per sentence)
        fixes or restricts, whose rules it keeps as they are.  ShapeError when ``given``
        does not have one per sentence, ConllFormatError for a sentence without the
        dictionary's column."""
        what = "TagDictionary.constraints"
        given = [None] * len(sentences) if given is None else per_sentence(given, what)
        if len(given) != len(sentences):
            raise ShapeError(
                f"{what}: {len(given)} given constraints for {len(sentences)} sentences; give one per sentence"
            )
        result = []
        for b, (sentence, own) in enumerate(zip(sentences, given)):
            taken = set() if own is None else set(own.fixed) | set(own.allowed)
            allowed = {
                t: self.words[word]
                for t, word in enumerate(sentence.values_of(self.column, b, what))
                if t not in taken and word in self.words
            }
            merged = Constraints(allowed=allowed) if own is None else replace(own, allowed={**own.allowed, **allowed})
            result.append(merged or None)
        return result

    def to_payload(self, labels: Sequence[str]) -> tuple[dict, dict[str, np.ndarray]]:
        """(header dict, arrays named with ARRAY_PREFIX) of a model whose labels are ``labels``."""
        index = {label: i for i, label in enumerate(labels)}
        words = sorted(self.words)
        table = np.zeros((len(words), len(labels)), dtype=np.uint8)
        for row, word in enumerate(words):
            table[row, [index[label] for label in self.words[word]]] = 1
        text = "".join(f"{word}\n" for word in words).encode("utf-8")
        arrays = {"words": np.frombuffer(text, dtype=np.uint8), "labels": table.ravel()}
        return {"column": self.column, "min_count": self.min_count}, {ARRAY_PREFIX + k: v for k, v in arrays.items()}

    @classmethod
    def from_payload(cls, header, arrays: dict[str, np.ndarray], labels: Sequence[str], where: str) -> TagDictionary:
        """The dictionary a model file stores (ModelFileError if it is inconsistent)."""
        try:
            column, min_count = header["column"], header["min_count"]
            words = arrays[ARRAY_PREFIX + "words"].tobytes().decode("utf-8").split("\n")[:-1]
            table = arrays[ARRAY_PREFIX + "labels"]
        except (KeyError, TypeError, UnicodeDecodeError) as error:
            raise ModelFileError(f"{where}: the model's tag dictionary is incomplete or unreadable ({error})") from None
        if (
            not isinstance(column, str)
            or not isinstance(min_count, int)
            or table.shape != (len(words) * len(labels),)
            or not table.reshape(len(words), len(labels)).any(axis=1).all()
        ):
            raise ModelFileError(f"{where}: the model's tag dictionary does not fit its {len(labels)} labels")
        table = table.reshape(len(words), len(labels))
        taken: list[list[str]] = [[] for _ in words]
        for row, label in zip(*np.nonzero(table)):
            taken[row].append(labels[label])
        return cls(column, min_count, {word: frozenset(names) for word, names in zip(words, taken)})
