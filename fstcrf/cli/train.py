"""``fstcrf train`` (in this process, on a Dask cluster, or from a feedback log; with
--consistency, a document-level tagger) and ``fstcrf jackknife``."""

from __future__ import annotations

import argparse
import logging
import math
from collections.abc import Iterable, Sequence

from fstcrf.cli.common import (
    report_kept,
    check_only_types,
    grammar_params,
    only_types,
    read_corpus,
    check_grammar_options,
)
from fstcrf.cli.options import POSITIVE, add_command, add_dask_dashboard, add_training_arguments, whole_number
from fstcrf.corpus.schemes import restrict_types
from fstcrf.document.settings import (
    DEFAULT_BLOCK_SIZE,
    DEFAULT_DOCUMENT_METHOD,
    DEFAULT_JACKKNIFE_FOLDS,
    DOCUMENT_METHODS,
    TWO_STAGE_BLOCK_SIZE,
    TWO_STAGE_CONSISTENCY_SCALE,
)
from fstcrf.errors import FeedbackError, FstcrfError
from fstcrf.learn.settings import DEFAULT_SIGMA, LBFGS_MEMORY
from fstcrf.phases import map_large_blocks, phase

LOG = logging.getLogger("fstcrf")


def _train(args: argparse.Namespace) -> int:
    keep = only_types(args)
    check_grammar_options(args)
    _check_document_options(args)
    if (args.train is None) == (args.log is None):
        raise FstcrfError("give a training file TRAIN, or a feedback log with --algorithm bandit --log FILE (not both)")
    if args.tag_dictionary is not None and (args.log is not None or args.dask is not None or two_stage(args)):
        raise FstcrfError(
            "--tag-dictionary applies to one model trained from a file in this process (not with --log, "
            "--dask or a two-stage --document-method)"
        )
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
    map_large_blocks()  # so that the peak of a large model's training is what its arrays take
    train = read_corpus(args.train, args.columns)
    if not train.sentences:
        raise FstcrfError(f"{args.train}: no sentences to train on (an empty file, or only blank lines)")
    init = _warm_start(args)
    _check_training_labels(train, args.target, init)
    if keep and args.target in train.column_names:
        check_only_types(keep, train.column(args.target), f"the {args.target} column of {args.train}")
    train = restrict_types(train, args.target, keep)
    dev = _read_dev(args, keep)
    if args.target in train.column_names:
        _chunk_labelled({label for labels in train.column(args.target) for label in labels}, args)
    if two_stage(args):
        return _train_two_stage(args, train, dev)
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
    if args.tag_dictionary is not None:
        model.tag_dictionary_ = tag_dictionary(train, args.target, args.tag_dictionary)
    _save_trained(model, args)
    return 0


def _check_training_labels(train, target: str, init=None) -> None:
    """LabelError naming FILE:LINE of the first value of the ``target`` column that is a
    malformed label set or, with the --init model ``init``, names a label it lacks."""
    from fstcrf.corpus.labels import check_gold_column, token_location
    from fstcrf.errors import LabelError

    if target not in train.column_names:
        return  # the model's fit names the missing column
    try:
        check_gold_column(train.column(target), None if init is None else init.labels_)
    except LabelError as error:
        raise LabelError(f"{token_location(train, error.sentence, error.position)}: {error}") from None


def two_stage(args: argparse.Namespace) -> bool:
    """Whether the command trains a two-stage tagger (--consistency with a two-stage method)."""
    return bool(args.consistency) and args.document_method != "consistency"


def tag_dictionary(train, target: str, min_count: int):
    """train --tag-dictionary N: the labels each word of the word column (``word``, else
    the first column that is not ``target``) seen at least N times took in ``train``."""
    from fstcrf.corpus.tag_dictionary import TagDictionary

    column = "word" if "word" in train.column_names else next(c for c in train.column_names if c != target)
    dictionary = TagDictionary.of(train.sentences, target, min_count, column)
    LOG.info(
        "tag dictionary: %d words of column %s seen at least %d times keep to their training labels "
        "(tag --tag-dictionary applies it)",
        len(dictionary.words),
        column,
        min_count,
    )
    return dictionary


def _check_document_options(args: argparse.Namespace) -> None:
    """Warn for --document-method and --jackknife-folds without --consistency; refuse
    --init with a two-stage method (it warm-starts one model)."""
    if not args.consistency:
        for option, given in (
            ("--document-method", args.document_method != DEFAULT_DOCUMENT_METHOD),
            ("--jackknife-folds", args.jackknife_folds != DEFAULT_JACKKNIFE_FOLDS),
        ):
            if given:
                LOG.warning("%s is ignored: it applies to --consistency, which is not given", option)
        return
    if args.document_method == "consistency":
        if args.jackknife_folds != DEFAULT_JACKKNIFE_FOLDS:
            LOG.warning("--jackknife-folds is ignored: --document-method consistency trains no two-stage tagger")
    elif args.init:
        raise FstcrfError(
            f"--init warm-starts one model; --consistency --document-method {args.document_method} trains "
            "a two-stage tagger (give --document-method consistency to warm-start the local model)"
        )


def _train_two_stage(args: argparse.Namespace, train, dev) -> int:
    """train --consistency with --document-method two-stage or both: the local model, its
    jackknife, the second stage and (both) the penalties, saved as one two-stage file."""
    from fstcrf.document.two_stage import TwoStageTagger

    both = args.document_method == "both"
    tagger = TwoStageTagger(
        _model_from_args(args, train.column_names),
        folds=args.jackknife_folds,
        progress=not args.quiet,
        consistency_scale=TWO_STAGE_CONSISTENCY_SCALE if both else None,
        block_size=TWO_STAGE_BLOCK_SIZE if both else DEFAULT_BLOCK_SIZE,
    )
    LOG.info(
        "training a two-stage tagger%s on %s (%d sentences, %d tokens): the local model, its "
        "%d-fold jackknife, the second stage%s",
        " with label-consistency penalties" if both else "",
        args.train,
        len(train),
        train.num_tokens,
        args.jackknife_folds,
        f", selecting each stage on {args.dev}" if dev else "",
    )
    try:
        with phase("train"):
            tagger.fit(train, target=args.target, dev=dev)
    except KeyboardInterrupt:
        if hasattr(tagger, "first_"):
            _save_interrupted_first_stage(tagger, args, train)
        raise
    for stage in (tagger.first_, tagger.second_):
        _record_decoding(stage, tagger.first_.template, args)
    with phase("write"):
        tagger.save(args.output)
    second = tagger.second_
    report_kept(
        tagger,
        "the second stage's weights of iteration %d of %d; %d + %d features; two-stage tagger written to %s",
        second.best_iteration_,
        second.n_iter_,
        len(tagger.first_.weights_),
        len(second.weights_),
        args.output,
    )
    return 0


def _save_interrupted_first_stage(tagger, args: argparse.Namespace, train) -> None:
    """Ctrl-C before the second stage: the first stage (its best weights so far if it was
    interrupted), with the penalties at scale 1, saved as a single model."""
    from fstcrf.document.decode import estimate_consistency

    first = tagger.first_
    first.consistency_ = estimate_consistency(train, args.target)
    _record_decoding(first, first.template, args)
    with phase("write"):
        first.save(args.output)
    LOG.warning(
        "interrupted before the second stage: wrote the local model (iteration %d of %d, with the "
        "consistency penalties) to %s as a single model, as --document-method consistency would",
        first.best_iteration_,
        first.n_iter_,
        args.output,
    )


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
    keep = only_types(args)
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
    dev = read_corpus(args.dev, args.columns) if args.dev else None
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


def _jackknife(args: argparse.Namespace) -> int:
    from fstcrf.model.compose import jackknife
    from fstcrf.corpus.conll import write_conll

    corpus = read_corpus(args.train, args.columns)
    corpus.column(args.target)  # a missing column named with the file, before the folds (which have none)
    _check_training_labels(corpus, args.target)
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


def _read_dev(args: argparse.Namespace, keep: set[str] | None):
    """The --dev corpus with --only-types applied, or None without --dev."""
    return restrict_types(read_corpus(args.dev, args.columns), args.target, keep) if args.dev else None


def _model_from_args(args: argparse.Namespace, columns: Sequence[str]):
    """An unfitted ChainCRF configured by the training options, for training data with
    ``columns`` (they choose the default template)."""
    from fstcrf.features.defaults import template_feature_set, template_sigma
    from fstcrf.features.template import load_template
    from fstcrf.features.template import TEMPLATES
    from fstcrf.model.chain import ChainCRF

    template = args.template or _default_template(args.target, columns)
    template = template if template in TEMPLATES else load_template(template)
    return ChainCRF(
        template=template,
        order=args.order,
        algorithm=args.algorithm,
        sigma=template_sigma(template, DEFAULT_SIGMA) if args.sigma is None and args.c2 is None else sigma_of(args),
        c1=args.c1,
        transitions=args.transitions,
        min_freq=args.min_freq,
        max_iter=args.max_iter,
        features=args.features or template_feature_set(template, args.algorithm),
        min_count=args.min_count,
        threads=args.threads,
        grammar=args.grammar,
        grammar_params=grammar_params(args),
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
        algorithm_params=_lbfgs_params(args),
    )


def _lbfgs_params(args: argparse.Namespace) -> dict | None:
    """The algorithm_params of --lbfgs-memory and --lbfgs-precision: None at their
    defaults (so the model file is as without the options); FstcrfError for a learner
    other than L-BFGS."""
    params = {}
    if args.lbfgs_memory != LBFGS_MEMORY:
        params["memory"] = args.lbfgs_memory
    if args.lbfgs_precision != "double":
        params["history"] = args.lbfgs_precision
    if params and args.algorithm not in ("lbfgs", "mce-f"):
        options = " and ".join(f"--lbfgs-{'precision' if name == 'history' else name}" for name in params)
        raise FstcrfError(f"{options} applies to --algorithm lbfgs or mce-f, not {args.algorithm}")
    return params or None


def _default_template(target: str, columns: Sequence[str]) -> str:
    """The default template's name for the target and the training file's columns (logged)."""
    from fstcrf.features.defaults import default_template

    name = default_template(target, columns)
    LOG.info(
        "template %s, the default for target %s with the columns %s (see --template)", name, target, ",".join(columns)
    )
    return name


def sigma_of(args: argparse.Namespace) -> float:
    """The Gaussian prior's sigma from --sigma or CRFsuite's --c2 = 1 / (2 sigma^2) (c2 = 0: no prior)."""
    if args.c2 is None:
        return DEFAULT_SIGMA if args.sigma is None else args.sigma
    if args.sigma is not None:
        raise FstcrfError("--sigma and --c2 both set the L2 prior (c2 = 1 / (2 sigma^2)); give one of them")
    return math.inf if args.c2 == 0 else math.sqrt(0.5 / args.c2)


def _warm_start(args: argparse.Namespace):
    """The model of --init (None without it); args take its order and its reading of
    lower labels, which a warm start keeps."""
    if not args.init:
        return None
    from fstcrf.model.chain import load_model

    init = load_model(args.init)
    args.order, args.reads, args.no_read_transitions = init.order, init.reads, not init.read_transitions
    return init


def _chunk_labelled(labels: Iterable[str], args: argparse.Namespace) -> bool:
    """Whether every one of ``labels`` is a chunk label; FstcrfError if not and
    --default-decode mbr or --default-mbr-temperature is given (MBR decodes chunks)."""
    from fstcrf.engine.chunks import parse_chunk_label

    plain = sorted(label for label in labels if parse_chunk_label(label) is None)
    given = [
        option
        for option, value in (
            ("--default-decode mbr", args.default_decode == "mbr"),
            ("--default-mbr-temperature", args.default_mbr_temperature is not None),
        )
        if value
    ]
    if plain and given:
        raise FstcrfError(
            f"{given[0]} applies to MBR decoding, which decodes chunks, and the {args.target} labels "
            f"{', '.join(plain[:5])} are not chunk labels (B-X, I-X, E-X, S-X or O)"
        )
    return not plain


def _record_decoding(model, template, args: argparse.Namespace) -> None:
    """Set the default decoding (``decoding_``) and MBR temperature (``mbr_temperature_``)
    ``model`` (a ChainCRF) trained with ``template`` names: --default-decode and
    --default-mbr-temperature, else for chunk labels the template's choices on the
    development sets, else Viterbi (and 1)."""
    from fstcrf.features.defaults import template_decoding, template_mbr_temperature

    chunked = _chunk_labelled(model.labels_, args)
    decoding = template_decoding(template) if chunked else "viterbi"
    temperature = template_mbr_temperature(template) if chunked else 1.0
    model.decoding_ = decoding if args.default_decode is None else args.default_decode
    model.mbr_temperature_ = temperature if args.default_mbr_temperature is None else args.default_mbr_temperature


def _save_trained(model, args: argparse.Namespace) -> None:
    """Write the trained model to -o, and log what was kept; a run stopped (Ctrl-C,
    SIGTERM) before its first iteration ended writes nothing and ends as interrupted."""
    if model.interrupted_ and model.n_iter_ == 0:
        LOG.warning("interrupted before the first iteration ended; no model written to %s", args.output)
        raise KeyboardInterrupt
    _record_decoding(model, model.template, args)
    with phase("write"):
        model.save(args.output)
    report_kept(
        model,
        "the weights of iteration %d of %d; %d features; model written to %s",
        model.best_iteration_,
        model.n_iter_,
        len(model.weights_),
        args.output,
    )


def add_parsers(commands) -> None:
    """Register fstcrf train and fstcrf jackknife on the subparsers ``commands``."""
    train = add_command(
        commands,
        "train",
        "train a CRF tagger on a CoNLL file",
        _train,
        inputs=("train", "dev", "init", "log", "template", "grammar", "checkpoint"),
        outputs=("output", "checkpoint"),
    )
    train.add_argument(
        "train", nargs="?", help="training file (CoNLL columns, blank line between sentences); omitted with --log"
    )
    train.add_argument("-o", "--output", required=True, help="model file to write")
    add_training_arguments(train)
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
    add_dask_dashboard(train)
    train.add_argument(
        "--document-method",
        choices=DOCUMENT_METHODS,
        default=DEFAULT_DOCUMENT_METHOD,
        help="with --consistency: consistency stores the penalties in the local model (one "
        "model file); two-stage trains Krishnan & Manning's two-stage tagger (the local model, "
        "its jackknife and a second stage reading document and corpus majorities of the "
        "first stage's labels); both also stores the penalties on the second stage with the "
        f"decoding settings chosen on CoNLL-2003 eng.testa (penalty scale {TWO_STAGE_CONSISTENCY_SCALE:g}, "
        f"blocks of {TWO_STAGE_BLOCK_SIZE} tokens). two-stage and both write one two-stage file "
        "(default %(default)s)",
    )
    train.add_argument(
        "--tag-dictionary",
        type=POSITIVE,
        default=None,
        metavar="N",
        help="store in the model the labels each word (of the word column) seen at least N times took "
        "in training; fstcrf tag --tag-dictionary keeps those words to them (default: none)",
    )
    train.add_argument(
        "--jackknife-folds",
        type=whole_number(2),
        default=DEFAULT_JACKKNIFE_FOLDS,
        metavar="N",
        help="with --consistency and --document-method two-stage or both: folds of the local "
        "model's jackknife that the second stage trains on (N more trainings of the local "
        "model) (default %(default)s)",
    )
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

    jackknife = add_command(
        commands,
        "jackknife",
        "replace a column by k-fold held-out predictions (to train a model that reads a lower tagger's output)",
        _jackknife,
        inputs=("train", "log", "template", "grammar"),
        outputs=("output",),
    )
    jackknife.add_argument("train", help="CoNLL file")
    jackknife.add_argument("-o", "--output", required=True, help="CoNLL file to write")
    jackknife.add_argument("--folds", type=whole_number(2), default=5, help="number of folds (default %(default)s)")
    add_training_arguments(jackknife)
