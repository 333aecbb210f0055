"""One batch of sentences decoded for a pipeline component's outputs: one call of the
model per kind of output, over the whole batch, on the model's threads.

A single model's spans come from ``ChainCRF.predict_spans`` (the chunks of its best
labels, each with the exact probability that the output holds it), its labels from
``ChainCRF.predict``.  A composed model decodes jointly once (``JointModel.predict``);
the chunks of its span-writing components then get their probabilities under the
joint model from one ``JointModel.span_probabilities_by_component`` call.  Without
probabilities, spans are read off the best labels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from fstcrf.corpus.conll import Sentence
from fstcrf.engine.spans import path_chunks
from fstcrf.model.chain import ChainCRF
from fstcrf.model.compose import JointModel
from fstcrf.spacy.plan import Output


@dataclass
class Decoded:
    """Per component index: ``labels`` [B][T] (components with token outputs), ``spans``
    [B][chunks] as (first, last inclusive, type) (components with span outputs) and
    their ``probabilities`` [B][chunks] (when computed)."""

    labels: dict[int, list[list[str]]] = field(default_factory=dict)
    spans: dict[int, list[list[tuple[int, int, str]]]] = field(default_factory=dict)
    probabilities: dict[int, list[list[float]]] = field(default_factory=dict)


def decode(
    model: ChainCRF | JointModel, sentences: Sequence[Sentence], outputs: Sequence[Output], probabilities: bool
) -> Decoded:
    """The decoding of ``sentences`` that ``outputs`` write; with ``probabilities``, the
    exact probability of every span."""
    decoded = Decoded()
    span_components = sorted({output.component for output in outputs if output.spans})
    label_components = sorted({output.component for output in outputs if not output.spans})
    if not sentences:  # Docs without tokens: every output written, empty
        decoded.labels = {k: [] for k in label_components}
        decoded.spans = {k: [] for k in span_components}
        decoded.probabilities = {k: [] for k in span_components} if probabilities else {}
        return decoded
    if isinstance(model, JointModel):
        joint_labels = model.predict(sentences)
        decoded.labels = {k: joint_labels[k] for k in label_components}
        decoded.spans = {k: [path_chunks(sentence) for sentence in joint_labels[k]] for k in span_components}
        if probabilities and span_components:
            by_component = model.span_probabilities_by_component(sentences, decoded.spans)
            decoded.probabilities = {k: [values.tolist() for values in by_component[k]] for k in span_components}
        return decoded
    if label_components or (span_components and not probabilities):
        labels = model.predict(sentences)
        decoded.labels = {0: labels} if label_components else {}
        if span_components and not probabilities:
            decoded.spans = {0: [path_chunks(sentence) for sentence in labels]}
    if span_components and probabilities:
        entities = model.predict_spans(sentences)
        decoded.spans = {0: [[(e.first, e.last, e.type) for e in sentence] for sentence in entities]}
        decoded.probabilities = {0: [[e.probability for e in sentence] for sentence in entities]}
    return decoded
