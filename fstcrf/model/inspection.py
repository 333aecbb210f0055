"""Looking inside a fitted model: the text of ``fstcrf dump`` and ``fstcrf info``.

:func:`dump_text` gives a model's labels, topology, template and its largest
state and transition weights, as ``crfsuite dump`` does; :func:`info_text`
gives sizes, training settings and a summary of the training history of a
model or of a composition (:class:`~fstcrf.model.compose.JointModel`).  The weight
layout is that of :mod:`fstcrf.features.encoding`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING
from collections.abc import Sequence

import numpy as np

from fstcrf.errors import FstcrfError, LabelError

from fstcrf.model.compose import JointModel

if TYPE_CHECKING:
    from fstcrf.model.chain import ChainCRF

#: Options of algorithm "bandit" that ``info`` reports.
BANDIT_OPTIONS = (
    "objective",
    "feedback",
    "draws",
    "baseline",
    "step",
    "learning_rate",
    "clip",
    "batch_size",
    "feedback_flip",
    "feedback_noise",
    "weighting",
    "max_ratio",
)
DEFAULT_TOP = 20


@dataclass
class Weights:
    """Named weights of one kind: ``keys`` (tuples of names) and ``values`` float [K]."""

    keys: Sequence[tuple[str, ...]]
    values: np.ndarray

    def largest(self, top: int) -> tuple[list[int], list[int]]:
        """The indices of the ``top`` largest positive and ``top`` most negative weights,
        largest magnitude first (ties in layout order)."""
        order = np.argsort(-self.values, kind="stable")
        positive = [int(i) for i in order[:top] if self.values[i] > 0]
        negative = [int(i) for i in order[::-1][:top] if self.values[i] < 0]
        return positive, negative


def output_names(model: ChainCRF) -> list[str]:
    """The name of each output [S + L] (see :mod:`fstcrf.features.encoding`): a state's name, or a
    tag label's name (order 2)."""
    topology = model.topology_
    return list(topology.state_names) + list(topology.labels[: model.features_.num_labels])


def output_labels(model: ChainCRF) -> np.ndarray:
    """int [S + L]: the label of each output."""
    return np.concatenate([model.topology_.state_label, np.arange(model.features_.num_labels)])


def _label_index(model: ChainCRF, label: str) -> int:
    if label not in model.labels_:
        raise LabelError(f"the model has no label {label!r}; its labels are {', '.join(model.labels_)}")
    return model.labels_.index(label)


def state_weights(model: ChainCRF, label: str | None = None) -> Weights:
    """The F feature weights keyed by (predicate name, output name); with ``label``, only the
    features whose output is that label or a state of that label."""
    features = model.features_
    predicate = np.repeat(np.arange(features.num_predicates), np.diff(features.ptr))
    keep = (
        np.ones(features.num_features, dtype=bool)
        if label is None
        else output_labels(model)[features.output] == _label_index(model, label)
    )
    names, outputs = model.extractor_.predicate_names_, output_names(model)
    kept = np.flatnonzero(keep)
    keys = [(names[predicate[f]], outputs[features.output[f]]) for f in kept]
    return Weights(keys, model.weights_[: features.num_features][kept])


def transition_weights(model: ChainCRF, label: str | None = None) -> Weights:
    """The transition weights keyed by (from state, to state, lower label: "*" for the base
    row); with ``label``, only the edges leaving or entering a state of that label."""
    topology = model.topology_
    E = topology.num_edges
    rows = ["*"] + (list(model.lower_labels_ or ()) if len(model.weights_) > model.features_.num_features + E else [])
    edge_keep = np.ones(E, dtype=bool)
    if label is not None:
        index = _label_index(model, label)
        edge_keep = (topology.state_label[topology.edge_src] == index) | (
            topology.state_label[topology.edge_dst] == index
        )
    states = topology.state_names
    keys = [
        (states[topology.edge_src[e]], states[topology.edge_dst[e]], row)
        for row in rows
        for e in np.flatnonzero(edge_keep)
    ]
    values = model.weights_[model.features_.num_features :].reshape(len(rows), E)[:, edge_keep].ravel()
    return Weights(keys, values)


def model_features(model: ChainCRF) -> tuple[list[str], dict, dict, dict]:
    """What sklearn-crfsuite and python-crfsuite show of a model: the attributes with a
    nonzero state-feature weight of a fitted ChainCRF, in column order;
    {(attribute, output name): weight}, {(from, to): weight} and
    {(lower label, from, to): weight} over the nonzero state, transition and
    lower-label transition weights."""
    features, weights = model.features_, model.weights_
    topology = model.topology_
    outputs = output_names(model)
    names = model.extractor_.predicate_names_
    F = features.num_features
    predicate = np.repeat(np.arange(len(features.ptr) - 1), np.diff(features.ptr))
    nonzero = np.flatnonzero(weights[:F] != 0)
    state = {
        (names[p], outputs[o]): w
        for p, o, w in zip(
            predicate[nonzero].tolist(), features.output[nonzero].tolist(), weights[:F][nonzero].tolist()
        )
    }
    active = np.unique(predicate[nonzero])
    transitions = weights[F : F + topology.num_edges]  # inactive edges keep weight 0
    edges = np.flatnonzero(transitions != 0)
    names_of = topology.state_names
    transition = {
        (names_of[topology.edge_src[e]], names_of[topology.edge_dst[e]]): float(transitions[e]) for e in edges.tolist()
    }
    E = topology.num_edges
    deviations = weights[F + E :].reshape(-1, E)  # [L lower labels, E], or [0, E]
    lower_labels = model.lower_labels_ or []
    lower = {
        (lower_labels[k], names_of[topology.edge_src[e]], names_of[topology.edge_dst[e]]): float(deviations[k, e])
        for k, e in zip(*(index.tolist() for index in np.nonzero(deviations)))
    }
    return [names[p] for p in active.tolist()], state, transition, lower


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows of cells as lines, each column left-aligned but the last (a number), right-aligned."""
    if not rows:
        return ["  (none)"]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  " + "  ".join([cell.ljust(width) for cell, width in zip(row[:-1], widths)] + [row[-1].rjust(widths[-1])])
        for row in rows
    ]


def _weight_lines(title: str, header: Sequence[str], weights: Weights, top: int) -> list[str]:
    lines = []
    for sign, indices in zip(("positive", "negative"), weights.largest(top)):
        lines.append(f"{title}: the {top} largest {sign} of {len(weights.values)}")
        lines += _table(
            [list(header) + ["weight"]] + [[*weights.keys[i], f"{weights.values[i]:.6f}"] for i in indices]
            if indices
            else []
        )
    return lines


def _feature_set(model: ChainCRF, asked: str | None) -> str:
    """The feature set a model was given, and for "complete-if-fits" the one it built:
    complete when every predicate pairs with every state."""
    if asked != "complete-if-fits":
        return asked or "default"
    features = model.features_
    built = "complete" if features.num_features >= features.num_predicates * features.num_states else "supported"
    return f"{asked} ({built})"


def dump_text(model: ChainCRF | JointModel, top: int = DEFAULT_TOP, label: str | None = None) -> str:
    """A fitted model as text: labels, topology, template, then the ``top`` largest positive
    and negative state and transition weights (only those of ``label`` when given)."""
    if isinstance(model, JointModel):
        raise FstcrfError(
            "dump reads one model, and this is a composition of models: dump each component's model file instead"
        )
    if isinstance(top, bool) or not isinstance(top, (int, np.integer)) or top < 1:
        raise FstcrfError(f"top must be a positive integer, got {top!r}")
    topology = model.topology_
    transitions = transition_weights(model, label)
    lines = [
        f"labels ({len(model.labels_)}): {' '.join(model.labels_)}",
        f"topology: {topology.name}, {topology.num_states} states, {topology.num_edges} edges",
        "template:",
        *("  " + line for line in model.extractor_.parsed_template().text.splitlines()),
    ]
    lines += _weight_lines("state features", ("predicate", "output"), state_weights(model, label), top)
    header = (
        ("from", "to", "lower")
        if transitions.keys and len({key[2] for key in transitions.keys}) > 1
        else ("from", "to")
    )
    lines += _weight_lines(
        "transitions", header, Weights([key[: len(header)] for key in transitions.keys], transitions.values), top
    )
    return "\n".join(lines) + "\n"


def dev_score(record: dict) -> float | None:
    """An iteration's dev score ("dev_f1" in files written before "dev_score")."""
    return record.get("dev_score", record.get("dev_f1"))


def dev_metric(history: list[dict]) -> str:
    """The name of the dev scores of a training record ("F1" when it names none)."""
    return next((record["dev_metric"] for record in history if record.get("dev_metric")), "F1")


def _template_name(template) -> str:
    from fstcrf.features.template import TEMPLATES

    return template if isinstance(template, str) and template in TEMPLATES else "custom"


def _model_info(model: ChainCRF) -> list[tuple[str, str]]:
    """(field, value) pairs: sizes, training settings and the training history summary."""
    params = model.get_params()
    weights = model.weights_
    fields = [
        ("target", model.target_),
        ("labels", str(len(model.labels_))),
        ("states", str(model.topology_.num_states)),
        ("edges", str(model.topology_.num_edges)),
        ("predicates", str(model.features_.num_predicates)),
        ("features", str(model.features_.num_features)),
        ("weights", str(len(weights))),
        ("non-zero weights", str(int(np.count_nonzero(weights)))),
    ]
    settings = [
        ("algorithm", params["algorithm"]),
        ("order", params["order"]),
        ("sigma", params["sigma"]),
        ("max_iter", params["max_iter"]),
        ("template", _template_name(params["template"])),
        ("feature set", _feature_set(model, params["features"])),
        ("min_count", params["min_count"]),
        ("grammar", params["grammar"]),
        ("reads", params["reads"]),
        ("default decoding", model.decoding_),
        ("MBR temperature", f"{model.mbr_temperature_:g}"),
    ]
    if params["algorithm"] == "bandit":
        settings += [(name, params[name]) for name in BANDIT_OPTIONS]
    fields += [(name, "none" if value is None else str(value)) for name, value in settings]
    history = model.history_
    scored = [record for record in history if dev_score(record) is not None]
    best = max(scored, key=lambda record: dev_score(record) or 0.0) if scored else None
    fields += [
        ("iterations", str(model.n_iter_)),
        ("kept iteration", str(model.best_iteration_)),
        ("interrupted", "yes" if model.interrupted_ else "no"),
        ("final objective", f"{history[-1]['objective']:.6g}" if history else "none"),
        (
            "best dev score",
            "none"
            if best is None
            else f"{dev_score(best):.2f} {best.get('dev_metric') or 'F1'} (iteration {best['iteration']})",
        ),
        ("training seconds", f"{sum(record['seconds'] for record in history):.2f}"),
    ]
    penalties = model.consistency_
    fields.append(
        (
            "consistency",
            "none" if penalties is None else f"penalties for {', '.join(penalties.types)}, scale {penalties.scale:g}",
        )
    )
    return fields


def _field_lines(fields: list[tuple[str, str]], indent: str = "") -> list[str]:
    width = max(len(name) for name, _ in fields)
    return [f"{indent}{name.ljust(width)}  {value}" for name, value in fields]


def info_text(model: ChainCRF | JointModel, path: str | os.PathLike | None = None) -> str:
    """Sizes, training settings and training history of a model, or of each component of a
    composition; with ``path``, the model file's size too."""
    lines = [] if path is None else [f"file size: {os.path.getsize(path)} bytes"]
    if not isinstance(model, JointModel):
        return "\n".join(lines + _field_lines(_model_info(model))) + "\n"
    components = model.components
    lines.append(f"composition of {len(components)} models, lowest first: {' -> '.join(model.targets)}")
    if model.grammar is not None:
        lines.append(f"joint grammar: {model.grammar}")
    lines.append(f"decoder: {model.space.decoder} ({model.space.num_states} joint states)")
    for k, component in enumerate(components):
        relation = (
            ""
            if k == 0
            else ", compatibility with the one below: "
            + ("all pairs" if model.compatibility[k - 1] is None else "given")
        )
        lines.append(f"component {k} (scale {model.scales[k]:g}{relation})")
        lines += _field_lines(_model_info(component), "  ")
    return "\n".join(lines) + "\n"
