"""Whether separately trained models fit together as a composition: the label pairs a
compatibility transducer relates, the checks of a chain of components (each reads the
labels of the one below), their score weights and the joint grammar compiled over
their label tuples."""

from __future__ import annotations

import fnmatch
import os
import re
from typing import TYPE_CHECKING
from collections.abc import Sequence

import numpy as np

from fstcrf.engine import budget
from fstcrf.engine.acceptor import Acceptor
from fstcrf.engine.joint import SEPARATOR, tuple_labels
from fstcrf.engine.topology import shown_labels
from fstcrf.errors import CompositionError, UnknownLabelError
from fstcrf.extras import require
from fstcrf.grammar import Grammar, load_grammar
from fstcrf.model.chain import ChainCRF
from fstcrf.model.fitting import check_fitted

if TYPE_CHECKING:
    import pynini


def compatibility_pairs(lower_labels: Sequence[str], upper_labels: Sequence[str], relation: pynini.Fst) -> np.ndarray:
    """bool [L_lower, L_upper]: the label pairs (a, b) a transducer relates, i.e. those
    for which ``relation`` maps the one-symbol string a to the one-symbol string b.
    The transducer's input and output symbol tables name the labels."""
    pynini = require("pynini", "a compatibility transducer")
    pywrapfst = require("pywrapfst", "a compatibility transducer")
    inputs, outputs = relation.input_symbols(), relation.output_symbols()
    if inputs is None or outputs is None:
        raise CompositionError(
            "the compatibility transducer needs input and output symbol tables naming the lower and upper labels"
        )
    unknown_in = [label for label in lower_labels if inputs.find(label) == pywrapfst.NO_SYMBOL]
    unknown_out = [label for label in upper_labels if outputs.find(label) == pywrapfst.NO_SYMBOL]
    if unknown_in or unknown_out:
        raise CompositionError(
            f"the compatibility transducer's symbol tables lack the labels {', '.join(unknown_in + unknown_out)}"
        )
    upper_index = {label: j for j, label in enumerate(upper_labels)}
    budget.check_table((len(lower_labels), len(upper_labels)), "the compatibility relation's label pairs")
    pairs = np.zeros((len(lower_labels), len(upper_labels)), dtype=bool)
    for i, label in enumerate(lower_labels):
        single = pynini.accep(label, token_type=inputs)
        image = pynini.project(pynini.compose(single, relation), "output").rmepsilon()
        if image.start() == pywrapfst.NO_STATE_ID:
            continue
        for path in image.paths(input_token_type=outputs, output_token_type=outputs).ostrings():
            if path in upper_index:
                pairs[i, upper_index[path]] = True
    if not pairs.any():
        raise CompositionError("the compatibility transducer relates no lower label to an upper label")
    return pairs


def check_scales(scales, count: int) -> list[float]:
    """Component score weights: ``count`` positive finite numbers (default all 1)."""
    if scales is None:
        return [1.0] * count
    try:
        values = [float(scale) for scale in scales]
    except (TypeError, ValueError):
        raise CompositionError(f"scales must be {count} positive numbers, got {scales!r}") from None
    if len(values) != count or not all(np.isfinite(v) and v > 0 for v in values):
        raise CompositionError(f"scales must be {count} positive finite numbers (one per model), got {scales!r}")
    return values


def check_components(models: Sequence[ChainCRF], compatibility: list, independent: bool = False) -> None:
    """Raise CompositionError unless every model but the first reads the labels of
    the one below it, or, with ``independent`` (under a joint grammar), reads them or
    nothing."""
    if len(models) < 2:
        raise CompositionError(f"composition needs at least two models, got {len(models)}")
    if len(compatibility) != len(models) - 1:
        raise CompositionError(
            f"{len(models)} models need {len(models) - 1} compatibility relations "
            f"(None for none), got {len(compatibility)}"
        )
    for k, model in enumerate(models):
        check_fitted(model)
        if k == 0:
            if model.reads is not None:
                raise CompositionError(
                    f"the first model of a chain reads {model.reads!r}, which no model "
                    "in the chain predicts; put the model predicting it first"
                )
            continue
        lower = models[k - 1]
        if model.reads is None and not independent:
            raise CompositionError(
                f"model {k} ({model.target_}) does not read the labels of model {k - 1} "
                f"({lower.target_}); train it with --reads {lower.target_}, or tie models "
                "that read nothing from each other with a joint grammar (--joint)"
            )
        never = sorted(set(model.lower_labels_ or ()) - set(lower.labels_))
        if never:
            raise CompositionError(
                f"model {k} ({model.target_}) reads {model.reads!r} labels that model "
                f"{k - 1} ({lower.target_}) never produces: {', '.join(never)}"
            )
        others = {m.target_ for m in models} - {model.reads}
        leaked = sorted(others & set(model.extractor_.parsed_template().columns))
        if leaked:
            raise CompositionError(
                f"model {k} ({model.target_})'s template reads the column(s) "
                f"{', '.join(leaked)} that the chain predicts; only {model.reads!r} "
                "at offset 0 can be decoded jointly"
            )
        pairs = compatibility[k - 1]
        if pairs is not None and np.shape(pairs) != (len(lower.labels_), len(model.labels_)):
            raise CompositionError(
                f"compatibility relation {k} has shape {np.shape(pairs)}, expected "
                f"({len(lower.labels_)}, {len(model.labels_)})"
            )


def joint_constraint(models: Sequence[ChainCRF], grammar: Grammar | str | os.PathLike) -> Acceptor:
    """The joint grammar (a Grammar, a shipped grammar's name or a .fgr path) compiled
    over the joint labels "a/b/..." of the models' labels, in model order (needs pynini).

    LabelError for a model label holding "/"; UnknownLabelError naming the model for
    a joint label or class that matches no label tuple; GrammarError otherwise."""
    from fstcrf.engine.bounded import as_arrays
    from fstcrf.grammar.compiler import compile_grammar

    labels = tuple_labels(
        [model.labels_ for model in models], [f"model {k} ({m.target_})" for k, m in enumerate(models)]
    )
    grammar = grammar if isinstance(grammar, Grammar) else load_grammar(os.fspath(grammar))
    try:
        return as_arrays(compile_grammar(grammar, labels), "the joint grammar")
    except UnknownLabelError as error:
        raise UnknownLabelError(f"{error}{missing_parts_note(str(error), models)}") from None


def missing_parts_note(message: str, models: Sequence[ChainCRF]) -> str:
    """Which model lacks which part of the joint label or class an UnknownLabelError names."""
    found = re.search(r"unknown label (['\"])(.*?)\1", message) or re.search(
        r"(\[\^?)([^\]]*)\] matches no label", message
    )
    if found is None:
        return ""
    reasons = []
    for pattern in found.group(2).split():
        parts = pattern.split(SEPARATOR)
        if len(parts) != len(models):
            reasons.append(f"{pattern} has {len(parts)} parts for {len(models)} models")
            continue
        for k, (part, model) in enumerate(zip(parts, models)):
            glob = re.sub(r"\{\w+\}", "*", part.strip('"'))
            if not any(fnmatch.fnmatchcase(label, glob) for label in model.labels_):
                reasons.append(
                    f"model {k} ({model.target_}) has no label {part} (its labels: {shown_labels(model.labels_)})"
                )
    return f"; joint labels are the models' labels joined by {SEPARATOR!r}: {'; '.join(reasons)}" if reasons else ""
