"""Documents: the unit of non-local inference.

A CoNLL file marks each document with a ``-DOCSTART-`` line; the reader keeps
those markers on the sentence that follows them.  A file without markers is
one document.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from fstcrf.corpus.conll import Sentence

logger = logging.getLogger(__name__)

#: A document without markers longer than this many tokens gets a warning: non-local
#: factors then relate every sentence of the file to every other one.
LARGE_DOCUMENT_TOKENS = 100_000


def document_spans(sentences: Sequence[Sentence], source: str = "the input") -> list[tuple[int, int]]:
    """The documents of a list of sentences, as [first, last) sentence index ranges.

    A document starts at every sentence with a ``-DOCSTART-`` line before it (and at
    the first sentence).  Without any marker the whole input is one document, with
    a warning naming ``source`` when it holds more than LARGE_DOCUMENT_TOKENS tokens.
    """
    starts = [index for index, sentence in enumerate(sentences) if index == 0 or sentence.document_start]
    spans = list(zip(starts, starts[1:] + [len(sentences)]))
    if len(spans) == 1 and sentences and not sentences[0].document_start:
        tokens = sum(len(sentence) for sentence in sentences)
        if tokens > LARGE_DOCUMENT_TOKENS:
            logger.warning(
                "%s has no -DOCSTART- lines, so its %d tokens are one document; non-local "
                "factors then relate all of its sentences",
                source,
                tokens,
            )
    return spans
