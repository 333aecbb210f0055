"""The estimator's parameters: their names (read from ChainCRF's signature once),
the learner each algorithm names, and the checks ``fit`` runs before any work."""

from __future__ import annotations

import inspect

import numpy as np

from fstcrf.errors import ArgumentTypeError, FstcrfError
from fstcrf.features.encoding import FEATURE_SETS
from fstcrf.learn import train
from fstcrf.learn.settings import DEFAULT_LEARNING_RATE, SIGMA_RANGE, WEIGHTINGS, BanditSettings, check_positive

#: The training algorithms ChainCRF accepts.
ALGORITHMS = ("lbfgs", "perceptron", "ap", "sgd", "l2sgd", "pa", "arow", "mce-f", "bandit")

#: Which transitions get a weight: all edges of the topology, or those seen in training.
TRANSITION_SETS = ("all", "seen")


def param_names(estimator_class) -> tuple[str, ...]:
    """The constructor arguments of an estimator class, in signature order
    (scikit-learn's ``_get_param_names``): the one list of its parameters."""
    return tuple(name for name in inspect.signature(estimator_class.__init__).parameters if name != "self")


#: The arguments of a learner that the estimator sets itself (the rest are algorithm_params).
LEARNER_ARGUMENTS = frozenset(
    {
        "problem",
        "sigma",
        "c2",
        "l1",
        "max_iter",
        "tol",
        "evaluate",
        "callback",
        "initial",
        "name",
        "seed",
        "learning_rate",
        "frozen",
    }
)


def learner(algorithm: str):
    """The training function of an algorithm of fstcrf.learn.train or fstcrf.learn.online."""
    if algorithm in ("pa", "arow", "l2sgd"):
        from fstcrf.learn import online

        return {"pa": online.passive_aggressive, "arow": online.arow, "l2sgd": online.l2sgd}[algorithm]
    return {
        "lbfgs": train.lbfgs,
        "mce-f": train.lbfgs,
        "perceptron": train.averaged_perceptron,
        "ap": train.averaged_perceptron,
        "sgd": train.sgd,
    }.get(algorithm)


def check_params(model) -> None:
    """FstcrfError (or ArgumentTypeError) naming the first invalid parameter of a ChainCRF."""
    if isinstance(model.order, bool) or model.order not in (1, 2):
        raise FstcrfError(f"order must be 1 or 2, got {model.order!r}")
    if model.algorithm not in ALGORITHMS:
        raise FstcrfError(f"algorithm must be one of {', '.join(ALGORITHMS)}, got {model.algorithm!r}")
    if model.features is not None and model.features not in FEATURE_SETS:
        raise FstcrfError(f"features must be one of {', '.join(FEATURE_SETS)} or None, got {model.features!r}")
    if model.algorithm == "bandit" and model.features not in (None, "complete"):
        raise FstcrfError(
            f"algorithm 'bandit' never sees gold labels, so it cannot choose the "
            f"{model.features!r} features they support; use features='complete' (or None)"
        )
    if model.features == "complete-tags" and model.order != 2:
        raise FstcrfError("features='complete-tags' needs order=2 (in order 1 states are tags: use 'complete')")
    check_positive("threads", model.threads, integer=True)
    check_positive("sigma", model.sigma, bounds=SIGMA_RANGE, infinite=True)
    check_positive("max_iter", model.max_iter, integer=True)
    check_positive("min_count", model.min_count, integer=True)
    check_positive("c1", model.c1, zero=True)
    check_positive("min_freq", model.min_freq, zero=True)
    if model.c1 > 0 and model.algorithm not in ("lbfgs", "mce-f"):
        raise FstcrfError(
            f"c1 (an L1 penalty) is trained by OWL-QN, with algorithm 'lbfgs' or "
            f"'mce-f'; algorithm {model.algorithm!r} has no L1 penalty"
        )
    if model.transitions not in TRANSITION_SETS:
        raise FstcrfError(f"transitions must be one of {', '.join(TRANSITION_SETS)}, got {model.transitions!r}")
    if model.transitions == "seen" and (model.algorithm == "bandit" or model.reads is not None):
        raise FstcrfError("transitions='seen' needs gold paths and a model that reads no lower labels")
    learner_params(model)
    check_positive("tol", model.tol)
    if model.learning_rate is not None:
        check_positive("learning_rate", model.learning_rate)
    # mce_c is the F-score stage's prior variance: sigma = sqrt(mce_c)
    check_positive("mce_c", model.mce_c, bounds=(SIGMA_RANGE[0] ** 2, SIGMA_RANGE[1] ** 2), infinite=True)
    check_positive("mce_iter", model.mce_iter, integer=True)
    check_positive("mce_alpha", model.mce_alpha)
    if not isinstance(model.mce_beta, (int, float, np.floating)) or not np.isfinite(model.mce_beta):
        raise ArgumentTypeError(f"mce_beta must be a finite number, got {model.mce_beta!r}")
    if isinstance(model.seed, bool) or not isinstance(model.seed, (int, np.integer)):
        raise ArgumentTypeError(f"seed must be an integer, got {type(model.seed).__name__} {model.seed!r}")
    if not (model.reads is None or isinstance(model.reads, str)):
        raise ArgumentTypeError(f"reads must be a column name or None, got {type(model.reads).__name__}")
    if not (model.grammar_params is None or isinstance(model.grammar_params, dict)):
        raise ArgumentTypeError(f"grammar_params must be a dict or None, got {type(model.grammar_params).__name__}")
    if model.weighting not in WEIGHTINGS:
        raise FstcrfError(f"weighting must be one of {', '.join(WEIGHTINGS)}, got {model.weighting!r}")
    check_positive("max_ratio", model.max_ratio)
    if model.algorithm == "bandit":
        bandit_settings(model).check()
        if model.grammar is not None or model.reads is not None:
            raise FstcrfError(
                "algorithm 'bandit' does not train under a grammar nor read a lower "
                "tagger's labels yet; decode under a grammar instead"
            )


def learner_params(model) -> dict:
    """``algorithm_params`` checked against the learner's settings (FstcrfError names
    the unknown ones and those the algorithm takes)."""
    params = dict(model.algorithm_params or {})
    if model.algorithm_params is not None and not isinstance(model.algorithm_params, dict):
        raise ArgumentTypeError(f"algorithm_params must be a dict or None, got {type(model.algorithm_params).__name__}")
    function = learner(model.algorithm)
    accepted = (
        []
        if function is None
        else [
            name
            for name, parameter in inspect.signature(function).parameters.items()
            if name not in LEARNER_ARGUMENTS and parameter.kind is not inspect.Parameter.VAR_KEYWORD
        ]
    )
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise FstcrfError(
            f"algorithm {model.algorithm!r} has no setting {', '.join(map(repr, unknown))}; "
            f"its settings are {', '.join(accepted) or 'none'}"
        )
    return params


def bandit_settings(model) -> BanditSettings:
    """The settings of algorithm "bandit" from a ChainCRF's parameters."""
    rate = DEFAULT_LEARNING_RATE if model.learning_rate is None else model.learning_rate
    return BanditSettings(
        model.objective,
        model.draws,
        model.baseline,
        model.step,
        rate,
        model.clip,
        model.batch_size,
        model.max_iter,
        model.seed,
    )
