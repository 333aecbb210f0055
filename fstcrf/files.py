"""File helpers: UTF-8 reading with located errors, checks of output paths
before any work, and writes that never leave a part of a file: a regular file
is replaced atomically (readers see the old file or the new one), a symbolic
link is followed, and a device or FIFO is written to as it is.  The output
path "-" is standard output."""

from __future__ import annotations

import errno
import io
import os
import secrets
import stat
import sys
from pathlib import Path
from typing import BinaryIO
from collections.abc import Callable, Iterable

from fstcrf.errors import OutputPathError

STDOUT = "-"


def read_utf8(path: str | os.PathLike, error: type[Exception], max_bytes: int | None = None) -> str:
    """The text of a UTF-8 file; an unreadable file, an invalid byte or (with
    ``max_bytes``) more bytes than that raise ``error`` with a message naming the
    file (and FILE:LINE for the byte).  At most ``max_bytes`` + 1 bytes are read."""
    try:
        with open(path, "rb") as stream:
            raw = stream.read() if max_bytes is None else stream.read(max_bytes + 1)
    except OSError as problem:
        raise error(f"{os.fspath(path)}: cannot read the file: {problem.strerror}") from None
    if max_bytes is not None and len(raw) > max_bytes:
        raise error(f"{os.fspath(path)}: the file holds more than {max_bytes:,} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as problem:
        line_number = raw.count(b"\n", 0, problem.start) + 1
        raise error(
            f"{os.fspath(path)}:{line_number}: expected UTF-8 text, found the invalid byte 0x{raw[problem.start]:02x}"
        ) from None


def written_in_place(path: str | os.PathLike) -> bool:
    """Whether an output is opened and written as it is instead of replaced:
    standard output ("-"), or an existing file that is not a regular file or a
    folder once symbolic links are followed (a device, a FIFO, a socket)."""
    if os.fspath(path) == STDOUT:
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def check_output_path(path: str | os.PathLike, inputs: Iterable[str | os.PathLike] = ()) -> None:
    """Raise OutputPathError unless ``path`` can be written safely: not empty,
    not a folder or a loop of symbolic links, not the same file as one of
    ``inputs``, and either a writable device or FIFO, or a writable regular file
    (new or existing) in an existing writable folder.  Symbolic links are
    followed.  Standard output ("-") is refused only when it is a regular file
    (``>> FILE``) that is one of ``inputs``."""
    name = os.fspath(path)
    if not name:
        raise OutputPathError("the output path is empty; give the name of a file to write")
    if name == STDOUT:
        _check_standard_output(inputs)
        return
    try:
        os.stat(name)
    except OSError as problem:
        if problem.errno == errno.ELOOP:
            raise OutputPathError(
                f"{name}: too many levels of symbolic links (a loop of links); give the name of a file to write"
            ) from None
    target = Path(os.path.realpath(name))
    if target.is_dir():
        raise OutputPathError(f"{name}: is a folder; give the name of a file to write")
    for source in inputs:
        if target.exists() and os.path.exists(source) and os.path.samefile(target, source):
            raise _overwrites_input(name, source)
    if target.exists() and not os.access(target, os.W_OK):
        raise OutputPathError(f"{name}: the file is not writable")
    if written_in_place(target):
        return
    folder = target.parent if os.path.islink(name) else Path(os.path.dirname(name) or ".")
    if not folder.exists():
        raise OutputPathError(f"{name}: the folder {folder} does not exist")
    if not folder.is_dir():
        raise OutputPathError(f"{name}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputPathError(f"{name}: cannot create files in the folder {folder}")


def _check_standard_output(inputs: Iterable[str | os.PathLike]) -> None:
    """OutputPathError when standard output is a regular file (``>> FILE``) that is one
    of ``inputs`` ("-" among them: standard input)."""
    output = _regular_file_identity(1)
    if output is None:
        return
    for source in inputs:
        if os.fspath(source) == STDOUT:
            same = _regular_file_identity(0) == output
        else:
            try:
                status = os.stat(source)
            except OSError:
                continue
            same = (status.st_dev, status.st_ino) == output
        if same:
            raise _overwrites_input("standard output", source)


def _overwrites_input(output: str, source: str | os.PathLike) -> OutputPathError:
    """The error of an ``output`` that is the same file as the input ``source``."""
    return OutputPathError(
        f"{output}: is the same file as the input {os.fspath(source)}; writing it would destroy the input"
    )


def _regular_file_identity(descriptor: int) -> tuple[int, int] | None:
    """(device, inode) of the regular file open as ``descriptor``; None for a terminal,
    a pipe, a device or a closed descriptor."""
    try:
        status = os.fstat(descriptor)
    except OSError:
        return None
    return (status.st_dev, status.st_ino) if stat.S_ISREG(status.st_mode) else None


def write_atomically(
    path: str | os.PathLike, write: Callable[[BinaryIO], object], keep_on_interrupt: bool = False
) -> None:
    """Call ``write(stream)`` on the output ``path``.  A regular file (new, or
    the target of a symbolic link, which is kept) is written as a temporary
    file in the same folder, flushed to disk and renamed over it, keeping an
    existing file's permissions; on any error (Ctrl-C included) the temporary
    file is removed and the old file is left as it was -- except that with
    ``keep_on_interrupt`` Ctrl-C (KeyboardInterrupt) renames what was written
    so far over it before the interrupt goes on (streamed output whose
    finished part is worth keeping).  Standard output ("-"),
    a device or a FIFO is written to directly.  A path that
    :func:`check_output_path` refuses raises OutputPathError before anything
    is written; an OSError while writing names ``path``."""
    name = os.fspath(path)
    check_output_path(name)
    try:
        if name == STDOUT:
            sys.stdout.flush()
            _write_standard_output(write)
        elif written_in_place(name):
            with open(name, "wb") as stream:
                write(stream)
        else:
            _replace(Path(os.path.realpath(name)), write, keep_on_interrupt)
    except OSError as problem:
        if problem.errno is None:
            raise
        shown = "standard output" if name == STDOUT else name
        raise type(problem)(problem.errno, problem.strerror, shown) from None


def _write_standard_output(write: Callable[[BinaryIO], object]) -> None:
    """Call ``write(stream)`` on standard output's bytes.  An unbuffered standard output
    (``python -u``, PYTHONUNBUFFERED) writes through a buffer of its own, whose write()
    writes all its bytes or raises (BrokenPipeError when the reader went away), where
    the unbuffered one may write a part and return the count."""
    if not isinstance(sys.stdout.buffer, io.RawIOBase):
        write(sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    with open(sys.stdout.buffer.fileno(), "wb", closefd=False) as stream:
        write(stream)


def _replace(target: Path, write: Callable[[BinaryIO], object], keep_on_interrupt: bool = False) -> None:
    """Write a temporary file beside ``target`` and rename it over ``target`` (on
    Ctrl-C too, with ``keep_on_interrupt``)."""
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    try:
        with open(temporary, "xb") as stream:
            if target.exists():
                os.chmod(stream.fileno(), stat.S_IMODE(target.stat().st_mode))
            try:
                write(stream)
            except KeyboardInterrupt:
                if not keep_on_interrupt:
                    raise
                stream.flush()
                os.replace(temporary, target)
                raise
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
