"""``fstcrf seminars``: tagged seminar announcements as a CoNLL file."""

from __future__ import annotations

import argparse
import logging

from fstcrf.cli.options import add_command

LOG = logging.getLogger("fstcrf")


def _seminars(args: argparse.Namespace) -> int:
    """seminars DIR -o OUT: every announcement under DIR as word and field columns; logs the counts."""
    from fstcrf.corpus.conll import write_conll
    from fstcrf.experiments.seminars import count_seminars, read_seminar, seminar_corpus, seminar_paths

    documents = [read_seminar(path) for path in seminar_paths(args.folder)]  # main checked -o against them
    write_conll(seminar_corpus(documents), args.output)
    for line in count_seminars(documents).lines():
        LOG.info("%s", line)
    LOG.info("wrote %s (columns word, field)", args.output)
    return 0


def add_parsers(commands) -> None:
    """Register fstcrf seminars on the subparsers ``commands``."""
    seminars = add_command(
        commands,
        "seminars",
        "read tagged seminar announcements into word and field columns (IOB2 over "
        "speaker, location, stime, etime), a -DOCSTART- line before each message",
        _seminars,
        inputs=("folder",),
        outputs=("output",),
    )
    seminars.add_argument(
        "folder",
        help="folder holding one announcement per *.txt file (searched recursively, "
        "read in the order of the numeric file names)",
    )
    seminars.add_argument("-o", "--output", required=True, help="CoNLL file to write")
