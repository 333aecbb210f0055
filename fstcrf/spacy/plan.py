"""What a model reads and writes in a spaCy pipeline: its input columns mapped to token
attributes, and the outputs of its components (entities, a span group, tags, a token
extension), checked against the model.  Plain fstcrf: nothing here imports spaCy.

A model's input columns are the columns its predicate templates read, less the
columns its components predict (the chunker of a composed part-of-speech tagger and
chunker reads words only).  A component is named by the column it predicts ("pos",
"chunk", "ner") or by its place in the composition (0 = lowest); a single model is
component 0.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fstcrf.engine.chunks import parse_chunk_label
from fstcrf.engine.topology import shown_labels
from fstcrf.errors import PipelineConfigError
from fstcrf.model.chain import ChainCRF
from fstcrf.model.compose import JointModel
from fstcrf.model.decoders import input_columns

#: The token attribute each input column is read from unless ``reads`` maps it.
DEFAULT_READS = {"word": "text", "pos": "tag_"}
#: The token attributes a column may be read from, besides an extension ``_.NAME``.
TOKEN_ATTRIBUTES = ("text", "lower_", "norm_", "shape_", "tag_", "pos_", "lemma_", "dep_")
#: The types of CoNLL named entities: a chunker with one of them writes ``doc.ents`` by default.
ENTITY_TYPES = frozenset({"PER", "LOC", "ORG", "MISC"})
#: The outputs a component may write, as ``writes`` spells them.
OUTPUT_FORMS = '"ents", "spans:KEY", "tag_" or "_.NAME"'
_EXTENSION = re.compile(r"_\.([A-Za-z_][A-Za-z0-9_]*)\Z")


@dataclass(frozen=True)
class Output:
    """One output: component ``component``'s decoding written to ``target`` ("ents",
    "spans:KEY", "tag_" or "_.NAME")."""

    component: int
    target: str

    @property
    def spans(self) -> bool:
        """Whether the output is spans (entities or a span group) rather than token labels."""
        return self.target == "ents" or self.target.startswith("spans:")


@dataclass(frozen=True)
class Plan:
    """``inputs``: each input column of the model, in order, and the token attribute it
    is read from; ``outputs``: what is written."""

    inputs: dict[str, str]
    outputs: tuple[Output, ...]


def components_of(model: ChainCRF | JointModel) -> list[ChainCRF]:
    """The single models of a model (itself) or of a composed model, lowest first."""
    return list(model.components) if isinstance(model, JointModel) else [model]


def is_chunker(component: ChainCRF) -> bool:
    """Whether every label of the component is a chunk label (IOB1, IOB2, BIOES), so
    that its output has spans."""
    return all(parse_chunk_label(label) is not None for label in component.labels_)


def chunk_types(component: ChainCRF) -> set[str]:
    """The chunk types of a chunker's labels."""
    parts = (parse_chunk_label(label) for label in component.labels_)
    return {part[1] for part in parts if part is not None and part[1]}


def is_entity_tagger(component: ChainCRF) -> bool:
    """A chunker of named entities: it predicts column "ner", or one of its types is
    PER, LOC, ORG or MISC."""
    return is_chunker(component) and (component.target_ == "ner" or bool(chunk_types(component) & ENTITY_TYPES))


def default_component(model: ChainCRF | JointModel) -> int:
    """The component written when ``component`` is not given: an entity tagger, else a
    chunker, else the top component (the highest of its kind)."""
    components = components_of(model)
    for wanted in (is_entity_tagger, is_chunker):
        chosen = [k for k, component in enumerate(components) if wanted(component)]
        if chosen:
            return chosen[-1]
    return len(components) - 1


def default_target(component: ChainCRF) -> str:
    """What a component writes when ``writes`` is not given: "ents" for an entity
    tagger, "spans:chunks" for another chunker, "tag_" for any other tagger."""
    if is_entity_tagger(component):
        return "ents"
    return "spans:chunks" if is_chunker(component) else "tag_"


def component_index(model: ChainCRF | JointModel, name: int | str, where: str) -> int:
    """The component named ``name``: the column it predicts, or its place (an integer
    or its digits); PipelineConfigError if there is none or the column is ambiguous."""
    components = components_of(model)
    described = ", ".join(f"{k} ({component.target_})" for k, component in enumerate(components))
    if isinstance(name, str) and name.isdigit():
        name = int(name)
    if isinstance(name, int) and not isinstance(name, bool):
        if 0 <= name < len(components):
            return name
        raise PipelineConfigError(f"{where}: the model has no component {name}; its components are {described}")
    matches = [k for k, component in enumerate(components) if component.target_ == name]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise PipelineConfigError(
            f"{where}: components {', '.join(map(str, matches))} all predict column {name!r}; "
            f"name one by its place (its components are {described})"
        )
    raise PipelineConfigError(
        f"{where}: no component of the model predicts column {name!r}; its components are {described}"
    )


def check_attribute(attribute: str, column: str, where: str) -> str:
    """``attribute`` if a column can be read from it; PipelineConfigError otherwise."""
    if attribute in TOKEN_ATTRIBUTES or _EXTENSION.match(attribute):
        return attribute
    raise PipelineConfigError(
        f"{where}: column {column!r} is read from {attribute!r}, which is not a token attribute it "
        f"reads; give one of {', '.join(TOKEN_ATTRIBUTES)} or an extension _.NAME"
    )


def extension_name(target: str) -> str | None:
    """NAME of an extension ``_.NAME``; None for anything else."""
    match = _EXTENSION.match(target)
    return match.group(1) if match else None


def plan_inputs(model: ChainCRF | JointModel, reads: Mapping[str, str], where: str) -> dict[str, str]:
    """The token attribute of each input column: ``reads``, else DEFAULT_READS.  A column
    of ``reads`` that the model does not read is ignored."""
    given = {**DEFAULT_READS, **reads}
    columns = input_columns(model)
    unmapped = [column for column in columns if column not in given]
    if unmapped:
        example = ", ".join(f"{column!r}: 'lemma_'" for column in unmapped)
        raise PipelineConfigError(
            f"{where}: the model reads the column(s) {', '.join(unmapped)}, which reads does not map "
            f"to token attributes; give them, e.g. reads={{{example}}} (the model reads "
            f"{', '.join(columns)})"
        )
    return {column: check_attribute(given[column], column, where) for column in columns}


def plan_outputs(
    model: ChainCRF | JointModel, writes: str | Mapping[str, str] | None, component: int | str | None, where: str
) -> tuple[Output, ...]:
    """The outputs of ``writes``: None (the default target of ``component``, or of the
    default component), a target written by ``component`` (or the default one), or a
    mapping from components (see :func:`component_index`) to targets."""
    if isinstance(writes, Mapping):
        if component is not None:
            raise PipelineConfigError(
                f"{where}: writes maps components to outputs, so component={component!r} has no use; drop it"
            )
        if not writes:
            raise PipelineConfigError(f"{where}: writes maps no component to an output")
        chosen = [(component_index(model, name, where), target) for name, target in writes.items()]
    else:
        k = default_component(model) if component is None else component_index(model, component, where)
        chosen = [(k, default_target(components_of(model)[k]) if writes is None else writes)]
    outputs = tuple(_checked_output(model, k, target, where) for k, target in chosen)
    targets = [output.target for output in outputs]
    repeated = sorted({target for target in targets if targets.count(target) > 1})
    if repeated:
        raise PipelineConfigError(f"{where}: two components write {', '.join(repeated)}; give each its own output")
    return outputs


def _checked_output(model: ChainCRF | JointModel, k: int, target, where: str) -> Output:
    output = Output(k, target)
    if not isinstance(target, str) or not (
        target in ("ents", "tag_") or extension_name(target) or (target.startswith("spans:") and len(target) > 6)
    ):
        raise PipelineConfigError(f"{where}: writes {target!r}, which is not one of {OUTPUT_FORMS}")
    component = components_of(model)[k]
    if output.spans and not is_chunker(component):
        raise PipelineConfigError(
            f"{where}: writes {target!r} from component {k} ({component.target_}), whose labels "
            f"({shown_labels(component.labels_)}) are not chunk labels (IOB1, IOB2, BIOES), so it has "
            'no spans; write its labels to "tag_" or "_.NAME"'
        )
    return output


def plan(
    model: ChainCRF | JointModel,
    reads: Mapping[str, str],
    writes: str | Mapping[str, str] | None,
    component: int | str | None,
    where: str,
) -> Plan:
    """The inputs and outputs of ``model`` in the pipeline component ``where``."""
    return Plan(plan_inputs(model, reads, where), plan_outputs(model, writes, component, where))


def written_labels(model: ChainCRF | JointModel, outputs: Sequence[Output]) -> tuple[str, ...]:
    """The labels the outputs write, sorted: chunk types of span outputs, labels of the others."""
    components = components_of(model)
    labels = set()
    for output in outputs:
        component = components[output.component]
        labels |= chunk_types(component) if output.spans else set(component.labels_)
    return tuple(sorted(labels))
