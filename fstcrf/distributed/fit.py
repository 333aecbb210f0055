"""``ChainCRF.fit`` on a Dask cluster: the driver cuts the corpus into shards; the
workers read, count and encode their shards; the driver reduces the counts into
the labels, the predicate dictionary and the feature dictionary, and runs the
single-process L-BFGS (OWL-QN with c1) on :class:`~.objective.DistributedObjective`,
or mixes the shards' perceptron or SGD epochs (:mod:`.mixing`).
Every error the data can cause is raised by the counting passes, before training."""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Sequence

import numpy as np

from fstcrf.learn import train
from fstcrf.corpus.conll import Corpus, Sentence, as_corpus
from fstcrf.features.seen_entities import COLUMN
from fstcrf.features.template import RESOURCE_KINDS, SEEN_LOWER, resolve_template
from fstcrf.features.encoding import drop_zero_features, feature_set_to_build, features_from_counts, merge_pair_counts
from fstcrf.learn.settings import SGD_LEARNING_RATE, check_positive
from fstcrf.errors import EmptySequenceError, FstcrfError, LabelError, TemplateError
from fstcrf.grammar import Grammar, load_grammar
from fstcrf.corpus.labels import chain_topology
from fstcrf.corpus.schemes import missing_types_warning, restrict_types
from fstcrf.model.fitting import (
    dev_evaluator,
    dev_gold,
    fitted_state,
    model_scorer,
    template_of,
    training_constraint,
)
from fstcrf.model.params import check_params, learner_params
from fstcrf.distributed import checkpoint as checkpoints
from fstcrf.distributed.dictionary import (
    check_layouts,
    encode_shard,
    load_shard,
    merged_extractor,
    shard_pair_counts,
    summarise,
    union_labels,
)
from fstcrf.distributed.mixing import mix
from fstcrf.distributed.objective import DistributedObjective, make_problem
from fstcrf.distributed.shards import partition

logger = logging.getLogger(__name__)


def _value(value):
    """Worker: ``value`` itself (a task Dask can run again if the worker holding it dies)."""
    return value


def _submit_value(client, value):
    """A future of ``value`` held in the task graph, so that Dask can rebuild it when the
    worker holding it dies (client.scatter could not); Dask's warning that the graph is
    large (the extractor or the feature dictionary, tens of MB, sent once) is kept from
    the user's terminal."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
        return client.submit(_value, value, pure=False)


def check_supported(model) -> None:
    """FstcrfError unless ``model``'s settings can be trained on Dask (checked before a
    cluster is started or reached)."""
    if model.algorithm not in ("lbfgs", "perceptron", "ap", "sgd"):
        raise FstcrfError(
            f"distributed training runs algorithms 'lbfgs' (with c1: OWL-QN), 'perceptron' ('ap') "
            f"and 'sgd' (by iterative parameter mixing), not {model.algorithm!r}"
        )
    if model.template == "attributes" or hasattr(model.template, "extractor"):
        raise FstcrfError("distributed training reads CoNLL columns; the 'attributes' template is not distributed yet")
    reading = sorted(
        {
            observation.kind or observation.column
            for predicate in resolve_template(model.template)
            for observation in predicate.observations
            if observation.kind in RESOURCE_KINDS or observation.kind == SEEN_LOWER or observation.column == COLUMN
        }
    )
    if reading:
        raise FstcrfError(
            f"distributed training does not take template items that read files or the training words "
            f"({', '.join(reading)}) yet; train without --dask, or drop those items"
        )
    if model.grammar is not None and not isinstance(model.grammar, Grammar):
        load_grammar(model.grammar)  # a missing or malformed grammar file fails here


def _corpus_parts(client, source, shards: int, columns, separator: str | None) -> tuple[list, list[str]]:
    """(futures of the shards' sentences, what each shard is): files are read on the
    workers; sentences in memory are cut into contiguous slices."""
    if isinstance(source, (str, os.PathLike)) or (
        isinstance(source, (list, tuple)) and source and all(isinstance(p, (str, os.PathLike)) for p in source)
    ):
        parts = partition(source, shards)
        return (
            [client.submit(load_shard, shard, columns, separator, pure=False) for shard in parts],
            [str(shard) for shard in parts],
        )
    corpus = as_corpus(source, "ChainCRF.fit")
    bounds = np.linspace(0, len(corpus), shards + 1).round().astype(int)
    slices = [Corpus(corpus.column_names, corpus.sentences[a:b]) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
    return (
        [_submit_value(client, part) for part in slices],
        [f"sentences {a + 1}-{b} of the corpus" for a, b in zip(bounds[:-1], bounds[1:]) if b > a],
    )


def fit_on_dask(
    model,
    source,
    client,
    target: str = "chunk",
    dev: Corpus | Sequence[Sentence] | None = None,
    callback: train.Callback | None = None,
    shards: int | None = None,
    columns=None,
    separator: str | None = None,
    checkpoint: str | os.PathLike | None = None,
    checkpoint_every: int = 1,
    resume: bool = False,
    init=None,
    only_types: set[str] | None = None,
):
    """Fit ``model`` (a ChainCRF) on ``source`` -- a CoNLL file, a list of files read one
    after another, or sentences in memory -- on the workers of ``client``; ``shards``
    (default: one per worker) pieces.  With ``checkpoint`` the L-BFGS state is saved
    there every ``checkpoint_every`` iterations; ``resume`` continues from it.
    ``init``, a fitted ChainCRF (algorithm "lbfgs"), is the starting point: its
    template, labels, dictionaries and weights, as in ``ChainCRF.fit``.
    ``only_types`` (chunk types) maps the other types of column ``target`` to O on
    the workers (``--only-types``; :func:`fstcrf.corpus.schemes.restrict_types`).
    The result equals single-process training on the same sentences up to rounding;
    L-BFGS also sets ``model.traffic_`` (a :class:`~.objective.Traffic`: evaluations,
    seconds, bytes, retries)."""
    check_params(model)
    check_supported(model)
    from fstcrf.features.template import check_reading_template

    template = template_of(model, init, algorithms=("lbfgs",))
    if target in template.columns:
        raise TemplateError(
            f"the template reads column {target!r}, the column the model learns to predict; "
            "at tagging time that column is unknown"
        )
    if resume and checkpoint is None:
        raise FstcrfError("resume needs the checkpoint file to resume from")
    if checkpoint is not None and model.algorithm != "lbfgs":
        raise FstcrfError(f"checkpoints hold L-BFGS state; algorithm {model.algorithm!r} has none")
    check_positive("checkpoint_every", checkpoint_every, integer=True)
    shards = shards or len(client.nthreads())
    check_positive("shards", shards, integer=True)
    dev_labels = dev_gold(dev, target)

    loaded, where = _corpus_parts(client, source, shards, columns, separator)
    if only_types:
        loaded = [client.submit(restrict_types, corpus, target, only_types, pure=False) for corpus in loaded]
    summaries = client.gather(
        [
            client.submit(summarise, corpus, shard, template, target, model.reads, pure=False)
            for corpus, shard in zip(loaded, where)
        ]
    )
    kept = [i for i, summary in enumerate(summaries) if summary.sentences]
    if not kept:
        raise EmptySequenceError("the training corpus has no sentences")
    loaded, summaries = [loaded[i] for i in kept], [summaries[i] for i in kept]
    column_names = check_layouts(summaries)
    if model.reads is not None:
        check_reading_template(template, model.reads, target, column_names)
    labels = union_labels(summaries)
    warning = missing_types_warning(only_types, [labels], "the training data")
    if warning:
        logger.warning("%s", warning)
    if init is not None:
        _check_labels_of(init, labels)
        topology, extractor, lower_labels = init.topology_, init.extractor_, init.lower_labels_
    else:
        if len(labels) == 1:
            logger.warning(
                "every training label of column %r is %r: the model can only predict %r", target, labels[0], labels[0]
            )
        topology = chain_topology(model.order, labels)
        extractor = merged_extractor(template, model.min_count, summaries)
        lower_labels = (
            None if model.reads is None else sorted(set().union(*(summary.lower_values for summary in summaries)))
        )
    constraint = training_constraint(model, topology)
    logger.info(
        "%d shards on %d workers: %d sentences, %d tokens, %d predicates",
        len(loaded),
        len(client.nthreads()),
        sum(s.sentences for s in summaries),
        sum(s.tokens for s in summaries),
        extractor.num_predicates,
    )

    shared_extractor, shared_topology = (_submit_value(client, x) for x in (extractor, topology))
    reads_classes = model.reads if model.reads is not None and model.read_transitions else None
    encoded = [
        client.submit(
            encode_shard, corpus, shared_extractor, shared_topology, target, reads_classes, lower_labels, pure=False
        )
        for corpus in loaded
    ]
    if init is not None:
        features, active_edges = init.features_, init.active_edges_
    else:
        features, active_edges = _counted_features(client, encoded, shared_topology, model, extractor, topology)
    scorer = model_scorer(model, features, topology, constraint, lower_labels, active_edges)
    shared_scorer = _submit_value(client, scorer)
    problems = [client.submit(make_problem, shard, shared_scorer, pure=False) for shard in encoded]
    client.gather(problems)  # LabelError and the like now, before training
    objective = DistributedObjective(client, problems, scorer.num_weights, sum(s.sentences for s in summaries))
    evaluate = dev_evaluator(model, dev_labels, extractor, scorer, lower_labels)

    if model.algorithm != "lbfgs":
        learning_rate = SGD_LEARNING_RATE if model.learning_rate is None else model.learning_rate
        result = mix(
            client,
            problems,
            [s.sentences for s in summaries],
            scorer.num_weights,
            "sgd" if model.algorithm == "sgd" else "perceptron",
            model.max_iter,
            {
                "seed": model.seed,
                "sigma": model.sigma,
                "learning_rate": learning_rate,
                "params": learner_params(model),
            },
            evaluate,
            callback,
        )
        return model.set_fitted_state(
            fitted_state(
                topology,
                constraint,
                lower_labels,
                extractor,
                features,
                target,
                tuple(column_names),
                result,
                active_edges,
            )
        )
    run = checkpoints.fingerprint(
        {name: value for name, value in model.get_params().items() if name != "client"},
        labels if lower_labels is None else [labels, lower_labels],
        [features.ptr, features.output, extractor.dictionary.keys],
    )
    state = checkpoints.load_state(checkpoint, run) if resume else None
    if state is not None:
        logger.info("resuming from %s after iteration %d", checkpoint, state.iteration)
    result = train.lbfgs(
        objective,
        model.sigma,
        model.max_iter,
        model.tol,
        evaluate,
        callback,
        None if init is None else init.weights_,
        l1=model.c1,
        checkpoint=None if checkpoint is None else checkpoints.every(checkpoint, checkpoint_every, run),
        resume=state,
        **learner_params(model),
    )
    if model.c1 > 0:
        features, result.weights, used = drop_zero_features(features, result.weights)
        extractor = extractor.subset(used)
    state = fitted_state(
        topology, constraint, lower_labels, extractor, features, target, tuple(column_names), result, active_edges
    )
    state.traffic = objective.traffic
    return model.set_fitted_state(state)


def _check_labels_of(init, labels: list[str]) -> None:
    """LabelError (before training) if a gold label of the shards is not a label of ``init``."""
    unknown = sorted(set(labels) - set(init.labels_))
    if unknown:
        raise LabelError(
            f"the training data has the labels {', '.join(unknown)}, which the init model does "
            f"not have (its labels are {', '.join(init.labels_)}); a warm start keeps its labels"
        )


def _counted_features(client, encoded: list, shared_topology, model, extractor, topology):
    """The feature dictionary reduced from the shards' (predicate, label) counts, and the
    transitions seen (bool [E], or None unless model.transitions is "seen")."""
    feature_set = feature_set_to_build(model.features or "supported", extractor.num_predicates, topology, model.order)
    bias = extractor.vocabulary_.get("bias")
    counted = client.gather(
        [
            client.submit(
                shard_pair_counts,
                shard,
                shared_topology,
                model.order,
                feature_set,
                bias,
                model.transitions == "seen",
                pure=False,
            )
            for shard in encoded
        ]
    )
    features = features_from_counts(
        merge_pair_counts([counts for counts, _ in counted]),
        extractor.num_predicates,
        topology,
        model.order,
        feature_set,
        bias,
        model.min_freq,
    )
    active_edges = np.logical_or.reduce([seen for _, seen in counted]) if model.transitions == "seen" else None
    return features, active_edges
