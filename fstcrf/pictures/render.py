"""Writing a picture: the suffix of the output path chooses the format (``.dot``: the
dot text itself; ``.svg`` and ``.png``: drawn by Graphviz's ``dot`` program), checked
before any work, and the file is written atomically."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from fstcrf.errors import MissingProgramError, PictureError
from fstcrf.files import STDOUT, write_atomically

#: The suffixes a picture may have, and the format Graphviz draws each in (None: the dot text).
FORMATS = {".dot": None, ".gv": None, ".svg": "svg", ".png": "png"}

#: The program that draws dot text.
RENDERER = "dot"


def suffix_format(path: str | os.PathLike, formats: dict, what: str):
    """The format ``formats`` gives the suffix of ``path`` (any case); PictureError
    naming the suffixes ``what`` (e.g. "a picture") may have for any other."""
    suffix = Path(path).suffix.lower()
    if suffix not in formats:
        raise PictureError(
            f"{os.fspath(path)}: {what}'s name ends in {', '.join(list(formats)[:-1])} or {list(formats)[-1]}, "
            "which chooses its format; "
            f"got {suffix or 'no suffix'}"
        )
    return formats[suffix]


def picture_format(path: str | os.PathLike) -> str | None:
    """The Graphviz format of the output ``path`` ("svg", "png"), or None for dot text
    (a ``.dot`` or ``.gv`` file, or standard output "-").  PictureError for any other
    suffix; MissingProgramError for an image when Graphviz's ``dot`` is not installed."""
    if os.fspath(path) == STDOUT:
        return None
    fmt = suffix_format(path, FORMATS, "a picture")
    if fmt is not None and shutil.which(RENDERER) is None:
        raise MissingProgramError(
            f"{os.fspath(path)}: drawing .{fmt} needs Graphviz's {RENDERER} program, which is not installed: "
            "install the package graphviz (Debian and Ubuntu: apt-get install graphviz; macOS: brew install "
            "graphviz), or write the dot text to a file ending in .dot"
        )
    return fmt


def rendered(dot_text: str, fmt: str) -> bytes:
    """``dot_text`` drawn by Graphviz in the format ``fmt`` ("svg", "png");
    PictureError with Graphviz's message if it fails."""
    program = shutil.which(RENDERER)
    if program is None:
        raise MissingProgramError(f"drawing {fmt} needs Graphviz's {RENDERER} program (package graphviz)")
    result = subprocess.run([program, f"-T{fmt}"], input=dot_text.encode("utf-8"), capture_output=True, check=False)
    if result.returncode != 0:
        message = result.stderr.decode("utf-8", "replace").strip()
        raise PictureError(f"Graphviz's {RENDERER} could not draw the picture: {message}")
    return result.stdout


def write_picture(dot_text: str, path: str | os.PathLike) -> None:
    """Write ``dot_text`` to ``path`` ("-": standard output) as its suffix says: the
    text itself, or the picture Graphviz draws of it."""
    fmt = picture_format(path)
    data = dot_text.encode("utf-8") if fmt is None else rendered(dot_text, fmt)
    write_atomically(path, lambda stream: stream.write(data))
