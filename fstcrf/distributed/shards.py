"""A corpus cut into shards that workers read where the data lives.

A shard is a run of pieces, each a byte range [start, stop) of one file; a
whole file and a list of files are special cases.  :func:`partition` cuts one
file or the concatenation of several into shards of about equal size, every
cut moved forward to the end of a blank line, so that each shard holds whole
sentences and the shards, read in order, hold the sentences of the files in
order.
"""
from __future__ import annotations

import io
import os
from dataclasses import dataclass
from typing import Sequence

from ..conll import Corpus, iter_conll
from ..errors import ConllFormatError, FstcrfError, ShardError

@dataclass(frozen=True)
class Piece:
    """Bytes start .. stop-1 of the file at ``path``."""

    path: str
    start: int
    stop: int

    def __str__(self) -> str:
        return f"{self.path} (bytes {self.start}-{self.stop})"


@dataclass(frozen=True)
class Shard:
    """The pieces of one shard, in corpus order."""

    pieces: tuple[Piece, ...]

    def __str__(self) -> str:
        return ", ".join(map(str, self.pieces))

    @property
    def num_bytes(self) -> int:
        return sum(piece.stop - piece.start for piece in self.pieces)


def _file_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError as problem:
        raise ShardError(f"{path}: cannot read the training file: {problem.strerror}") from None


def _next_sentence_start(path: str, offset: int, size: int) -> int:
    """The first byte at or after ``offset`` that follows a blank line, or ``size``."""
    with open(path, "rb") as stream:
        stream.seek(offset - 1)
        inside_line = stream.read(1) != b"\n"   # the line ``offset`` falls in started before it
        position = offset
        for line in iter(stream.readline, b""):
            position += len(line)
            if not inside_line and not line.strip(b" \t\r\f\v\n"):
                return position
            inside_line = False
    return size


def partition(paths: str | os.PathLike | Sequence[str | os.PathLike], num_shards: int) -> list[Shard]:
    """About ``num_shards`` shards (fewer when the files hold fewer sentences) of one
    file or of several files read one after another."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = [os.fspath(path) for path in paths]
    if not paths:
        raise FstcrfError("no training files to cut into shards")
    if isinstance(num_shards, bool) or not isinstance(num_shards, int) or num_shards < 1:
        raise FstcrfError(f"the number of shards must be a positive integer, got {num_shards!r}")
    sizes = [_file_size(path) for path in paths]
    starts = [0]
    for size in sizes:
        starts.append(starts[-1] + size)
    bounds = {0, starts[-1]}                   # shard bounds in the files read one after another
    for k in range(1, num_shards):
        target = k * starts[-1] // num_shards
        index = max(i for i in range(len(paths)) if starts[i] <= target)
        local = target - starts[index]
        if local > 0:
            bounds.add(starts[index] + _next_sentence_start(paths[index], local, sizes[index]))
    bounds = sorted(bounds)
    shards = []
    for low, high in zip(bounds[:-1], bounds[1:]):
        pieces = tuple(Piece(path, max(low, start) - start, min(high, start + size) - start)
                       for path, start, size in zip(paths, starts, sizes)
                       if max(low, start) < min(high, start + size))
        if pieces:
            shards.append(Shard(pieces))
    return shards


def read_shard(shard: Shard, columns: str | Sequence[str] | None = None, separator: str | None = None,
               worker: str = "this process") -> Corpus:
    """The sentences of a shard (none when it holds only blank lines); ShardError names
    ``worker`` and the file when a piece cannot be read or parsed, or when pieces
    differ in their columns."""
    sentences, names, first = [], None, None
    for piece in shard.pieces:
        try:
            with open(piece.path, "rb") as stream:
                stream.seek(piece.start)
                data = stream.read(piece.stop - piece.start)
        except OSError as problem:
            raise ShardError(f"worker {worker} cannot read {piece}: {problem.strerror}") from None
        if len(data) != piece.stop - piece.start:
            raise ShardError(f"worker {worker} read {len(data)} bytes of {piece}: the file changed "
                             "after the corpus was partitioned")
        try:
            corpus, = iter_conll(io.BytesIO(data), columns, separator, name=str(piece))
        except ConllFormatError as problem:
            raise ShardError(f"worker {worker}: {problem}") from None
        if names is not None and corpus.sentences and corpus.column_names != names:
            raise ShardError(f"worker {worker}: {piece} has the columns {', '.join(corpus.column_names)} "
                             f"({len(corpus.column_names)} fields) but {first} has {', '.join(names)} "
                             f"({len(names)} fields)")
        if corpus.sentences:
            if names is None:
                names, first = corpus.column_names, piece
            sentences.extend(corpus.sentences)
    return Corpus(names or (), sentences)
