"""``fstcrf view``: a model's output on a CoNLL file as one self-contained HTML page:
chunks as coloured spans with their exact probabilities, tags with theirs, low
confidence flagged and disagreements with the file's gold labels marked.

``fstcrf view --edit`` shows the same view on the page of ``fstcrf serve`` instead, where
a person corrects it: a page cannot decode again under corrections by itself, so the
command serves the model on this machine's loopback address alone (the application of
``fstcrf serve``, with the file's sentences as the page's input) until Ctrl-C."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from fstcrf.cli.options import POSITIVE, add_command, add_reading_columns, port_number, real_number
from fstcrf.errors import FstcrfError
from fstcrf.files import write_atomically
from fstcrf.pictures.settings import DEFAULT_LOW_CONFIDENCE

LOG = logging.getLogger("fstcrf")

#: The port ``view --edit`` listens on by default (``fstcrf serve``'s default is 8080).
DEFAULT_EDIT_PORT = 8090


def _view(args: argparse.Namespace) -> int:
    if args.edit == (args.output is not None):
        raise FstcrfError("give -o OUTPUT to write the page, or --edit to correct the output on a local page")
    if args.edit:
        return _edit(args)
    from fstcrf.cli.decoding import read_for
    from fstcrf.model.compose import load_any
    from fstcrf.pictures.html import view_page
    from fstcrf.pictures.tagged import chunk_types, tagged_sentences

    model = load_any(args.model)
    sentences = read_for(model, args.file, columns=args.columns, separator=args.separator).sentences
    if args.max_sentences is not None:
        sentences = sentences[: args.max_sentences]
    page = view_page(_title(args), tagged_sentences(model, sentences), chunk_types(model), args.low_confidence)
    data = page.encode("utf-8")
    write_atomically(args.output, lambda stream: stream.write(data))
    return 0


def _title(args: argparse.Namespace) -> str:
    """The page's heading: --title, else MODEL on FILE."""
    return args.title or f"{Path(args.model).name} on {Path(args.file).name}"


def _edit(args: argparse.Namespace) -> int:
    """view --edit: serve the model and the page, opened with the file's sentences."""
    from fstcrf.extras import require

    for module in ("starlette", "uvicorn", "prometheus_client"):
        require(module, "fstcrf view --edit")
    from fstcrf.cli.decoding import read_for
    from fstcrf.cli.serve import bound_socket
    from fstcrf.corpus.conll import Sentence, conll_lines
    from fstcrf.serve.app import OpenedDocument, Service
    from fstcrf.serve.registry import Registry
    from fstcrf.serve.server import run_server
    from fstcrf.serve.settings import DEFAULT_HOST, DEFAULT_MODEL_NAME, Batching, Limits
    from fstcrf.serve.tokenizer import make_tokenizer

    registry = Registry({DEFAULT_MODEL_NAME: args.model})
    registry.load()
    served = registry.get(DEFAULT_MODEL_NAME)
    sentences = read_for(served.decoder, args.file, columns=args.columns, separator=args.separator).sentences
    sentences = sentences[: args.max_sentences]
    # the file's columns in the model's layout, as the page sends CoNLL lines
    laid_out = [Sentence({name: s[name] for name in served.file_columns if name in s.columns}) for s in sentences]
    document = "".join(conll_lines(laid_out, (), (), " ", args.file))
    limits = Limits(
        max_request_bytes=max(Limits.max_request_bytes, 2 * len(document.encode("utf-8")) + (1 << 16)),
        max_sentences=max(Limits.max_sentences, len(sentences)),
        max_tokens=max([Limits.max_tokens, *map(len, sentences)]),
    )
    opened = OpenedDocument(document, _title(args), args.low_confidence)
    service = Service(registry, limits, Batching(), make_tokenizer("regex"), document=opened)
    listener = bound_socket(DEFAULT_HOST, args.port)
    port = listener.getsockname()[1]
    LOG.info(
        "fstcrf view --edit: %s and %s (%d sentences) on http://%s:%d/ (the page; Ctrl-C stops)",
        args.model,
        args.file,
        len(sentences),
        DEFAULT_HOST,
        port,
    )
    run_server(service, listener, drain_seconds=5.0, access_log=False)
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
    view.add_argument(
        "-o",
        "--output",
        default=None,
        help="the HTML page to write (- for standard output; default: none, so give -o or --edit)",
    )
    view.add_argument(
        "--edit",
        action="store_true",
        help="instead of writing a page, serve the model on this machine (127.0.0.1) with the page of "
        "fstcrf serve opened on FILE, where chunks are corrected, decoded again under the corrections "
        "and downloaded as partial labels for train --init (default: write the page to -o)",
    )
    view.add_argument(
        "--port",
        type=port_number,
        default=DEFAULT_EDIT_PORT,
        help="the port of --edit (default %(default)s; 0: a free one, logged)",
    )
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
