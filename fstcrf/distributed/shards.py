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
from collections.abc import Sequence

from fstcrf.corpus.conll import DOCSTART, Corpus, Sentence, iter_conll
from fstcrf.errors import ConllFormatError, FstcrfError, ShardError

#: Bytes looked at before a cut for the start of the line it falls in.
LINE_LOOKBACK = 1 << 16


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
    """The first byte at or after ``offset`` that follows a blank line closing a sentence
    (not one closing a ``-DOCSTART-`` line, which belongs with the sentence after it),
    or ``size``."""
    with open(path, "rb") as stream:
        back = max(0, offset - LINE_LOOKBACK)
        stream.seek(back)
        newline = stream.read(offset - back).rfind(b"\n")
        line_start = back + newline + 1 if newline >= 0 or back == 0 else offset
        stream.seek(line_start)
        position, docstart = line_start, False
        for line in iter(stream.readline, b""):
            started = position
            position += len(line)
            stripped = line.strip(b" \t\r\f\v\n")
            if not stripped:
                if started >= offset and not docstart:
                    return position
            else:
                docstart = stripped.startswith(DOCSTART.encode())
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
    bounds = {0, starts[-1]}  # shard bounds in the files read one after another
    for k in range(1, num_shards):
        target = k * starts[-1] // num_shards
        index = max(i for i in range(len(paths)) if starts[i] <= target)
        local = target - starts[index]
        if local > 0:
            bounds.add(starts[index] + _next_sentence_start(paths[index], local, sizes[index]))
    bounds = sorted(bounds)
    shards = []
    for low, high in zip(bounds[:-1], bounds[1:]):
        pieces = tuple(
            Piece(path, max(low, start) - start, min(high, start + size) - start)
            for path, start, size in zip(paths, starts, sizes)
            if max(low, start) < min(high, start + size)
        )
        if pieces:
            shards.append(Shard(pieces))
    return shards


def read_shard(
    shard: Shard,
    columns: str | Sequence[str] | None = None,
    separator: str | None = None,
    worker: str = "this process",
    allow_missing: Sequence[str] = (),
) -> Corpus:
    """The sentences of a shard (none when it holds only blank lines); ShardError names
    ``worker`` and the file when a piece cannot be read or parsed, or when pieces
    differ in their columns.  ``columns``, ``separator`` and ``allow_missing`` are
    :func:`~fstcrf.corpus.conll.read_conll`'s."""
    sentences, names, first, pending = [], None, None, ()
    for piece in shard.pieces:
        try:
            with open(piece.path, "rb") as stream:
                stream.seek(piece.start)
                data = stream.read(piece.stop - piece.start)
        except OSError as problem:
            raise ShardError(f"worker {worker} cannot read {piece}: {problem.strerror}") from None
        if len(data) != piece.stop - piece.start:
            raise ShardError(
                f"worker {worker} read {len(data)} bytes of {piece}: the file changed after the corpus was partitioned"
            )
        try:
            (corpus,) = iter_conll(io.BytesIO(data), columns, separator, allow_missing=allow_missing, name=str(piece))
        except ConllFormatError as problem:
            raise ShardError(f"worker {worker}: {problem}") from None
        if names is not None and corpus.sentences and corpus.column_names != names:
            raise ShardError(
                f"worker {worker}: {piece} has the columns {', '.join(corpus.column_names)} "
                f"({len(corpus.column_names)} fields) but {first} has {', '.join(names)} "
                f"({len(names)} fields)"
            )
        if corpus.sentences:
            if names is None:
                names, first = corpus.column_names, piece
            head = corpus.sentences[0]
            sentences.append(Sentence(head.columns, head.line_numbers, pending + head.docstart_lines))
            sentences.extend(corpus.sentences[1:])
            pending = ()
        pending += corpus.trailing_docstart_lines
    return Corpus(names or (), sentences, None, separator, pending)
