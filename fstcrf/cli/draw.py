"""``fstcrf draw``: pictures of a grammar's automaton (``draw grammar``), of a model's
state space (``draw topology``) and of one sentence's lattice (``draw lattice``), each
written as Graphviz dot text or drawn by Graphviz as SVG or PNG (the output's suffix
says which)."""

from __future__ import annotations

import argparse
from pathlib import Path

from fstcrf.cli.common import grammar_params
from fstcrf.cli.options import POSITIVE, add_command, add_reading_columns, real_number, whole_number
from fstcrf.errors import FstcrfError, PictureError
from fstcrf.extras import require
from fstcrf.pictures.settings import DEFAULT_MAX_NODES, DEFAULT_MAX_STATES, DEFAULT_THRESHOLD


def _grammar(args: argparse.Namespace) -> int:
    from fstcrf.engine.topology import check_labels
    from fstcrf.pictures.render import picture_format, write_picture

    picture_format(args.output)
    labels = None if args.labels is None else check_labels(args.labels.split(","))
    require("pynini", "fstcrf draw grammar (compiling the grammar)")
    from fstcrf.grammar import load_grammar
    from fstcrf.pictures.automata import grammar_dot

    if labels is None:
        from fstcrf.model.compose import JointModel, load_any

        model = load_any(args.model)
        labels = model.space.labels if isinstance(model, JointModel) else model.labels_
    text = grammar_dot(load_grammar(args.grammar), labels, args.rule, grammar_params(args), args.max_drawn_states)
    write_picture(text, args.output)
    return 0


def _topology(args: argparse.Namespace) -> int:
    from fstcrf.pictures.render import picture_format, write_picture

    picture_format(args.output)
    if args.grammar:
        require("pynini", "--grammar")
    from fstcrf.model.compose import JointModel, load_any
    from fstcrf.pictures.automata import topology_dot

    model = load_any(args.model)
    if isinstance(model, JointModel):
        targets = ", ".join(model.targets)
        raise FstcrfError(
            f"{args.model} is a composed model of {len(model.components)} components ({targets}); "
            "fstcrf draw topology draws one model's state space: give a component's model file"
        )
    grammar = None
    if args.grammar:
        from fstcrf.grammar import load_grammar

        grammar = load_grammar(args.grammar)
    topology = model.scorer().decoding_topology(grammar, grammar_params(args))
    write_picture(topology_dot(topology, Path(args.model).name, args.max_drawn_states), args.output)
    return 0


def _lattice(args: argparse.Namespace) -> int:
    from fstcrf.pictures.render import picture_format, write_picture

    picture_format(args.output)
    from fstcrf.cli.decoding import read_for
    from fstcrf.model.compose import JointModel, load_any
    from fstcrf.pictures.lattice import chain_lattice, joint_lattices, lattice_dot

    model = load_any(args.model)
    corpus = read_for(model, args.file, columns=args.columns, separator=args.separator)
    if args.sentence >= len(corpus):
        numbered = f"numbered from 0 to {len(corpus) - 1}" if len(corpus) else "none at all"
        raise PictureError(f"--sentence {args.sentence}: {args.file} has {len(corpus)} sentences, {numbered}")
    sentence = corpus.sentences[args.sentence]
    lattices = joint_lattices(model, sentence) if isinstance(model, JointModel) else [chain_lattice(model, sentence)]
    title = f"{Path(args.file).name}, sentence {args.sentence}, under {Path(args.model).name}"
    write_picture(lattice_dot(lattices, title, args.threshold, args.max_drawn_states), args.output)
    return 0


def _add_output(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        help="the picture to write: .svg or .png (drawn by Graphviz's dot program), .dot or .gv "
        "(the dot text, which needs no Graphviz), or - for the dot text on standard output",
    )


def _add_max_states(parser: argparse.ArgumentParser, default: int, what: str) -> None:
    parser.add_argument(
        "--max-states",
        type=POSITIVE,
        default=default,
        dest="max_drawn_states",
        metavar="N",
        help=f"refuse to draw {what} of more than N states, which Graphviz would lay out slowly and "
        "nobody could read (default %(default)s)",
    )


def _add_grammar_parameters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--define",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a parameter of the grammar, e.g. X=NP (repeatable; default: none)",
    )


def add_parsers(commands) -> None:
    """Register fstcrf draw (grammar, topology, lattice) on the subparsers ``commands``."""
    draw = commands.add_parser(
        "draw",
        help="draw a grammar's automaton, a model's state space or a sentence's lattice (Graphviz)",
        description="Pictures of automata and lattices, as Graphviz dot text or drawn by Graphviz as SVG or PNG.",
    )
    drawings = draw.add_subparsers(
        dest="drawing", required=True, metavar="PICTURE", help="grammar, topology or lattice (default: none)"
    )

    grammar = add_command(
        drawings,
        "grammar",
        "draw the minimal automaton a grammar rule compiles to over a label set, with the labels",
        _grammar,
        inputs=("grammar", "model"),
        outputs=("output",),
    )
    grammar.add_argument("grammar", help="a grammar file (.fgr) or a shipped grammar's name, e.g. iob2")
    source = grammar.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--labels", default=None, help="the labels, comma-separated, e.g. O,B-NP,I-NP (default: --model's)"
    )
    source.add_argument(
        "--model",
        default=None,
        help="a model file whose labels to use (a composed model's joint labels a/b; default: --labels)",
    )
    grammar.add_argument("--rule", default="start", help="the rule to draw (default %(default)s)")
    _add_grammar_parameters(grammar)
    _add_max_states(grammar, DEFAULT_MAX_STATES, "an automaton")
    _add_output(grammar)

    topology = add_command(
        drawings,
        "topology",
        "draw a model's state space: its states (labels and the history or grammar state they "
        "remember) and allowed transitions",
        _topology,
        inputs=("model", "grammar"),
        outputs=("output",),
    )
    topology.add_argument("model", help="a model file (from train; not a composed model)")
    topology.add_argument(
        "--grammar",
        default=None,
        help="draw the state space decoding under this grammar uses: a .fgr file or a shipped "
        "grammar name (default: the model's own, restricted to its training grammar if it has one)",
    )
    _add_grammar_parameters(topology)
    _add_max_states(topology, DEFAULT_MAX_STATES, "a topology")
    _add_output(topology)

    lattice = add_command(
        drawings,
        "lattice",
        "draw one sentence's lattice: states by token, arcs by posterior probability, the best "
        "and the gold path (a composed model: each component's, aligned)",
        _lattice,
        inputs=("model", "file"),
        outputs=("output",),
    )
    lattice.add_argument("model", help="a model file or composed model file")
    lattice.add_argument("file", help="a CoNLL file; with the model's target column, the gold path is drawn too")
    lattice.add_argument(
        "--sentence",
        type=whole_number(0),
        default=0,
        metavar="N",
        help="the sentence to draw, numbered from 0 in the file (default %(default)s)",
    )
    lattice.add_argument(
        "--threshold",
        type=real_number(0.0, 1.0),
        default=DEFAULT_THRESHOLD,
        metavar="P",
        help="leave out states and arcs of posterior probability below P, except those of the best "
        "and gold paths (default %(default)s)",
    )
    add_reading_columns(lattice)
    _add_max_states(lattice, DEFAULT_MAX_NODES, "a lattice (counting each state drawn at each token)")
    _add_output(lattice)
