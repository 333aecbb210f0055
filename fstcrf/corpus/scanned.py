"""CoNLL files read and written in C (csrc/fstcrf_conll.c), for ``fstcrf tag``.

:func:`iter_scanned` yields the batches of :func:`fstcrf.corpus.conll.iter_conll`
-- the same sentences, line numbers, ``-DOCSTART-`` lines and errors, byte for
byte -- but splits lines and fields in C a block at a time, with the GIL
released, and keeps each batch's fields as read.  From a pipe, a terminal or a
socket it also ends a batch early when the input stalls (see :func:`iter_scanned`),
so that a program that writes sentences and waits for their tags gets them.
:func:`tagged_lines` writes such a batch back with extra columns, as
:func:`~fstcrf.corpus.conll.write_conll` would, from those fields and without a
Python loop over the tokens.
"""

from __future__ import annotations

import os
import select
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from bisect import bisect_left
from itertools import accumulate, chain
from pathlib import Path
from typing import BinaryIO

import numpy as np

from fstcrf.corpus.conll import (
    Corpus,
    Sentence,
    conll_lines,
    expected_fields,
    opened_conll,
    present_columns,
    read_block,
    reading_arguments,
)
from fstcrf.engine.kernel import FC_OK, FL_BAD_FIELD, FL_BAD_UTF8, Scan, format_lines, scan
from fstcrf.errors import ConllFormatError

#: Tokens whose fields :func:`iter_scanned` makes strings at a time (memory stays
#: that of a batch or so, not that of a read block).
GROUP_TOKENS = 8192

#: The UTF-8 byte order mark, dropped from the start of a file whose first block holds a line break.
BYTE_ORDER_MARK = b"\xef\xbb\xbf"

#: Seconds :func:`iter_scanned` waits for more input from a pipe, terminal or socket
#: before it ends the batch with the sentences it holds.
STALL_SECONDS = 0.05


@dataclass
class ScannedCorpus(Corpus):
    """A batch of :func:`iter_scanned`: a :class:`Corpus` that also holds the fields of
    its tokens as read, token after token, each followed by "\\n"."""

    fields: bytes = field(default=b"", compare=False, repr=False)
    #: whether the batch ended because the input paused (see :func:`iter_scanned`)
    stalled: bool = field(default=False, compare=False)


def iter_scanned(
    source: str | os.PathLike | BinaryIO,
    columns: str | Sequence[str] | None = None,
    separator: str | None = None,
    *,
    allow_missing: Sequence[str] = (),
    batch_tokens: int | None = None,
    whole_documents: bool = False,
    name: str | None = None,
) -> Iterator[ScannedCorpus]:
    """:func:`fstcrf.corpus.conll.iter_conll`'s batches (same arguments, same errors
    at the same points), read in C.

    From a source that can stall (a pipe, terminal or socket, on POSIX) with
    ``batch_tokens`` given and not ``whole_documents``, a batch also ends when no
    more input arrives for STALL_SECONDS while it holds finished sentences (a
    sentence is finished by its blank line): a producer that writes sentences and
    waits for their tags is not kept waiting for a whole batch.  Batches then
    follow the input's pauses; their sentences and line numbers are the same."""
    names, allow_missing = reading_arguments(columns, separator, allow_missing, batch_tokens)
    with opened_conll(source, name) as (stream, stream_name, path):
        reader = _Reader(stream_name, path, names, allow_missing, separator, batch_tokens, whole_documents)
        yield from reader.batches(stream)


def stalling_descriptor(stream: BinaryIO) -> int | None:
    """The file descriptor of ``stream`` when its input can stall and select() can
    wait on it (a pipe, terminal or socket, on POSIX), else None (a regular file or
    block device, a stream without a descriptor, Windows)."""
    if os.name != "posix":
        return None
    try:
        descriptor = stream.fileno()
        mode = os.fstat(descriptor).st_mode
    except (AttributeError, OSError, ValueError):
        return None
    return None if stat.S_ISREG(mode) or stat.S_ISBLK(mode) else descriptor


def input_arrives(descriptor: int, seconds: float) -> bool:
    """Whether ``descriptor`` has input (or its end) to read within ``seconds``."""
    try:
        return bool(select.select([descriptor], [], [], seconds)[0])
    except (OSError, ValueError):
        return True  # reading then blocks, or raises the error where it is handled


class _Reader:
    """The batches of one file, built from the records fl_scan finds block after block."""

    def __init__(
        self,
        name: str,
        path: Path | None,
        names: tuple[str, ...] | None,
        allow_missing: tuple[str, ...],
        separator: str | None,
        batch_tokens: int | None,
        whole_documents: bool,
    ):
        self.name, self.path, self.names, self.allow_missing = name, path, names, allow_missing
        self.separator, self.batch_tokens, self.whole_documents = separator, batch_tokens, whole_documents
        self.separator_bytes = separator.encode("utf-8") if separator else b""
        self.present: tuple[str, ...] | None = None
        self.first_token_line = 0
        self.sentences: list[Sentence] = []
        self.pieces: list[memoryview] = []  # the fields of the batch's sentences from earlier scans
        self.fields = memoryview(b"")  # those of the scan being read
        self.fields_taken = [0, 0]  # its batch's fields, from .. to
        self.size = 0  # tokens in the batch
        self.docstarts: list[str] = []  # -DOCSTART- lines since the last sentence
        self.yielded = False

    def batches(self, stream: BinaryIO) -> Iterator[ScannedCorpus]:
        carry, lines_before, first = b"", 0, True
        stalling = None if self.batch_tokens is None or self.whole_documents else stalling_descriptor(stream)
        more_ready = None if stalling is None else lambda: input_arrives(stalling, 0.0)
        while True:
            if stalling is not None and self.sentences and not input_arrives(stalling, STALL_SECONDS):
                yield self._take(stalled=True)  # the input stalls: the sentences so far go on now
            block = read_block(stream, self.name, more_ready)
            final = not block
            data = carry + block if carry else block
            if first and (final or b"\n" in data):  # as the Python reader, from the first line
                data = data.removeprefix(BYTE_ORDER_MARK)
                first = False
            size = len(data) if final else data.rfind(b"\n") + 1
            if size or final:
                found = scan(data, size, final, self.separator_bytes, len(self.present or ()))
                self._check_layout(found, lines_before)
                yield from self._records(found, data, lines_before)
                if found.status != FC_OK:
                    yield from self._fail(found, data, lines_before)
                lines_before += found.lines
                carry = data[found.bytes :]
            else:
                carry = data
            if final:
                break
        if self.sentences or self.docstarts or not self.yielded:
            yield ScannedCorpus(
                self.present or self.names or (),
                self.sentences,
                self.path,
                self.separator,
                tuple(self.docstarts),
                b"".join(self.pieces),
            )

    def _check_layout(self, found: Scan, lines_before: int) -> None:
        """Name the columns when the first token line has been met; ConllFormatError if
        its field count fits none of the column layouts (unless a bad byte comes first)."""
        if self.present is not None or found.num_fields == 0:
            return
        self.first_token_line = lines_before + found.first_token_line + 1
        self.present = present_columns(self.names, self.allow_missing, found.num_fields)
        if self.present is not None:
            return
        first_sentence_read = len(found.sentence_line) > 0 and found.sentence_line[0] == found.first_token_line
        if found.status == FL_BAD_UTF8 and not first_sentence_read:
            return  # the bad byte comes before the end of the first sentence
        raise ConllFormatError(
            f"{self.name}:{self.first_token_line}: expected "
            f"{expected_fields(self.names or (), self.allow_missing)}, found {found.num_fields} fields"
        )

    def _full(self, at_document_start: bool) -> bool:
        return (
            self.batch_tokens is not None
            and self.size >= self.batch_tokens
            and (at_document_start or not self.whole_documents)
        )

    def _keep_fields(self) -> None:
        """Move the batch's fields of the scan being read to its pieces."""
        start, end = self.fields_taken
        self.pieces.append(self.fields[start:end])
        self.fields_taken = [end, end]

    def _take(self, stalled: bool = False) -> ScannedCorpus:
        self._keep_fields()
        batch = ScannedCorpus(
            self.present or (), self.sentences, self.path, self.separator, fields=b"".join(self.pieces), stalled=stalled
        )
        self.sentences, self.pieces, self.size, self.yielded = [], [], 0, True
        return batch

    def _docstart(self, line: str) -> Iterator[ScannedCorpus]:
        if not self.docstarts and self._full(True):
            yield self._take()
        self.docstarts.append(line)

    def _records(self, found: Scan, data: bytes, lines_before: int) -> Iterator[ScannedCorpus]:
        """The sentences and -DOCSTART- lines of a scan, in file order, into batches; the
        fields made strings a group of about GROUP_TOKENS tokens at a time."""
        lines, ends = found.sentence_line.tolist(), found.sentence_end.tolist()
        offsets = list(accumulate(found.sentence_tokens.tolist(), initial=0))
        starts, docstart_ends = found.docstart_start.tolist(), found.docstart_end.tolist()
        before = found.docstart_before.tolist()
        names = self.present or ()
        width = len(names)
        docstart = 0
        group_end = 0  # the sentences before it have their fields as strings
        self.fields = found.fields
        for number, line in enumerate(lines):
            if number == group_end:
                group_start = number
                group_end = max(bisect_left(offsets, offsets[number] + GROUP_TOKENS), number + 1)
                group_end = min(group_end, len(lines))
                flat = str(found.fields[ends[number - 1] if number else 0 : ends[group_end - 1]], "utf-8").split("\n")
                columns = [flat[c:-1:width] for c in range(width)]
            while docstart < len(before) and before[docstart] <= number:
                yield from self._docstart(data[starts[docstart] : docstart_ends[docstart]].decode("utf-8"))
                docstart += 1
            if self._full(False):
                yield self._take()
            first, last = offsets[number] - offsets[group_start], offsets[number + 1] - offsets[group_start]
            self.sentences.append(
                Sentence.of_lists(
                    dict(zip(names, [column[first:last] for column in columns])),
                    list(range(lines_before + line + 1, lines_before + line + 1 + last - first)),
                    tuple(self.docstarts) if self.docstarts else (),
                )
            )
            self.docstarts.clear()
            self.size += last - first
            self.fields_taken[1] = ends[number]
        self._keep_fields()
        self.fields_taken = [0, 0]
        for docstart in range(docstart, len(before)):
            yield from self._docstart(data[starts[docstart] : docstart_ends[docstart]].decode("utf-8"))

    def _fail(self, found: Scan, data: bytes, lines_before: int) -> Iterator[ScannedCorpus]:
        """The batch the sentence an error stopped in closed, then the error."""
        if found.open_line >= 0 and self._full(False):
            yield self._take()
        line = lines_before + found.error_line + 1
        if found.status == FL_BAD_UTF8:
            text = data.split(b"\n", found.error_line + 1)[found.error_line]
            try:
                text.decode("utf-8")
            except UnicodeDecodeError as problem:
                raise ConllFormatError(
                    f"{self.name}:{line}: expected UTF-8 text, found the invalid byte 0x{text[problem.start]:02x}"
                ) from None
        if found.error_field:
            raise ConllFormatError(
                f"{self.name}:{line}: expected non-empty fields separated by {self.separator!r}, "
                f"found an empty field (field {found.error_field})"
            )
        present = self.present or ()
        raise ConllFormatError(
            f"{self.name}:{line}: expected {len(present)} fields ({' '.join(present)}) as on line "
            f"{self.first_token_line}, found {found.error_count}"
        )


def tagged_lines(
    batch: Corpus, extra_columns: Sequence[Sequence[Sequence[str]]], target: str, separator: str | None = None
) -> bytes | bytearray:
    """The UTF-8 bytes :func:`~fstcrf.corpus.conll.write_conll` writes for a batch with
    ``extra_columns`` (its errors too, naming ``target``), written in C from the fields
    of a :class:`ScannedCorpus` (any other Corpus is written by Python)."""
    separator = separator or batch.separator or " "
    sentences = batch.sentences
    lengths = [len(sentence) for sentence in sentences]
    if not isinstance(batch, ScannedCorpus) or not all(
        len(extra) == len(sentences)
        and all(not isinstance(values, str) and len(values) == length for values, length in zip(extra, lengths))
        for extra in extra_columns
    ):
        return _python_lines(batch, extra_columns, separator, target)
    tokens = sum(lengths)
    columns = [
        ("\n".join(chain.from_iterable(extra)) + "\n").encode("utf-8") if tokens else b"" for extra in extra_columns
    ]
    if any(column.count(b"\n") != tokens for column in columns):  # a value holds a line break
        return _python_lines(batch, extra_columns, separator, target)
    docstart_lines = [line for sentence in sentences for line in sentence.docstart_lines]
    docstart_lines += batch.trailing_docstart_lines
    docstarts_before = np.cumsum([0] + [len(sentence.docstart_lines) for sentence in sentences], dtype=np.int64)
    docstarts_before = (
        np.append(docstarts_before[1:], len(docstart_lines))
        if sentences
        else np.array([len(docstart_lines)], dtype=np.int64)
    )
    status, out = format_lines(
        np.array(lengths, dtype=np.int64),
        batch.fields,
        len(batch.column_names),
        columns,
        "".join(line + "\n" for line in docstart_lines).encode("utf-8"),
        docstarts_before,
        "".join(separator + "O" for _ in extra_columns).encode("utf-8"),
        separator.encode("utf-8"),
    )
    if status == FL_BAD_FIELD:
        return _python_lines(batch, extra_columns, separator, target)
    if status != FC_OK:
        raise RuntimeError(f"fl_format returned status {status}")
    return out


def _python_lines(batch: Corpus, extra_columns, separator: str, target: str) -> bytes:
    """What write_conll writes (or the error it raises), by Python."""
    lines = conll_lines(batch.sentences, batch.trailing_docstart_lines, list(extra_columns), separator, target)
    return "".join(lines).encode("utf-8")
