"""What the document view shows of each sentence: for every chain of a model (one, or
each component of a composed model) its predicted labels, read as chunks with their
exact probabilities when they are chunk labels (IOB1, IOB2, BIOES) and as tags with
their marginal probabilities otherwise, beside the file's gold labels when it has them."""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Sequence

import numpy as np

from fstcrf.corpus.conll import Sentence
from fstcrf.engine.chunks import chunks_of_parts, parse_chunk_label
from fstcrf.engine.spans import Entity
from fstcrf.model.chain import ChainCRF
from fstcrf.model.compose import JointModel
from fstcrf.model.decoders import predicted_marginals
from fstcrf.pictures.lattice import words


@dataclass(frozen=True)
class ChunkLayer:
    """The chunks a chain with chunk labels predicts in one sentence.

    Attributes:
        name: the column the chain predicts.
        spans: the predicted chunks with their exact probabilities.
        gold: the T gold labels, or None when the file has none.
    """

    name: str
    spans: tuple[Entity, ...]
    gold: tuple[str, ...] | None

    def gold_chunks(self) -> set[tuple[int, int, str]] | None:
        """The chunks (first, last, type) of the gold labels, or None without gold
        labels or when one of them is no chunk label (e.g. a partial label)."""
        if self.gold is None:
            return None
        parts = [parse_chunk_label(label) for label in self.gold]
        if any(part is None for part in parts):
            return None
        return set(chunks_of_parts([part for part in parts if part is not None]))


@dataclass(frozen=True)
class TagLayer:
    """The tags a chain without chunk labels predicts in one sentence.

    Attributes:
        name: the column the chain predicts.
        labels: the T predicted tags.
        probabilities: float [T], p(the predicted tag at token t).
        gold: the T gold labels, or None when the file has none.
    """

    name: str
    labels: tuple[str, ...]
    probabilities: np.ndarray
    gold: tuple[str, ...] | None


Layer = ChunkLayer | TagLayer


@dataclass(frozen=True)
class TaggedSentence:
    """A sentence of the view: its index in the file, its tokens, whether a document
    starts at it (a ``-DOCSTART-`` line before it) and one layer per chain."""

    index: int
    tokens: tuple[str, ...]
    document_start: bool
    layers: tuple[Layer, ...]


def has_chunk_labels(labels: Sequence[str]) -> bool:
    """Whether every label of a model is a chunk label (its outputs have chunks)."""
    return all(parse_chunk_label(label) is not None for label in labels)


def _layers_of_chain(model: ChainCRF, sentences: list[Sentence]) -> list[list[Layer]]:
    """Per sentence, the one layer of a single model."""
    gold = [sentence.columns.get(model.target_) for sentence in sentences]
    if has_chunk_labels(model.labels_):
        spans = model.predict_spans(sentences)
        return [[chunk_layer(model.target_, found, labels)] for found, labels in zip(spans, gold)]
    predicted = model.predict(sentences)
    marginals = model.predict_marginals(sentences)
    return [
        [tag_layer(model.target_, model.labels_, tags, table, labels)]
        for tags, table, labels in zip(predicted, marginals, gold)
    ]


def _layers_of_joint(joint: JointModel, sentences: list[Sentence]) -> list[list[Layer]]:
    """Per sentence, one layer per component of a composed model, lowest first."""
    chunking = joint.chunk_components()
    spans = joint.predict_spans(sentences) if chunking else []
    tagging = len(chunking) < len(joint.components)
    predicted = joint.predict(sentences) if tagging else []
    marginals = joint.predict_marginals(sentences) if tagging else []
    result: list[list[Layer]] = [[] for _ in sentences]
    for k, model in enumerate(joint.components):
        for b, sentence in enumerate(sentences):
            gold = sentence.columns.get(model.target_)
            component_spans = spans[k] if spans else None
            result[b].append(
                chunk_layer(model.target_, component_spans[b], gold)
                if component_spans is not None
                else tag_layer(model.target_, model.labels_, predicted[k][b], marginals[k][b], gold)
            )
    return result


def chunk_layer(name: str, spans: Sequence[Entity], gold: Sequence[str] | None) -> ChunkLayer:
    """The layer of predicted chunks ``spans``, beside the gold labels if any."""
    return ChunkLayer(name, tuple(spans), None if gold is None else tuple(gold))


def tag_layer(
    name: str, labels: Sequence[str], tags: Sequence[str], marginals: np.ndarray, gold: Sequence[str] | None
) -> TagLayer:
    """The layer of predicted ``tags`` with their probabilities, read from the label
    marginals float [T, L] (columns in the order of the chain's ``labels``)."""
    (probabilities,) = predicted_marginals(labels, [marginals], [tags])
    return TagLayer(name, tuple(tags), probabilities, None if gold is None else tuple(gold))


def tagged_sentences(
    model: ChainCRF | JointModel, sentences: Sequence[Sentence], first_index: int = 0
) -> list[TaggedSentence]:
    """The :class:`TaggedSentence` of each sentence (numbered from ``first_index``)
    under a fitted model or composed model."""
    sentences = list(sentences)
    if not sentences:
        return []
    per_sentence = (
        _layers_of_joint(model, sentences) if isinstance(model, JointModel) else _layers_of_chain(model, sentences)
    )
    return [
        TaggedSentence(first_index + b, words(sentence), sentence.document_start, tuple(layers))
        for b, (sentence, layers) in enumerate(zip(sentences, per_sentence))
    ]


def chunk_types(model: ChainCRF | JointModel) -> dict[str, tuple[str, ...]]:
    """The chunk types of each chain with chunk labels, by the column it predicts."""
    chains = model.components if isinstance(model, JointModel) else (model,)
    return {
        chain.target_: tuple(sorted({part[1] for part in map(parse_chunk_label, chain.labels_) if part and part[1]}))
        for chain in chains
        if has_chunk_labels(chain.labels_)
    }
