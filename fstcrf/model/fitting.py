"""How a ChainCRF fits: the steps of a fit as functions of the estimator's
parameters, shared by the local fit and the Dask driver
(:mod:`fstcrf.distributed.fit`), and the :class:`FittedState` they return,
which the estimator adopts (solvers apart from the estimator, as in
scikit-learn)."""

from __future__ import annotations

import logging
import operator
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fstcrf.corpus.conll import Corpus, Sentence, as_corpus
from fstcrf.corpus.evaluate import ChunkScores, TagScores, check_single_labels, is_chunk_labels, score_labels
from fstcrf.corpus.labels import chain_topology, gold_label_set, gold_states, parse_gold, split_labels
from fstcrf.corpus.tag_dictionary import TagDictionary
from fstcrf.document.consistency import ConsistencyPenalties
from fstcrf.engine.topology import Topology
from fstcrf.errors import ArgumentTypeError, EmptySequenceError, FeedbackError, FstcrfError, TemplateError
from fstcrf.features.encoding import (
    EncodedSentences,
    FactoredFeatures,
    TransitionWeights,
    build_features,
    drop_zero_features,
    token_classes as reads_token_classes,
)
from fstcrf.features.extractor import FeatureExtractor
from fstcrf.features.template import check_reading_template, resolve_template
from fstcrf.grammar import Grammar, load_grammar
from fstcrf.engine.acceptor import Acceptor
from fstcrf.learn import train
from fstcrf.learn.objective import Scorer, TrainingSet, seen_edges
from fstcrf.learn.settings import SGD_LEARNING_RATE
from fstcrf.model.params import bandit_settings, check_params, learner, learner_params
from fstcrf.phases import phase, release_free_heap

#: The name of the always-true predicate.
BIAS = "bias"

#: The decodings a model may name as the one ``fstcrf tag`` and ``eval`` use by default:
#: the most probable label sequence, or the chunks of the largest expected F1.
DECODINGS = ("viterbi", "mbr")

logger = logging.getLogger(__name__)


@dataclass
class FittedState:
    """What a fit learns, adopted by ChainCRF as its fitted attributes (``labels_``,
    ``topology_``, ... see :class:`~fstcrf.model.chain.ChainCRF`)."""

    topology: Topology
    constraint: Acceptor | None
    lower_labels: list[str] | None
    #: a FeatureExtractor or an AttributeExtractor (the same interface)
    extractor: Any
    features: FactoredFeatures
    target: str
    columns: tuple[str, ...]
    weights: np.ndarray
    n_iter: int
    best_iteration: int
    interrupted: bool
    history: list = field(default_factory=list)
    active_edges: np.ndarray | None = None
    consistency: ConsistencyPenalties | None = None
    #: the decoding ``fstcrf tag`` and ``eval`` use without --decode, one of DECODINGS
    decoding: str = "viterbi"
    #: the temperature MBR decoding tempers the model's distribution by when none is given
    mbr_temperature: float = 1.0
    #: fstcrf.distributed.objective.Traffic of a Dask L-BFGS fit, else None.
    traffic: object = None
    #: the labels frequent training words took, which tagging may keep them to, or None
    tag_dictionary: TagDictionary | None = None


def fitted_state(
    topology,
    constraint,
    lower_labels,
    extractor,
    features,
    target: str,
    columns: tuple[str, ...],
    result: train.TrainingResult,
    active_edges: np.ndarray | None = None,
) -> FittedState:
    """The state of a fit from its pieces and the learner's result."""
    return FittedState(
        topology,
        constraint,
        lower_labels,
        extractor,
        features,
        target,
        columns,
        result.weights,
        result.n_iter,
        result.best_iteration,
        result.interrupted,
        result.history,
        active_edges,
    )


def check_fitted(model) -> None:
    """FstcrfError unless ``model`` (a ChainCRF) is fitted."""
    if not hasattr(model, "weights_"):
        raise FstcrfError("this ChainCRF is not fitted; call fit or load_model first")


def new_extractor(template, min_count: int, target: str | None = None):
    """The unfitted extractor of a resolved template (``target``: the labels' column,
    whose entities the derived column ``seen_entity`` reads)."""
    if hasattr(template, "extractor"):
        return template.extractor(min_count)
    return FeatureExtractor(template, min_count, target)


def template_of(model, init, algorithms: tuple[str, ...] = ("lbfgs", "mce-f")):
    """The template to train with: init's (after checking that init, a warm start,
    is a fitted model this estimator's ``algorithms`` can continue), else this
    estimator's."""
    if init is None:
        return resolve_template(model.template, model.reads)
    if model.algorithm not in algorithms:
        raise FstcrfError(
            f"init (a warm start) works with algorithm {' or '.join(map(repr, algorithms))}, not {model.algorithm!r}"
        )
    check_fitted(init)
    if (init.order, init.reads, init.read_transitions) != (model.order, model.reads, model.read_transitions):
        raise FstcrfError(
            f"init is a model of order {init.order} reading {init.reads!r} "
            f"(read_transitions={init.read_transitions}); give this ChainCRF the same "
            f"order, reads and read_transitions (it has {model.order}, {model.reads!r}, "
            f"{model.read_transitions})"
        )
    return init.extractor_.parsed_template()


def training_constraint(model, topology) -> Acceptor | None:
    """The training grammar compiled over the topology's labels (needs pynini), or None."""
    if model.grammar is None:
        return None
    from fstcrf.engine.bounded import as_arrays
    from fstcrf.grammar.compiler import compile_grammar

    grammar = model.grammar if isinstance(model.grammar, Grammar) else load_grammar(model.grammar)
    return as_arrays(compile_grammar(grammar, topology.labels, params=model.grammar_params))


def model_scorer(model, features, topology, constraint, lower_labels, active_edges) -> Scorer:
    """The Scorer of ``features`` on ``topology`` with ``model``'s threads, the training
    ``constraint`` and the transition layout of ``lower_labels`` and ``active_edges``."""
    layout = transition_layout(model, topology.num_edges, lower_labels, active_edges)
    return Scorer(features, topology, int(model.threads), constraint, layout, training_grammar_name(model))


def training_grammar_name(model) -> str:
    """How errors name ``model``'s training grammar: "the training grammar chunks.fgr"
    (its file or shipped name, as a model file keeps it), "the grammar" for text."""
    grammar = model.grammar
    source = grammar.source if isinstance(grammar, Grammar) else str(grammar)
    return "the grammar" if grammar is None or source.startswith("<") else f"the training grammar {source}"


#: Each model's Scorer, with what it was made from (see :func:`fitted_scorer`).
_scorers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def scorer_inputs(model) -> tuple:
    """What :func:`fitted_scorer` makes a model's Scorer of: its fitted attributes,
    then its threads, reads and read_transitions."""
    return (
        model.features_,
        model.topology_,
        model.constraint_,
        model.lower_labels_,
        model.active_edges_,
        model.threads,
        model.reads,
        model.read_transitions,
    )


def fitted_scorer(model) -> Scorer:
    """:func:`model_scorer` of a fitted model's attributes, made once and kept while
    they are the same objects (``fit``, loading and ``set_params(threads=...)`` make
    another): its constrained topology, transition layout and their kernel structs
    are made once per model, not once per call."""
    made_of = scorer_inputs(model)
    kept = _scorers.get(model)
    if kept is None or not all(map(operator.is_, kept[0][:5], made_of[:5])) or kept[0][5:] != made_of[5:]:
        kept = _scorers[model] = (made_of, model_scorer(model, *made_of[:5]))
    return kept[1]


def transition_layout(
    model, num_edges: int, lower_labels: Sequence[str] | None, active: np.ndarray | None = None
) -> TransitionWeights:
    """How the transition weights are laid out, given the lower labels seen in
    training and the edges with a weight (None: all)."""
    reading = model.reads is not None and model.read_transitions
    return TransitionWeights(num_edges, len(lower_labels or ()) if reading else 0, active)


def token_classes(
    model, sentences: Corpus | Sequence[Sentence], lower_labels: Sequence[str] | None
) -> np.ndarray | None:
    """int32 [N]: the transition class of each token, the index of its ``reads`` value
    among lower_labels (len(lower_labels) for a value unseen in training); None when
    the transitions do not read a lower label."""
    if model.reads is None or not model.read_transitions or lower_labels is None:
        return None
    return reads_token_classes(sentences, model.reads, lower_labels)


def dev_gold(dev, target: str) -> tuple[Corpus, list[list[str]]] | None:
    """(the dev corpus, its gold ``target`` column), checked before any training work
    (partial labels raise LabelError), and the selection metric logged; None
    without dev."""
    if dev is None:
        return None
    dev = as_corpus(dev, "ChainCRF.fit (dev)")
    gold = dev.column(target)
    check_single_labels(gold)
    logger.info("selecting on dev %s", "chunk F1" if is_chunk_labels(gold) else "token accuracy")
    return dev, gold


def dev_evaluator(
    model,
    dev_gold: tuple[Corpus, list[list[str]]] | None,
    extractor: FeatureExtractor,
    scorer: Scorer,
    lower_labels: Sequence[str] | None,
):
    """The dev scoring function of training (None without dev): weights -> scores of
    the predicted column against ``dev_gold`` (from :func:`dev_gold`): chunk F1
    for chunk labels, else accuracy."""
    if dev_gold is None:
        return None
    dev, gold = dev_gold
    encoded = EncodedSentences.from_corpus(extractor, dev, token_class=token_classes(model, dev, lower_labels))

    def evaluate(weights: np.ndarray) -> ChunkScores | TagScores:
        return score_labels(gold, split_labels(scorer.topology, scorer.paths(encoded, weights), encoded.offsets))

    return evaluate


def bandit_feedback(model, corpus: Corpus, target: str):
    """The feedback source of algorithm "bandit" (its ``labels`` are the model's)."""
    from fstcrf.learn.feedback import CallableFeedback, simulated_feedback

    if hasattr(model.feedback, "gains") and hasattr(model.feedback, "labels"):
        return model.feedback
    labels = gold_label_set(corpus.column(target))
    if callable(model.feedback):
        return CallableFeedback(model.feedback, corpus.sentences, labels)
    return simulated_feedback(
        corpus.sentences, target, labels, model.feedback, model.feedback_flip, model.feedback_noise, model.seed
    )


def fit_corpus(
    model,
    corpus: Corpus | Sequence[Sentence],
    target: str,
    dev: Corpus | Sequence[Sentence] | None,
    callback: train.Callback | None,
    init=None,
) -> tuple[FittedState, FeedbackError | None]:
    """Fit ``model``'s parameters on ``corpus`` in this process (see ChainCRF.fit):
    the fitted state, and the FeedbackError that stopped bandit training (its
    state keeps what was learnt) or None."""
    check_params(model)
    corpus = as_corpus(corpus, "ChainCRF.fit")
    if not isinstance(target, str):
        raise ArgumentTypeError(f"target must be a column name, got {type(target).__name__} {target!r}")
    if len(corpus) == 0:
        raise EmptySequenceError("the training corpus has no sentences")
    template = template_of(model, init)
    if target in template.columns:
        raise TemplateError(
            f"the template reads column {target!r}, the column the model "
            "learns to predict; at tagging time that column is unknown"
        )
    if model.reads is not None:
        check_reading_template(template, model.reads, target, corpus.column_names)
    feedback: Any = None
    gold_labels = None
    if model.algorithm == "bandit":  # the learner reads labels from the feedback only
        feedback = bandit_feedback(model, corpus, target)
    else:
        gold_labels = corpus.column(target)
    dev_labels = dev_gold(dev, target)
    if init is not None:
        topology, extractor = init.topology_, init.extractor_
    else:
        labels = list(feedback.labels) if gold_labels is None else gold_label_set(gold_labels)
        if len(labels) == 1:
            logger.warning(
                "every training label of column %r is %r: the model can only predict %r",
                target,
                labels[0],
                labels[0],
            )
        topology = chain_topology(model.order, labels)
        extractor = new_extractor(template, model.min_count, target)
    constraint = training_constraint(model, topology)
    lower_labels = (
        init.lower_labels_
        if init is not None
        else None
        if model.reads is None
        else sorted({value for values in corpus.column(model.reads) for value in values})
    )
    with phase("features"):
        encoded = EncodedSentences.from_corpus(
            extractor, corpus, fit=init is None, token_class=token_classes(model, corpus, lower_labels)
        )
    label_ids = states = allowed_labels = None
    if gold_labels is not None:
        label_ids, allowed_labels = parse_gold(topology, gold_labels)
        states = gold_states(topology, label_ids, encoded.offsets)
    if allowed_labels is not None and model.algorithm not in ("lbfgs", "sgd", "bandit"):
        raise FstcrfError(
            f"algorithm {model.algorithm!r} needs fully labelled training data; train "
            "partially labelled data with algorithm='lbfgs' or 'sgd'"
        )
    feature_set = model.features or ("complete" if model.algorithm == "bandit" else "supported")
    features = (
        init.features_
        if init is not None
        else build_features(
            encoded,
            label_ids if model.order == 1 else states,
            label_ids,
            topology,
            model.order,
            feature_set,
            extractor.column_of(BIAS),
            model.min_freq,
        )
    )
    active_edges = (
        init.active_edges_
        if init is not None
        else seen_edges(topology, states, encoded.offsets)
        if model.transitions == "seen" and states is not None  # "seen" needs gold paths (check_params)
        else None
    )
    scorer = model_scorer(model, features, topology, constraint, lower_labels, active_edges)
    evaluate = dev_evaluator(model, dev_labels, extractor, scorer, lower_labels)
    release_free_heap()

    stopped_by = None
    if states is None:  # algorithm "bandit": labels come from the feedback only
        order = np.random.default_rng(model.seed).permutation(len(corpus))
        from fstcrf.learn import bandit

        sampled = bandit.SampledGradient(scorer, bandit.permuted(encoded, order))
        try:
            result = bandit.learn(sampled, feedback, bandit_settings(model), order, evaluate, callback)
        except FeedbackError as error:  # keep what was learnt, then report the feedback's fault
            result, stopped_by = error.result, error
    else:
        result = learn_labelled(model, TrainingSet(scorer, encoded, states, allowed_labels), evaluate, callback, init)
    if model.c1 > 0:
        features, result.weights, used = drop_zero_features(features, result.weights)
        extractor = extractor.subset(used)
    state = fitted_state(
        topology,
        constraint,
        lower_labels,
        extractor,
        features,
        target,
        tuple(corpus.column_names),
        result,
        active_edges,
    )
    return state, stopped_by


def fit_log(
    model,
    log,
    target: str = "chunk",
    dev: Corpus | Sequence[Sentence] | None = None,
    callback: train.Callback | None = None,
    init=None,
) -> FittedState:
    """Learn offline from logged bandit feedback ``log``, a
    :class:`~fstcrf.learn.counterfactual.FeedbackLog` (see that module):
    L-BFGS on its importance-weighted reward (``weighting``,
    ``max_ratio``) with the Gaussian prior ``sigma``, for ``max_iter``
    iterations.  ``init`` (typically the logging model) gives the template,
    labels, feature dictionary and starting weights; without it the labels
    are those shown in the log and the features the complete set.  The
    predicted column is named ``target``; with ``dev`` the iteration with
    the best dev score is kept."""
    from fstcrf.learn.bandit import SampledGradient
    from fstcrf.learn.counterfactual import FeedbackLog, LoggedObjective, shown_states

    check_params(model)
    if not isinstance(log, FeedbackLog):
        raise ArgumentTypeError(f"fit_log expects a FeedbackLog (read_feedback_log(path)), got {type(log).__name__}")
    if model.grammar is not None or model.reads is not None:
        raise FstcrfError("learning from a log does not train under a grammar nor read a lower tagger's labels yet")
    columns = log.sentences[0].column_names
    dev_labels = dev_gold(dev, target)
    if init is not None:
        check_fitted(init)
        if init.reads is not None or init.constraint_ is not None:
            raise FstcrfError("init must be a model without a training grammar or a lower tagger")
        topology, extractor, features = init.topology_, init.extractor_, init.features_
    else:
        topology = chain_topology(model.order, gold_label_set(log.labels))
        extractor = new_extractor(resolve_template(model.template), model.min_count)
    encoded = EncodedSentences.from_corpus(extractor, log.sentences, fit=init is None)
    if init is None:
        features = build_features(
            encoded, None, None, topology, model.order, model.features or "complete", extractor.column_of(BIAS)
        )
    scorer = Scorer(features, topology, int(model.threads))
    problem = LoggedObjective(
        SampledGradient(scorer, encoded),
        shown_states(topology, log, encoded.offsets),
        log.rewards,
        log.probabilities,
        model.weighting,
        model.max_ratio,
    )
    evaluate = dev_evaluator(model, dev_labels, extractor, scorer, None)
    result = train.lbfgs(
        problem,
        model.sigma,
        model.max_iter,
        model.tol,
        evaluate,
        callback,
        None if init is None else init.weights_,
        name=f"log-{model.weighting}",
    )
    return fitted_state(topology, None, None, extractor, features, target, columns + (target,), result)


def learn_labelled(
    model, problem: TrainingSet, evaluate, callback: train.Callback | None, init=None
) -> train.TrainingResult:
    """Train with ``model``'s algorithm (any but "bandit") on labelled sentences; with
    ``init``, from its weights (L-BFGS and the F-score stage of "mce-f")."""
    if model.algorithm in ("perceptron", "ap"):
        return train.averaged_perceptron(
            problem, model.max_iter, model.seed, evaluate, callback, **learner_params(model)
        )
    if model.algorithm == "sgd":
        return train.sgd(
            problem,
            model.sigma,
            model.max_iter,
            SGD_LEARNING_RATE if model.learning_rate is None else model.learning_rate,
            model.seed,
            evaluate,
            callback,
        )
    if model.algorithm == "l2sgd":
        return learner("l2sgd")(
            problem,
            c2=0.5 / model.sigma**2,
            max_iter=model.max_iter,
            seed=model.seed,
            evaluate=evaluate,
            callback=callback,
            **learner_params(model),
        )
    if model.algorithm in ("pa", "arow"):
        return learner(model.algorithm)(
            problem,
            max_iter=model.max_iter,
            seed=model.seed,
            evaluate=evaluate,
            callback=callback,
            **learner_params(model),
        )
    initial = None if init is None else init.weights_
    stages = []
    if model.algorithm == "lbfgs" or init is None:
        stages.append(
            train.lbfgs(
                problem,
                model.sigma,
                model.max_iter,
                model.tol,
                evaluate,
                callback,
                initial,
                l1=model.c1,
                **learner_params(model),
            )
        )
        initial = stages[-1].weights
    if model.algorithm == "mce-f" and not (stages and stages[-1].interrupted):
        from fstcrf.learn.mce import SegmentFScore

        stages.append(
            train.lbfgs(
                SegmentFScore(problem.scorer, problem.encoded, problem.states, model.mce_alpha, model.mce_beta),
                float(np.sqrt(model.mce_c)),
                model.mce_iter,
                model.tol,
                evaluate,
                callback,
                initial,
                name="mce-f",
                **learner_params(model),
            )
        )
    result = stages[-1]
    result.history = [record for stage in stages for record in stage.history]
    return result
