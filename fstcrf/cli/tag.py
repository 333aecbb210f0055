"""``fstcrf tag``: the best labels (in batches, so that memory stays bounded, read and
written in C in threads of their own while batches are tagged), the n best, samples,
marginals, and tagging on a Dask cluster."""

from __future__ import annotations

import argparse
import logging
import math
from functools import partial
from typing import TYPE_CHECKING

from fstcrf.cli.common import infeasible_located
from fstcrf.cli.decoding import (
    batches_for,
    check_two_stage_options,
    grammar_options,
    joint_predict_with_progress,
    predict_with_progress,
    read_for,
    reading_columns,
    resolve_decode,
    warn_ignored_decoding_options,
)
from fstcrf.cli.options import POSITIVE, add_command, add_dask_dashboard, add_decoding_arguments, temperature
from fstcrf.errors import CompositionError, FstcrfError, LabelError
from fstcrf.files import write_atomically
from fstcrf.model.decoders import (
    is_two_stage,
    joint_predicted_entities,
    load_decoder,
    predicted_entities,
    predicted_marginals,
)
from fstcrf.phases import phase

if TYPE_CHECKING:
    from fstcrf.engine.spans import Entity

LOG = logging.getLogger("fstcrf")


#: Tokens ``fstcrf tag`` reads, tags and writes at a time: its memory is bounded by a batch
#: (a whole document with --nonlocal), whatever the input's size.
TAG_BATCH_TOKENS = 20_000


def _tag(args: argparse.Namespace) -> int:
    from fstcrf.model.compose import JointModel
    from fstcrf.progress import Progress

    with phase("load"):
        model = load_decoder(args.model)
    composed = isinstance(model, JointModel)
    resolve_decode(model, args, composed)
    warn_ignored_decoding_options(args, composed=composed)
    check_two_stage_options(model, args)
    _check_tag_options(args, composed)
    if composed and args.entity_probabilities:
        model.space.check_product()  # before any work: the span probabilities are computed on it
    if args.dask is not None:
        return _tag_on_dask(model, composed, args)
    if args.dask_dashboard is not None:
        raise FstcrfError("--dask-dashboard applies to --dask local:N")
    if args.sample or args.with_probability:
        if len(args.input) != 1:
            raise FstcrfError("--sample tags one input file at a time")
        return _tag_samples(model, read_for(model, args.input[0], columns=args.columns, separator=args.separator), args)
    if args.input.count("-") > 1:
        raise FstcrfError("standard input (-) can be read once")
    options = {} if composed else grammar_options(args)
    tagged = {"sentences": 0}

    def write(stream) -> None:
        from fstcrf.cli.pipeline import overlapped
        from fstcrf.corpus.scanned import tagged_lines
        from fstcrf.engine.mbr import StreamThreshold

        threshold = StreamThreshold()  # MBR's for batches a pause of the input ends

        batches = (
            batch
            for path in args.input
            for batch in batches_for(
                model,
                path,
                columns=args.columns,
                separator=args.separator,
                # a two-stage tagger's corpus majorities are over a whole file
                batch_tokens=None if is_two_stage(model) else TAG_BATCH_TOKENS,
                whole_documents=bool(args.nonlocal_model),
            )
        )

        def finish(batch, columns) -> None:
            stream.write(tagged_lines(batch, columns, args.output))
            stream.flush()
            tagged["sentences"] += len(batch)
            bar.update(batch.num_tokens)

        with Progress(None, "tagging", unit="tokens", enabled=not args.quiet) as bar:
            if _decodes_apart(model, args, options):
                from fstcrf.engine.threads import blas_single_threaded

                if args.threads is not None:
                    model.threads = args.threads
                with blas_single_threaded():  # as in model.predict: no BLAS threads beside fstcrf's
                    decode = partial(_best_labels, model, args=args, stream=threshold)
                    overlapped(batches, decode, finish, _encoded(model, args))
            else:
                overlapped(
                    batches, lambda batch: _tag_columns(model, batch, args, composed, options, threshold), finish
                )

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


def _decodes_apart(model, args: argparse.Namespace, options: dict) -> bool:
    """Whether ``fstcrf tag`` writes a single model's best (or MBR) labels alone,
    unconstrained: then the features of the next batch are extracted in a thread of
    their own while this batch is decoded (:func:`_encoded`, :func:`_best_labels`)."""
    from fstcrf.model.chain import ChainCRF

    return (
        isinstance(model, ChainCRF)
        and not options
        and args.nbest is None
        and not args.marginals
        and not args.entity_probabilities
        and not args.nonlocal_model
    )


def _encoded(model, args: argparse.Namespace):
    """The function that encodes a batch's sentences with ``model``'s features, with
    the batch and the sentences' constraints (None for a batch without sentences)."""

    def prepare(batch):
        if not batch.sentences:
            return None
        constraints = input_constraints(model, batch, args)
        return batch, model.encode(batch.sentences), constraints

    return prepare


def _mbr_threshold(args: argparse.Namespace, batch_stalled: bool, stream) -> float | None:
    """The MBR threshold of a batch: --mbr-threshold, else for a batch a pause of the input
    ended ``stream``'s (a StreamThreshold), else None (searched over the batch)."""
    if args.mbr_threshold is None and batch_stalled:
        return stream.threshold()
    return args.mbr_threshold


def _best_labels(model, prepared, args: argparse.Namespace, stream) -> list[list[list[str]]]:
    """The best labels [1][B][T] of a batch's sentences (``prepared`` by :func:`_encoded`),
    what model.predict gives them, or with --decode mbr what model.predict_mbr gives them
    (counted in ``stream``, a StreamThreshold)."""
    if prepared is None:
        return [[]]
    batch, encoded, constraints = prepared
    with infeasible_located(batch):
        if args.decode == "mbr":
            threshold = _mbr_threshold(args, getattr(batch, "stalled", False), stream)
            return [model.decode_mbr(encoded, threshold, args.mbr_temperature, stream, constraints=constraints)]
        return [model.decode(encoded, constraints=constraints)]


def input_constraints(model, corpus, args: argparse.Namespace):
    """--constraints and --tag-dictionary: each sentence's constraints (a composed model:
    {component: one per sentence}), or None without either option."""
    from fstcrf.model.compose import JointModel

    if args.constraints is None and not args.tag_dictionary:
        return None
    if isinstance(model, JointModel):
        given = {}
        for item in args.constraints.split(","):
            target, _, column = item.rpartition("=")
            target = target or column
            if target in given:
                raise CompositionError(f"--constraints {args.constraints}: the component {target} is named twice")
            if target not in model.targets and column in corpus.column_names:  # (else the column is named)
                raise CompositionError(
                    f"--constraints {args.constraints}: {args.model} has no component predicting {target!r}; "
                    f"name one of {', '.join(model.targets)} (TARGET=COLUMN, or COLUMN alone for the component "
                    "predicting it)"
                )
            labels = model.components[model.targets.index(target)].labels_ if target in model.targets else None
            given[target] = column_constraints(corpus, column, labels)
        return given
    labels = (model.second_ if is_two_stage(model) else model).labels_
    constraints = column_constraints(corpus, args.constraints, labels) if args.constraints is not None else None
    if args.tag_dictionary:
        dictionary = getattr(model.first_ if is_two_stage(model) else model, "tag_dictionary_", None)
        if dictionary is None:
            raise FstcrfError(f"{args.model} stores no tag dictionary (train it with --tag-dictionary N)")
        constraints = dictionary.constraints(corpus.sentences, constraints)
    return constraints


def column_constraints(corpus, column: str, labels) -> list:
    """The constraints of each sentence read from its ``column`` in the partial-label
    convention ("?", "A|B", a label); LabelError naming FILE:LINE of a value that is
    malformed or names a label not among ``labels`` (when given)."""
    from fstcrf.corpus.labels import partial_label_constraints, token_location

    if column not in corpus.column_names:
        raise FstcrfError(
            f"--constraints {column}: the input has no column {column!r} (it is read as "
            f"{','.join(corpus.column_names)}; name its columns with --columns)"
        )

    def refusal(b: int, token: int, problem: str) -> LabelError:
        return LabelError(f"{token_location(corpus, b, token)}: --constraints {column}: {problem}")

    result = []
    for b, sentence in enumerate(corpus.sentences):
        try:
            constraints = partial_label_constraints(sentence[column])
        except LabelError as error:
            raise refusal(b, error.position, str(error)) from None
        named = {} if constraints is None or labels is None else {**constraints.allowed, **constraints.fixed}
        for token, values in named.items():
            unknown = sorted(({values} if isinstance(values, str) else set(values)) - set(labels))
            if unknown:
                raise refusal(b, token, f"the label {unknown[0]!r} is not among the model's ({', '.join(labels)})")
        result.append(constraints)
    return result


def _check_tag_options(args: argparse.Namespace, composed: bool) -> None:
    """Refuse --nbest, --marginals and --entity-probabilities with a composed model or with
    options they exclude."""
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
    if args.temperature != 1.0 and (composed or not args.entity_probabilities):
        LOG.warning("--temperature is ignored: it applies to --entity-probabilities of a single model")
    if (args.constraints is not None or args.tag_dictionary) and args.nonlocal_model:
        raise FstcrfError(
            "--constraints and --tag-dictionary apply to the chain's decoders; --nonlocal samples another "
            "distribution, so give one of them"
        )
    if args.tag_dictionary and composed:
        raise FstcrfError("--tag-dictionary applies to single models; a composed model's components take --constraints")
    if args.entity_probabilities and args.nonlocal_model:
        raise FstcrfError(
            "--entity-probabilities are exact under the model's chain distribution; --nonlocal "
            "decodes another distribution (sampled), so give one of them"
        )
    if args.decode == "mbr" and (args.nbest is not None or args.sample or args.with_probability):
        raise FstcrfError("--decode mbr writes one label sequence; --nbest and --sample are other outputs")
    if args.nbest is not None and (args.marginals or args.entity_probabilities):
        option = "--marginals" if args.marginals else "--entity-probabilities"
        raise FstcrfError(f"--nbest and {option} are different outputs; give one of them")


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
            ("--entity-probabilities", args.entity_probabilities),
            ("--nonlocal", args.nonlocal_model),
            ("--decode mbr", args.decode == "mbr"),
            ("--constraints", args.constraints is not None),
            ("--tag-dictionary", args.tag_dictionary),
            ("standard input", "-" in args.input),
        )
        if given
    ]
    if refused:
        raise FstcrfError(
            f"tagging on Dask (--dask) writes the best labels of a single model read from files; "
            f"it does not take {', '.join(refused)}"
        )
    names, allow_missing = reading_columns(model, args.columns)
    options = grammar_options(args)
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


def _tag_columns(
    model, batch, args: argparse.Namespace, composed: bool, options: dict, stream
) -> list[list[list[str]]]:
    """The columns ``fstcrf tag`` appends to a batch of sentences [columns][B][T] (``options``:
    :func:`grammar_options`'s; ``stream``: the StreamThreshold of --decode mbr)."""
    constraints = input_constraints(model, batch, args)
    whole = max(1, len(batch))  # one call per batch: an infeasible sentence's index is the batch's
    with infeasible_located(batch):
        if args.nbest is not None:
            extra = _nbest_columns(model, batch, args, constraints)
        elif composed:
            extra = joint_predict_with_progress(model, batch, args, whole, constraints=constraints)
        else:
            threshold = _mbr_threshold(args, getattr(batch, "stalled", False), stream)
            extra = [
                predict_with_progress(
                    model, batch, args, options, whole, threshold=threshold, stream=stream, constraints=constraints
                )
            ]
        if args.marginals:
            extra.append(_marginal_column(model, batch, extra[0], options, constraints))
        if args.entity_probabilities and composed:
            extra += _joint_entity_columns(model, batch, extra, constraints)
        elif args.entity_probabilities:
            extra.append(_entity_probability_column(model, batch, extra[0], options, args.temperature, constraints))
    return extra


#: The label and probability written for a rank of --nbest beyond the
#: sentence's number of label sequences (CoNLL-U's empty value).
MISSING_RANK = "_"


def _nbest_columns(model, corpus, args: argparse.Namespace, constraints=None) -> list[list[list[str]]]:
    """--nbest K: K label columns (best first), then K columns holding each rank's
    path probability, repeated on every token [2K][B][T]."""
    if args.threads is not None:
        model.threads = args.threads
    k = args.nbest
    labels, probabilities = model.kbest(corpus, k, constraints=constraints)  # [B][r][T], [B, K]
    label_columns: list[list[list[str]]] = [[] for _ in range(k)]
    probability_columns: list[list[list[str]]] = [[] for _ in range(k)]
    for sentence, ranked, row in zip(corpus.sentences, labels, probabilities):
        for rank in range(k):
            found = rank < len(ranked)
            label_columns[rank].append(ranked[rank] if found else [MISSING_RANK] * len(sentence))
            probability_columns[rank].append([f"{row[rank]:.6g}"] * len(sentence))
    return label_columns + probability_columns


def _marginal_column(model, corpus, predicted: list[list[str]], options: dict, constraints=None) -> list[list[str]]:
    """--marginals: p(predicted label at each token | sentence), 4 decimals [B][T]
    (under --grammar when it is given: ``options`` are :func:`grammar_options`'s)."""
    marginals = model.predict_marginals(corpus, options.get("grammar"), options.get("params"), constraints)  # [B][T, L]
    return [[f"{p:.4f}" for p in row] for row in predicted_marginals(model.labels_, marginals, predicted)]


#: The --entity-probabilities value of a token outside every predicted entity.
OUTSIDE_ENTITIES = "_"


def _entity_probability_column(
    model, corpus, predicted: list[list[str]], options: dict, temperature: float, constraints=None
) -> list[list[str]]:
    """--entity-probabilities: on every token of a predicted entity (chunk), the exact
    probability (at ``temperature``) that the output has that entity, 4 decimals; _
    elsewhere [B][T]."""
    entities = predicted_entities(
        model, corpus.sentences, predicted, options.get("grammar"), options.get("params"), temperature, constraints
    )
    return _spread_over_tokens(predicted, entities)


def _joint_entity_columns(model, corpus, predicted: list[list[list[str]]], constraints=None) -> list[list[list[str]]]:
    """--entity-probabilities of a composed model: a column per component with chunk
    labels (see _entity_probability_column), ``predicted`` holding every component's labels."""
    entities = joint_predicted_entities(model, corpus.sentences, predicted, constraints)
    return [_spread_over_tokens(predicted[k], found) for k, found in entities.items()]


def _spread_over_tokens(predicted: list[list[str]], entities: list[list[Entity]]) -> list[list[str]]:
    """Each entity's probability on its tokens, 4 decimals, _ elsewhere [B][T]."""
    column = []
    for labels, found in zip(predicted, entities):
        cells = [OUTSIDE_ENTITIES] * len(labels)
        for entity in found:
            cells[entity.first : entity.last + 1] = [f"{entity.probability:.4f}"] * (entity.last - entity.first + 1)
        column.append(cells)
    return column


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
    constraints = input_constraints(model, corpus, args)
    with infeasible_located(corpus):
        labels, log_p = model.sample(corpus, count, args.seed, constraints)  # [K][B][T], [K, B]
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


def _separator(text: str) -> str:
    """The field separator of --separator: "\\t" or "tab" means a tab."""
    separator = "\t" if text in ("\\t", "tab") else text
    if not separator:
        raise argparse.ArgumentTypeError("the separator must not be empty")
    return separator


def add_parsers(commands) -> None:
    """Register fstcrf tag on the subparsers ``commands``."""
    tag = add_command(
        commands,
        "tag",
        "append a predicted label column (one per component of a composed model) to a CoNLL file",
        _tag,
        inputs=("model", "input", "grammar"),
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
    add_dask_dashboard(tag)
    add_decoding_arguments(tag)
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
        "--entity-probabilities",
        action="store_true",
        help="models with chunk labels (IOB1, IOB2, BIOES): after the predicted label "
        "(and --marginals), a column holding, on every token of each predicted entity, the "
        "exact probability that the output has that entity (same span, same type), 4 "
        "decimals; _ on tokens outside entities. A composed model gets one such column per "
        "component with chunk labels, after the label columns, from the joint lattice "
        "(default: off)",
    )
    tag.add_argument(
        "--temperature",
        type=temperature,
        default=1.0,
        metavar="T",
        help="with --entity-probabilities: divide every score by T before computing them "
        "(fstcrf calibrate MODEL DEV prints the T that calibrates the model on held-out "
        "data); the predicted labels do not change (default: 1)",
    )
    tag.add_argument(
        "--constraints",
        default=None,
        metavar="COLUMN",
        help="decode under the labels the input's COLUMN gives, in the partial-label convention: "
        "a label fixes the token, A|B allows A or B, ? leaves it free; a partly annotated file is "
        "completed around what it holds (every decoder: best labels, MBR, --nbest, --sample, "
        "--marginals, --entity-probabilities). A composed model takes COLUMN (the component that "
        "predicts a column of that name) or TARGET=COLUMN, comma-separated (default: none)",
    )
    tag.add_argument(
        "--tag-dictionary",
        action="store_true",
        help="keep each word the model's tag dictionary knows (train --tag-dictionary N) to the labels "
        "it took in training; with --constraints, tokens the column fixes or restricts keep those "
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
