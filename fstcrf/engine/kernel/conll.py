"""CoNLL lines scanned into fields and written back (csrc/fstcrf_conll.h).  Bytes
cross as they are (bytes, bytearray or numpy uint8); the calls release the GIL, so
that one thread scans or writes while another extracts features or decodes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fstcrf._kernel import ffi, lib

#: The status of fl_scan for a line that is not UTF-8.
FL_BAD_UTF8: int = lib.FL_BAD_UTF8
#: The status of fl_format for a field that is empty or holds a separator or a line break.
FL_BAD_FIELD: int = lib.FL_BAD_FIELD


@dataclass
class Scan:
    """What fl_scan found in a buffer of lines (numbered from 0 there): the status
    (FC_OK, FL_BAD_UTF8 or FL_BAD_FIELDS) and the records before it."""

    status: int
    num_fields: int  #: fields of every token line (0: not known yet)
    first_token_line: int  #: the line num_fields was taken from, -1 if it was given
    lines: int  #: lines consumed
    bytes: int  #: bytes consumed
    sentence_line: np.ndarray  #: int64 [S] first line of each sentence
    sentence_tokens: np.ndarray  #: int64 [S] its tokens
    sentence_end: np.ndarray  #: int64 [S] where its fields end in ``fields``
    docstart_start: np.ndarray  #: int64 [D] where each -DOCSTART- line starts
    docstart_end: np.ndarray  #: int64 [D] and ends, without trailing "\r"s
    docstart_before: np.ndarray  #: int64 [D] the sentences before it
    fields: memoryview  #: every token's fields, each followed by "\n"
    error_line: int  #: the offending line of an error status
    open_line: int  #: after an error, the first line of the sentence it stopped in, -1 if none
    error_field: int  #: FL_BAD_FIELDS: the first empty field (from 1), else 0
    error_count: int  #: FL_BAD_FIELDS: the fields of error_line


def _bytes(data):
    """A uint8_t view of a bytes-like object."""
    return ffi.from_buffer("uint8_t[]", data)


def scan(data: bytes, size: int, final: bool, separator: bytes, num_fields: int) -> Scan:
    """fl_scan of data[:size] (whole lines; the file's last ones if ``final``), fields split
    at ``separator`` (b"": runs of " \\t\\r\\f\\v"), ``num_fields`` fields per token line
    (0: the first token line's count)."""
    capacity = data.count(b"\n", 0, size) + 1
    records = np.empty((6, capacity), dtype=np.int64)
    fields = bytearray(size + capacity)
    result = ffi.new("fl_scan_result *")
    result.num_fields = num_fields
    status = lib.fl_scan(
        _bytes(data),
        size,
        int(final),
        _bytes(separator),
        len(separator),
        *(ffi.from_buffer("int64_t[]", row) for row in records),
        _bytes(fields),
        result,
    )
    sentences, docstarts = result.sentences, result.docstarts
    return Scan(
        status,
        result.num_fields,
        result.first_token_line,
        result.lines,
        result.bytes,
        records[0, :sentences],
        records[1, :sentences],
        records[2, :sentences],
        records[3, :docstarts],
        records[4, :docstarts],
        records[5, :docstarts],
        memoryview(fields)[: result.field_bytes],
        result.error_line,
        result.open_line,
        result.error_field,
        result.error_count,
    )


def format_lines(
    lengths: np.ndarray,
    rows: bytes,
    num_row_fields: int,
    columns: list[bytes],
    docstarts: bytes,
    docstarts_before: np.ndarray,
    padding: bytes,
    separator: bytes,
) -> tuple[int, bytearray]:
    """fl_format: (status, the CoNLL lines of B sentences of lengths int64 [B]): the
    first ``num_row_fields`` fields of every token from ``rows`` (token after token),
    then each of ``columns`` (one value per token), every field followed by "\\n" in
    them; the -DOCSTART- lines ``docstarts`` ("\\n" after each), docstarts_before int64
    [B+1] of them before each sentence (cumulative) and ``padding`` after each."""
    blob = b"".join(columns)
    cursors = np.cumsum([0] + [len(column) for column in columns[:-1]], dtype=np.int64)
    fields = num_row_fields + len(columns)
    tokens = int(lengths.sum())
    capacity = (
        len(rows)
        + len(blob)
        + tokens * max(fields, 1) * len(separator)
        + len(docstarts)
        + int(docstarts_before[-1]) * (len(padding) + 2)
        + len(lengths)
        + 1
    )
    out = bytearray(capacity)
    written = ffi.new("int64_t *")
    status = lib.fl_format(
        len(lengths),
        ffi.from_buffer("int64_t[]", np.ascontiguousarray(lengths, dtype=np.int64)),
        num_row_fields,
        _bytes(rows),
        len(rows),
        len(columns),
        _bytes(blob),
        len(blob),
        ffi.from_buffer("int64_t[]", cursors),
        _bytes(docstarts),
        len(docstarts),
        ffi.from_buffer("int64_t[]", np.ascontiguousarray(docstarts_before, dtype=np.int64)),
        _bytes(padding),
        len(padding),
        _bytes(separator),
        len(separator),
        _bytes(out),
        capacity,
        written,
    )
    del out[written[0] :]
    return status, out
