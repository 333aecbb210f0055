"""Atomic file writes: readers see the old file or the new one, never a part."""
from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import BinaryIO, Callable


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
