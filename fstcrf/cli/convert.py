"""``fstcrf convert``: a chunk column rewritten in another tagging scheme."""

from __future__ import annotations

import argparse
import logging

from fstcrf.cli.common import read_corpus
from fstcrf.cli.options import add_command
from fstcrf.errors import FstcrfError, LabelError

LOG = logging.getLogger("fstcrf")


def _convert(args: argparse.Namespace) -> int:
    from fstcrf.corpus.conll import write_conll
    from fstcrf.corpus.schemes import convert

    corpus = read_corpus(args.input, args.columns)
    if args.column not in corpus.column_names:
        raise FstcrfError(
            f"{args.input} has no column {args.column!r} (columns: {', '.join(corpus.column_names)}; "
            "name them with --columns)"
        )
    for sentence in corpus.sentences:
        try:
            sentence.columns[args.column] = convert(sentence.columns[args.column], args.scheme)
        except LabelError as error:
            line = sentence.line_numbers[error.position] if sentence.line_numbers else "?"
            raise LabelError(f"{args.input}:{line}: {error}") from None
    write_conll(corpus, args.output)
    LOG.info("wrote %s with column %s in %s", args.output, args.column, args.scheme.upper())
    return 0


def add_parsers(commands) -> None:
    """Register fstcrf convert on the subparsers ``commands``."""
    convert = add_command(
        commands,
        "convert",
        "rewrite a chunk column in another tagging scheme",
        _convert,
        inputs=("input",),
        outputs=("output",),
    )
    convert.add_argument("input", help="CoNLL file")
    convert.add_argument("-o", "--output", required=True, help="CoNLL file to write")
    convert.add_argument(
        "--scheme", choices=["iob2", "bioes"], required=True, help="target scheme; the input may be IOB1, IOB2 or BIOES"
    )
    convert.add_argument("--column", default="chunk", help="the column to rewrite (default %(default)s)")
    convert.add_argument(
        "--columns",
        default=None,
        help="comma-separated column names, e.g. word,pos,chunk (default: word,pos,chunk "
        "for 3 columns, col0,col1,... otherwise)",
    )
