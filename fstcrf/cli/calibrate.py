"""``fstcrf calibrate``: the temperature that calibrates a model's probabilities on held-out data."""

from __future__ import annotations

import argparse
import logging

from fstcrf.cli.decoding import is_two_stage, load_decoder, read_for
from fstcrf.cli.options import add_command, add_reading_columns
from fstcrf.errors import FstcrfError

LOG = logging.getLogger("fstcrf")


def _calibrate(args: argparse.Namespace) -> int:
    from fstcrf.model.compose import JointModel

    model = load_decoder(args.model)
    if isinstance(model, JointModel):
        raise FstcrfError(f"calibrate applies to single models; {args.model} is a composed model")
    if args.threads is not None:
        model.threads = args.threads
    corpus = read_for(model, args.dev, gold_required=True, columns=args.columns, separator=args.separator)
    temperature = model.fit_temperature(corpus)
    print(f"{temperature:.4f}")
    LOG.info(
        "temperature %.4f maximises the likelihood of %s's labels (%s); pass it to "
        "fstcrf tag --decode mbr --mbr-temperature %.4f%s",
        temperature,
        args.dev,
        "the model is overconfident" if temperature > 1 else "the model is underconfident",
        temperature,
        "" if is_two_stage(model) else f" or fstcrf tag --entity-probabilities --temperature {temperature:.4f}",
    )
    return 0


def add_parsers(commands) -> None:
    """Register fstcrf calibrate on the subparsers ``commands``."""
    calibrate = add_command(
        commands,
        "calibrate",
        "print the temperature that calibrates a model's probabilities on labelled held-out data",
        _calibrate,
        inputs=("model", "dev"),
    )
    calibrate.add_argument("model", help="model file (from train)")
    calibrate.add_argument("dev", help="labelled CoNLL file not used in training, e.g. the development set")
    add_reading_columns(calibrate)
    calibrate.add_argument("--threads", type=int, default=None, help="kernel threads (default: the model's)")
