"""The options that several commands take (training, decoding, budgets, the Dask
dashboard, -q), the number types of argparse, and :func:`add_command`, which
registers a command on the ``fstcrf`` parser."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable

from fstcrf.document.settings import (
    DEFAULT_BLOCK_SIZE,
    DEFAULT_SWEEPS,
    DEFAULT_T_END,
    DEFAULT_T_START,
    SAMPLERS,
    TWO_STAGE_BLOCK_SIZE,
    TWO_STAGE_CONSISTENCY_SCALE,
)
from fstcrf.engine.budget import (
    DEFAULT_MAX_EDGES,
    DEFAULT_MAX_RESOURCE_BYTES,
    DEFAULT_MAX_STATES,
    DEFAULT_MAX_WORK,
)
from fstcrf.errors import FstcrfError
from fstcrf.features.defaults import MBR_TEMPERATURE_RANGE
from fstcrf.files import check_output_path
from fstcrf.learn.settings import (
    BASELINES,
    DEFAULT_DRAWS,
    DEFAULT_LEARNING_RATE,
    DEFAULT_SIGMA,
    LBFGS_MEMORY,
    OBJECTIVES,
    SGD_LEARNING_RATE,
    STEPS,
    WEIGHTINGS,
)


def whole_number(minimum: int) -> Callable[[str], int]:
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


def real_number(low: float, high: float, closed: bool = True) -> Callable[[str], float]:
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


POSITIVE = whole_number(1)


def temperature(text: str) -> float:
    """An argparse type: a temperature in fstcrf.engine.tempering.TEMPERATURE_RANGE,
    every one of which decodes exactly (imported when a value is parsed, not at --help)."""
    from fstcrf.engine.tempering import TEMPERATURE_RANGE

    return real_number(*TEMPERATURE_RANGE)(text)


def add_quiet(parser: argparse.ArgumentParser) -> None:
    """-q/--quiet, accepted before and after the command (a command's copy only
    sets the option when given, so it cannot undo the main parser's)."""
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=False if parser.prog == "fstcrf" else argparse.SUPPRESS,
        help="only print warnings, errors and results (default: also report progress)",
    )


def add_command(
    commands, name: str, help: str, run, inputs: tuple[str, ...] = (), outputs: tuple[str, ...] = ()
) -> argparse.ArgumentParser:
    """Register the command ``name`` on the subparsers ``commands``: its parser (with -q),
    the function that runs it, and the names (dests) of the options holding the paths it
    reads (``inputs``: every file, folder, model, template or grammar it may read, see
    :func:`input_files`) and writes (``outputs``); :func:`check_outputs` checks them
    before the command runs.  An option may be both (a checkpoint read with --resume)."""
    sub = commands.add_parser(name, help=help, description=help)
    add_quiet(sub)
    sub.set_defaults(run=run, inputs=inputs, outputs=outputs, command_parser=sub)
    return sub


def option_values(args: argparse.Namespace, name: str) -> list[str]:
    """The paths held by the option ``name`` of ``args`` (a list flattened; none if unset)."""
    value = getattr(args, name, None)
    return list(value) if isinstance(value, list) else [] if value is None else [value]


def _template_files(value: str) -> list[str]:
    """A --template's file (unless a shipped template's name) and the gazetteer, cluster
    and embedding files it names."""
    from fstcrf.features.template import RESOURCE_KINDS, TEMPLATES, load_template

    if value in TEMPLATES:
        return []
    try:
        template = load_template(value)
    except FstcrfError:  # the command reports it
        return [value]
    named = [item.path for line in template for item in line.observations if item.kind in RESOURCE_KINDS]
    return [value, *named]


def _grammar_files(value: str) -> list[str]:
    """A grammar's file (also a shipped grammar's) and the files it imports, transitively."""
    from fstcrf.grammar import load_grammar

    try:
        agenda = [load_grammar(value)]
    except FstcrfError:  # the command reports it
        return [value]
    files = []
    while agenda:
        grammar = agenda.pop()
        files.append(grammar.source)
        agenda += [item.grammar for item in grammar.imports]
    return files


def _announcement_files(value: str) -> list[str]:
    """The announcements (*.txt) that ``fstcrf seminars`` reads under a folder."""
    from fstcrf.experiments.seminars import seminar_paths

    try:
        return [str(path) for path in seminar_paths(value)]
    except FstcrfError:  # the command reports it
        return []


def _conll2000_files(value: str) -> list[str]:
    """The CoNLL-2000 train.txt and test.txt a --data folder holds (none if it holds none)."""
    from fstcrf.cli.common import find_conll2000

    try:
        folder = find_conll2000(value)
    except FstcrfError:  # the command reports it
        return []
    return [] if folder is None else [str(folder / "train.txt"), str(folder / "test.txt")]


#: The options whose value is not simply the one file read or written, by dest: what
#: files each value names.
FILES_OF: dict[str, Callable[[str], list[str]]] = {
    "template": _template_files,
    "grammar": _grammar_files,
    "joint": _grammar_files,
    "compat": lambda value: [value.partition("=")[2]],  # K=FST
    "call_models": lambda value: [pair.partition("=")[2] for pair in value.split(",") if pair],  # KIND=MODEL,...
    "folder": _announcement_files,
    "data": _conll2000_files,
    "save_corpus": lambda value: [os.path.join(value, "train.txt"), os.path.join(value, "test.txt")],  # written
}


def input_files(args: argparse.Namespace, name: str) -> list[str]:
    """The files the option ``name`` of ``args`` names, read or written (see FILES_OF)."""
    return [path for value in option_values(args, name) for path in FILES_OF.get(name, lambda v: [v])(value)]


def check_outputs(args: argparse.Namespace) -> None:
    """OutputPathError, before any work, unless every output path of the command can be
    written (:func:`fstcrf.files.check_output_path`) without replacing a file that any of
    its other options reads."""
    for name in args.outputs:
        read = [path for option in args.inputs if option != name for path in input_files(args, option)]
        for output in input_files(args, name):
            check_output_path(output, read)


def port_number(text: str) -> int:
    """A --port: 0 to 65535 (0: a free port)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535, got {value}")
    return value


def add_reading_columns(parser: argparse.ArgumentParser) -> None:
    """--columns and --separator: how a command reads a CoNLL file with a model's columns."""
    parser.add_argument(
        "--columns",
        default=None,
        metavar="NAMES",
        help="the file's comma-separated column names (default: the model's training columns)",
    )
    parser.add_argument(
        "--separator", default=None, metavar="SEP", help="field separator (default: runs of spaces and tabs)"
    )


def add_budget_arguments(parser: argparse.ArgumentParser) -> None:
    """--max-states, --max-edges and --max-work, the limits of :mod:`fstcrf.engine.budget`."""
    parser.add_argument(
        "--max-states",
        type=POSITIVE,
        default=DEFAULT_MAX_STATES,
        metavar="N",
        help="stop with an error instead of building a topology, grammar acceptor, grammar "
        "product or joint state space of composed models of more than N states (default %(default)s)",
    )
    parser.add_argument(
        "--max-edges",
        type=POSITIVE,
        default=DEFAULT_MAX_EDGES,
        metavar="N",
        help="stop with an error instead of building a topology or dense product of composed "
        "models of more than N edges (allowed transitions; L labels of a first-order model "
        "have L^2), or a dense table of more than N cells over states or labels (default %(default)s)",
    )
    parser.add_argument(
        "--max-work",
        type=POSITIVE,
        default=DEFAULT_MAX_WORK,
        metavar="N",
        help="stop with an error instead of filling more than about N table cells for k-best "
        "lists, sampling or cascaded k-best decoding (default %(default)s)",
    )


def add_lbfgs_memory(parser) -> None:
    """--lbfgs-memory: the L-BFGS correction pairs kept (train, jackknife, compose)."""
    parser.add_argument(
        "--lbfgs-memory",
        type=POSITIVE,
        default=LBFGS_MEMORY,
        metavar="N",
        help="L-BFGS correction pairs kept (lbfgs, mce-f); each costs two float64 vectors "
        "of the weights' size (Wapiti keeps 5) (default %(default)s)",
    )


def add_lbfgs_precision(parser) -> None:
    """--lbfgs-precision: the float type of the L-BFGS history (train, jackknife, compose)."""
    parser.add_argument(
        "--lbfgs-precision",
        choices=["double", "single"],
        default="double",
        help="L-BFGS history (lbfgs, mce-f): single keeps the correction pairs, the "
        "direction and the previous gradient in float32, with sums in double (1.5 GB less "
        "for a model of 17.7M weights with 10 pairs); the weights, objective and gradient "
        "stay float64 and the path differs from double's by rounding (default %(default)s)",
    )


def add_training_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that configure a model and its training (train, jackknife)."""
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
        type=real_number(1e-4, 1e6),
        default=None,
        help=f"standard deviation of the Gaussian prior on every weight; smaller values "
        f"regularise more (default {DEFAULT_SIGMA}, or the sigma chosen with a shipped template: 1.0 "
        f"with ner-rich and ner-pos-rich, 3.0 with words-rich)",
    )
    parser.add_argument(
        "--c2",
        type=real_number(0.0, 1e8),
        default=None,
        help="CRFsuite's L2 coefficient c2 * ||w||^2, instead of --sigma (c2 = 1 / (2 sigma^2); "
        "0: no L2 prior) (default: from --sigma)",
    )
    parser.add_argument(
        "--c1",
        type=real_number(0.0, 1e8),
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
        type=real_number(0.0, 1e12),
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
        type=real_number(1e-6, 1e12),
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
        type=real_number(1e-6, 1e6),
        default=1.0,
        help="mce-f: slope alpha of the sigmoid 1 / (1 + exp(-alpha d - beta)) that smooths "
        "each chunk's misclassification measure d (default %(default)s, the paper's)",
    )
    parser.add_argument(
        "--mce-beta",
        type=real_number(-1e6, 1e6),
        default=0.0,
        help="mce-f: offset beta of that sigmoid (default %(default)s, the paper's)",
    )
    add_lbfgs_memory(parser)
    add_lbfgs_precision(parser)
    parser.add_argument(
        "--consistency",
        action="store_true",
        help="train for document-level tagging, which tag and eval --nonlocal consistency "
        "decode: estimate Finkel et al.'s label-consistency penalties from the training "
        "documents (-DOCSTART- markers) and, as --document-method says, store them with the "
        "model or train Krishnan & Manning's two-stage tagger around it, saved as one file "
        "(default: off)",
    )
    parser.add_argument(
        "--default-decode",
        choices=["viterbi", "mbr"],
        default=None,
        help="the decoding tag and eval use for this model when they are not given --decode; mbr "
        "needs chunk labels (default: mbr for chunk labels with the ner-rich or ner-pos-rich "
        "template, where the development sets chose it; viterbi otherwise)",
    )
    parser.add_argument(
        "--default-mbr-temperature",
        type=real_number(*MBR_TEMPERATURE_RANGE),
        default=None,
        metavar="T",
        help="the temperature MBR decoding tempers this model's probabilities by when tag and eval "
        "are not given --mbr-temperature; needs chunk labels (default: for chunk labels 1.13 with "
        "the ner-rich and 1.05 with the ner-pos-rich template, the likelihood fits on their "
        "development sets; 1 otherwise; fstcrf calibrate --output fits it on held-out data)",
    )
    parser.add_argument(
        "--template",
        default=None,
        help="feature template: sha-pereira, chunking-extended, crfpp, pos, chunking-reads-pos, ner, "
        "ner-rich, ner-pos, ner-pos-rich, words, words-rich or a template file (default: by --target "
        "and the file's columns: chunking-extended for chunk, pos for pos, for ner ner-rich for "
        "word,pos,chunk files, ner-pos-rich for word,pos files, words-rich for files with a word "
        "column; for other targets ner, ner-pos and words)",
    )
    parser.add_argument(
        "--features",
        choices=["supported", "complete", "complete-tags", "complete-if-fits"],
        default=None,
        help="which (predicate, output) pairs get a weight: supported: those seen in the gold "
        "training labels; complete: every pair (refused when too many); complete-tags: "
        "order 2 only, every (predicate, tag) pair plus the supported (predicate, tag "
        "pair) ones; complete-if-fits: complete unless too many, then supported (default: "
        "complete-if-fits with the rich NER templates (ner-rich, ner-pos-rich, words-rich) "
        "and lbfgs, chosen on the development sets; complete for --algorithm bandit; else "
        "supported)",
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
        type=real_number(0.0, 1e6, closed=False),
        default=None,
        help=f"step size of sgd (default {SGD_LEARNING_RATE}) and of bandit learning (default {DEFAULT_LEARNING_RATE})",
    )
    parser.add_argument(
        "--seed",
        type=whole_number(0),
        default=0,
        help="seed of the online algorithms' shuffling, of bandit draws and of simulated "
        "feedback noise (default %(default)s)",
    )
    _add_bandit_arguments(parser)
    add_budget_arguments(parser)
    parser.add_argument(
        "--max-resource-bytes",
        type=POSITIVE,
        default=DEFAULT_MAX_RESOURCE_BYTES,
        metavar="N",
        help="stop with an error instead of reading a gazetteer, cluster or embedding file "
        "(named by the template) of more than N bytes (default %(default)s, 256 MiB)",
    )


def _add_bandit_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of --algorithm bandit, in a group of their own."""
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
        type=real_number(0.0, 1.0),
        default=0.0,
        help="cross-entropy: probabilities below this are raised to it (default %(default)s)",
    )
    bandit.add_argument("--batch-size", type=POSITIVE, default=16, help="sentences per update (default %(default)s)")
    bandit.add_argument(
        "--feedback-flip",
        type=real_number(0.0, 1.0),
        default=0.0,
        help="simulated noise: each gain g becomes 1 - g with this probability (default %(default)s)",
    )
    bandit.add_argument(
        "--feedback-noise",
        type=real_number(0.0, 1e3),
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
        type=real_number(0.0, 1e300, closed=False),
        default=10.0,
        help="--log --weighting clipped: the largest importance ratio (default %(default)s)",
    )


#: Decoding options that only some models use, with their defaults (a
#: different value means the user gave the option).
DECODING_DEFAULTS = {
    "mode": "joint",
    "k": 5,
    "define": [],
    "on_infeasible": "error",
    "decode": None,
    "mbr_threshold": None,
    "mbr_temperature": None,
}


def add_decoding_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of decoding (tag, eval): threads, composed models, grammars, --nonlocal, budgets."""
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
        type=whole_number(0),
        default=0,
        help="seed of tag --sample and of the --nonlocal sampler (default %(default)s)",
    )
    _add_mbr_arguments(parser)
    _add_nonlocal_arguments(parser)
    add_budget_arguments(parser)


def _add_mbr_arguments(parser: argparse.ArgumentParser) -> None:
    """--decode and --mbr-threshold."""
    parser.add_argument(
        "--decode",
        choices=["viterbi", "mbr"],
        default=DECODING_DEFAULTS["decode"],
        help="single models with chunk labels: viterbi: the most probable label sequence; mbr: "
        "the chunks that maximise the expected chunk F1 under the model (minimum Bayes risk, "
        "from the exact chunk probabilities), chosen over the whole file by eval and over each "
        "batch of about 20,000 tokens by tag, written in the model's label scheme with O "
        "elsewhere (default: the model's, which fstcrf info shows: mbr for the rich NER "
        "templates, viterbi otherwise and with --nbest, --sample, --nonlocal or --dask)",
    )
    parser.add_argument(
        "--mbr-threshold",
        type=real_number(0.0, 1.0, closed=False),
        default=DECODING_DEFAULTS["mbr_threshold"],
        metavar="T",
        help="with --decode mbr: keep in each sentence the non-overlapping chunks that maximise "
        "the sum of (probability - T), the same threshold for every batch (default: the "
        "threshold that maximises the expected F1 of each batch, about half of it)",
    )
    parser.add_argument(
        "--mbr-temperature",
        type=temperature,
        default=DECODING_DEFAULTS["mbr_temperature"],
        metavar="T",
        help="with --decode mbr: the chunk probabilities of the model's distribution with every "
        "score divided by T; fstcrf calibrate MODEL DEV prints the T that calibrates them on "
        "held-out data, and with --output records it in a copy of the model (default: the "
        "model's, which fstcrf info shows: 1.13 or 1.05 for the rich NER templates, else 1)",
    )


def _add_nonlocal_arguments(parser: argparse.ArgumentParser) -> None:
    """--nonlocal and the options of its sampler."""
    parser.add_argument(
        "--nonlocal",
        choices=["consistency"],
        default=None,
        dest="nonlocal_model",
        help="single models and two-stage files: decode each document (-DOCSTART- to -DOCSTART-) "
        "under non-local factors by annealed sampling from the Viterbi labels; consistency: "
        "Finkel et al.'s label consistency, with the penalties stored by train --consistency "
        "(of a two-stage file: its second stage, reading the majority columns of its first "
        "stage's labels) (default: none, Viterbi per sentence)",
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
        type=temperature,
        default=DEFAULT_T_START,
        help="with --nonlocal: temperature of the first sweep (default %(default)s)",
    )
    parser.add_argument(
        "--t-end",
        type=temperature,
        default=DEFAULT_T_END,
        help="with --nonlocal: temperature of the last sweep (default %(default)s)",
    )
    parser.add_argument(
        "--block-size",
        type=whole_number(0),
        default=None,
        help="with --nonlocal --sampler block: tokens per block, 0 for whole sentences (default: "
        f"the block size stored in a two-stage file of train --consistency, {TWO_STAGE_BLOCK_SIZE}; "
        f"{DEFAULT_BLOCK_SIZE} for a single model)",
    )
    parser.add_argument(
        "--consistency-scale",
        type=real_number(0.0, 1e6),
        default=None,
        help="with --nonlocal consistency: multiply the log penalties by this (default: the "
        f"scale stored in the model: {TWO_STAGE_CONSISTENCY_SCALE:g} in a two-stage file of train "
        "--consistency, 1 in a single model)",
    )


def add_dask_dashboard(parser: argparse.ArgumentParser) -> None:
    """--dask-dashboard (train, tag)."""
    parser.add_argument(
        "--dask-dashboard",
        default=None,
        metavar="HOST:PORT",
        help="with --dask local:N: serve Dask's dashboard (no authentication) on HOST:PORT, e.g. "
        "127.0.0.1:8787 for this machine only, 0.0.0.0:8787 for every interface, port 0 for "
        "any free port; the address is logged (default: no dashboard, and the cluster "
        "listens on 127.0.0.1 only)",
    )
