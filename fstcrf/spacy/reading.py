"""spaCy Docs read as fstcrf sentences: each input column from its token attribute.

A Doc with sentence boundaries (a sentencizer, a parser, or ``sent_starts``) gives one
sentence per ``doc.sents``; a Doc without gives one sentence, the whole Doc.  An empty
Doc gives none.  A token whose attribute is empty (no earlier component set it) or an
extension that is not registered raises TokenAttributeError naming the attribute, the
component and the token.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import repeat
from operator import attrgetter
from typing import NamedTuple

from spacy.tokens import Doc, Token

from fstcrf.corpus.conll import Sentence
from fstcrf.errors import TokenAttributeError
from fstcrf.spacy.plan import extension_name

#: What sets each token attribute a column may be read from, for the hint of an error.
_SET_BY = {
    "tag_": "a tagger",
    "pos_": "a morphologizer or an attribute ruler",
    "lemma_": "a lemmatizer",
    "dep_": "a parser",
}


class Place(NamedTuple):
    """Where a sentence lies: Doc ``doc`` of the batch, from token ``start``."""

    doc: int
    start: int


def sentence_bounds(doc: Doc) -> list[tuple[int, int]]:
    """(start, end) token offsets of each non-empty sentence of a Doc."""
    if not len(doc):
        return []
    if doc.has_annotation("SENT_START"):
        return [(sentence.start, sentence.end) for sentence in doc.sents]
    return [(0, len(doc))]


def read_sentences(docs: Sequence[Doc], inputs: Mapping[str, str], where: str) -> tuple[list[Sentence], list[Place]]:
    """(the sentences of ``docs``, each with the columns ``inputs`` maps to token
    attributes, and where each lies)."""
    for attribute in inputs.values():
        name = extension_name(attribute)
        if name is not None and not Token.has_extension(name):
            raise TokenAttributeError(
                f"{where} reads the token extension {attribute}, which is not registered: register it "
                f"(Token.set_extension({name!r}, default=None)) and set it before {where} runs, or read "
                "the column from another attribute (reads)"
            )
    sentences, places = [], []
    for d, doc in enumerate(docs):
        for start, end in sentence_bounds(doc):
            tokens = doc if end - start == len(doc) else doc[start:end]  # a Doc's tokens are read faster than a Span's
            columns = {column: _values(tokens, column, attribute, where) for column, attribute in inputs.items()}
            sentences.append(Sentence(columns))
            places.append(Place(d, start))
    return sentences, places


def _values(tokens, column: str, attribute: str, where: str) -> list[str]:
    """The strings [T] of one attribute of the tokens of a sentence."""
    name = extension_name(attribute)
    if name is None:
        values = list(map(attrgetter(attribute), tokens))
    else:
        values = [token._.get(name) for token in tokens]
    if "" in values or not all(map(isinstance, values, repeat(str))):
        for position, value in enumerate(values):
            if not isinstance(value, str) or not value:
                _missing(tokens[position], column, attribute, value, where)
    return values


def _missing(token: Token, column: str, attribute: str, value, where: str):
    """Raise TokenAttributeError: ``token`` has no value for ``attribute``."""
    found = "empty" if value == "" or value is None else f"{type(value).__name__} {value!r}, not a string"
    if attribute in _SET_BY:
        hint = (
            f"no component before {where} sets {attribute}: add {_SET_BY[attribute]} before it, "
            "or read the column from another attribute (reads)"
        )
    else:
        hint = f"set {attribute} of every token before {where} runs"
    raise TokenAttributeError(
        f"{where} reads column {column!r} from the token attribute {attribute}, which token "
        f"{token.i} ({token.text!r}) of the doc {_opening(token.doc)!r} lacks ({found}); {hint}"
    )


def _opening(doc: Doc) -> str:
    """The first words of a Doc, to name it in an error."""
    text = doc[:8].text
    return text + (" ..." if len(doc) > 8 else "")
