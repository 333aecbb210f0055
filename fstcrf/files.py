"""File helpers: UTF-8 reading with located errors, and atomic writes
(readers see the old file or the new one, never a part)."""
from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import BinaryIO, Callable


def read_utf8(path: str | os.PathLike, error: type[Exception]) -> str:
    """The text of a UTF-8 file; an unreadable file or an invalid byte raises
    ``error`` with a message naming the file (and FILE:LINE for the byte)."""
    try:
        raw = Path(path).read_bytes()
    except OSError as problem:
        raise error(f"{os.fspath(path)}: cannot read the file: {problem.strerror}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as problem:
        line_number = raw.count(b"\n", 0, problem.start) + 1
        raise error(f"{os.fspath(path)}:{line_number}: expected UTF-8 text, found the invalid "
                    f"byte 0x{raw[problem.start]:02x}") from None


def write_atomically(path: str | os.PathLike, write: Callable[[BinaryIO], None]) -> None:
    """Call ``write(stream)`` on a new temporary file next to ``path``, flush it
    to disk, then rename it over ``path``.  On any error (Ctrl-C included) the
    temporary file is removed and ``path`` is left as it was."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        with open(temporary, "xb") as stream:
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
