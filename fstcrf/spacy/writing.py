"""A batch's decoding written to its spaCy Docs.

"ents" replaces ``doc.ents`` (as spaCy's entity recognizer does); "spans:KEY" sets
the span group ``doc.spans[KEY]``, its ``attrs["scores"]`` the spans' probabilities
(as spaCy's span categorizer keeps its scores); "tag_" sets ``token.tag_`` and "_.NAME"
the token extension NAME (registered, default None, if it is not).  Every span also
carries its probability in the span extension ``probability`` (None when
probabilities are not computed).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from spacy.tokens import Doc, Span, SpanGroup, Token

from fstcrf.errors import PipelineConfigError
from fstcrf.spacy.decoding import Decoded
from fstcrf.spacy.plan import Output, extension_name
from fstcrf.spacy.reading import Place

#: The span extension holding a span's probability.
PROBABILITY = "probability"


def register_extensions(outputs: Sequence[Output], where: str) -> None:
    """Register the extensions ``outputs`` set (token extensions _.NAME, the span
    extension ``probability``) that are not registered; PipelineConfigError for one
    registered with a getter or a method, which cannot be set."""
    wanted: list[tuple[type[Token] | type[Span], str | None]] = [
        (Token, extension_name(output.target)) for output in outputs if not output.spans
    ]
    if any(output.spans for output in outputs):
        wanted.append((Span, PROBABILITY))
    for owner, name in wanted:
        if name is None:  # "tag_"
            continue
        if not owner.has_extension(name):
            owner.set_extension(name, default=None)
            continue
        _, method, getter, _ = owner.get_extension(name)
        if method is not None or getter is not None:
            raise PipelineConfigError(
                f"{where} writes the {owner.__name__.lower()} extension {name}, which is registered with "
                f"a {'method' if method is not None else 'getter'}, so it cannot be set; write another one"
            )


def write_outputs(docs: Sequence[Doc], places: Sequence[Place], decoded: Decoded, outputs: Sequence[Output]) -> None:
    """Set every output on the Docs; sentence b of the decoding lies at ``places[b]``."""
    for output in outputs:
        if output.spans:
            _write_spans(docs, places, decoded, output)
        else:
            _write_labels(docs, places, decoded.labels[output.component], output.target)


def _write_labels(docs: Sequence[Doc], places: Sequence[Place], labels: list[list[str]], target: str) -> None:
    name = extension_name(target)
    for (d, start), sentence in zip(places, labels):
        doc = docs[d]
        for position, label in enumerate(sentence, start):
            if name is None:
                doc[position].tag_ = label
            else:
                doc[position]._.set(name, label)


def _write_spans(docs: Sequence[Doc], places: Sequence[Place], decoded: Decoded, output: Output) -> None:
    chunks = decoded.spans[output.component]
    probabilities = decoded.probabilities.get(output.component)
    per_doc: list[list[tuple[Span, float | None]]] = [[] for _ in docs]
    for b, ((d, start), sentence) in enumerate(zip(places, chunks)):
        for c, (first, last, chunk_type) in enumerate(sentence):
            span = Span(docs[d], start + first, start + last + 1, label=chunk_type)
            per_doc[d].append((span, None if probabilities is None else probabilities[b][c]))
    for doc, found in zip(docs, per_doc):
        spans = [span for span, _ in found]
        if output.target == "ents":
            doc.ents = spans
        else:
            group = SpanGroup(doc, name=output.target[len("spans:") :], spans=spans)
            if probabilities is not None:
                group.attrs["scores"] = np.array([p for _, p in found], dtype=float)
            doc.spans[group.name] = group
        for span, probability in found:
            span._.set(PROBABILITY, probability)
