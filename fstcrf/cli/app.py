"""The ``fstcrf`` command line."""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import signal
import sys
from pathlib import Path
from collections.abc import Callable, Sequence

from fstcrf.learn.settings import (
    BASELINES,
    DEFAULT_DRAWS,
    DEFAULT_LEARNING_RATE,
    DEFAULT_SIGMA,
    OBJECTIVES,
    SGD_LEARNING_RATE,
    STEPS,
    WEIGHTINGS,
)
from fstcrf.engine.budget import DEFAULT_MAX_STATES, DEFAULT_MAX_WORK, limits
from fstcrf.document.settings import (
    DEFAULT_BLOCK_SIZE,
    DEFAULT_SWEEPS,
    DEFAULT_T_END,
    DEFAULT_T_START,
    NONLOCAL_OPTIONS,
    SAMPLERS,
)
from fstcrf.errors import FeedbackError, FstcrfError, LabelError
from fstcrf.files import check_output_path, write_atomically
from fstcrf.phases import phase
from fstcrf.corpus.schemes import keep_types, missing_types_warning, restrict_types

LOG = logging.getLogger("fstcrf")


def _only_types(args: argparse.Namespace) -> set[str] | None:
    """The chunk types of --only-types (None when the option is not given)."""
    return set(args.only_types.split(",")) if args.only_types else None


def _check_only_types(keep: set[str] | None, labels: list[list[str]], where: str) -> None:
    """Warn when a type of --only-types never occurs among chunk labels [sentences][tokens]."""
    warning = missing_types_warning(keep, labels, where)
    if warning:
        LOG.warning("%s", warning)


def _read_dev(args: argparse.Namespace, keep: set[str] | None):
    """The --dev corpus with --only-types applied, or None without --dev."""
    return restrict_types(_read(args.dev, args.columns), args.target, keep) if args.dev else None


def _read(path: str, columns=None, allow_missing=(), separator: str | None = None):
    from fstcrf.corpus.conll import read_conll

    with phase("read"):
        return read_conll(path, columns, separator, allow_missing=allow_missing)


def _timed(items, name: str):
    """The items of an iterable, the work of producing each one timed as phase ``name``."""
    iterator = iter(items)
    while True:
        with phase(name):
            item = next(iterator, _timed)
        if item is _timed:
            return
        yield item


def _convert(args: argparse.Namespace) -> int:
    from fstcrf.corpus.conll import write_conll
    from fstcrf.corpus.schemes import convert

    corpus = _read(args.input, args.columns)
    if args.column not in corpus.column_names:
        raise FstcrfError(
            f"{args.input} has no column {args.column!r} (columns: {', '.join(corpus.column_names)}; "
            "name them with --columns)"
        )
    for sentence in corpus.sentences:
        try:
            sentence.columns[args.column] = convert(sentence.columns[args.column], args.scheme)
        except LabelError as error:
            line = sentence.line_numbers[error.position] if sentence.line_numbers else "?"
            raise LabelError(f"{args.input}:{line}: {error}") from None
    write_conll(corpus, args.output)
    LOG.info("wrote %s with column %s in %s", args.output, args.column, args.scheme.upper())
    return 0


def _seminars(args: argparse.Namespace) -> int:
    """seminars DIR -o OUT: every announcement under DIR as word and field columns; logs the counts."""
    from fstcrf.corpus.conll import write_conll
    from fstcrf.experiments.seminars import count_seminars, read_seminar, seminar_corpus, seminar_paths

    paths = seminar_paths(args.folder)
    output = Path(args.output).resolve()
    if output in [path.resolve() for path in paths]:
        raise FstcrfError(
            f"{args.output} is one of the announcements under {args.folder} (*.txt); write the CoNLL file elsewhere"
        )
    documents = [read_seminar(path) for path in paths]
    write_conll(seminar_corpus(documents), args.output)
    for line in count_seminars(documents).lines():
        LOG.info("%s", line)
    LOG.info("wrote %s (columns word, field)", args.output)
    return 0


def _model_from_args(args: argparse.Namespace, columns: Sequence[str]):
    """An unfitted ChainCRF configured by the training options, for training data with
    ``columns`` (they choose the default template)."""
    from fstcrf.features.template import load_template
    from fstcrf.features.template import TEMPLATES
    from fstcrf.model.chain import ChainCRF

    template = args.template or _default_template(args.target, columns)
    template = template if template in TEMPLATES else load_template(template)
    return ChainCRF(
        template=template,
        order=args.order,
        algorithm=args.algorithm,
        sigma=_sigma(args),
        c1=args.c1,
        transitions=args.transitions,
        min_freq=args.min_freq,
        max_iter=args.max_iter,
        features=args.features,
        min_count=args.min_count,
        threads=args.threads,
        grammar=args.grammar,
        grammar_params=_grammar_params(args),
        reads=args.reads,
        read_transitions=not args.no_read_transitions,
        mce_c=args.mce_c,
        mce_iter=args.mce_iter,
        mce_alpha=args.mce_alpha,
        mce_beta=args.mce_beta,
        learning_rate=args.learning_rate,
        seed=args.seed,
        objective=args.objective,
        feedback=args.feedback,
        draws=args.draws,
        baseline=args.baseline,
        step=args.step,
        clip=args.clip,
        batch_size=args.batch_size,
        feedback_flip=args.feedback_flip,
        feedback_noise=args.feedback_noise,
        weighting=args.weighting,
        max_ratio=args.max_ratio,
    )


def _default_template(target: str, columns: Sequence[str]) -> str:
    """The default template's name for the target and the training file's columns (logged)."""
    from fstcrf.features.defaults import default_template

    name = default_template(target, columns)
    LOG.info(
        "template %s, the default for target %s with the columns %s (see --template)", name, target, ",".join(columns)
    )
    return name


def _sigma(args: argparse.Namespace) -> float:
    """The Gaussian prior's sigma from --sigma or CRFsuite's --c2 = 1 / (2 sigma^2) (c2 = 0: no prior)."""
    if args.c2 is None:
        return DEFAULT_SIGMA if args.sigma is None else args.sigma
    if args.sigma is not None:
        raise FstcrfError("--sigma and --c2 both set the L2 prior (c2 = 1 / (2 sigma^2)); give one of them")
    return math.inf if args.c2 == 0 else math.sqrt(0.5 / args.c2)


def _jackknife(args: argparse.Namespace) -> int:
    from fstcrf.model.compose import jackknife
    from fstcrf.corpus.conll import write_conll

    corpus = _read(args.train, args.columns)
    model = _model_from_args(args, corpus.column_names)
    LOG.info(
        "jackknifing column %s of %s: %d models, each trained on %d/%d of the sentences",
        args.target,
        args.train,
        args.folds,
        args.folds - 1,
        args.folds,
    )
    result = jackknife(corpus, model, args.target, args.folds)
    write_conll(result, args.output)
    LOG.info("wrote %s with column %s replaced by held-out predictions", args.output, args.target)
    return 0


def _train(args: argparse.Namespace) -> int:
    keep = _only_types(args)
    _warn_define_without_grammar(args)
    if (args.train is None) == (args.log is None):
        raise FstcrfError("give a training file TRAIN, or a feedback log with --algorithm bandit --log FILE (not both)")
    if args.log is not None:
        if args.consistency:
            raise FstcrfError(
                "--consistency estimates penalties from gold-labelled training documents; a feedback log has none"
            )
        return _train_from_log(args)
    if args.dask is not None:
        return _train_on_dask(args)
    if args.checkpoint is not None or args.resume:
        raise FstcrfError("--checkpoint and --resume apply to distributed training (--dask)")
    if args.dask_dashboard is not None:
        raise FstcrfError("--dask-dashboard applies to --dask local:N")
    train = _read(args.train, args.columns)
    if keep and args.target in train.column_names:
        _check_only_types(keep, train.column(args.target), f"the {args.target} column of {args.train}")
    train = restrict_types(train, args.target, keep)
    dev = _read_dev(args, keep)
    init = _warm_start(args)
    model = _model_from_args(args, train.column_names)
    penalties = None
    if args.consistency:
        from fstcrf.document.decode import estimate_consistency

        penalties = estimate_consistency(train, args.target)
        LOG.info(
            "estimated label-consistency penalties for the types %s from %s", ", ".join(penalties.types), args.train
        )
    LOG.info(
        "training a %s order-%d CRF on %s (%d sentences, %d tokens)%s%s",
        args.algorithm,
        args.order,
        args.train,
        len(train),
        train.num_tokens,
        f", selecting on {args.dev}" if dev else "",
        f", starting from {args.init}" if init else "",
    )
    try:
        with phase("train"):
            model.fit(train, target=args.target, dev=dev, init=init)
    except FeedbackError:
        if hasattr(model, "weights_"):  # keep what bandit learning learnt before the feedback failed
            model.save(args.output)
            LOG.warning("kept the weights of epoch %d of %d in %s", model.best_iteration_, model.n_iter_, args.output)
        raise
    model.consistency_ = penalties
    _save_trained(model, args)
    return 0


def _train_on_dask(args: argparse.Namespace) -> int:
    """train --dask SPEC: data-parallel L-BFGS on a Dask cluster; the workers read the
    training file's shards (see fstcrf.distributed)."""
    from fstcrf.corpus.conll import iter_conll
    from fstcrf.distributed.cluster import connect
    from fstcrf.distributed.fit import check_supported, fit_on_dask
    from fstcrf.model.fitting import template_of
    from fstcrf.model.params import check_params

    if args.consistency:
        raise FstcrfError("distributed training (--dask) does not take --consistency yet")
    if args.resume and args.checkpoint is None:
        raise FstcrfError("--resume needs --checkpoint PATH, the checkpoint to resume from")
    first = next(iter(iter_conll(args.train, args.columns, batch_tokens=1)))
    init = _warm_start(args)
    model = _model_from_args(args, first.column_names)
    check_params(model)
    check_supported(model)
    template_of(model, init, algorithms=("lbfgs",))
    keep = _only_types(args)
    dev = _read_dev(args, keep)
    with connect(args.dask, dashboard=args.dask_dashboard) as client:
        LOG.info(
            "training a %s order-%d CRF on %s on the Dask workers of %s%s",
            args.algorithm,
            args.order,
            args.train,
            args.dask,
            f", starting from {args.init}" if init else "",
        )
        with phase("train"):
            fit_on_dask(
                model,
                args.train,
                client,
                args.target,
                dev,
                columns=args.columns,
                checkpoint=args.checkpoint,
                checkpoint_every=args.checkpoint_every,
                resume=args.resume,
                init=init,
                only_types=keep,
            )
    _save_trained(model, args)
    return 0


def _train_from_log(args: argparse.Namespace) -> int:
    """train --algorithm bandit --log FILE: learn offline from logged feedback."""
    from fstcrf.learn.counterfactual import read_feedback_log

    if args.algorithm != "bandit":
        raise FstcrfError("--log needs --algorithm bandit")
    log = read_feedback_log(args.log)
    dev = _read(args.dev, args.columns) if args.dev else None
    init = _warm_start(args)
    model = _model_from_args(args, log.sentences[0].column_names)
    LOG.info(
        "learning from %d logged outputs of %s (%s weighting, mean reward %.4f)%s",
        len(log.labels),
        args.log,
        args.weighting,
        float(log.rewards.mean()),
        f", starting from {args.init}" if init else "",
    )
    model.fit_log(log, target=args.target, dev=dev, init=init)
    _save_trained(model, args)
    return 0


def _warm_start(args: argparse.Namespace):
    """The model of --init (None without it); args take its order and its reading of
    lower labels, which a warm start keeps."""
    if not args.init:
        return None
    from fstcrf.model.chain import load_model

    init = load_model(args.init)
    args.order, args.reads, args.no_read_transitions = init.order, init.reads, not init.read_transitions
    return init


def _save_trained(model, args: argparse.Namespace) -> None:
    with phase("write"):
        model.save(args.output)
    report = LOG.warning if model.interrupted_ else LOG.info
    report(
        "%s the weights of iteration %d of %d; %d features; model written to %s",
        "interrupted; kept" if model.interrupted_ else "kept",
        model.best_iteration_,
        model.n_iter_,
        len(model.weights_),
        args.output,
    )


def _warn_define_without_grammar(args: argparse.Namespace) -> None:
    if args.define and not args.grammar:
        LOG.warning(
            "--define %s is ignored: it sets parameters of --grammar, which is not given", " ".join(args.define)
        )


def _warn_ignored_decoding_options(args: argparse.Namespace, composed: bool) -> None:
    """Warn once for each decoding option the model does not use."""
    _warn_define_without_grammar(args)
    _warn_ignored_nonlocal_options(args, composed)
    given = [name for name, default in DECODING_DEFAULTS.items() if getattr(args, name) != default]
    if "on_infeasible" in given and not args.grammar:
        LOG.warning("--on-infeasible is ignored: it applies to decoding under --grammar, which is not given")
    if composed:
        if "k" in given and args.mode != "kbest":
            LOG.warning("--k is ignored: it is the list length of --mode kbest")
    else:
        for name in ("mode", "k"):
            if name in given:
                LOG.warning(
                    "--%s is ignored: it applies to composed models (fstcrf compose), and %s is a single model",
                    name,
                    args.model,
                )


def _grammar_params(args: argparse.Namespace) -> dict | None:
    """Grammar parameters from --define NAME=VALUE options (None if there are none)."""
    params = {}
    for definition in args.define:
        name, equals, value = definition.partition("=")
        if not equals or not name or not value:
            raise FstcrfError(f"--define expects NAME=VALUE, got {definition!r}")
        params[name] = value
    return params or None


def _grammar_options(args: argparse.Namespace) -> dict:
    """predict() keyword arguments from --grammar, --define and --on-infeasible."""
    if not args.grammar:
        return {}
    from fstcrf.grammar import load_grammar

    return {"grammar": load_grammar(args.grammar), "params": _grammar_params(args), "on_infeasible": args.on_infeasible}


def _predict_with_progress(
    model, corpus, args: argparse.Namespace, options: dict, chunk: int = 2000
) -> list[list[str]]:
    """Labels [B][T] of a single model, with a progress bar; ``options`` are
    :func:`_grammar_options`'s, loaded once per command."""
    from fstcrf.progress import Progress

    if args.threads is not None:
        model.threads = args.threads
    if args.nonlocal_model:
        return _predict_nonlocal(model, corpus, args)
    predictions = []
    sentences = corpus.sentences
    with Progress(
        len(sentences), "tagging", unit="sentences", enabled=len(sentences) > chunk and not args.quiet
    ) as bar:
        for first in range(0, len(sentences), chunk):
            batch = sentences[first : first + chunk]
            predictions += model.predict(batch, **options)
            bar.update(len(batch))
    return predictions


def _joint_predict_with_progress(joint, corpus, args: argparse.Namespace, chunk: int = 2000) -> list[list[list[str]]]:
    """[components][sentences][tokens] labels of a composed model, with a progress bar."""
    from fstcrf.progress import Progress

    if args.grammar:
        raise FstcrfError("--grammar applies to single models; a composed model decodes without one")
    if args.threads is not None:
        joint.threads = args.threads
    predictions: list[list[list[str]]] = [[] for _ in joint.components]
    sentences = corpus.sentences
    with Progress(
        len(sentences), f"{args.mode} decoding", unit="sentences", enabled=len(sentences) > chunk and not args.quiet
    ) as bar:
        for first in range(0, len(sentences), chunk):
            batch = sentences[first : first + chunk]
            with phase("decode"):  # every component's features, scores and the search
                decoded = joint.predict(batch, mode=args.mode, k=args.k)
            for column, labels in zip(predictions, decoded):
                column.extend(labels)
            bar.update(len(batch))
    return predictions


def _components(model) -> list:
    """The single models of a model or of a composed model."""
    from fstcrf.model.compose import JointModel

    return list(model.components) if isinstance(model, JointModel) else [model]


def _read_for(model, path: str, gold_required: bool = False, columns: str | None = None, separator: str | None = None):
    """A CoNLL file read whole with the columns a model was trained on (see
    :func:`_batches_for`)."""
    (corpus,) = _batches_for(model, path, gold_required, columns, separator)
    return corpus


def _batches_for(
    model,
    path: str,
    gold_required: bool = False,
    columns: str | None = None,
    separator: str | None = None,
    batch_tokens: int | None = None,
    whole_documents: bool = False,
):
    """The sentences of a CoNLL file ("-": standard input) in batches of about
    ``batch_tokens`` tokens (None: one batch), read with the columns a model or a
    joint model was trained on (the predicted columns may be missing unless
    ``gold_required``), or with the comma-separated names ``columns``, which must
    include every column the model was trained on but the predicted ones.  Warns
    when the file has no sentences, and when it lacks the predicted columns while
    a column read as an observation holds mostly the model's labels (e.g. a
    word+chunk file given to a word,pos,chunk model)."""
    from fstcrf.corpus.conll import iter_conll

    components = _components(model)
    trained, targets = components[0].columns_, [component.target_ for component in components]
    names, allow_missing = _reading_columns(model, columns, gold_required)
    batches = iter_conll(
        path, names, separator, allow_missing=allow_missing, batch_tokens=batch_tokens, whole_documents=whole_documents
    )
    first = next(batches)
    if columns is not None:
        missing = [name for name in trained if name not in targets and name not in first.column_names]
        if missing:
            raise FstcrfError(
                f"--columns {columns} does not name {', '.join(missing)}, which the model "
                f"reads (it was trained on the columns {','.join(trained)})"
            )
    elif not first.sentences:
        LOG.warning("no sentences in %s", "standard input" if path == "-" else path)
    elif len(first.column_names) != len(trained):
        _warn_if_labels_read(first, components, path)
    yield first
    yield from batches


def _reading_columns(model, columns: str | None, gold_required: bool = False) -> tuple:
    """(the column names to read an input with, the columns that may be missing): the
    comma-separated ``columns``, all required; else the columns the model (or the
    first model of a joint model) was trained on, the predicted ones optional unless
    ``gold_required``."""
    if columns is not None:
        return columns, ()
    components = _components(model)
    return components[0].columns_, () if gold_required else tuple(component.target_ for component in components)


def _warn_if_labels_read(corpus, components: list, path: str) -> None:
    """Warn when a file lacking the predicted columns has a column read as an observation
    that holds mostly the models' labels (a layout mistake)."""
    columns = components[0].columns_
    labels = {label for component in components for label in component.labels_}
    for name in corpus.column_names[1:]:
        values = [value for sentence in corpus.column(name) for value in sentence]
        if sum(value in labels for value in values) > len(values) / 2:
            LOG.warning(
                "%s has %d columns, read as %s, and its column %s holds mostly the model's "
                "labels; the model was trained on %d columns (%s): is the file's layout right?",
                path,
                len(corpus.column_names),
                ",".join(corpus.column_names),
                name,
                len(columns),
                ",".join(columns),
            )
            return


def _predict_nonlocal(model, corpus, args: argparse.Namespace) -> list[list[str]]:
    """Labels [B][T] decoded under the --nonlocal factors."""
    from fstcrf.document.decode import decode_documents, model_factors

    if args.grammar:
        raise FstcrfError("--nonlocal decodes with the model's own lattice; --grammar cannot be combined with it")
    factors = model_factors(model, [args.nonlocal_model], args.consistency_scale)
    labels, result = decode_documents(
        model,
        corpus,
        factors,
        args.sampler,
        args.sweeps,
        args.t_start,
        args.t_end,
        args.block_size,
        args.seed,
        progress=not args.quiet,
    )
    if result is not None:
        LOG.info(
            "non-local decoding: %d of %d label-changing moves accepted; the product score rose in %d of %d documents",
            result.accepted,
            result.proposed,
            int((result.best_score > result.viterbi_score).sum()),
            len(result.best_score),
        )
        if result.interrupted:
            raise KeyboardInterrupt
    return labels


def _warn_ignored_nonlocal_options(args: argparse.Namespace, composed: bool) -> None:
    """Refuse --nonlocal with a composed model; warn for sampler options given without it."""
    if args.nonlocal_model and composed:
        raise FstcrfError(f"--nonlocal applies to single models; {args.model} is a composed model")
    if not args.nonlocal_model:
        given = [option for option, name, default in NONLOCAL_OPTIONS if getattr(args, name) != default]
        for option in given:
            LOG.warning("%s is ignored: it applies to decoding with --nonlocal, which is not given", option)


def _check_tag_options(args: argparse.Namespace, composed: bool) -> None:
    """Refuse --nbest and --marginals with a composed model or with options they exclude."""
    for option, given in (("--nbest", args.nbest is not None), ("--marginals", args.marginals)):
        if not given:
            continue
        if composed:
            raise FstcrfError(f"{option} applies to single models; {args.model} is a composed model")
        if args.sample or args.with_probability:
            raise FstcrfError(f"{option} and --sample are different outputs; give one of them")
    if args.nbest is not None and args.grammar:
        raise FstcrfError(
            "--nbest ranks the sequences of the model's own distribution (under its training "
            "grammar, if any); --grammar is not applied to it"
        )
    if args.nbest is not None and args.marginals:
        raise FstcrfError("--nbest and --marginals are different outputs; give one of them")


#: Tokens ``fstcrf tag`` reads, tags and writes at a time: its memory is bounded by a batch
#: (a whole document with --nonlocal), whatever the input's size.
TAG_BATCH_TOKENS = 20_000


def _tag(args: argparse.Namespace) -> int:
    from fstcrf.model.compose import JointModel, load_any
    from fstcrf.corpus.conll import write_conll
    from fstcrf.progress import Progress

    with phase("load"):
        model = load_any(args.model)
    composed = isinstance(model, JointModel)
    _warn_ignored_decoding_options(args, composed=composed)
    _check_tag_options(args, composed)
    if args.dask is not None:
        return _tag_on_dask(model, composed, args)
    if args.dask_dashboard is not None:
        raise FstcrfError("--dask-dashboard applies to --dask local:N")
    if args.sample or args.with_probability:
        if len(args.input) != 1:
            raise FstcrfError("--sample tags one input file at a time")
        return _tag_samples(
            model, _read_for(model, args.input[0], columns=args.columns, separator=args.separator), args
        )
    if args.input.count("-") > 1:
        raise FstcrfError("standard input (-) can be read once")
    options = {} if composed else _grammar_options(args)
    tagged = {"sentences": 0}

    def write(stream) -> None:
        text = _Utf8Text(stream, args.output)
        with Progress(None, "tagging", unit="tokens", enabled=not args.quiet) as bar:
            for path in args.input:
                for batch in _timed(
                    _batches_for(
                        model,
                        path,
                        columns=args.columns,
                        separator=args.separator,
                        batch_tokens=TAG_BATCH_TOKENS,
                        whole_documents=bool(args.nonlocal_model),
                    ),
                    "read",
                ):
                    columns = _tag_columns(model, batch, args, composed, options)
                    with phase("write"):
                        write_conll(batch, text, extra_columns=columns)
                        stream.flush()
                    tagged["sentences"] += len(batch)
                    bar.update(batch.num_tokens)

    try:
        write_atomically(args.output, write, keep_on_interrupt=True)
    except KeyboardInterrupt:
        LOG.warning(
            "interrupted: the first %d sentences were tagged and written to %s",
            tagged["sentences"],
            "standard output" if args.output == "-" else args.output,
        )
        raise
    return 0


def _tag_on_dask(model, composed: bool, args: argparse.Namespace) -> int:
    """tag --dask SPEC: the inputs cut into shards of whole sentences, tagged on the
    workers (which read the inputs and the model by their paths) and written in order."""
    from fstcrf.distributed.cluster import connect
    from fstcrf.distributed.tagging import tag_on_dask

    refused = [
        option
        for option, given in (
            ("a composed model", composed),
            ("--sample", args.sample),
            ("--nbest", args.nbest is not None),
            ("--marginals", args.marginals),
            ("--nonlocal", args.nonlocal_model),
            ("standard input", "-" in args.input),
        )
        if given
    ]
    if refused:
        raise FstcrfError(
            f"tagging on Dask (--dask) writes the best labels of a single model read from files; "
            f"it does not take {', '.join(refused)}"
        )
    names, allow_missing = _reading_columns(model, args.columns)
    options = _grammar_options(args)
    if options:
        options["grammar"] = args.grammar  # loaded by each worker
    with connect(args.dask, dashboard=args.dask_dashboard) as client, phase("decode"):
        shards = tag_on_dask(
            client,
            args.model,
            args.input,
            args.output,
            names,
            allow_missing,
            args.separator,
            args.threads or 1,
            options,
        )
    LOG.info("tagged %s in %d shards on the Dask workers of %s", ", ".join(args.input), shards, args.dask)
    return 0


class _Utf8Text:
    """Text written to a binary stream as UTF-8 (what write_conll needs of an open file),
    without a TextIOWrapper that would close the stream when it is collected."""

    def __init__(self, stream, name: str):
        self.stream = stream
        self.name = name

    def write(self, text: str) -> None:
        self.stream.write(text.encode("utf-8"))


def _tag_columns(model, batch, args: argparse.Namespace, composed: bool, options: dict) -> list[list[list[str]]]:
    """The columns ``fstcrf tag`` appends to a batch of sentences [columns][B][T] (``options``:
    :func:`_grammar_options`'s)."""
    if args.nbest is not None:
        extra = _nbest_columns(model, batch, args)
    elif composed:
        extra = _joint_predict_with_progress(model, batch, args)
    else:
        extra = [_predict_with_progress(model, batch, args, options)]
    if args.marginals:
        extra.append(_marginal_column(model, batch, extra[0], options))
    return extra


#: The label and probability written for a rank of --nbest beyond the
#: sentence's number of label sequences (CoNLL-U's empty value).
MISSING_RANK = "_"


def _nbest_columns(model, corpus, args: argparse.Namespace) -> list[list[list[str]]]:
    """--nbest K: K label columns (best first), then K columns holding each rank's
    path probability, repeated on every token [2K][B][T]."""
    if args.threads is not None:
        model.threads = args.threads
    k = args.nbest
    labels, probabilities = model.kbest(corpus, k)  # [B][r][T], [B, K]
    label_columns: list[list[list[str]]] = [[] for _ in range(k)]
    probability_columns: list[list[list[str]]] = [[] for _ in range(k)]
    for sentence, ranked, row in zip(corpus.sentences, labels, probabilities):
        for rank in range(k):
            found = rank < len(ranked)
            label_columns[rank].append(ranked[rank] if found else [MISSING_RANK] * len(sentence))
            probability_columns[rank].append([f"{row[rank]:.6g}"] * len(sentence))
    return label_columns + probability_columns


def _marginal_column(model, corpus, predicted: list[list[str]], options: dict) -> list[list[str]]:
    """--marginals: p(predicted label at each token | sentence), 4 decimals [B][T]
    (under --grammar when it is given: ``options`` are :func:`_grammar_options`'s)."""
    marginals = model.predict_marginals(corpus, options.get("grammar"), options.get("params"))  # [B] [T, L]
    index = {label: number for number, label in enumerate(model.labels_)}
    return [
        [f"{table[t, index[label]]:.4f}" for t, label in enumerate(labels)]
        for table, labels in zip(marginals, predicted)
    ]


def _separator(text: str) -> str:
    """The field separator of --separator: "\\t" or "tab" means a tab."""
    separator = "\t" if text in ("\\t", "tab") else text
    if not separator:
        raise argparse.ArgumentTypeError("the separator must not be empty")
    return separator


def _tag_samples(model, corpus, args: argparse.Namespace) -> int:
    """tag --sample N [--with-probability]: N exact draws per sentence, as N label columns,
    or with their probabilities as a feedback log (JSON lines, rewards left null)."""
    import io
    from fstcrf.model.compose import JointModel
    from fstcrf.corpus.conll import write_conll
    from fstcrf.learn.counterfactual import write_feedback_records

    if isinstance(model, JointModel):
        raise FstcrfError(
            "--sample applies to single models; a composed model draws with fstcrf.engine.joint.joint_sample in Python"
        )
    if args.grammar:
        raise FstcrfError(
            "--sample draws from the model's own distribution (under its training grammar, "
            "if any); --grammar is not applied to samples"
        )
    count = args.sample or 1
    if args.threads is not None:
        model.threads = args.threads
    labels, log_p = model.sample(corpus, count, args.seed)  # [K][B][T], [K, B]
    if not args.with_probability:
        write_conll(corpus, args.output, extra_columns=labels)
        return 0
    inputs = [name for name in model.columns_ if name != model.target_ and name in corpus.column_names]

    def write(stream) -> None:
        text = io.TextIOWrapper(stream, encoding="utf-8", newline="\n")
        for b, sentence in enumerate(corpus.sentences):
            write_feedback_records(
                text, sentence, inputs, [draw[b] for draw in labels], [math.exp(value) for value in log_p[:, b]]
            )
        text.flush()
        text.detach()

    write_atomically(args.output, write)
    LOG.info(
        "wrote %d sampled outputs with their probabilities to %s; fill in each record's reward "
        "(0 to 1) and train with fstcrf train --algorithm bandit --log",
        count * len(corpus),
        "standard output" if args.output == "-" else args.output,
    )
    return 0


def _compose(args: argparse.Namespace) -> int:
    import pynini
    from fstcrf.model.compose import compose
    from fstcrf.model.chain import load_model

    models = [load_model(path) for path in args.models]
    relations = [None] * (len(models) - 1)
    for spec in args.compat:
        position, equals, path = spec.partition("=")
        if not equals or not position.isdigit() or not 1 <= int(position) < len(models):
            raise FstcrfError(
                f"--compat expects K=FILE with 1 <= K < {len(models)} (the relation between "
                f"models K-1 and K), got {spec!r}"
            )
        try:
            relations[int(position) - 1] = pynini.Fst.read(path)
        except pynini.FstIOError:
            raise FstcrfError(f"{path}: cannot read an FST (OpenFst binary with symbol tables expected)") from None
    scales = None
    if args.scales:
        try:
            scales = [float(value) for value in args.scales.split(",")]
        except ValueError:
            raise FstcrfError(f"--scales expects comma-separated numbers, got {args.scales!r}") from None
    joint = compose(models, relations, scales=scales)
    joint.save(args.output)
    sizes = " x ".join(str(m.topology_.num_states) for m in models)
    LOG.info(
        "composed %s (%s = %d joint states%s); written to %s",
        " + ".join(joint.targets),
        sizes,
        joint.space.num_states,
        "" if joint.space.allowed is None else f", {int(joint.space.allowed.sum())} compatible",
        args.output,
    )
    return 0


def _split_gold_pred(path: str) -> tuple[list[list[str]], list[list[str]]]:
    """The last two columns of a tagged file: gold and predicted (conlleval's layout)."""
    corpus = _read(path)
    if len(corpus.column_names) < 2:
        raise FstcrfError(f"{path}: expected at least two columns (gold, predicted), found {len(corpus.column_names)}")
    gold_name, pred_name = corpus.column_names[-2:]
    _check_gold(corpus, gold_name)
    return corpus.column(gold_name), corpus.column(pred_name)


def _check_gold(corpus, column: str) -> None:
    """LabelError naming FILE:LINE at the first partial label ("?" or "A|B", which only
    training reads) of a gold column, before any tagging starts."""
    from fstcrf.corpus.evaluate import check_single_labels

    try:
        check_single_labels(corpus.column(column))
    except LabelError as error:
        sentence = corpus.sentences[error.sentence]
        line = sentence.line_numbers[error.position] if sentence.line_numbers else "?"
        raise LabelError(f"{corpus.path}:{line}: {error}") from None


def _scores(gold: list[list[str]], predicted: list[list[str]], keep: set[str] | None = None, where: str = ""):
    """Chunk scores, or token accuracy for labels without chunk structure; the
    types ``keep`` (--only-types) apply to chunk labels only, checked against
    the gold labels of ``where``."""
    from fstcrf.corpus.evaluate import is_chunk_labels, score_labels

    if keep and is_chunk_labels(gold):
        _check_only_types(keep, gold, where)
        gold, predicted = keep_types(gold, keep), keep_types(predicted, keep)
    return score_labels(gold, predicted)


def _eval(args: argparse.Namespace) -> int:
    from fstcrf.corpus.evaluate import scheme_mismatch

    keep = _only_types(args)
    if args.pred:
        if args.model or args.test:
            raise FstcrfError("give either --pred FILE or MODEL TEST, not both")
        gold, predicted = _split_gold_pred(args.pred)
        print(_scores(gold, predicted, keep, f"the gold column of {args.pred}").format())
        return 0
    if not (args.model and args.test):
        raise FstcrfError("give MODEL and TEST, or --pred FILE")
    from fstcrf.model.compose import JointModel, load_any

    model = load_any(args.model)
    composed = isinstance(model, JointModel)
    _warn_ignored_decoding_options(args, composed)
    corpus = _read_for(model, args.test, gold_required=True)
    if not corpus.sentences:
        raise FstcrfError(f"no sentences in {args.test}: nothing to score")
    components = _components(model)
    for component in components:
        _check_gold(corpus, component.target_)
    if composed:
        predictions = _joint_predict_with_progress(model, corpus, args)
    else:
        predictions = [_predict_with_progress(model, corpus, args, _grammar_options(args))]
    for component, predicted in zip(components, predictions):
        gold = corpus.column(component.target_)
        mismatch = scheme_mismatch(component.labels_, gold)
        if mismatch:
            LOG.warning("%s: %s", args.test, mismatch)
        if composed:
            print(f"== {component.target_} ({args.mode} decoding)")
        print(_scores(gold, predicted, keep, f"the {component.target_} column of {args.test}").format())
    return 0


def _compare(args: argparse.Namespace) -> int:
    from fstcrf.corpus.evaluate import mcnemar

    gold_a, pred_a = _split_gold_pred(args.pred_a)
    gold_b, pred_b = _split_gold_pred(args.pred_b)
    if gold_a != gold_b:
        raise FstcrfError(
            f"{args.pred_a} and {args.pred_b} do not have the same gold labels; "
            "compare predictions of the same test file"
        )
    result = mcnemar(gold_a, pred_a, pred_b)
    for name, path, predicted in (("A", args.pred_a, pred_a), ("B", args.pred_b, pred_b)):
        scores = _scores(gold_a, predicted)
        print(f"{name}: {path}  {scores.metric} {scores.primary:.2f}")
    print(f"tokens A labels right and B wrong: {result.n01}")
    print(f"tokens A labels wrong and B right: {result.n10}")
    print(f"McNemar's test ({result.method}): two-sided p = {result.p_value:.3g}")
    return 0


def find_conll2000(data_dir: str | None = None) -> Path | None:
    """The CoNLL-2000 folder (train.txt, test.txt) from --data, $FSTCRF_DATA or NLTK's
    data folders (None if none has it); a ``data_dir`` that has not is an error."""
    if data_dir:
        for folder in (Path(data_dir), Path(data_dir) / "conll2000"):
            if (folder / "train.txt").is_file() and (folder / "test.txt").is_file():
                return folder
        raise FstcrfError(
            f"--data {data_dir}: found no CoNLL-2000 train.txt and test.txt in this folder or in its conll2000 folder"
        )
    candidates = []
    if os.environ.get("FSTCRF_DATA"):
        candidates.append(Path(os.environ["FSTCRF_DATA"]) / "conll2000")
    candidates.append(Path("../shared/data/conll2000"))
    nltk_roots = os.environ.get("NLTK_DATA", "").split(os.pathsep) + [
        str(Path.home() / "nltk_data"),
        "/usr/share/nltk_data",
        "/usr/local/share/nltk_data",
        "/usr/lib/nltk_data",
        "/usr/local/lib/nltk_data",
    ]
    candidates += [Path(root) / "corpora" / "conll2000" for root in nltk_roots if root]
    for folder in candidates:
        if (folder / "train.txt").is_file() and (folder / "test.txt").is_file():
            return folder
    return None


def _demo(args: argparse.Namespace) -> int:
    from fstcrf.model.chain import ChainCRF
    from fstcrf.corpus.synthetic import DATA_DIR

    if args.output == "-":
        raise FstcrfError("demo prints its report on standard output; give -o a file for the model")
    folder = find_conll2000(args.data)
    if folder is not None:
        train_path, test_path = folder / "train.txt", folder / "test.txt"
        print(f"fstcrf demo: using CoNLL-2000 from {folder}")
    else:
        train_path, test_path = DATA_DIR / "demo_train.txt", DATA_DIR / "demo_test.txt"
        print(
            "fstcrf demo: CoNLL-2000 not found (set FSTCRF_DATA or --data); using the small synthetic "
            f"corpus fstcrf generated itself ({DATA_DIR})"
        )
    train, test = _read(str(train_path)), _read(str(test_path))
    print(
        f"training a first-order CRF (Sha & Pereira features, L-BFGS, {args.max_iter} iterations) "
        f"on {len(train)} sentences"
    )
    model = ChainCRF(max_iter=args.max_iter, threads=args.threads).fit(train)
    if args.output:
        model.save(args.output)
        print(f"model written to {args.output}")
    scores = _scores(test.column(model.target_), model.predict(test))
    print(f"tagged {len(test)} test sentences ({test.num_tokens} tokens)")
    print(scores.format())
    return 0


def _history(args: argparse.Namespace) -> int:
    from fstcrf.model.inspection import dev_score
    from fstcrf.model.chain import load_model

    model = load_model(args.model)
    history = model.history_
    metric = next((record["dev_metric"] for record in history if record.get("dev_metric")), "F1")
    print(f"iteration  objective      gradient-norm  seconds  dev-{metric}")
    for record in history:
        dev = dev_score(record)
        print(
            f"{record['iteration']:9d}  {record['objective']:<13.6g}  {record.get('gradient_norm') or 0:<13.4g}  "
            f"{record['seconds']:7.2f}  {'' if dev is None else f'{dev:.2f}'}"
        )
    print(
        f"kept the weights of iteration {model.best_iteration_} of {model.n_iter_}"
        + (" (interrupted)" if model.interrupted_ else "")
    )
    if args.plot:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            raise FstcrfError("plotting needs matplotlib: pip install 'fstcrf[bench]'") from None
        iterations = [r["iteration"] for r in history]
        figure, objective_axis = plt.subplots(figsize=(7, 4))
        objective_axis.semilogy(iterations, [r["objective"] for r in history], color="tab:blue")
        objective_axis.set_xlabel(f"{model.algorithm} iteration")
        objective_axis.set_ylabel("objective (penalised negative log-likelihood)", color="tab:blue")
        dev = [(r["iteration"], dev_score(r)) for r in history if dev_score(r) is not None]
        if dev:
            dev_axis = objective_axis.twinx()
            dev_axis.plot(*zip(*dev), color="tab:red")
            dev_axis.set_ylabel(f"dev {metric}", color="tab:red")
        objective_axis.set_title(args.title or f"{args.model}")
        figure.tight_layout()
        write_atomically(args.plot, lambda stream: figure.savefig(stream, format="png", dpi=110))
        print(f"plot written to {args.plot}")
    return 0


def _dump(args: argparse.Namespace) -> int:
    from fstcrf.model.compose import load_any
    from fstcrf.model.inspection import dump_text

    sys.stdout.write(dump_text(load_any(args.model), top=args.top, label=args.label))
    return 0


def _upgrade(args: argparse.Namespace) -> int:
    from fstcrf.model.compose import upgrade_model

    upgrade_model(args.model, args.output)
    LOG.info("wrote %s in the current model file format", args.output)
    return 0


def _info(args: argparse.Namespace) -> int:
    from fstcrf.model.compose import load_any
    from fstcrf.model.inspection import info_text

    sys.stdout.write(info_text(load_any(args.model), args.model))
    return 0


def _bench(args: argparse.Namespace) -> int:
    from fstcrf import bench

    if args.in_memory and args.what != "train":
        raise FstcrfError("--in-memory applies to bench train")
    if args.what == "kernel":
        print(bench.format_kernel(bench.bench_kernel(tokens=args.tokens, repeats=args.repeats, seed=args.seed)))
    elif args.what == "grammar":
        if not (args.model and args.test):
            raise FstcrfError("bench grammar needs --model MODEL --test FILE")
        print(bench.format_grammar(bench.bench_grammar(args.model, args.test, repeats=args.repeats)))
    elif args.what == "distributed":
        from fstcrf.bench.distributed import bench_distributed, distributed_json, format_distributed

        folder = find_conll2000(args.data)
        if folder is None:
            raise FstcrfError("bench distributed needs CoNLL-2000: set FSTCRF_DATA or --data")
        load_before = os.getloadavg()
        rows = bench_distributed(folder, args.copies or 20, args.iterations or 5)
        load = (load_before, os.getloadavg())
        print(json.dumps(distributed_json(rows, load)) if args.json else format_distributed(rows, load))
    elif args.what == "partial":
        folder = find_conll2000(args.data)
        if folder is None:
            raise FstcrfError("bench partial needs CoNLL-2000: set FSTCRF_DATA or --data")
        print(
            bench.format_partial(
                bench.bench_partial(folder, args.fraction, args.seed, args.iterations or 50, args.threads)
            )
        )
    elif args.what == "compose" and (args.model or args.test):
        if not (args.model and args.test):
            raise FstcrfError("bench compose on a real model needs both --model JOINT and --test FILE")
        print(bench.format_compose_model(bench.bench_compose_model(args.model, args.test, repeats=args.repeats)))
        from fstcrf.bench.process import bench_compose_process, format_process

        print()
        print(format_process(bench_compose_process(args.model, args.test, args.threads, args.repeats, not args.quiet)))
    elif args.what == "nonlocal":
        from fstcrf.bench.consistency import CORPORA, bench_nonlocal, format_nonlocal, nonlocal_json

        languages = _names_among(args.languages, CORPORA, "--languages")
        results = bench_nonlocal(
            _shared_data(args.data, "nonlocal", [CORPORA[x][0] for x in languages]),
            languages,
            args.cache,
            seeds=args.seeds or 5,
            sweeps=args.sweeps,
            gibbs_sweeps=args.gibbs_sweeps,
            threads=args.threads,
            plot=args.plot,
        )
        print(json.dumps(nonlocal_json(results)) if args.json else format_nonlocal(results))
    elif args.what == "defaults":
        from fstcrf.bench.defaults import bench_defaults, defaults_json, format_defaults

        results = bench_defaults(
            _shared_data(args.data, "defaults", ["conll2000", "conll2003"]),
            folds=args.folds,
            sentences=args.sentences,
            threads=args.threads,
            progress=not args.quiet,
        )
        print(defaults_json(results) if args.json else format_defaults(results))
    elif args.what == "mce":
        from fstcrf.bench.mce import TASKS, bench_mce, format_mce, mce_json

        tasks = _names_among(args.tasks, TASKS, "--tasks")
        results = bench_mce(
            _shared_data(args.data, "mce", [TASKS[task][0] for task in tasks]),
            tasks,
            map_iter=args.map_iter,
            mce_iter=args.mce_iter,
            threads=args.threads,
            progress=not args.quiet,
        )
        print(mce_json(results) if args.json else format_mce(results))
    elif args.what == "transfer":
        from fstcrf.bench.transfer import bench_transfer, format_transfer, transfer_json

        results = bench_transfer(
            _shared_data(args.data, "transfer", ["conll2003", "seminars"]),
            splits=args.splits,
            seed=args.seed,
            threads=args.threads,
            learning_curve=args.plot is not None,
            plot=args.plot,
            progress=not args.quiet,
            cache=args.cache,
        )
        print(json.dumps(transfer_json(results)) if args.json else format_transfer(results))
    elif args.what == "bandit":
        from fstcrf.bench.bandit import bench_bandit, format_bandit, format_speed, measure_speed, splits

        folder = find_conll2000(args.data)
        if folder is None:
            raise FstcrfError("bench bandit needs CoNLL-2000: set FSTCRF_DATA or --data")
        if args.speed_only:
            print(format_speed(measure_speed(splits(folder, args.dev_sentences)[0], args.threads)))
        else:
            print(
                format_bandit(
                    bench_bandit(
                        folder,
                        seeds=args.seeds or 3,
                        calls=args.calls,
                        threads=args.threads,
                        plot=args.plot,
                        dev_sentences=args.dev_sentences,
                    )
                )
            )
    elif args.what == "compose":
        print(bench.format_compose(bench.bench_compose(tokens=args.tokens, repeats=args.repeats, seed=args.seed)))
    elif args.what == "sklearn":
        from fstcrf.bench.sklearn import bench_sklearn, format_sklearn

        result = bench_sklearn(_shared_data(args.data, "sklearn", ["conll2002"]), search=args.search)
        print(json.dumps(result) if args.json else format_sklearn(result))
    elif args.what == "features":
        from fstcrf.bench.features import bench_features, format_features

        folder = find_conll2000(args.data)
        if folder is None:
            raise FstcrfError("bench features needs CoNLL-2000: set FSTCRF_DATA or --data")
        tutorial = next(
            (
                candidate
                for candidate in (folder.parent / "conll2002", folder / "conll2002")
                if (candidate / "esp.train").is_file() and (candidate / "esp.testb").is_file()
            ),
            None,
        )
        rows = bench_features(folder, args.copies or 10, args.repeats, tutorial)
        print(json.dumps(rows) if args.json else format_features(rows))
    elif args.what == "stream":
        from fstcrf.bench.process import bench_stream_process, format_stream

        folder = find_conll2000(args.data)
        if folder is None:
            raise FstcrfError("bench stream needs CoNLL-2000: set FSTCRF_DATA or --data")
        result = bench_stream_process(folder, args.gigabytes, args.model, args.threads, not args.quiet)
        print(json.dumps(result) if args.json else format_stream(result))
    elif args.what in ("tag", "train") and not args.in_memory:
        from fstcrf.bench.process import bench_tag_process, bench_train_process, format_process

        folder = find_conll2000(args.data)
        if folder is None:
            raise FstcrfError(f"bench {args.what} needs CoNLL-2000: set FSTCRF_DATA or --data")
        result = (
            bench_tag_process(folder, args.copies or 10, args.model, args.threads, args.repeats, not args.quiet)
            if args.what == "tag"
            else bench_train_process(folder, args.iterations or 50, args.threads, args.repeats, not args.quiet)
        )
        print(json.dumps(result) if args.json else format_process(result))
    else:
        folder = find_conll2000(args.data)
        if folder is None:
            raise FstcrfError("bench train needs CoNLL-2000: set FSTCRF_DATA or --data")
        print(
            bench.format_train(
                bench.bench_train(folder, args.vs, iterations=args.iterations or 50, threads=args.threads)
            )
        )
    return 0


def _names_among(text: str, known, option: str) -> list[str]:
    """The comma-separated names of ``text``, at least one, each among ``known``."""
    names = [name for name in text.split(",") if name]
    if not names or set(names) - set(known):
        raise FstcrfError(f"{option} takes {', '.join(known)}, got {text!r}")
    return names


def _shared_data(folder: str | None, what: str, corpora: list[str]) -> Path:
    """The data folder (--data, else $FSTCRF_DATA) holding the named corpus folders."""
    chosen = folder or os.environ.get("FSTCRF_DATA")
    if not chosen:
        raise FstcrfError(f"bench {what} needs --data DIR (or FSTCRF_DATA) holding {', '.join(corpora)}")
    missing = [name for name in corpora if not (Path(chosen) / name).is_dir()]
    if missing:
        raise FstcrfError(f"bench {what}: {chosen} has no {', '.join(missing)} folder")
    return Path(chosen)


def _whole_number(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number >= ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected a whole number >= {minimum}, got {value}")
        return value

    return parse


def _real_number(low: float, high: float, closed: bool = True) -> Callable[[str], float]:
    """An argparse type: a finite number from ``low`` to ``high`` (both excluded unless ``closed``)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        inside = low <= value <= high if closed else low < value < high
        if not (math.isfinite(value) and inside):
            bounds = f"from {low:g} to {high:g}" if closed else f"strictly between {low:g} and {high:g}"
            raise argparse.ArgumentTypeError(f"expected a number {bounds}, got {text}")
        return value

    return parse


POSITIVE = _whole_number(1)


def _add_quiet(parser: argparse.ArgumentParser) -> None:
    """-q/--quiet, accepted before and after the command (a command's copy only
    sets the option when given, so it cannot undo the main parser's)."""
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=False if parser.prog == "fstcrf" else argparse.SUPPRESS,
        help="only print warnings, errors and results (default: also report progress)",
    )


def _add_budget_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-states",
        type=POSITIVE,
        default=DEFAULT_MAX_STATES,
        metavar="N",
        help="stop with an error instead of building a topology, grammar acceptor or grammar "
        "product of more than N states (default %(default)s)",
    )
    parser.add_argument(
        "--max-work",
        type=POSITIVE,
        default=DEFAULT_MAX_WORK,
        metavar="N",
        help="stop with an error instead of filling more than about N table cells for k-best "
        "lists, sampling or cascaded k-best decoding (default %(default)s)",
    )


def _add_training_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--columns",
        default=None,
        help="comma-separated column names, e.g. word,pos,chunk (default: word,pos,chunk "
        "for 3 columns, col0,col1,... otherwise)",
    )
    parser.add_argument("--target", default="chunk", help="column to learn (default %(default)s)")
    parser.add_argument(
        "--order",
        type=int,
        choices=[1, 2],
        default=1,
        help="1: one state per label; 2: one state per pair of tags, Sha & Pereira's "
        "second-order chunker (default %(default)s)",
    )
    parser.add_argument(
        "--algorithm",
        choices=["lbfgs", "perceptron", "ap", "sgd", "l2sgd", "pa", "arow", "mce-f", "bandit"],
        default="lbfgs",
        help="lbfgs: penalised log-likelihood (OWL-QN with --c1); perceptron or ap: averaged "
        "perceptron; sgd: stochastic gradient; l2sgd, pa (passive-aggressive), arow: "
        "CRFsuite's online learners; mce-f: L-BFGS on the log-likelihood, then on the smoothed "
        "chunk F-score (Suzuki et al. 2006); bandit: from sampled outputs scored by "
        "feedback, never the gold labels (see the bandit options) (default %(default)s)",
    )
    parser.add_argument(
        "--sigma",
        type=_real_number(1e-4, 1e6),
        default=None,
        help=f"standard deviation of the Gaussian prior on every weight; smaller values "
        f"regularise more (default {DEFAULT_SIGMA})",
    )
    parser.add_argument(
        "--c2",
        type=_real_number(0.0, 1e8),
        default=None,
        help="CRFsuite's L2 coefficient c2 * ||w||^2, instead of --sigma (c2 = 1 / (2 sigma^2); "
        "0: no L2 prior) (default: from --sigma)",
    )
    parser.add_argument(
        "--c1",
        type=_real_number(0.0, 1e8),
        default=0.0,
        help="L1 coefficient c1 * ||w||_1, trained by OWL-QN (lbfgs, mce-f); with the L2 prior an "
        "elastic net; the model keeps only the non-zero weights (default %(default)s)",
    )
    parser.add_argument(
        "--transitions",
        choices=["all", "seen"],
        default="all",
        help="all: a weight for every label transition; seen: only for the transitions of the "
        "training labels, as CRFsuite does (default %(default)s)",
    )
    parser.add_argument(
        "--min-freq",
        type=_real_number(0.0, 1e12),
        default=0.0,
        help="CRFsuite's cut-off: keep the (predicate, label) features seen at more than this many "
        "training tokens (default %(default)s)",
    )
    parser.add_argument(
        "--max-iter",
        "--epochs",
        type=POSITIVE,
        default=100,
        dest="max_iter",
        help="L-BFGS iterations or online (and bandit) epochs (default %(default)s)",
    )
    parser.add_argument(
        "--mce-c",
        type=_real_number(1e-6, 1e12),
        default=1e7,
        help="mce-f: C of the F-score stage's prior ||w||^2 / (2C) (default %(default)g)",
    )
    parser.add_argument(
        "--mce-iter",
        type=POSITIVE,
        default=8,
        help="mce-f: L-BFGS iterations of the F-score stage (default %(default)s)",
    )
    parser.add_argument(
        "--mce-alpha",
        type=_real_number(1e-6, 1e6),
        default=1.0,
        help="mce-f: slope alpha of the sigmoid 1 / (1 + exp(-alpha d - beta)) that smooths "
        "each chunk's misclassification measure d (default %(default)s, the paper's)",
    )
    parser.add_argument(
        "--mce-beta",
        type=_real_number(-1e6, 1e6),
        default=0.0,
        help="mce-f: offset beta of that sigmoid (default %(default)s, the paper's)",
    )
    parser.add_argument(
        "--consistency",
        action="store_true",
        help="also estimate Finkel et al.'s label-consistency penalties from the training "
        "documents (-DOCSTART- markers) and store them in the model, for tag and eval "
        "--nonlocal consistency (default: off)",
    )
    parser.add_argument(
        "--template",
        default=None,
        help="feature template: sha-pereira, chunking-extended, crfpp, pos, chunking-reads-pos, ner, "
        "ner-pos, words or a template file (default: by --target and the file's columns: "
        "chunking-extended for chunk, pos for pos, otherwise ner for word,pos,chunk files, ner-pos "
        "for word,pos files, words for files with a word column)",
    )
    parser.add_argument(
        "--features",
        choices=["supported", "complete", "complete-tags"],
        default=None,
        help="which (predicate, output) pairs get a weight: supported: those seen in the gold "
        "training labels; complete: every pair (refused when too many); complete-tags: "
        "order 2 only, every (predicate, tag) pair plus the supported (predicate, tag "
        "pair) ones (default: supported; complete for --algorithm bandit)",
    )
    parser.add_argument(
        "--min-count",
        type=POSITIVE,
        default=1,
        help="drop predicates true at fewer training tokens (default %(default)s)",
    )
    parser.add_argument(
        "--threads", type=POSITIVE, default=2, help="threads for training and tagging (default %(default)s)"
    )
    parser.add_argument(
        "--grammar",
        default=None,
        help="train under a constraint grammar (Z sums over the sequences it accepts; the "
        "model then always decodes under it): a .fgr file or a shipped grammar name "
        "(default: none)",
    )
    parser.add_argument(
        "--define",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a parameter of the training grammar, e.g. X=NP (repeatable; default: none)",
    )
    parser.add_argument(
        "--reads",
        default=None,
        metavar="COLUMN",
        help="read a lower tagger's labels from COLUMN at the same token (template may use "
        "it at offset 0 only), so that fstcrf compose can decode both models jointly; "
        "e.g. --reads pos --template chunking-reads-pos (default: none)",
    )
    parser.add_argument(
        "--no-read-transitions",
        action="store_true",
        help="with --reads: transition weights that do not depend on the lower label "
        "(default: each edge has a base weight and a deviation per lower label)",
    )
    parser.add_argument(
        "--learning-rate",
        type=_real_number(0.0, 1e6, closed=False),
        default=None,
        help=f"step size of sgd (default {SGD_LEARNING_RATE}) and of bandit learning (default {DEFAULT_LEARNING_RATE})",
    )
    parser.add_argument(
        "--seed",
        type=_whole_number(0),
        default=0,
        help="seed of the online algorithms' shuffling, of bandit draws and of simulated "
        "feedback noise (default %(default)s)",
    )
    _add_bandit_arguments(parser)
    _add_budget_arguments(parser)


def _add_bandit_arguments(parser: argparse.ArgumentParser) -> None:
    bandit = parser.add_argument_group("bandit learning (--algorithm bandit)")
    bandit.add_argument(
        "--objective",
        choices=list(OBJECTIVES),
        default="expected",
        help="expected: the expected gain of a draw; pairwise: which of a draw from the model "
        "and one from the model with negated weights is better; pairwise-independent: "
        "the same for two independent draws; cross-entropy: gain / probability "
        "(default %(default)s)",
    )
    bandit.add_argument(
        "--feedback",
        choices=["f1", "accuracy"],
        default="f1",
        help="the simulated user's gain for a draw: its chunk F1 against the target column "
        "(1 when neither has a chunk), or its token accuracy (default %(default)s)",
    )
    bandit.add_argument(
        "--draws",
        type=POSITIVE,
        default=DEFAULT_DRAWS,
        help="draws per sentence and update (pairs for the pairwise objectives) (default %(default)s)",
    )
    bandit.add_argument(
        "--baseline",
        choices=list(BASELINES),
        default=None,
        help="subtracted from each gain: none, the running mean of earlier gains, or "
        "the mean of the sentence's other draws (loo, needs --draws 2 or more) "
        "(default: loo with 2 draws or more, else mean; none for pairwise-independent)",
    )
    bandit.add_argument(
        "--step", choices=list(STEPS), default="adam", help="step rule: constant, AdaGrad or Adam (default %(default)s)"
    )
    bandit.add_argument(
        "--clip",
        type=_real_number(0.0, 1.0),
        default=0.0,
        help="cross-entropy: probabilities below this are raised to it (default %(default)s)",
    )
    bandit.add_argument("--batch-size", type=POSITIVE, default=16, help="sentences per update (default %(default)s)")
    bandit.add_argument(
        "--feedback-flip",
        type=_real_number(0.0, 1.0),
        default=0.0,
        help="simulated noise: each gain g becomes 1 - g with this probability (default %(default)s)",
    )
    bandit.add_argument(
        "--feedback-noise",
        type=_real_number(0.0, 1e3),
        default=0.0,
        help="simulated noise: Gaussian noise of this standard deviation added to each gain, "
        "then clipped to [0, 1] (default %(default)s)",
    )
    bandit.add_argument(
        "--log",
        default=None,
        metavar="FILE",
        help="learn offline from logged feedback instead of a training file: JSON lines of "
        "columns, labels shown, reward and probability (fstcrf tag --sample N "
        "--with-probability writes them) (default: none)",
    )
    bandit.add_argument(
        "--weighting",
        choices=list(WEIGHTINGS),
        default="self-normalised",
        help="--log: importance weighting of the logged rewards (default %(default)s)",
    )
    bandit.add_argument(
        "--max-ratio",
        type=_real_number(0.0, 1e300, closed=False),
        default=10.0,
        help="--log --weighting clipped: the largest importance ratio (default %(default)s)",
    )


#: Decoding options that only some models use, with their defaults (a
#: different value means the user gave the option).
DECODING_DEFAULTS = {"mode": "joint", "k": 5, "define": [], "on_infeasible": "error"}


def _add_decoding_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--threads",
        type=POSITIVE,
        default=None,
        help="threads for tagging (default: the number the model was trained with)",
    )
    parser.add_argument(
        "--mode",
        choices=["joint", "cascade", "kbest"],
        default=DECODING_DEFAULTS["mode"],
        help="composed models: exact joint decoding, the 1-best cascade, or the cascade "
        "passing k-best lists (default %(default)s)",
    )
    parser.add_argument(
        "--k", type=POSITIVE, default=DECODING_DEFAULTS["k"], help="list length of --mode kbest (default %(default)s)"
    )
    parser.add_argument(
        "--grammar",
        default=None,
        help="single models: decode among the label sequences a constraint grammar accepts: "
        "a .fgr file or a shipped grammar (iob2, bioes, second_order, at_most_one, "
        "at_least_one) (default: none)",
    )
    parser.add_argument(
        "--define",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="with --grammar: set a grammar parameter, e.g. X=NP (repeatable; default: none)",
    )
    parser.add_argument(
        "--on-infeasible",
        choices=["error", "unconstrained"],
        default=DECODING_DEFAULTS["on_infeasible"],
        help="with --grammar, a sentence no accepted sequence fits: stop with an error naming "
        "it, or tag it without the grammar (default %(default)s)",
    )
    parser.add_argument(
        "--seed",
        type=_whole_number(0),
        default=0,
        help="seed of tag --sample and of the --nonlocal sampler (default %(default)s)",
    )
    _add_nonlocal_arguments(parser)
    _add_budget_arguments(parser)


def _add_nonlocal_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--nonlocal",
        choices=["consistency"],
        default=None,
        dest="nonlocal_model",
        help="single models: decode each document (-DOCSTART- to -DOCSTART-) under non-local "
        "factors by annealed sampling from the Viterbi labels; consistency: Finkel et "
        "al.'s label consistency, with the penalties stored by train --consistency "
        "(default: none, Viterbi per sentence)",
    )
    parser.add_argument(
        "--sampler",
        choices=SAMPLERS,
        default="block",
        help="with --nonlocal: block redraws a sentence (or --block-size tokens) at a time "
        "from the CRF and accepts by the non-local change; gibbs redraws one token at a "
        "time (Finkel et al.) (default %(default)s)",
    )
    parser.add_argument(
        "--sweeps",
        type=POSITIVE,
        default=DEFAULT_SWEEPS,
        help="with --nonlocal: sweeps over each document, cooling linearly from --t-start to "
        "--t-end (default %(default)s)",
    )
    parser.add_argument(
        "--t-start",
        type=_real_number(0.0, 1e6, closed=False),
        default=DEFAULT_T_START,
        help="with --nonlocal: temperature of the first sweep (default %(default)s)",
    )
    parser.add_argument(
        "--t-end",
        type=_real_number(0.0, 1e6, closed=False),
        default=DEFAULT_T_END,
        help="with --nonlocal: temperature of the last sweep (default %(default)s)",
    )
    parser.add_argument(
        "--block-size",
        type=_whole_number(0),
        default=DEFAULT_BLOCK_SIZE,
        help="with --nonlocal --sampler block: tokens per block, 0 for whole sentences (default %(default)s)",
    )
    parser.add_argument(
        "--consistency-scale",
        type=_real_number(0.0, 1e6),
        default=None,
        help="with --nonlocal consistency: multiply the log penalties by this (default: the "
        "scale stored in the model, 1 unless chosen on development data)",
    )


def _add_dask_dashboard(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dask-dashboard",
        default=None,
        metavar="HOST:PORT",
        help="with --dask local:N: serve Dask's dashboard (no authentication) on HOST:PORT, e.g. "
        "127.0.0.1:8787 for this machine only, 0.0.0.0:8787 for every interface, port 0 for "
        "any free port; the address is logged (default: no dashboard, and the cluster "
        "listens on 127.0.0.1 only)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command; each command's defaults name the
    options that hold its input and output paths (checked before any work)."""
    parser = argparse.ArgumentParser(
        prog="fstcrf",
        description="Conditional random fields as weighted FSTs. An output path '-' means standard output.",
    )
    _add_quiet(parser)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help: str, run, inputs: tuple[str, ...] = (), outputs: tuple[str, ...] = ()):
        sub = commands.add_parser(name, help=help, description=help)
        _add_quiet(sub)
        sub.set_defaults(run=run, inputs=inputs, outputs=outputs)
        return sub

    train = command(
        "train",
        "train a CRF tagger on a CoNLL file",
        _train,
        inputs=("train", "dev", "init", "log"),
        outputs=("output",),
    )
    train.add_argument(
        "train", nargs="?", help="training file (CoNLL columns, blank line between sentences); omitted with --log"
    )
    train.add_argument("-o", "--output", required=True, help="model file to write")
    _add_training_arguments(train)
    train.add_argument(
        "--dev",
        default=None,
        help="development file: keep the iteration with the best score on it (chunk F1, or "
        "accuracy for tags) (default: keep the last iteration)",
    )
    train.add_argument(
        "--init",
        default=None,
        metavar="MODEL",
        help="start from this model's weights (lbfgs, mce-f; with --dask: lbfgs); its template, "
        "order, reads and feature dictionary are used (default: start from zero)",
    )
    train.add_argument(
        "--only-types",
        default=None,
        help="comma-separated chunk types to keep; others become O, e.g. NP (default: all)",
    )
    train.add_argument(
        "--dask",
        default=None,
        metavar="ADDRESS|local:N",
        help="train data-parallel on a Dask cluster: a scheduler address (tcp://host:8786) or "
        "local:N for N local worker processes; the workers read shards of TRAIN, one per "
        "worker, with --threads threads each (needs fstcrf[distributed]; lbfgs only) "
        "(default: in this process)",
    )
    _add_dask_dashboard(train)
    train.add_argument(
        "--checkpoint",
        default=None,
        metavar="PATH",
        help="with --dask: save the L-BFGS state here every --checkpoint-every iterations (default: none)",
    )
    train.add_argument(
        "--checkpoint-every",
        type=POSITIVE,
        default=1,
        metavar="N",
        help="with --checkpoint: iterations between checkpoints (default %(default)s)",
    )
    train.add_argument(
        "--resume",
        action="store_true",
        help="with --dask and --checkpoint: continue the run saved there (same data and "
        "options) after the driver died (default: start afresh)",
    )

    jackknife = command(
        "jackknife",
        "replace a column by k-fold held-out predictions (to train a model that reads a lower tagger's output)",
        _jackknife,
        inputs=("train",),
        outputs=("output",),
    )
    jackknife.add_argument("train", help="CoNLL file")
    jackknife.add_argument("-o", "--output", required=True, help="CoNLL file to write")
    jackknife.add_argument("--folds", type=_whole_number(2), default=5, help="number of folds (default %(default)s)")
    _add_training_arguments(jackknife)

    compose = command(
        "compose",
        "compose trained models (lowest first) into a joint model",
        _compose,
        inputs=("models",),
        outputs=("output",),
    )
    compose.add_argument("models", nargs="+", help="model files in chain order; each reads the previous one's labels")
    compose.add_argument("-o", "--output", required=True, help="joint model file to write")
    compose.add_argument(
        "--compat",
        action="append",
        default=[],
        metavar="K=FST",
        help="restrict the label pairs of models K-1 and K to a transducer from lower to upper "
        "labels (OpenFst binary with symbol tables; repeatable; default: all pairs)",
    )
    compose.add_argument(
        "--scales",
        default=None,
        metavar="W0,W1,...",
        help="weigh each model's score, e.g. 1,0.5 to temper an upper model trained on gold "
        "lower labels; choose the weights on held-out data (default: all 1)",
    )
    _add_budget_arguments(compose)

    tag = command(
        "tag",
        "append a predicted label column (one per component of a composed model) to a CoNLL file",
        _tag,
        inputs=("model", "input"),
        outputs=("output",),
    )
    tag.add_argument("model", help="model file (from train or compose)")
    tag.add_argument(
        "input",
        nargs="+",
        help="CoNLL files with the columns the model was trained on, tagged in "
        "order into one output; - reads standard input; the gold column "
        "may be absent. Read, tagged and written a batch of sentences at a "
        "time, so memory stays bounded and output appears as it goes",
    )
    tag.add_argument("-o", "--output", default="-", help="output file (default: standard output)")
    tag.add_argument(
        "--dask",
        default=None,
        metavar="ADDRESS|local:N",
        help="tag on a Dask cluster (a scheduler address, or local:N worker processes): the input "
        "files are cut into shards of whole sentences that the workers read and tag with the "
        "model (both by path), and the output is written in input order; best labels of a "
        "single model, optionally under --grammar (needs fstcrf[distributed]) (default: in "
        "this process)",
    )
    _add_dask_dashboard(tag)
    _add_decoding_arguments(tag)
    tag.add_argument(
        "--sample",
        type=POSITIVE,
        default=None,
        metavar="N",
        help="instead of the best labels, N label sequences per sentence drawn exactly from the "
        "model's distribution, as N columns (default: the best labels)",
    )
    tag.add_argument(
        "--with-probability",
        action="store_true",
        help="with --sample: write a feedback log instead (JSON lines: the input columns, the "
        "labels drawn, their probability and a null reward to fill in) for fstcrf train "
        "--algorithm bandit --log (default: off)",
    )
    tag.add_argument(
        "--nbest",
        type=POSITIVE,
        default=None,
        metavar="K",
        help="single models: the K best label sequences of each sentence with their exact "
        "probabilities p(y | x) (under the model's training grammar, if any): K label "
        "columns, best first, then K columns each holding one rank's probability, repeated "
        "on every token of the sentence, so that every line has the same fields and the "
        "file stays a CoNLL file (read it with fstcrf.corpus.conll.read_conll). A sentence with "
        "fewer than K label sequences gets _ labels and probability 0 at the missing ranks "
        "(default: the best labels only)",
    )
    tag.add_argument(
        "--marginals",
        action="store_true",
        help="single models: after the predicted label, a column holding its marginal "
        "probability p(label at this token | sentence), 4 decimals (CRF++'s -v1) "
        "(default: off)",
    )
    tag.add_argument(
        "--separator",
        type=_separator,
        default=None,
        metavar="SEP",
        help="read and write fields separated by SEP, e.g. '\\t' (or 'tab') for tokens "
        "that contain spaces (default: runs of spaces and tabs; a space when writing)",
    )
    tag.add_argument(
        "--columns",
        default=None,
        metavar="NAMES",
        help="comma-separated names of the input file's columns, when they differ from the "
        "model's training layout; they must include every column the model was trained on "
        "but the predicted one (default: the training columns)",
    )

    evaluate = command(
        "eval", "conlleval scores (or tag accuracy) of a model on a test file, or of a tagged file", _eval
    )
    evaluate.add_argument("model", nargs="?", help="model file (from train or compose)")
    evaluate.add_argument("test", nargs="?", help="CoNLL file with gold labels")
    evaluate.add_argument(
        "--pred",
        default=None,
        help="instead of MODEL TEST: a tagged file whose last two columns are gold and predicted (default: none)",
    )
    evaluate.add_argument(
        "--only-types",
        default=None,
        help="score only these comma-separated chunk types (others become O) (default: all)",
    )
    _add_decoding_arguments(evaluate)

    compare = command(
        "compare",
        "McNemar's test between two tagged files; each file's last two columns are read as gold and predicted labels",
        _compare,
    )
    compare.add_argument("pred_a", help="first tagged file (last two columns: gold, predicted)")
    compare.add_argument("pred_b", help="second tagged file of the same sentences (last two columns: gold, predicted)")

    convert = command(
        "convert", "rewrite a chunk column in another tagging scheme", _convert, inputs=("input",), outputs=("output",)
    )
    convert.add_argument("input", help="CoNLL file")
    convert.add_argument("-o", "--output", required=True, help="CoNLL file to write")
    convert.add_argument(
        "--scheme", choices=["iob2", "bioes"], required=True, help="target scheme; the input may be IOB1, IOB2 or BIOES"
    )
    convert.add_argument("--column", default="chunk", help="the column to rewrite (default %(default)s)")
    convert.add_argument(
        "--columns",
        default=None,
        help="comma-separated column names, e.g. word,pos,chunk (default: word,pos,chunk "
        "for 3 columns, col0,col1,... otherwise)",
    )

    seminars = command(
        "seminars",
        "read tagged seminar announcements into word and field columns (IOB2 over "
        "speaker, location, stime, etime), a -DOCSTART- line before each message",
        _seminars,
        inputs=("folder",),
        outputs=("output",),
    )
    seminars.add_argument(
        "folder",
        help="folder holding one announcement per *.txt file (searched recursively, "
        "read in the order of the numeric file names)",
    )
    seminars.add_argument("-o", "--output", required=True, help="CoNLL file to write")

    demo = command("demo", "train, tag and evaluate a chunker out of the box", _demo, outputs=("output",))
    demo.add_argument(
        "--data",
        default=None,
        help="folder holding CoNLL-2000 train.txt and test.txt, or a folder holding conll2000/ "
        "(default: $FSTCRF_DATA/conll2000, NLTK's data folders, else a small synthetic "
        "corpus)",
    )
    demo.add_argument("--max-iter", type=POSITIVE, default=60, help="L-BFGS iterations (default %(default)s)")
    demo.add_argument("--threads", type=POSITIVE, default=2, help="threads (default %(default)s)")
    demo.add_argument("-o", "--output", default=None, help="also save the model here (default: not saved)")

    history = command(
        "history",
        "per-iteration training record of a model, optionally plotted",
        _history,
        inputs=("model",),
        outputs=("plot",),
    )
    history.add_argument("model", help="model file")
    history.add_argument(
        "--plot", default=None, help="write a PNG of the objective and the dev score per iteration (default: none)"
    )
    history.add_argument("--title", default=None, help="title of the plot (default: the model file)")

    dump = command(
        "dump",
        "a model's labels, topology, template and largest state and transition weights",
        _dump,
        inputs=("model",),
    )
    dump.add_argument("model", help="model file (not a composed model: dump each component's file)")
    dump.add_argument(
        "--top",
        type=POSITIVE,
        default=20,
        help="show this many largest positive and largest negative weights of each kind (default %(default)s)",
    )
    dump.add_argument(
        "--label",
        default=None,
        help="only the state features whose output is this label (or a state of it) and the "
        "transitions leaving or entering it (default: every label)",
    )

    upgrade = command(
        "upgrade",
        "rewrite a model or composed model file of an older format version in the "
        "current one (loaded in constant time)",
        _upgrade,
        inputs=("model",),
        outputs=("output",),
    )
    upgrade.add_argument("model", help="model file or composed model file of any version this fstcrf reads")
    upgrade.add_argument("-o", "--output", required=True, help="model file to write (not the input)")

    info = command(
        "info",
        "a model's sizes, training settings and training history summary (each component's, for a composed model)",
        _info,
        inputs=("model",),
    )
    info.add_argument("model", help="model file or composed model file")

    bench = command("bench", "measure speed against reference implementations", _bench, outputs=("plot",))
    bench.add_argument(
        "what",
        choices=[
            "kernel",
            "compose",
            "train",
            "grammar",
            "partial",
            "bandit",
            "nonlocal",
            "transfer",
            "defaults",
            "tag",
            "sklearn",
            "distributed",
            "mce",
            "stream",
            "features",
        ],
        help="kernel: forward-backward and Viterbi against numpy and pynini; "
        "compose: factorised joint inference against the dense cross product; "
        "train: the whole fstcrf train process against a python-crfsuite script with "
        "the same predicates on CoNLL-2000 (--in-memory: training and tagging inside one "
        "process); tag: the whole fstcrf tag process against a python-crfsuite script on "
        "--copies copies of the CoNLL-2000 test set (--model: an fstcrf model to tag with); "
        "sklearn: sklearn-crfsuite's CoNLL-2002 Spanish tutorial with sklearn_crfsuite and "
        "fstcrf.sklearn (--search: also a RandomizedSearchCV with each); "
        "grammar: decoding time under each shipped grammar (--model, --test); "
        "partial: training with hidden labels against fewer whole sentences; "
        "bandit: learning from bandit feedback against full information on CoNLL-2000 "
        "NP chunking (about an hour with the defaults); "
        "nonlocal: label consistency by annealed sampling against Viterbi on CoNLL-2003 "
        "English and CoNLL-2002 Dutch NER (--data DIR holding conll2003/ and conll2002/); "
        "transfer: seminar extraction with no transfer, the cascade and joint decoding of "
        "a CoNLL-2003 NER model (--data DIR holding conll2003/ and seminars/); "
        "defaults: the default templates of fstcrf train by cross-validation on the training "
        "data of CoNLL-2000 chunking and CoNLL-2003 NER, and their test F1 (--data DIR); "
        "distributed: seconds per L-BFGS iteration in one process and on LocalClusters of 1 "
        "and 2 workers, on CoNLL-2000 and on --copies copies of it (default 20) (needs "
        "fstcrf[distributed]); "
        "mce: MAP against MCE-F F-score training on CoNLL-2000 chunking and CoNLL-2003 "
        "English NER, C and MCE-F iterations chosen on dev, test F1 and McNemar's test "
        "(--data DIR holding conll2000/ and conll2003/); "
        "stream: fstcrf tag MODEL - fed --gigabytes of copies of the CoNLL-2000 test set on "
        "standard input: throughput, time to first output and resident memory; "
        "features: tokens per second of feature extraction for the shipped chunking "
        "templates on --copies copies of the CoNLL-2000 test set (default 10), and for "
        "sklearn-crfsuite's tutorial dicts when conll2002/ is beside conll2000/",
    )
    bench.add_argument(
        "--gigabytes",
        type=_real_number(1e-6, 1e4),
        default=5.0,
        help="stream: gigabytes (10^9 bytes) fed to fstcrf tag (default %(default)s)",
    )
    bench.add_argument(
        "--folds", type=_whole_number(2), default=3, help="defaults: cross-validation folds (default %(default)s)"
    )
    bench.add_argument(
        "--sentences",
        type=POSITIVE,
        default=4000,
        help="defaults: training sentences cross-validated (default %(default)s)",
    )
    bench.add_argument(
        "--seeds",
        type=POSITIVE,
        default=None,
        help="bandit: seeds per objective (default 3); nonlocal: seeds of the block sampler (default 5)",
    )
    bench.add_argument(
        "--json",
        action="store_true",
        help="nonlocal, transfer, defaults, tag, train, sklearn, distributed, mce, stream, features: "
        "print JSON instead of the table (default: off)",
    )
    bench.add_argument(
        "--copies",
        type=POSITIVE,
        default=None,
        help="tag: copies of the CoNLL-2000 test set tagged as one file (default 10; features: "
        "transformed); distributed: "
        "copies of the training set trained on as one file (default 20)",
    )
    bench.add_argument(
        "--in-memory",
        action="store_true",
        help="train: time training and tagging inside one process, without start-up, reading "
        "or writing (default: the whole processes)",
    )
    bench.add_argument(
        "--search",
        action="store_true",
        help="sklearn: also run RandomizedSearchCV over c1 and c2 with each tool (long; default: off)",
    )
    bench.add_argument(
        "--splits",
        type=POSITIVE,
        default=10,
        help="transfer: random 50/50 splits of the seminar messages (default %(default)s)",
    )
    bench.add_argument(
        "--languages",
        default="eng,ned",
        help="nonlocal: comma-separated languages, from eng and ned (default %(default)s)",
    )
    bench.add_argument(
        "--sweeps",
        type=POSITIVE,
        default=DEFAULT_SWEEPS,
        help="nonlocal: sweeps of the block sampler (default %(default)s)",
    )
    bench.add_argument(
        "--gibbs-sweeps", type=POSITIVE, default=10, help="nonlocal: sweeps of the gibbs sampler (default %(default)s)"
    )
    bench.add_argument(
        "--cache",
        default=None,
        metavar="DIR",
        help="nonlocal, transfer: keep trained models here and reuse them (default ~/.cache/fstcrf)",
    )
    bench.add_argument(
        "--calls", type=POSITIVE, default=1_000_000, help="bandit: feedback calls per run (default %(default)s)"
    )
    bench.add_argument(
        "--speed-only",
        action="store_true",
        help="bandit: only time epochs against a full gradient (about a minute; default: off)",
    )
    bench.add_argument(
        "--dev-sentences",
        type=POSITIVE,
        default=1000,
        help="bandit: the last N training sentences are the dev split (default %(default)s)",
    )
    bench.add_argument(
        "--plot",
        default=None,
        metavar="PNG",
        help="bandit: write dev F1 against feedback calls here; nonlocal: English test F1 against "
        "sweeps for both samplers; transfer: the learning curve (needs matplotlib; default: "
        "none)",
    )
    bench.add_argument(
        "--tokens",
        type=POSITIVE,
        default=100_000,
        help="tokens per lattice size (kernel, compose) (default %(default)s)",
    )
    bench.add_argument(
        "--repeats",
        type=POSITIVE,
        default=3,
        help="timings are the best of this many runs; tag and train: runs of each side (default %(default)s)",
    )
    bench.add_argument(
        "--seed",
        type=_whole_number(0),
        default=0,
        help="seed of the random scores and hidden labels (default %(default)s)",
    )
    bench.add_argument(
        "--vs", choices=["crfsuite"], default="crfsuite", help="peer for bench train (default %(default)s)"
    )
    bench.add_argument(
        "--iterations",
        type=POSITIVE,
        default=None,
        help="L-BFGS iterations (bench train, partial: default 50; distributed: default 5)",
    )
    bench.add_argument(
        "--tasks",
        default="chunking,ner",
        help="mce: comma-separated tasks, from chunking and ner (default %(default)s)",
    )
    bench.add_argument(
        "--map-iter",
        type=POSITIVE,
        default=None,
        help="mce: L-BFGS iterations of MAP training (default: 200 chunking, 150 ner)",
    )
    bench.add_argument(
        "--mce-iter",
        type=POSITIVE,
        default=30,
        help="mce: MCE-F iterations scored on dev for each C (default %(default)s)",
    )
    bench.add_argument(
        "--fraction",
        type=_real_number(0.0, 1.0, closed=False),
        default=0.5,
        help="share of labels hidden (bench partial) (default %(default)s)",
    )
    bench.add_argument(
        "--threads", type=POSITIVE, default=2, help="fstcrf threads for bench train and partial (default %(default)s)"
    )
    bench.add_argument(
        "--data", default=None, help="folder holding CoNLL-2000 (bench train, partial) (default: as for fstcrf demo)"
    )
    bench.add_argument(
        "--model",
        default=None,
        help="trained model (bench grammar, tag, stream) or composed model (bench compose on real data) "
        "(default: none)",
    )
    bench.add_argument("--test", default=None, help="test file (bench grammar, bench compose --model) (default: none)")
    return parser


def _paths(args: argparse.Namespace, names: tuple[str, ...]) -> list[str]:
    """The paths held by the named options of ``args`` (lists flattened, unset options skipped)."""
    paths = []
    for name in names:
        value = getattr(args, name, None)
        paths += value if isinstance(value, list) else [] if value is None else [value]
    return paths


def _raise_keyboard_interrupt(signal_number, frame) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO, format="%(message)s", stream=sys.stderr)
    previous_handler = signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    try:
        inputs = _paths(args, args.inputs)
        for output in _paths(args, args.outputs):
            check_output_path(output, inputs)
        with limits(getattr(args, "max_states", None), getattr(args, "max_work", None)):
            status = args.run(args)
        sys.stdout.flush()
        return status
    except FstcrfError as error:
        print(f"fstcrf: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("fstcrf: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (``fstcrf eval ... | head``): stop quietly, as
        # Unix tools do, and keep Python from failing again on the final flush
        _drop_standard_output()
        return 141
    except OSError as error:
        name = error.filename or "standard output"
        print(f"fstcrf: error: {name}: {error.strerror or error}", file=sys.stderr)
        if name == "standard output":
            _drop_standard_output()
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous_handler)


def _drop_standard_output() -> None:
    """Point standard output at the null device, so that the interpreter's
    final flush of unwritten output cannot fail again."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
