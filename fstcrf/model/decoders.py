"""Any model file's decoder, and what each decoding option adds to its labels.

A model file holds a :class:`~fstcrf.model.chain.ChainCRF` (perhaps trained under a
grammar), a :class:`~fstcrf.model.compose.JointModel` (a composition, decoded jointly or
in cascade) or a :class:`~fstcrf.document.two_stage.TwoStageTagger`.  ``fstcrf tag``
writes what these functions give as CoNLL columns and ``fstcrf serve`` answers it as
JSON: the entities of predicted labels with their exact probabilities, and the
marginal probability of each predicted label.  Heavy modules are imported where they
are used, so that the command line can import this module at start-up."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from fstcrf.corpus.conll import Sentence
    from fstcrf.engine.spans import Entity
    from fstcrf.model.chain import ChainCRF
    from fstcrf.model.compose import JointModel


def load_decoder(path: str):
    """The ChainCRF, JointModel or TwoStageTagger a model file holds."""
    from fstcrf.model.file import TWO_STAGE_KIND, file_kind

    if file_kind(path) == TWO_STAGE_KIND:
        from fstcrf.document.two_stage import load_two_stage

        return load_two_stage(path)
    from fstcrf.model.compose import load_any

    return load_any(path)


def is_two_stage(model) -> bool:
    """Whether ``model`` is a two-stage tagger."""
    from fstcrf.document.two_stage import TwoStageTagger

    return isinstance(model, TwoStageTagger)


def is_composed(model) -> bool:
    """Whether ``model`` is a composed model (a JointModel)."""
    from fstcrf.model.compose import JointModel

    return isinstance(model, JointModel)


def model_components(model) -> list:
    """The single models of a model or of a composed model; the first stage of a
    two-stage tagger (which reads the input as it)."""
    if is_two_stage(model):
        return [model.first_]
    return list(model.components) if is_composed(model) else [model]


def file_columns(model) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the columns of a model's training files, in order: every component's, each
    where it first comes; the predicted ones among them, which an input to tag may lack)."""
    components = model_components(model)
    columns = dict.fromkeys(column for component in components for column in component.columns_)
    return tuple(columns), tuple(component.target_ for component in components)


def input_columns(model) -> tuple[str, ...]:
    """The columns a model reads, in order of first use: those its components' templates
    read, less those its components predict (the chunker of a composed part-of-speech
    tagger and chunker reads words only; a two-stage tagger reads what its first stage
    reads) and the column ``seen_entity``, which the model derives."""
    components = model_components(model)
    predicted = {component.target_ for component in components}
    from fstcrf.features.seen_entities import COLUMN as DERIVED  # the model derives it

    read = (column for component in components for column in component.extractor_.parsed_template().columns)
    return tuple(column for column in dict.fromkeys(read) if column not in predicted and column != DERIVED)


def default_decoding(model) -> str:
    """The decoding a model asks for when none is given: its own ("viterbi" or "mbr", a
    two-stage tagger's second stage's), Viterbi for a composed model."""
    if is_composed(model):
        return "viterbi"
    return (model.second_ if is_two_stage(model) else model).decoding_


def predicted_entities(
    model: ChainCRF,
    sentences: Sequence[Sentence],
    predicted: Sequence[Sequence[str]],
    grammar=None,
    params: dict | None = None,
    temperature: float = 1.0,
    constraints=None,
) -> list[list[Entity]]:
    """The entities (chunks) of the labels ``predicted`` [B][T] of a single model with
    chunk labels, each with the exact probability (at ``temperature``, under ``grammar``
    and the sentences' ``constraints`` when they are given) that the output has it."""
    from fstcrf.engine.spans import path_chunks

    spans = [path_chunks(labels) for labels in predicted]
    probabilities = model.span_probabilities(
        sentences, spans, grammar, params, temperature=temperature, constraints=constraints
    )
    return _with_probabilities(spans, probabilities)


def joint_predicted_entities(
    joint: JointModel, sentences: Sequence[Sentence], predicted: Sequence[Sequence[Sequence[str]]], constraints=None
) -> dict[int, list[list[Entity]]]:
    """The entities of each component with chunk labels (by its index) in ``predicted``
    [components][B][T], each with its exact probability under the joint model (and the
    components' ``constraints``, as :meth:`JointModel.predict` takes them)."""
    from fstcrf.engine.spans import path_chunks

    spans = {k: [path_chunks(labels) for labels in predicted[k]] for k in joint.chunk_components()}
    probabilities = joint.span_probabilities_by_component(sentences, spans, constraints)
    return {k: _with_probabilities(spans[k], probabilities[k]) for k in spans}


def _with_probabilities(
    spans: Sequence[Sequence[tuple[int, int, str]]], probabilities: Sequence[np.ndarray]
) -> list[list[Entity]]:
    """Per sentence, each span (first, last, type) with its probability, as an Entity."""
    from fstcrf.engine.spans import Entity

    return [
        [Entity(first, last, chunk_type, float(p)) for (first, last, chunk_type), p in zip(found, values)]
        for found, values in zip(spans, probabilities)
    ]


def predicted_marginals(
    labels: Sequence[str], marginals: Sequence[np.ndarray], predicted: Sequence[Sequence[str]]
) -> list[np.ndarray]:
    """float [T] per sentence: the marginal probability of each predicted label, read
    from the label marginals float [T, L] per sentence (columns in ``labels`` order)."""
    import numpy as np

    index = {label: number for number, label in enumerate(labels)}
    return [table[np.arange(len(tags)), [index[tag] for tag in tags]] for table, tags in zip(marginals, predicted)]
