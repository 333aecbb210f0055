"""A ChainCRF as a model file's payload: the JSON-able header and the named arrays
(the container that stores them is :mod:`fstcrf.model.file`), and back, checked:
an inconsistent payload raises ModelFileError naming the file."""

from __future__ import annotations

import numpy as np

from fstcrf.corpus.labels import chain_topology
from fstcrf.corpus.tag_dictionary import TagDictionary
from fstcrf.engine.acceptor import Acceptor, is_fst
from fstcrf.engine.openfst import read_acceptor, write_acceptor
from fstcrf.document.consistency import ConsistencyPenalties
from fstcrf.errors import BudgetError, FstcrfError, ModelFileError
from fstcrf.features.defaults import MBR_TEMPERATURE_RANGE
from fstcrf.features.encoding import FactoredFeatures
from fstcrf.features.extractor import FeatureExtractor
from fstcrf.features.template import Template
from fstcrf.grammar import Grammar, constrain
from fstcrf.model.file import header_field
from fstcrf.model.fitting import DECODINGS, FittedState, check_fitted, transition_layout
from fstcrf.model.params import check_params

EXTRACTOR_PREFIX = "extractor."

LATER_PARAMS = (
    "grammar",
    "grammar_params",
    "reads",
    "mce_c",
    "mce_iter",
    "mce_alpha",
    "mce_beta",
    "client",
    "c1",
    "min_freq",
    "transitions",
    "algorithm_params",
)


def to_payload(model) -> tuple[dict, dict[str, np.ndarray]]:
    """The JSON-able description and the arrays of a fitted ChainCRF (a model file's
    header and arrays, see :mod:`fstcrf.model.file`)."""
    check_fitted(model)
    arrays = {
        "weights": model.weights_.astype("<f8"),
        "feature_ptr": model.features_.ptr.astype("<i8"),
        "feature_output": model.features_.output.astype("<i4"),
    }
    extractor, extractor_arrays = extractor_payload(model.extractor_)
    arrays.update({f"{EXTRACTOR_PREFIX}{name}": array for name, array in extractor_arrays.items()})
    if model.constraint_ is not None:
        arrays["constraint"] = np.frombuffer(write_acceptor(constraint_arrays(model.constraint_)), dtype=np.uint8)
    if model.active_edges_ is not None:
        arrays["active_edges"] = model.active_edges_.astype(np.uint8)
    dictionary = None
    if getattr(model, "tag_dictionary_", None) is not None:
        dictionary, dictionary_arrays = model.tag_dictionary_.to_payload(model.labels_)
        arrays.update(dictionary_arrays)
    params = model.get_params()
    params["client"] = None  # a connection, not a property of the model
    if isinstance(params["template"], Template) or hasattr(params["template"], "extractor"):
        params["template"] = params["template"].text
    if isinstance(params["grammar"], Grammar):
        params["grammar"] = params["grammar"].source
    header = {
        "params": params,
        "target": model.target_,
        "columns": list(model.columns_),
        "topology": {
            "kind": model.topology_.name,
            "labels": list(model.topology_.labels),
            "num_states": model.topology_.num_states,
            "num_edges": model.topology_.num_edges,
        },
        "extractor": extractor,
        "lower_labels": model.lower_labels_,
        "consistency": None if model.consistency_ is None else model.consistency_.to_dict(),
        "decoding": model.decoding_,
        "mbr_temperature": model.mbr_temperature_,
        "tag_dictionary": dictionary,
        "training": {
            "n_iter": model.n_iter_,
            "best_iteration": model.best_iteration_,
            "interrupted": model.interrupted_,
            "history": model.history_,
        },
    }
    return header, arrays


def params_from_payload(header: dict, where: str, defaults: dict) -> dict:
    """The estimator parameters a payload's header holds, completed with ``defaults``
    (the estimator's) for the options added after the file was written."""
    params = dict(header_field(header, "params", dict, where))
    for name in LATER_PARAMS:  # a file written before the option existed: its default
        params.setdefault(name, defaults[name])
    params.setdefault("read_transitions", False)  # written before transitions could read labels
    expected = list(defaults)
    if set(params) != set(expected):
        raise ModelFileError(
            f"{where}: the model parameters are {', '.join(sorted(params))}; expected {', '.join(expected)}"
        )
    return params


def fitted_from_payload(model, header: dict, arrays: dict[str, np.ndarray], where: str) -> FittedState:
    """The fitted state a payload describes for ``model``, the estimator built from
    :func:`params_from_payload`; ModelFileError if the two are inconsistent."""
    for name, dtype in (("weights", "float64"), ("feature_ptr", "int64"), ("feature_output", "int32")):
        if name not in arrays or arrays[name].dtype != dtype:
            raise ModelFileError(f"{where}: the model file lacks a valid {name!r} array")
    described = header_field(header, "topology", dict, where)
    labels = header_field(described, "labels", list, where)
    training = header_field(header, "training", dict, where)
    try:
        check_params(model)
        topology = chain_topology(model.order, labels)
        extractor = extractor_from_payload(header.get("extractor"), arrays)
        num_labels = topology.num_labels if model.order == 2 else 0
        state_label = topology.state_label if num_labels else np.arange(topology.num_states)
        features = FactoredFeatures(state_label, num_labels, arrays["feature_ptr"], arrays["feature_output"])
        constraint = None
        if "constraint" in arrays:
            constraint = read_acceptor(arrays["constraint"].tobytes(), "the training grammar's acceptor")
            constrain(topology, constraint)
    except BudgetError:
        raise  # the file may be fine: the user's budget is too small for it
    except FstcrfError as error:
        raise ModelFileError(f"{where}: the model file is inconsistent: {error}") from None
    if (topology.name, topology.num_states, topology.num_edges) != (
        described.get("kind"),
        described.get("num_states"),
        described.get("num_edges"),
    ):
        raise ModelFileError(
            f"{where}: the model's {described.get('kind')} topology does not rebuild to the stored state space"
        )
    num_predicates = extractor.num_predicates
    if features.num_predicates != num_predicates:
        raise ModelFileError(
            f"{where}: the feature dictionary has {features.num_predicates} "
            f"predicates but the extractor {num_predicates}"
        )
    lower_labels = header.get("lower_labels")
    active_edges = None
    if "active_edges" in arrays:
        if arrays["active_edges"].shape != (topology.num_edges,) or arrays["active_edges"].max(initial=0) > 1:
            raise ModelFileError(f"{where}: the model's active edges do not fit its {topology.num_edges} edges")
        active_edges = arrays["active_edges"].astype(bool)
    layout = transition_layout(
        model, topology.num_edges, lower_labels if isinstance(lower_labels, list) else None, active_edges
    )
    if len(arrays["weights"]) != features.num_features + layout.size:
        raise ModelFileError(
            f"{where}: {len(arrays['weights'])} weights for "
            f"{features.num_features} features and {layout.size} transition weights"
        )
    target = header_field(header, "target", str, where)
    columns = header_field(header, "columns", list, where)
    if not all(isinstance(name, str) for name in columns) or target not in columns:
        raise ModelFileError(f"{where}: the model's column names {columns!r} are invalid")
    if (model.reads is None) != (lower_labels is None) or not (
        lower_labels is None or all(isinstance(label, str) for label in lower_labels)
    ):
        raise ModelFileError(f"{where}: the model's lower labels {lower_labels!r} do not fit reads={model.reads!r}")
    consistency = header.get("consistency")
    decoding = header.get("decoding", "viterbi")  # written before models named their decoding: Viterbi
    if decoding not in DECODINGS:
        raise ModelFileError(f"{where}: the model's decoding {decoding!r} is not one of {', '.join(DECODINGS)}")
    temperature = header.get("mbr_temperature", 1.0)  # written before models named one: untempered
    low, high = MBR_TEMPERATURE_RANGE
    if type(temperature) not in (int, float) or not low <= temperature <= high:
        raise ModelFileError(
            f"{where}: the model's MBR temperature {temperature!r} is not a number from {low} to {high}"
        )
    return FittedState(
        topology,
        constraint,
        lower_labels,
        extractor,
        features,
        target,
        tuple(columns),
        arrays["weights"],
        header_field(training, "n_iter", int, where),
        header_field(training, "best_iteration", int, where),
        header_field(training, "interrupted", bool, where),
        [current_record(record) for record in header_field(training, "history", list, where)],
        active_edges,
        None if consistency is None else ConsistencyPenalties.from_dict(consistency, where),
        decoding,
        float(temperature),
        tag_dictionary=None
        if header.get("tag_dictionary") is None
        else TagDictionary.from_payload(header["tag_dictionary"], arrays, labels, where),
    )


def extractor_payload(extractor) -> tuple[dict, dict[str, np.ndarray]]:
    """The header data and the arrays (named without EXTRACTOR_PREFIX) of a fitted extractor."""
    if isinstance(extractor, FeatureExtractor):
        return extractor.to_payload()
    return extractor.to_dict(), {}


def extractor_from_payload(data, arrays: dict[str, np.ndarray]):
    """The fitted feature extractor a model file describes: template predicates (the
    data in the header and the arrays named with EXTRACTOR_PREFIX; version 1 files
    keep the names in the header), or (``"kind": "attributes"``) CRFsuite-style
    attributes of token dicts."""
    if isinstance(data, dict) and data.get("kind") == "attributes":
        from fstcrf.features.attributes import AttributeExtractor

        return AttributeExtractor.from_dict(data)
    if isinstance(data, dict) and "predicates" in data:
        return FeatureExtractor.from_dict(data)
    own = {name[len(EXTRACTOR_PREFIX) :]: array for name, array in arrays.items() if name.startswith(EXTRACTOR_PREFIX)}
    return FeatureExtractor.from_payload(data, own)


def current_record(record):
    """An iteration record with the keys written now: files written before dev
    scores named their metric hold the dev chunk F1 as "dev_f1"."""
    if not isinstance(record, dict) or "dev_f1" not in record:
        return record
    renamed = {key: value for key, value in record.items() if key != "dev_f1"}
    score = record["dev_f1"]
    return {**renamed, "dev_score": score, "dev_metric": None if score is None else "F1"}


def constraint_arrays(constraint) -> Acceptor:
    """A fitted model's training constraint as an Acceptor (a model pickled by 0.1,
    whose ``constraint_`` is a pynini acceptor, holds one of those)."""
    if is_fst(constraint):
        from fstcrf.engine.bounded import as_arrays

        return as_arrays(constraint)
    return constraint
