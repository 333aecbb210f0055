"""``fstcrf view``: a model's output on a CoNLL file as one self-contained HTML page:
chunks as coloured spans with their exact probabilities, tags with theirs, low
confidence flagged and disagreements with the file's gold labels marked."""

from __future__ import annotations

import argparse
from pathlib import Path

from fstcrf.cli.options import POSITIVE, add_command, add_reading_columns, real_number
from fstcrf.files import write_atomically
from fstcrf.pictures.settings import DEFAULT_LOW_CONFIDENCE


def _view(args: argparse.Namespace) -> int:
    from fstcrf.cli.decoding import read_for
    from fstcrf.model.compose import load_any
    from fstcrf.pictures.html import view_page
    from fstcrf.pictures.tagged import chunk_types, tagged_sentences

    model = load_any(args.model)
    sentences = read_for(model, args.file, columns=args.columns, separator=args.separator).sentences
    if args.max_sentences is not None:
        sentences = sentences[: args.max_sentences]
    title = args.title or f"{Path(args.model).name} on {Path(args.file).name}"
    page = view_page(title, tagged_sentences(model, sentences), chunk_types(model), args.low_confidence)
    data = page.encode("utf-8")
    write_atomically(args.output, lambda stream: stream.write(data))
    return 0


def add_parsers(commands) -> None:
    """Register fstcrf view on the subparsers ``commands``."""
    view = add_command(
        commands,
        "view",
        "write a model's output on a CoNLL file as a self-contained HTML page: chunks or tags "
        "with their probabilities on hover, low confidence flagged, disagreements with the gold "
        "labels marked, a row per component of a composed model",
        _view,
        inputs=("model", "file"),
        outputs=("output",),
    )
    view.add_argument("model", help="a model file or composed model file")
    view.add_argument("file", help="a CoNLL file; with the model's target columns, the gold labels are compared")
    view.add_argument("-o", "--output", required=True, help="the HTML page to write (- for standard output)")
    view.add_argument(
        "--low-confidence",
        type=real_number(0.0, 1.0),
        default=DEFAULT_LOW_CONFIDENCE,
        metavar="P",
        help="flag chunks and tags of probability below P (default %(default)s)",
    )
    view.add_argument(
        "--max-sentences",
        type=POSITIVE,
        default=None,
        metavar="N",
        help="show the file's first N sentences only (default: all)",
    )
    view.add_argument("--title", default=None, help="the page's heading (default: MODEL on FILE)")
    add_reading_columns(view)
