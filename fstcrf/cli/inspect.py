"""What a model holds: ``fstcrf history`` (its training record, optionally
plotted), ``fstcrf dump``, ``fstcrf info``, and ``fstcrf upgrade`` to the current
model file format."""

from __future__ import annotations

import argparse
import logging

from fstcrf.cli.options import POSITIVE, add_command
from fstcrf.errors import FstcrfError
from fstcrf.files import STDOUT, write_atomically

LOG = logging.getLogger("fstcrf")

#: The suffixes a plot may have, and the format matplotlib writes each in.
PLOT_FORMATS = {".png": "png", ".pdf": "pdf", ".svg": "svg"}


def _stages(path: str) -> list[tuple[str | None, object]]:
    """(name, model) of each stage of a two-stage file ("first stage", "second stage"),
    or [(None, the model or composition)] of any other model file."""
    from fstcrf.model.decoders import is_two_stage, load_decoder

    model = load_decoder(path)
    if is_two_stage(model):
        return [("first stage", model.first_), ("second stage", model.second_)]
    return [(None, model)]


def _history(args: argparse.Namespace) -> int:
    from fstcrf.model.compose import JointModel
    from fstcrf.model.inspection import dev_metric, dev_score

    if args.plot:
        _plot_format(args.plot)  # a suffix that names no format is refused before any work
    stages = _stages(args.model)
    if isinstance(stages[0][1], JointModel):
        raise FstcrfError(
            f"{args.model}: a composed model has no training record of its own: "
            "give each component's model file (or fstcrf info for the joint training)"
        )
    lines = []
    for name, model in stages:
        history = model.history_
        metric = dev_metric(history)
        if name is not None:
            lines.append(f"{name}:")
        lines.append(f"iteration  objective      gradient-norm  seconds  dev-{metric}")
        for record in history:
            dev = dev_score(record)
            lines.append(
                f"{record['iteration']:9d}  {record['objective']:<13.6g}  {record.get('gradient_norm') or 0:<13.4g}  "
                f"{record['seconds']:7.2f}  {'' if dev is None else f'{dev:.2f}'}"
            )
        lines.append(
            f"kept the weights of iteration {model.best_iteration_} of {model.n_iter_}"
            + (" (interrupted)" if model.interrupted_ else "")
        )
    _write_standard_output("".join(f"{line}\n" for line in lines))
    if args.plot:
        _plot_history(stages, args)
    return 0


def _plot_format(path: str) -> str:
    """The format of the plot ``path`` as its suffix says ("png", "pdf", "svg"; "png"
    on standard output "-"); PictureError for any other suffix."""
    from fstcrf.pictures.render import suffix_format

    return "png" if path == STDOUT else suffix_format(path, PLOT_FORMATS, "a plot")


def _plot_history(stages: list, args: argparse.Namespace) -> None:
    """A plot of each stage's objective per iteration, and its dev score when it has one,
    in the format of the suffix of ``args.plot``."""
    from fstcrf.model.inspection import dev_metric, dev_score

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise FstcrfError("plotting needs matplotlib: pip install 'fstcrf[bench]'") from None
    figure, objective_axis = plt.subplots(figsize=(7, 4))
    dev_axis = None
    for (name, model), style in zip(stages, ("-", "--")):
        history = model.history_
        suffix = "" if name is None else f", {name}"
        iterations = [r["iteration"] for r in history]
        objective_axis.semilogy(
            iterations, [r["objective"] for r in history], style, color="tab:blue", label=f"objective{suffix}"
        )
        dev = [(r["iteration"], dev_score(r)) for r in history if dev_score(r) is not None]
        if dev:
            dev_axis = dev_axis or objective_axis.twinx()
            metric = dev_metric(history)
            dev_axis.plot(*zip(*dev), style, color="tab:red", label=f"dev {metric}{suffix}")
            dev_axis.set_ylabel(f"dev {metric}", color="tab:red")
    objective_axis.set_xlabel(f"{stages[-1][1].algorithm} iteration")
    objective_axis.set_ylabel("objective (penalised negative log-likelihood)", color="tab:blue")
    if len(stages) > 1:
        objective_axis.legend(loc="upper center")
    objective_axis.set_title(args.title or f"{args.model}")
    figure.tight_layout()
    plot_format = _plot_format(args.plot)
    write_atomically(args.plot, lambda stream: figure.savefig(stream, format=plot_format, dpi=110))
    print(f"plot written to {args.plot}")


def _dump(args: argparse.Namespace) -> int:
    from fstcrf.model.inspection import dump_text

    _write_standard_output(
        "".join(
            ("" if name is None else f"{name}:\n") + dump_text(model, top=args.top, label=args.label)
            for name, model in _stages(args.model)
        )
    )
    return 0


def _upgrade(args: argparse.Namespace) -> int:
    from fstcrf.model.compose import upgrade_model

    upgrade_model(args.model, args.output)
    LOG.info("wrote %s in the current model file format", args.output)
    return 0


def _info(args: argparse.Namespace) -> int:
    from fstcrf.model.decoders import is_two_stage, load_decoder
    from fstcrf.document.two_stage import two_stage_info
    from fstcrf.model.inspection import info_text

    model = load_decoder(args.model)
    _write_standard_output(two_stage_info(model, args.model) if is_two_stage(model) else info_text(model, args.model))
    return 0


def _write_standard_output(text: str) -> None:
    """Write ``text`` to standard output whole, or raise (BrokenPipeError when the
    reader went away): an unbuffered standard output's write() may write a part."""
    write_atomically(STDOUT, lambda stream: stream.write(text.encode("utf-8")))


def add_parsers(commands) -> None:
    """Register fstcrf history, dump, upgrade and info on the subparsers ``commands``."""
    history = add_command(
        commands,
        "history",
        "per-iteration training record of a model, optionally plotted",
        _history,
        inputs=("model",),
        outputs=("plot",),
    )
    history.add_argument("model", help="model file, or two-stage file (each stage's record)")
    history.add_argument(
        "--plot",
        default=None,
        help="write a plot of the objective and the dev score per iteration, as a file's suffix "
        "says: .png, .pdf or .svg (default: none)",
    )
    history.add_argument("--title", default=None, help="title of the plot (default: the model file)")

    dump = add_command(
        commands,
        "dump",
        "a model's labels, topology, template and largest state and transition weights",
        _dump,
        inputs=("model",),
    )
    dump.add_argument(
        "model", help="model file or two-stage file (each stage); not a composed model: dump each component's file"
    )
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

    upgrade = add_command(
        commands,
        "upgrade",
        "rewrite a model or composed model file of an older format version in the "
        "current one (loaded in constant time)",
        _upgrade,
        inputs=("model",),
        outputs=("output",),
    )
    upgrade.add_argument("model", help="model file or composed model file of any version this fstcrf reads")
    upgrade.add_argument("-o", "--output", required=True, help="model file to write (not the input)")

    info = add_command(
        commands,
        "info",
        "a model's sizes, training settings and training history summary (each component's, for a "
        "composed model; each stage's and the decoding settings, for a two-stage tagger)",
        _info,
        inputs=("model",),
    )
    info.add_argument("model", help="model file, composed model file or two-stage file")
