"""CRFsuite's training parameters, as python-crfsuite's ``Trainer`` and
sklearn-crfsuite's ``CRF`` name them, and the :class:`~fstcrf.model.ChainCRF`
they describe.

Each algorithm (:data:`ALGORITHMS`, aliases included) has CRFsuite's parameters
with CRFsuite's defaults (:func:`parameters`); :func:`chain_crf` maps the
values onto ChainCRF over token dicts (``template="attributes"``):

    c1, c2                    L1 weight c1 (OWL-QN); L2 weight c2 ||w||^2, that is
                              the Gaussian prior sigma = sqrt(1 / (2 c2)) (c2 = 0: none)
    max_iterations            max_iter (lbfgs: until its stopping tests, also when 0 as in
                              libLBFGS; the online algorithms take at least 1)
    feature.minfreq           min_freq
    feature.possible_states   features="complete" (else the supported ones)
    feature.possible_transitions  transitions="all" (else those seen in training)
    the others                ``algorithm_params`` (num_memories is "memory", type
                              is "pa_type", calibration.eta is "calibration_eta", ...)

This module imports neither scikit-learn nor python-crfsuite: fstcrf.sklearn
builds on it as sklearn-crfsuite builds on python-crfsuite.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from fstcrf.errors import ArgumentTypeError, FstcrfError
from fstcrf.features.attributes import COLUMN
from fstcrf.model.chain import ChainCRF

#: CRFsuite's algorithms by the names python-crfsuite and sklearn-crfsuite accept.
ALGORITHMS = {
    "lbfgs": "lbfgs",
    "l2sgd": "l2sgd",
    "ap": "ap",
    "averaged-perceptron": "ap",
    "pa": "pa",
    "passive-aggressive": "pa",
    "arow": "arow",
}
#: The graphical model CRFsuite trains (``Trainer.select``'s ``type``): the first-order chain.
GRAPHICAL_MODEL = "crf1d"
#: "until the stopping tests end it": CRFsuite's L-BFGS iteration limit.
UNLIMITED = 2**31 - 1


@dataclass(frozen=True)
class Parameter:
    """One training parameter: CRFsuite's name, the type of its values (bool, int, float
    or str), CRFsuite's default, a description and the ChainCRF ``algorithm_params``
    entry it sets (None: a ChainCRF argument of its own, see the module doc)."""

    name: str
    kind: type
    default: object
    description: str
    setting: str | None = None


_FEATURES = (
    Parameter("feature.minfreq", float, 0.0, "Drop the state features seen at this many tokens or fewer."),
    Parameter(
        "feature.possible_states", bool, False, "Give every (attribute, label) pair a weight, not only those seen."
    ),
    Parameter(
        "feature.possible_transitions", bool, False, "Give every label pair a transition weight, not only those seen."
    ),
)


def _stopping(period_help: str, delta: float) -> tuple[Parameter, Parameter]:
    return (
        Parameter("period", int, 10, f"The number of iterations {period_help} compares the objective over.", "period"),
        Parameter(
            "delta",
            float,
            delta,
            "Stop once the objective fell by at most this fraction of it over the last period iterations.",
            "delta",
        ),
    )


def _online(epsilon_help: str) -> tuple[Parameter, Parameter]:
    return (
        Parameter("max_iterations", int, 100, "The maximum number of epochs."),
        Parameter("epsilon", float, 0.0, f"Stop after an epoch whose {epsilon_help} is below this.", "epsilon"),
    )


_PARAMETERS: dict[str, tuple[Parameter, ...]] = {
    "lbfgs": (
        *_FEATURES,
        Parameter("c1", float, 0.0, "The L1 regularization coefficient: the penalty c1 * |w|_1 (OWL-QN when > 0)."),
        Parameter("c2", float, 1.0, "The L2 regularization coefficient: the penalty c2 * |w|^2."),
        Parameter("max_iterations", int, UNLIMITED, "The maximum number of L-BFGS iterations (0: no maximum)."),
        Parameter("num_memories", int, 6, "The correction pairs L-BFGS keeps for its inverse Hessian.", "memory"),
        Parameter("epsilon", float, 1e-5, "Stop once the gradient norm is below epsilon * max(1, |w|).", "epsilon"),
        *_stopping("the stopping test", 1e-5),
        Parameter(
            "linesearch",
            str,
            "MoreThuente",
            "The line search: MoreThuente (strong Wolfe conditions by interpolation), Backtracking "
            "(Wolfe conditions) or StrongBacktracking (strong Wolfe conditions).",
            "linesearch",
        ),
        Parameter("max_linesearch", int, 20, "The maximum number of trial steps of a line search.", "max_linesearch"),
    ),
    "l2sgd": (
        *_FEATURES,
        Parameter("c2", float, 1.0, "The L2 regularization coefficient: the penalty c2 * |w|^2."),
        Parameter("max_iterations", int, 1000, "The maximum number of SGD epochs."),
        *_stopping("the stopping test of SGD", 1e-6),
        Parameter(
            "calibration.eta", float, 0.1, "The first learning rate tried by the calibration.", "calibration_eta"
        ),
        Parameter(
            "calibration.rate",
            float,
            2.0,
            "The factor between successive learning rates tried by the calibration.",
            "calibration_rate",
        ),
        Parameter(
            "calibration.samples",
            float,
            1000.0,
            "The number of sentences the calibration trains on.",
            "calibration_samples",
        ),
        Parameter(
            "calibration.candidates",
            int,
            10,
            "The number of improving learning rates the calibration looks for.",
            "calibration_candidates",
        ),
        Parameter(
            "calibration.max_trials",
            int,
            20,
            "The maximum number of learning rates the calibration tries.",
            "calibration_max_trials",
        ),
    ),
    "ap": (*_FEATURES, *_online("share of wrong labels per sentence")),
    "pa": (
        *_FEATURES,
        Parameter(
            "type",
            int,
            1,
            "The update: 0 passive-aggressive without slack, 1 PA-I (steps capped at c), 2 PA-II.",
            "pa_type",
        ),
        Parameter("c", float, 1.0, "The aggressiveness: the cap of PA-I's steps, the slack weight of PA-II.", "c"),
        Parameter(
            "error_sensitive",
            bool,
            True,
            "Let the cost of a wrong sequence grow with the number of its wrong labels.",
            "error_sensitive",
        ),
        Parameter("averaging", bool, True, "Return the average of the weights over all steps.", "averaging"),
        *_online("mean loss per sentence"),
    ),
    "arow": (
        *_FEATURES,
        Parameter("variance", float, 1.0, "The initial variance of each weight.", "variance"),
        Parameter("gamma", float, 1.0, "The trade-off between keeping the weights and fitting a sentence.", "gamma"),
        *_online("mean loss per sentence"),
    ),
}


def algorithm_name(name) -> str:
    """CRFsuite's name of an algorithm or alias (any case); FstcrfError otherwise."""
    if not isinstance(name, str) or name.lower() not in ALGORITHMS:
        raise FstcrfError(f"algorithm must be one of {', '.join(ALGORITHMS)}, got {name!r}")
    return ALGORITHMS[name.lower()]


def parameters(algorithm: str) -> dict[str, Parameter]:
    """The parameters of an algorithm (or alias), by name, in CRFsuite's order."""
    return {parameter.name: parameter for parameter in _PARAMETERS[algorithm_name(algorithm)]}


def defaults(algorithm: str) -> dict[str, object]:
    """CRFsuite's default value of each parameter of ``algorithm``."""
    return {name: parameter.default for name, parameter in parameters(algorithm).items()}


def parse_value(parameter: Parameter, value, name: str | None = None) -> object:
    """``value`` as the parameter's type, read as CRFsuite reads the text python-crfsuite
    passes it (``str(value)``, booleans as 0 and 1): "0.5" and 0.5 both set a float,
    a bool parameter takes any integer (non-zero is true).  Errors name the parameter
    ``name`` (default CRFsuite's): FstcrfError for text that is not a number of the
    parameter's kind (CRFsuite would read it as 0), ArgumentTypeError for a value
    that is neither text nor a number."""
    text = str(int(value)) if isinstance(value, (bool, np.bool_)) else str(value)
    if parameter.kind is str:
        return text
    shown = parameter.name if name is None else name
    if not isinstance(value, (str, numbers.Number, np.bool_)):
        raise ArgumentTypeError(f"parameter {shown!r} takes a number or its text, got {type(value).__name__} {value!r}")
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    whole = math.isfinite(number) and number.is_integer()
    if parameter.kind is float and math.isfinite(number):
        return number
    if parameter.kind in (int, bool) and whole:
        return bool(number) if parameter.kind is bool else int(number)
    wanted = {float: "a finite number", int: "an integer", bool: "0 or 1 (or True or False)"}[parameter.kind]
    raise FstcrfError(f"parameter {shown!r} takes {wanted}, got {value!r}")


def check_number(name: str, value, integer: bool = False, positive: bool = False) -> None:
    """ArgumentTypeError unless ``value`` is a number (an integer with ``integer``),
    FstcrfError unless it is finite and >= 0 (> 0 with ``positive``)."""
    kinds = (numbers.Integral,) if integer else (numbers.Real,)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, kinds):
        raise ArgumentTypeError(
            f"{name} must be {'an integer' if integer else 'a number'}, got {type(value).__name__} {value!r}"
        )
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise FstcrfError(f"{name} must be a finite number {'> 0' if positive else '>= 0'}, got {value!r}")


def integer_argument(name: str, value) -> int:
    """An integer argument (a group, a holdout group, a position) as python-crfsuite
    takes it: an int, a bool (False is 0, True 1), or a float without a fractional
    part; ArgumentTypeError otherwise (python-crfsuite would cut 1.5 to 1)."""
    whole = isinstance(value, (numbers.Integral, np.bool_)) or (
        isinstance(value, numbers.Real) and float(value).is_integer()
    )
    if not whole:
        raise ArgumentTypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    return int(value)


def chain_crf(
    algorithm: str, values: Mapping[str, object], names: Mapping[str, str] | None = None, **extras
) -> ChainCRF:
    """The unfitted ChainCRF that trains ``algorithm`` with the parameters ``values``
    (CRFsuite's names; a parameter left out takes CRFsuite's default, except that the
    settings passed to ``algorithm_params`` are only those given).  ``extras`` are
    further ChainCRF arguments (order, threads, grammar, ...).  A parameter the
    algorithm does not have raises FstcrfError, a bad value ArgumentTypeError or
    FstcrfError naming it as ``names`` does (the caller's name of each CRFsuite name)."""
    algorithm = algorithm_name(algorithm)
    shown = dict(names or {})
    known = parameters(algorithm)
    unknown = [name for name in values if name not in known]
    if unknown:
        raise FstcrfError(
            f"algorithm {algorithm!r} has no parameter {', '.join(map(repr, unknown))}; "
            f"its parameters are {', '.join(known)}"
        )
    given = {**defaults(algorithm), **values}
    c1 = given.get("c1", 0.0)
    c2 = given.get("c2", 1.0)
    for name, value in (("c1", c1), ("c2", c2), ("feature.minfreq", given["feature.minfreq"])):
        check_number(shown.get(name, name), value)
    max_iterations = given["max_iterations"]
    check_number(shown.get("max_iterations", "max_iterations"), max_iterations, integer=True)
    if max_iterations == 0:
        if algorithm != "lbfgs":
            raise FstcrfError(
                f"{shown.get('max_iterations', 'max_iterations')} must be at least 1 for {algorithm} "
                "(CRFsuite would train no epoch and keep every weight 0); 0 means 'until convergence' only for lbfgs"
            )
        max_iterations = UNLIMITED  # libLBFGS: 0 iterates until the stopping tests end it
    settings = {known[name].setting: value for name, value in values.items() if known[name].setting is not None}
    samples = settings.get("calibration_samples")
    if isinstance(samples, float) and samples.is_integer():  # CRFsuite keeps the sentence count as a float
        settings["calibration_samples"] = int(samples)
    return ChainCRF(
        template=COLUMN,
        algorithm=algorithm,
        sigma=math.inf if c2 == 0 else math.sqrt(0.5 / c2),  # type: ignore[operator]  # checked numbers
        c1=float(c1),  # type: ignore[arg-type]
        max_iter=int(max_iterations),  # type: ignore[call-overload]
        features="complete" if given["feature.possible_states"] else None,
        min_freq=float(given["feature.minfreq"]),  # type: ignore[arg-type]
        transitions="all" if given["feature.possible_transitions"] else "seen",
        algorithm_params=settings or None,
        **extras,
    )
