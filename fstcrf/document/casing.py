"""How a word is capitalised elsewhere in its document: columns for a second stage.

A capital letter says little at the start of a sentence or in a headline set in
capitals ("JAPAN GET LUCKY WIN"), and most in the middle of a sentence of mixed
case.  For a token t of document D, :func:`casing_columns` adds:

* ``case_doc``: the case classes (:func:`case_class`) of the *other* occurrences
  of t's word in D, lower-cased for the comparison, counted only at reliable
  positions (not the first token of a sentence, not in a capitals line), sorted
  and joined by "+" (e.g. "lower+title"); "none" when there is no such occurrence;
* ``caps_line``: "caps" in a capitals line (:func:`is_capitals_line`), else
  "init" for a sentence's first token and "body" for the others.

Both depend on the words only, never on labels or the order of the documents.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from fstcrf.corpus.conll import Sentence

#: The columns :func:`casing_columns` adds, in this order.
CASING_COLUMNS = ("case_doc", "caps_line")
#: The ``case_doc`` value without any reliable occurrence.
NO_CASE = "none"


def _has_letters(word: str) -> bool:
    return any(character.isalpha() for character in word)


def case_class(word: str) -> str | None:
    """The case class of ``word``: "lower", "upper" (two or more characters, all
    capitals), "title" (first character a capital) or "mixed"; None without letters."""
    if not _has_letters(word):
        return None
    if word.islower():
        return "lower"
    if word.isupper() and len(word) > 1:
        return "upper"
    return "title" if word[0].isupper() else "mixed"


def is_capitals_line(words: Sequence[str]) -> bool:
    """True when at least two words have letters and none of them has a lower-case one."""
    lettered = [word for word in words if _has_letters(word)]
    return len(lettered) >= 2 and all(word.upper() == word for word in lettered)


def _reliable_classes(words: Sequence[str], capitals: bool) -> list[str | None]:
    """The case class [T] of each token at a reliable position, None elsewhere."""
    return [None if capitals or position == 0 else case_class(word) for position, word in enumerate(words)]


def casing_columns(
    sentences: Sequence[Sentence], spans: Sequence[tuple[int, int]], word_column: str = "word"
) -> list[Sentence]:
    """The sentences with the :data:`CASING_COLUMNS` (see the module doc) within the
    documents ``spans`` ([first, last) sentence ranges covering the sentences in order)."""
    extended = []
    for first, last in spans:
        words = [sentences[index][word_column] for index in range(first, last)]
        capitals = [is_capitals_line(sentence_words) for sentence_words in words]
        classes = [_reliable_classes(sentence_words, caps) for sentence_words, caps in zip(words, capitals)]
        seen: dict[str, Counter[str]] = {}
        for sentence_words, sentence_classes in zip(words, classes):
            for word, word_class in zip(sentence_words, sentence_classes):
                if word_class is not None:
                    seen.setdefault(word.lower(), Counter())[word_class] += 1
        for offset, index in enumerate(range(first, last)):
            case_doc = []
            for word, own in zip(words[offset], classes[offset]):
                counts = seen.get(word.lower(), Counter())
                others = sorted(name for name, count in counts.items() if count - (name == own) > 0)
                case_doc.append("+".join(others) if others else NO_CASE)
            positions = range(len(words[offset]))
            lines = ["caps" if capitals[offset] else "init" if position == 0 else "body" for position in positions]
            extended.append(sentences[index].with_columns({"case_doc": case_doc, "caps_line": lines}))
    return extended
