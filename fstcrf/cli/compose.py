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
    add_budget_arguments(compose)
