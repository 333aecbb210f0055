"""The ``fstcrf`` parser, on which each command's module registers its commands, and
:func:`main`, which runs one command: its paths checked first, its errors reported
as ``fstcrf: error: ...`` with an exit status."""

from __future__ import annotations

import argparse
import gc
import logging
import os
import re
import signal
import sys
from difflib import get_close_matches
from typing import NoReturn

import fstcrf

from fstcrf.cli import (
    bench,
    calibrate,
    compose,
    convert,
    demo,
    draw,
    evaluate,
    inspect,
    seminars,
    serve,
    tag,
    train,
    view,
)
from fstcrf.cli.options import add_quiet, check_outputs
from fstcrf.engine.budget import DEFAULTS, limits
from fstcrf.engine.threads import left_running
from fstcrf.errors import FstcrfError

#: The modules of the commands, in the order ``fstcrf --help`` lists them.
COMMANDS = (train, compose, tag, evaluate, calibrate, view, serve, draw, convert, seminars, demo, inspect, bench)


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command; each command's defaults name the
    options that hold its input and output paths (checked before any work)."""
    parser = argparse.ArgumentParser(
        prog="fstcrf",
        description="Conditional random fields as weighted FSTs. An output path '-' means standard output.",
    )
    add_quiet(parser)
    parser.add_argument("--version", action="version", version=f"fstcrf {fstcrf.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.add_parsers(commands)
    return parser


#: The most characters of an error message printed (a message repeating a huge
#: input, e.g. the 100,000 column names of a line, is cut).
LONGEST_MESSAGE = 2000


def shortened(message: str) -> str:
    """``message``, its middle cut when it is longer than LONGEST_MESSAGE characters
    (its start names the input, its end usually says what is wrong)."""
    if len(message) <= LONGEST_MESSAGE:
        return message
    head, tail = LONGEST_MESSAGE * 3 // 4, LONGEST_MESSAGE // 4
    return f"{message[:head]} ... ({len(message) - head - tail:,} characters cut) ... {message[-tail:]}"


def unrecognized(command_parser: argparse.ArgumentParser, unknown: list[str]) -> str:
    """The error for arguments a command does not take, with the command's options
    closest to each unknown one ("did you mean --max-iter?")."""
    options = sorted(set(re.findall(r"(?<![\w-])--?[A-Za-z][\w-]*", command_parser.format_help())))
    given_options = [given.split("=")[0] for given in unknown if given.startswith("-")]
    guesses = [match for given in given_options for match in get_close_matches(given, options, 1)]
    hint = f" (did you mean {' or '.join(dict.fromkeys(guesses))}?)" if guesses else ""
    return f"unrecognized arguments: {' '.join(unknown)}{hint}"


def _raise_keyboard_interrupt(signal_number, frame) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Run the command of ``argv`` (default: the process's arguments); its exit status: 0, 2 for an
    fstcrf error and 1 for a file that cannot be read or written (each printed as one line), 130 when
    interrupted, 141 when the reader of the output went away."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        args.command_parser.error(unrecognized(args.command_parser, unknown))
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO, format="%(message)s", stream=sys.stderr)
    previous_handler = signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    try:
        check_outputs(args)
        with limits(**{name: getattr(args, name, None) for name in DEFAULTS}):
            status = args.run(args)
        sys.stdout.flush()
        return status
    except FstcrfError as error:
        print(f"fstcrf: error: {shortened(str(error))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("fstcrf: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (``fstcrf eval ... | head``): stop quietly, as
        # Unix tools do, and keep Python from failing again on the final flush
        _drop_standard_output()
        return 141
    except OSError as error:
        name = error.filename or "standard output"
        print(f"fstcrf: error: {name}: {error.strerror or error}", file=sys.stderr)
        if name == "standard output":
            _drop_standard_output()
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous_handler)


def run() -> NoReturn:
    """The console script and ``python -m fstcrf.cli``: :func:`main`, then exit with its
    status.  What is left is frozen first (``gc.freeze``), so that the collection at
    interpreter exit skips it: about 40 ms of a tagging process's end.  When an
    interrupt left threads stuck in their work (what was done is written by then), the
    process ends at once (``os._exit``): the interpreter's exit could wait for them, or
    fail on a lock one of them holds."""
    status = main()
    stuck = sorted(set(left_running()))
    if stuck:
        print(f"fstcrf: ending with {len(stuck)} thread(s) stuck in their work: {', '.join(stuck)}", file=sys.stderr)
        logging.shutdown()
        sys.stderr.flush()
        os._exit(status)
    gc.freeze()
    sys.exit(status)


def _drop_standard_output() -> None:
    """Point standard output at the null device, so that the interpreter's
    final flush of unwritten output cannot fail again."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
