"""Text to sentences of tokens with their character offsets, for requests that send
``{"text": ...}``.

A blank line (two line breaks, spaces between them allowed) always ends a paragraph,
and each paragraph is split on its own:

- ``spacy``: spaCy's English tokenizer rules and its rule-based sentencizer
  (``spacy.blank("en")``: no model is downloaded); whitespace tokens are dropped.
  A run of characters without whitespace holding more than
  :data:`SPACY_MOST_SYMBOLS` characters that are not letters or digits is split
  by the ``regex`` rule instead: spaCy strips a run's prefixes and suffixes one at
  a time, each time searching the rest of the run, so its time grows with the
  square of such a run's length (16,000 ``(`` took 20 s).
- ``regex``: a token is a run of letters, digits and underscores, joined across a
  single ``-``, ``'``, ``’`` or ``.`` between two such runs (``U.S``, ``don't``,
  ``state-of-the-art``), or any other single character that is not a space; a
  sentence ends after a ``.``, ``!`` or ``?`` token followed by a space and then a
  token that does not start with a lower-case letter, or by the end.

Either way a byte-order mark (U+FEFF) separates tokens as a space does: it is an
encoding's mark, not a character of a word, and the CoNLL reader drops one at the
start of a file, so a token that began with it could not be read back from the
corrections a person downloads.

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
BYTE_ORDER_MARK = "\ufeff"
#: The most characters other than letters and digits a run without whitespace may
#: hold for spaCy's rules to split it (see the module doc).
SPACY_MOST_SYMBOLS = 16
#: A run without whitespace, and the characters in it that are not letters or digits.
RUN = re.compile(r"\S+")
SYMBOL = re.compile(r"[^\w]|_")


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
        text = text.replace(BYTE_ORDER_MARK, " ")  # (one character for one: the offsets hold)
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
    # spaCy's cap (a million characters) guards its parser's memory; the rules and
    # the sentencizer are linear once runs of many symbols are kept from them, and
    # the caller bounds the text (a request's bytes)
    nlp.max_length = sys.maxsize

    def split(text: str) -> list[list[Token]]:
        hostile = [run.span() for run in RUN.finditer(text) if len(SYMBOL.findall(run.group())) > SPACY_MOST_SYMBOLS]
        doc = nlp(text) if not hostile else nlp(_doc_split_around(nlp, text, hostile))
        sentences = []
        for span in doc.sents:
            tokens = [Token(token.text, token.idx, token.idx + len(token.text)) for token in span if not token.is_space]
            if tokens:
                sentences.append(tokens)
        return sentences

    return split


def _doc_split_around(nlp, text: str, runs: list[tuple[int, int]]):
    """A spaCy Doc of ``text`` whose ``runs`` [(start, end)] are split by the regex
    rule and the rest by spaCy's tokenizer, each token at its offsets in ``text``."""
    from spacy.tokens import Doc

    spans: list[tuple[int, int]] = []  # every token's (start, end), whitespace left out
    position = 0
    for start, end in [*runs, (len(text), len(text))]:
        spans.extend(
            (position + token.idx, position + token.idx + len(token))
            for token in nlp.tokenizer(text[position:start])
            if not token.is_space
        )
        spans.extend((start + token.start(), start + token.end()) for token in TOKEN.finditer(text[start:end]))
        position = end
    words, spaces = [], []
    for (start, end), following in zip(spans, [start for start, _ in spans[1:]] + [len(text)]):
        words.append(text[start:end])
        gap = text[end:following]
        spaces.append(gap.startswith(" "))
        if len(gap) > spaces[-1]:  # whitespace beyond one space: a token of its own, as spaCy makes it
            words.append(gap[spaces[-1] :])
            spaces.append(False)
    if spans[0][0] > 0:  # the runs give a token at least: whitespace before the first
        words.insert(0, text[: spans[0][0]])
        spaces.insert(0, False)
    return Doc(nlp.vocab, words=words, spaces=spaces)
