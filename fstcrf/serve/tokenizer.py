"""Text to sentences of tokens with their character offsets, for requests that send
``{"text": ...}``.

A blank line (two line breaks, spaces between them allowed) always ends a paragraph,
and each paragraph is split on its own:

- ``spacy``: spaCy's English tokenizer rules and its rule-based sentencizer
  (``spacy.blank("en")``: no model is downloaded); whitespace tokens are dropped.
- ``regex``: a token is a run of letters, digits and underscores, joined across a
  single ``-``, ``'``, ``’`` or ``.`` between two such runs (``U.S``, ``don't``,
  ``state-of-the-art``), or any other single character that is not a space; a
  sentence ends after a ``.``, ``!`` or ``?`` token followed by a space and then a
  token that does not start with a lower-case letter, or by the end.

Offsets count Unicode code points (Python string indices), ``end`` exclusive."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass

from fstcrf.errors import FstcrfError
from fstcrf.extras import available, require

#: The tokenizers, by the name ``fstcrf serve --tokenizer`` takes.
TOKENIZERS = ("spacy", "regex")

PARAGRAPH_BREAK = re.compile(r"\n[ \t\r\f\v]*\n\s*")
TOKEN = re.compile(r"\w+(?:[-'’.]\w+)*|\S")
SENTENCE_END = frozenset(".!?")


@dataclass(frozen=True)
class Token:
    """A token of a text: its characters text[start:end]."""

    text: str
    start: int
    end: int


#: A tokenizer: a text to its sentences, each a list of tokens.
Tokenizer = Callable[[str], list[list[Token]]]


def default_tokenizer() -> str:
    """spaCy's rules where spaCy is installed, else the regular expression."""
    return "spacy" if available("spacy") else "regex"


def make_tokenizer(name: str) -> Tokenizer:
    """The tokenizer named ``name`` (one of :data:`TOKENIZERS`), ready to use."""
    if name == "regex":
        return paragraphs_of(regex_sentences)
    if name == "spacy":
        return paragraphs_of(spacy_sentences())
    raise FstcrfError(f"the tokenizer must be one of {', '.join(TOKENIZERS)}, got {name!r}")


def paragraphs_of(split: Tokenizer) -> Tokenizer:
    """A tokenizer that cuts a text at its blank lines and splits each paragraph with
    ``split``, the offsets counted from the start of the text."""

    def tokenize(text: str) -> list[list[Token]]:
        bounds = [0, *(bound for found in PARAGRAPH_BREAK.finditer(text) for bound in found.span()), len(text)]
        return [
            [Token(token.text, token.start + start, token.end + start) for token in sentence]
            for start, end in zip(bounds[::2], bounds[1::2])
            for sentence in split(text[start:end])
        ]

    return tokenize


def regex_sentences(text: str) -> list[list[Token]]:
    """The sentences of a paragraph by the regular-expression rule (see the module doc)."""
    tokens = [Token(match.group(), match.start(), match.end()) for match in TOKEN.finditer(text)]
    sentences: list[list[Token]] = []
    first = 0
    for t, token in enumerate(tokens):
        following = tokens[t + 1] if t + 1 < len(tokens) else None
        ends = token.text in SENTENCE_END and (
            following is None or (following.start > token.end and not following.text[0].islower())
        )
        if ends:
            sentences.append(tokens[first : t + 1])
            first = t + 1
    if first < len(tokens):
        sentences.append(tokens[first:])
    return sentences


def spacy_sentences() -> Tokenizer:
    """The sentences of a paragraph by spaCy's English tokenizer and sentencizer."""
    spacy = require("spacy", "fstcrf serve --tokenizer spacy")
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    # spaCy's cap (a million characters) guards its parser's memory; rules and the
    # sentencizer are linear, and the caller bounds the text (a request's bytes)
    nlp.max_length = sys.maxsize

    def split(text: str) -> list[list[Token]]:
        sentences = []
        for span in nlp(text).sents:
            tokens = [Token(token.text, token.idx, token.idx + len(token.text)) for token in span if not token.is_space]
            if tokens:
                sentences.append(tokens)
        return sentences

    return split
