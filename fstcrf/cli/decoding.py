"""Decoding for ``fstcrf tag`` and ``fstcrf eval``: a model, a composed model or a
two-stage tagger loaded, a CoNLL file read with the columns it was trained on, its
labels predicted under the decoding options, and a warning for each option the
model does not use."""

from __future__ import annotations

import argparse
import logging

from fstcrf.cli.common import grammar_params, check_grammar_options
from fstcrf.cli.options import DECODING_DEFAULTS
from fstcrf.document.settings import DEFAULT_BLOCK_SIZE, NONLOCAL_OPTIONS
from fstcrf.errors import CompositionError, FstcrfError, InfeasibleError
from fstcrf.model.decoders import default_decoding, file_columns, is_two_stage, model_components
from fstcrf.phases import phase

LOG = logging.getLogger("fstcrf")


def check_two_stage_options(model, args: argparse.Namespace) -> None:
    """Refuse, for a two-stage tagger, the options that apply to single models only."""
    if not is_two_stage(model):
        return
    refused = [
        option
        for option, given in (
            ("--nbest", getattr(args, "nbest", None) is not None),
            ("--marginals", getattr(args, "marginals", False)),
            ("--entity-probabilities", getattr(args, "entity_probabilities", False)),
            ("--sample", getattr(args, "sample", None) or getattr(args, "with_probability", False)),
            ("--dask", getattr(args, "dask", None) is not None),
            ("--grammar", bool(args.grammar)),
        )
        if given
    ]
    if refused:
        raise FstcrfError(
            f"{args.model} is a two-stage tagger (from train --consistency): it writes its best labels, "
            "with --decode mbr its F1-optimal ones, with --nonlocal consistency those decoded under its "
            f"penalties; it does not take {', '.join(refused)} "
            "(train with --document-method consistency for a single model that does)"
        )


def resolve_decode(model, args: argparse.Namespace, composed: bool) -> None:
    """Set --decode, when it is not given, to the model's default decoding (a two-stage
    tagger's: its second stage's); Viterbi for a composed model and with the options
    MBR does not combine with (--nbest, --sample, --with-probability, --nonlocal, --dask)."""
    if args.decode is not None:
        return
    excluded = (
        composed
        or args.nonlocal_model
        or getattr(args, "nbest", None) is not None
        or getattr(args, "sample", None)
        or getattr(args, "with_probability", False)
        or getattr(args, "dask", None) is not None
    )
    args.decode = "viterbi" if excluded else default_decoding(model)


def warn_ignored_decoding_options(args: argparse.Namespace, composed: bool) -> None:
    """Warn once for each decoding option the model does not use."""
    check_grammar_options(args)
    _warn_ignored_nonlocal_options(args, composed)
    given = [name for name, default in DECODING_DEFAULTS.items() if getattr(args, name) != default]
    _check_mbr_options(args, composed, given)
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


def _check_mbr_options(args: argparse.Namespace, composed: bool, given: list[str]) -> None:
    """Refuse --decode mbr with a composed model or --nonlocal; warn for --mbr-threshold
    and --mbr-temperature without it, and for --on-infeasible with it."""
    if args.decode != "mbr":
        for name in ("mbr_threshold", "mbr_temperature"):
            if name in given:
                LOG.warning("--%s is ignored: it applies to --decode mbr", name.replace("_", "-"))
        return
    if composed:
        raise CompositionError(
            f"--decode mbr applies to single models; {args.model} is a composed model (decode it jointly, "
            "and read each component's chunk probabilities with --entity-probabilities)"
        )
    if args.nonlocal_model:
        raise FstcrfError("--decode mbr and --nonlocal are different decoders; give one of them")
    if "on_infeasible" in given:
        LOG.warning("--on-infeasible is ignored with --decode mbr: a sentence the grammar cannot fit stops it")


def _warn_ignored_nonlocal_options(args: argparse.Namespace, composed: bool) -> None:
    """Refuse --nonlocal with a composed model; warn for sampler options given without it."""
    if args.nonlocal_model and composed:
        raise FstcrfError(f"--nonlocal applies to single models; {args.model} is a composed model")
    if not args.nonlocal_model:
        given = [option for option, name, default in NONLOCAL_OPTIONS if getattr(args, name) != default]
        for option in given:
            LOG.warning("%s is ignored: it applies to decoding with --nonlocal, which is not given", option)


def grammar_options(args: argparse.Namespace) -> dict:
    """predict() keyword arguments from --grammar, --define and --on-infeasible."""
    if not args.grammar:
        return {}
    from fstcrf.grammar import load_grammar

    return {"grammar": load_grammar(args.grammar), "params": grammar_params(args), "on_infeasible": args.on_infeasible}


def read_for(model, path: str, gold_required: bool = False, columns: str | None = None, separator: str | None = None):
    """A CoNLL file read whole with the columns a model was trained on (see
    :func:`batches_for`)."""
    (corpus,) = batches_for(model, path, gold_required, columns, separator)
    return corpus


def batches_for(
    model,
    path: str,
    gold_required: bool = False,
    columns: str | None = None,
    separator: str | None = None,
    batch_tokens: int | None = None,
    whole_documents: bool = False,
):
    """The sentences of a CoNLL file ("-": standard input), read in C, in batches of about
    ``batch_tokens`` tokens (None: one batch), read with the columns a model or a
    joint model was trained on (the predicted columns may be missing unless
    ``gold_required``), or with the comma-separated names ``columns``, which must
    include every column the model was trained on but the predicted ones.  Warns
    when the file has no sentences, and when it lacks the predicted columns while
    a column read as an observation holds mostly the model's labels (e.g. a
    word+chunk file given to a word,pos,chunk model)."""
    from fstcrf.corpus.scanned import iter_scanned

    components = model_components(model)
    trained, targets = file_columns(model)
    names, allow_missing = reading_columns(model, columns, gold_required)
    batches = iter_scanned(
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
        _warn_if_labels_read(first, components, trained, path)
    yield first
    yield from batches


def reading_columns(model, columns: str | None, gold_required: bool = False) -> tuple:
    """(the column names to read an input with, the columns that may be missing): the
    comma-separated ``columns``, all required; else the columns the model (or the
    first model of a joint model) was trained on, the predicted ones optional unless
    ``gold_required``."""
    if columns is not None:
        return columns, ()
    names, predicted = file_columns(model)
    return names, () if gold_required else predicted


def _warn_if_labels_read(corpus, components: list, columns: tuple[str, ...], path: str) -> None:
    """Warn when a file lacking the predicted columns has a column read as an observation
    that holds mostly the models' labels (a layout mistake); ``columns``: those the
    model was trained on."""
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


def predict_with_progress(
    model,
    corpus,
    args: argparse.Namespace,
    options: dict,
    chunk: int = 2000,
    threshold: float | None = None,
    stream=None,
    constraints=None,
) -> list[list[str]]:
    """Labels [B][T] of a single model, with a progress bar; ``options`` are
    :func:`grammar_options`'s, loaded once per command.  --decode mbr uses ``threshold``
    (default --mbr-threshold) and counts its chunks in ``stream`` (a StreamThreshold)
    when it is given; ``constraints``: one Constraints (or None) per sentence."""
    from fstcrf.progress import Progress

    if args.threads is not None:
        model.threads = args.threads
    if args.nonlocal_model:
        return _predict_nonlocal(model, corpus, args)
    if is_two_stage(model):
        with phase("decode"):
            if args.decode == "mbr":
                return model.predict_mbr(corpus, args.mbr_threshold, args.mbr_temperature, constraints=constraints)
            return model.predict(corpus, constraints=constraints)
    if args.decode == "mbr":  # without a threshold, it is chosen over the whole batch
        return model.predict_mbr(
            corpus.sentences,
            args.mbr_threshold if threshold is None else threshold,
            options.get("grammar"),
            options.get("params"),
            args.mbr_temperature,
            stream,
            constraints=constraints,
        )
    predictions = []
    sentences = corpus.sentences
    with Progress(
        len(sentences), "tagging", unit="sentences", enabled=len(sentences) > chunk and not args.quiet
    ) as bar:
        for first in range(0, len(sentences), chunk):
            batch = sentences[first : first + chunk]
            given = None if constraints is None else constraints[first : first + chunk]
            try:
                predictions += model.predict(batch, **options, constraints=given)
            except InfeasibleError as error:  # its sentences counted in the whole corpus, not the chunk
                if error.sentence is not None:
                    error.sentence += first
                error.sentences = [sentence + first for sentence in error.sentences]
                raise
            bar.update(len(batch))
    return predictions


def _predict_nonlocal(model, corpus, args: argparse.Namespace) -> list[list[str]]:
    """Labels [B][T] decoded under the --nonlocal factors (of a two-stage tagger: its
    second stage's, at its stored block size unless --block-size is given)."""
    from fstcrf.document.decode import decode_documents, model_factors

    if args.grammar:
        raise FstcrfError("--nonlocal decodes with the model's own lattice; --grammar cannot be combined with it")
    sampling = (args.sampler, args.sweeps, args.t_start, args.t_end)
    if is_two_stage(model):
        labels, result = model.predict_nonlocal(
            corpus, *sampling, args.block_size, args.seed, args.consistency_scale, progress=not args.quiet
        )
    else:
        factors = model_factors(model, [args.nonlocal_model], args.consistency_scale)
        block_size = DEFAULT_BLOCK_SIZE if args.block_size is None else args.block_size
        labels, result = decode_documents(
            model, corpus, factors, *sampling, block_size, args.seed, progress=not args.quiet
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


def joint_predict_with_progress(
    joint, corpus, args: argparse.Namespace, chunk: int = 2000, constraints=None
) -> list[list[list[str]]]:
    """[components][sentences][tokens] labels of a composed model, with a progress bar;
    ``constraints``: {component: one Constraints (or None) per sentence}."""
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
            given = None if constraints is None else {k: c[first : first + chunk] for k, c in constraints.items()}
            with phase("decode"):  # every component's features, scores and the search
                decoded = joint.predict(batch, mode=args.mode, k=args.k, constraints=given)
            for column, labels in zip(predictions, decoded):
                column.extend(labels)
            bar.update(len(batch))
    return predictions
