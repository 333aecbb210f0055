"""``fstcrf calibrate``: the temperature that calibrates a model's probabilities on held-out data."""

from __future__ import annotations

import argparse
import logging

from fstcrf.cli.decoding import read_for
from fstcrf.cli.options import add_command, add_reading_columns
from fstcrf.errors import FstcrfError
from fstcrf.model.decoders import is_two_stage, load_decoder

LOG = logging.getLogger("fstcrf")


def _calibrate(args: argparse.Namespace) -> int:
    from fstcrf.model.compose import JointModel

    model = load_decoder(args.model)
    if isinstance(model, JointModel):
        raise FstcrfError(f"calibrate applies to single models; {args.model} is a composed model")
    corpus = read_for(model, args.dev, gold_required=True, columns=args.columns, separator=args.separator)
    threads = model.threads
    if args.threads is not None:
        model.threads = args.threads
    temperature = model.fit_temperature(corpus)
    model.threads = threads  # the copy --output writes keeps the model's own
    print(f"{temperature:.4f}")
    if args.output is not None:
        _save_calibrated(model, temperature, args.output)
        return 0
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


def _save_calibrated(model, temperature: float, output: str) -> None:
    """Write ``model`` (a ChainCRF or a two-stage tagger: its second stage) with
    ``temperature`` as its default MBR temperature to ``output``."""
    stage = model.second_ if is_two_stage(model) else model
    stage.mbr_temperature_ = temperature
    model.save(output)
    LOG.info(
        "wrote %s, the model with default MBR temperature %.4f (tag and eval --decode mbr use it "
        "without --mbr-temperature; its default decoding stays %s)",
        output,
        temperature,
        stage.decoding_,
    )


def add_parsers(commands) -> None:
    """Register fstcrf calibrate on the subparsers ``commands``."""
    calibrate = add_command(
        commands,
        "calibrate",
        "print the temperature that calibrates a model's probabilities on labelled held-out data",
        _calibrate,
        inputs=("model", "dev"),
        outputs=("output",),
    )
    calibrate.add_argument("model", help="model file (from train)")
    calibrate.add_argument("dev", help="labelled CoNLL file not used in training, e.g. the development set")
    add_reading_columns(calibrate)
    calibrate.add_argument("--threads", type=int, default=None, help="kernel threads (default: the model's)")
    calibrate.add_argument(
        "-o",
        "--output",
        default=None,
        help="also write a copy of the model with the fitted temperature as its default MBR "
        "temperature, which tag and eval --decode mbr then use without --mbr-temperature "
        "(default: only print it)",
    )
