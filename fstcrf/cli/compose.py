"""``fstcrf compose``: trained models composed into a joint model."""

from __future__ import annotations

import argparse
import logging

from fstcrf.cli.options import add_budget_arguments, add_command
from fstcrf.errors import FstcrfError
from fstcrf.extras import require

LOG = logging.getLogger("fstcrf")


def _compose(args: argparse.Namespace) -> int:
    from fstcrf.model.compose import compose
    from fstcrf.model.chain import load_model

    pynini = require("pynini", "--compat") if args.compat else None
    if args.joint is not None:
        require("pynini", "--joint")
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
    joint = compose(models, relations, scales=scales, joint=args.joint)
    joint.save(args.output)
    sizes = " x ".join(str(topology.num_states) for topology in joint.topologies)
    LOG.info(
        "composed %s (%s = %d joint states%s%s; decoder: %s); written to %s",
        " + ".join(joint.targets),
        sizes,
        joint.space.num_states,
        "" if joint.space.allowed is None else f", {int(joint.space.allowed.sum())} allowed",
        "" if joint.grammar is None else f", joint grammar {joint.grammar}",
        joint.space.decoder,
        args.output,
    )
    return 0


def add_parsers(commands) -> None:
    """Register fstcrf compose on the subparsers ``commands``."""
    compose = add_command(
        commands,
        "compose",
        "compose trained models (lowest first) into a joint model",
        _compose,
        inputs=("models",),
        outputs=("output",),
    )
    compose.add_argument(
        "models",
        nargs="+",
        help="model files in chain order; each reads the previous one's labels (under --joint: or nothing)",
    )
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
    compose.add_argument(
        "--joint",
        default=None,
        metavar="GRAMMAR",
        help="tie the models by a joint grammar (a shipped name such as no_overlap or nest, or a .fgr "
        "file) over joint labels 'A/B/...', the models' labels in order; models may then read nothing "
        "(default: none)",
    )
    add_budget_arguments(compose)
