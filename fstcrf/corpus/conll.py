"""Reading and writing CoNLL column files.

A CoNLL file has one token per line, its fields separated by whitespace (or by
an explicit separator such as a tab), and a blank line after each sentence.
A line whose first field is ``-DOCSTART-`` marks the start of a document; it
is never a token, but it is kept so that :func:`write_conll` reproduces it.

    corpus = read_conll("train.txt", columns="word,pos,chunk")
    corpus.column("chunk")          # one list of tags per sentence
    write_conll(corpus, "out.txt", extra_columns=[predicted_chunks])
"""

from __future__ import annotations

import os
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, TextIO, cast
from collections.abc import Callable, Iterable, Iterator, Sequence

from fstcrf.errors import ArgumentTypeError, ConllFormatError, FstcrfError, MissingColumnError, ShapeError
from fstcrf.files import write_atomically

DOCSTART = "-DOCSTART-"

_WHITESPACE = " \t\r\f\v"
_WHITESPACE_RUN = re.compile(r"[ \t\r\f\v]+")
_THREE_COLUMN_NAMES = ("word", "pos", "chunk")


@dataclass
class Sentence:
    """The tokens of one sentence: one list of strings per column, all of one length.

    ``columns`` maps each column name, in file order, to its values [num_tokens].
    ``line_numbers`` gives the 1-based file line of each token (None when the
    sentence was not read from a file).  ``docstart_lines`` holds the raw
    ``-DOCSTART-`` lines met since the previous sentence.
    """

    columns: dict[str, list[str]]
    line_numbers: Sequence[int] | None = field(default=None, compare=False, repr=False)
    docstart_lines: tuple[str, ...] = ()

    def __post_init__(self):
        self.columns = {name: list(values) for name, values in self.columns.items()}
        lengths = {name: len(values) for name, values in self.columns.items()}
        if len(set(lengths.values())) > 1:
            raise ShapeError(f"sentence columns differ in length: {lengths}")
        if self.line_numbers is not None and len(self.line_numbers) != len(self):
            raise ShapeError(f"sentence has {len(self)} tokens but {len(self.line_numbers)} line numbers")
        self.docstart_lines = tuple(self.docstart_lines)

    @classmethod
    def of_lists(
        cls, columns: dict[str, list[str]], line_numbers: Sequence[int] | None, docstart_lines: tuple[str, ...]
    ) -> Sentence:
        """A sentence that takes its arguments as they are, unchecked and uncopied: for
        readers whose columns are new lists of one length (and as many line numbers)."""
        sentence = cls.__new__(cls)
        sentence.columns, sentence.line_numbers, sentence.docstart_lines = columns, line_numbers, docstart_lines
        return sentence

    @property
    def column_names(self) -> tuple[str, ...]:
        """The column names, in file order."""
        return tuple(self.columns)

    @property
    def document_start(self) -> bool:
        """True if a ``-DOCSTART-`` line came before this sentence (after the previous one)."""
        return bool(self.docstart_lines)

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()), ()))

    def __getitem__(self, column: str) -> list[str]:
        """The values of one column [num_tokens]."""
        return self.columns[column]

    def values_of(self, column: str, number: int, what: str = "", why: str = "") -> list[str]:
        """The values [num_tokens] of ``column``; MissingColumnError if the sentence
        lacks it, naming ``what`` asked, the sentence's ``number``, its columns and
        ``why`` the column is read."""
        if column not in self.columns:
            raise MissingColumnError(
                f"{what + ': ' if what else ''}sentence {number} has no column {column!r}; its columns are "
                f"{', '.join(self.column_names) or 'none'}{'; ' + why if why else ''}"
            )
        return self.columns[column]

    def with_column(self, column: str, values: Sequence[str]) -> Sentence:
        """A copy with ``column`` set to ``values`` [num_tokens] (added if new), the
        same line numbers and ``-DOCSTART-`` lines."""
        return self.with_columns({column: values})

    def with_columns(self, columns: dict[str, Sequence[str]]) -> Sentence:
        """A copy with each column of ``columns`` set to its values [num_tokens] (added
        if new, in the dict's order), the same line numbers and ``-DOCSTART-`` lines."""
        added = {name: list(values) for name, values in columns.items()}
        return Sentence({**self.columns, **added}, self.line_numbers, self.docstart_lines)


@dataclass
class Corpus:
    """The sentences of a CoNLL file.

    ``trailing_docstart_lines`` holds ``-DOCSTART-`` lines that follow the last
    sentence; ``separator`` is the field separator given when reading (None
    for whitespace).
    """

    column_names: tuple[str, ...]
    sentences: list[Sentence]
    path: Path | None = None
    separator: str | None = None
    trailing_docstart_lines: tuple[str, ...] = ()

    def column(self, name: str) -> list[list[str]]:
        """The values of one column, one list [num_tokens] per sentence."""
        if name not in self.column_names:
            raise ConllFormatError(
                f"{self.path or '<corpus>'}: no column {name!r}; "
                f"the columns are {', '.join(self.column_names) or 'none'}"
            )
        return [sentence.columns[name] for sentence in self.sentences]

    @property
    def num_tokens(self) -> int:
        """The number of tokens of all sentences together."""
        return sum(len(sentence) for sentence in self.sentences)

    def __len__(self) -> int:
        return len(self.sentences)

    def __iter__(self) -> Iterator[Sentence]:
        return iter(self.sentences)

    def __getitem__(self, index: int | slice) -> Sentence | Corpus:
        """``corpus[3]``: a Sentence; ``corpus[10:20]``: a Corpus of those sentences (with
        the trailing ``-DOCSTART-`` lines when it ends with the last sentence)."""
        if isinstance(index, slice):
            numbers = range(len(self.sentences))
            trailing = self.trailing_docstart_lines if numbers[index][-1:] == numbers[-1:] else ()
            return Corpus(self.column_names, self.sentences[index], self.path, self.separator, trailing)
        if isinstance(index, bool) or not hasattr(index, "__index__"):
            raise ArgumentTypeError(
                f"a corpus is indexed by a sentence number or a slice, got {type(index).__name__} {_shorten(index)}"
            )
        return self.sentences[index]


def as_sentences(data, method: str) -> list[Sentence]:
    """The sentences of a Corpus or of a sequence of :class:`Sentence`, for ``method``
    (named in errors); ArgumentTypeError for anything else, such as a file name,
    raw text or lists of words."""
    hint = (
        "read a CoNLL file with fstcrf.corpus.conll.read_conll(path, columns=...), or build "
        "sentences with Sentence({'word': [...], ...})"
    )
    if isinstance(data, Corpus):
        return list(data.sentences)
    if type(data) is list and all(map(Sentence.__instancecheck__, data)):  # no copy needed to check it
        return data.copy()
    if isinstance(data, (str, bytes, os.PathLike)):
        raise ArgumentTypeError(
            f"{method} expects a Corpus or a list of Sentence, got {type(data).__name__} {_shorten(data)}; {hint}"
        )
    try:
        sentences = list(data)
    except TypeError:
        raise ArgumentTypeError(
            f"{method} expects a Corpus or a list of Sentence, got {type(data).__name__}; {hint}"
        ) from None
    for number, sentence in enumerate(sentences):
        if not isinstance(sentence, Sentence):
            raise ArgumentTypeError(
                f"{method} expects a Corpus or a list of Sentence, but item "
                f"{number} is {type(sentence).__name__} {_shorten(sentence)}; {hint}"
            )
    return sentences


def as_corpus(data, method: str) -> Corpus:
    """``data`` if it is a Corpus, else a Corpus of the sentences :func:`as_sentences`
    accepts, whose columns are those every sentence has (in the first one's order)."""
    if isinstance(data, Corpus):
        return data
    sentences = as_sentences(data, method)
    shared = set.intersection(*(set(sentence.column_names) for sentence in sentences)) if sentences else set()
    names = tuple(name for name in (sentences[0].column_names if sentences else ()) if name in shared)
    return Corpus(names, sentences)


def _shorten(value) -> str:
    """repr(value), cut to about 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def column_names_of(columns: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """The column names given as a comma string or a sequence (None: none given);
    FstcrfError for empty, spaced or repeated names."""
    if columns is None:
        return None
    if isinstance(columns, str):
        columns = columns.split(",")
    names = tuple(name.strip() for name in columns)
    if not names or any(not name or _WHITESPACE_RUN.search(name) for name in names):
        raise FstcrfError(f"column names must be non-empty words, got {list(columns)!r}")
    if len(set(names)) != len(names):
        raise FstcrfError(f"column names repeat: {', '.join(names)}")
    return names


def present_columns(
    names: tuple[str, ...] | None, allow_missing: tuple[str, ...], num_fields: int
) -> tuple[str, ...] | None:
    """The names of a file whose token lines have ``num_fields`` fields, or None if none fit."""
    if names is None:
        if num_fields == len(_THREE_COLUMN_NAMES):
            return _THREE_COLUMN_NAMES
        return tuple(f"col{index}" for index in range(num_fields))
    if num_fields == len(names):
        return names
    if num_fields < len(names) and set(names[num_fields:]) <= set(allow_missing):
        return names[:num_fields]
    return None


def expected_fields(names: tuple[str, ...], allow_missing: tuple[str, ...]) -> str:
    """The field counts a file with these columns may have, for messages: "3 or 2 fields (word pos chunk)"."""
    counts = [len(names)]
    while counts[-1] > 0 and names[counts[-1] - 1] in allow_missing:
        counts.append(counts[-1] - 1)
    return " or ".join(str(count) for count in counts) + f" fields ({' '.join(names)})"


def read_conll(
    path: str | os.PathLike,
    columns: str | Sequence[str] | None = None,
    separator: str | None = None,
    *,
    allow_missing: Sequence[str] = (),
) -> Corpus:
    """Read a UTF-8 CoNLL file into a :class:`Corpus`.

    ``columns`` names the fields, as a sequence or a comma string such as
    ``"word,pos,chunk"``; by default three fields are named word, pos, chunk
    and any other count col0, col1, ...  ``separator`` splits fields (default:
    runs of spaces and tabs).  The trailing named columns listed in
    ``allow_missing`` may be absent, consistently through the file, and are
    then left out of ``Corpus.column_names``.  Raises ConllFormatError, naming
    FILE:LINE, on invalid UTF-8, an empty field or a line whose field count
    differs from the first token line's.
    """
    (batch,) = iter_conll(path, columns, separator, allow_missing=allow_missing)
    return batch


#: Bytes read from a file at a time by :func:`iter_conll`.
READ_BLOCK = 1 << 22


def iter_conll(
    source: str | os.PathLike | BinaryIO,
    columns: str | Sequence[str] | None = None,
    separator: str | None = None,
    *,
    allow_missing: Sequence[str] = (),
    batch_tokens: int | None = None,
    whole_documents: bool = False,
    name: str | None = None,
) -> Iterator[Corpus]:
    """The sentences of a CoNLL file in batches, read as they are needed (memory
    bounded by the batch, not the file): each batch a :class:`Corpus` of whole
    sentences holding ``batch_tokens`` tokens or more (the last one fewer); with
    None, one batch of the whole file.  With ``whole_documents`` batches end only
    before a ``-DOCSTART-`` line (a file without one is one document).

    ``source`` is a path, "-" (standard input) or a binary stream named ``name``
    in messages.  The other arguments and the errors are :func:`read_conll`'s;
    an error is raised when its line is reached: the batches finished before
    it have been yielded, the one it falls in is not.
    """
    names, allow_missing = reading_arguments(columns, separator, allow_missing, batch_tokens)
    with opened_conll(source, name) as (stream, stream_name, path):
        yield from _parse_conll(
            _stream_lines(stream, stream_name),
            stream_name,
            path,
            names,
            allow_missing,
            separator,
            batch_tokens,
            whole_documents,
        )


def reading_arguments(
    columns: str | Sequence[str] | None, separator: str | None, allow_missing: Sequence[str], batch_tokens: int | None
) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
    """(the column names or None, allow_missing as a tuple) of :func:`iter_conll`'s
    arguments; FstcrfError for arguments that do not fit together."""
    names = column_names_of(columns)
    allow_missing = tuple(allow_missing)
    if allow_missing and names is None:
        raise FstcrfError("allow_missing needs explicit column names")
    if names is not None and not set(allow_missing) <= set(names):
        raise FstcrfError(
            f"allow_missing names {', '.join(allow_missing)} are not all among the columns {', '.join(names)}"
        )
    if separator == "":
        raise FstcrfError("separator must not be empty")
    if batch_tokens is not None and batch_tokens < 1:
        raise FstcrfError(f"batch_tokens must be a positive number of tokens, got {batch_tokens!r}")
    return names, allow_missing


@contextmanager
def opened_conll(source: str | os.PathLike | BinaryIO, name: str | None = None) -> Iterator[tuple]:
    """(binary stream, name for messages, Path or None) of a CoNLL source: a path
    (opened and closed here; ConllFormatError if it cannot be read), "-" (standard
    input) or a binary stream named ``name``."""
    if hasattr(source, "read"):
        yield cast(BinaryIO, source), cast(str, name or getattr(source, "name", "<stream>")), None
    elif os.fspath(source) == "-":
        yield standard_input(), name or "standard input", None
    else:
        path = Path(source)
        try:
            stream = open(path, "rb")
        except OSError as problem:
            raise ConllFormatError(f"{os.fspath(path)}: cannot read the file: {problem.strerror}") from None
        with stream:
            yield stream, os.fspath(path), path


def standard_input() -> BinaryIO:
    """Standard input as an unbuffered binary stream over its descriptor (not closed
    with it), else ``sys.stdin.buffer``.  A reader thread blocked in it then holds no
    lock of ``sys.stdin.buffer``, which the interpreter takes when it shuts down (a
    signal that ends ``fstcrf tag`` while its reader waits for input would otherwise
    abort the process)."""
    try:
        return cast(BinaryIO, open(sys.stdin.fileno(), "rb", buffering=0, closefd=False))
    except (AttributeError, OSError, ValueError):
        return sys.stdin.buffer


def read_block(stream: BinaryIO, name: str, more_ready: Callable[[], bool] | None = None) -> bytes:
    """The next READ_BLOCK bytes of a stream (fewer at its end; b"" after it), also
    from an unbuffered stream whose reads return less; with ``more_ready``, what is
    there at once: after the first byte, reads (each at most one of the stream's
    own) go on only while ``more_ready()`` says more input is waiting.
    ConllFormatError naming ``name`` if it cannot be read."""
    read = stream.read if more_ready is None else getattr(stream, "read1", None) or stream.read
    try:
        pieces, size = [], 0
        while size < READ_BLOCK and (piece := read(READ_BLOCK - size)):
            pieces.append(piece)
            size += len(piece)
            if more_ready is not None and not more_ready():
                break
        return b"".join(pieces)
    except OSError as problem:
        raise ConllFormatError(f"{name}: cannot read the file: {problem.strerror}") from None


def _stream_lines(stream: BinaryIO, name: str) -> Iterator[str]:
    """The lines of a UTF-8 binary stream without their "\n" (and without a leading
    byte order mark), decoded a block at a time; ConllFormatError names NAME:LINE of
    an invalid byte."""
    pending, lines_before, first = b"", 0, True
    while True:
        block = read_block(stream, name)
        data = pending + block if block else pending
        cut = data.rfind(b"\n") + 1 if block else len(data)
        pending = data[cut:]
        try:
            text = data[:cut].decode("utf-8")
        except UnicodeDecodeError as problem:  # the lines before the bad one first
            good = data.rfind(b"\n", 0, problem.start) + 1
            yield from _split_lines(data[:good].decode("utf-8"), first)
            line_number = lines_before + data.count(b"\n", 0, problem.start) + 1
            raise ConllFormatError(
                f"{name}:{line_number}: expected UTF-8 text, found the invalid byte 0x{data[problem.start]:02x}"
            ) from None
        lines = _split_lines(text, first)
        first = first and not text  # a byte order mark is dropped from the first line, whenever it ends
        lines_before += len(lines)
        yield from lines
        if not block:
            return


def _split_lines(text: str, first: bool) -> list[str]:
    """The lines of text (a byte order mark dropped from the first block)."""
    if first:
        text = text.removeprefix("\ufeff")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def _parse_conll(
    lines: Iterator[str],
    name: str,
    path: Path | None,
    names: tuple[str, ...] | None,
    allow_missing: tuple[str, ...],
    separator: str | None,
    batch_tokens: int | None,
    whole_documents: bool,
) -> Iterator[Corpus]:
    """Batches of the sentences of CoNLL ``lines`` (see :func:`iter_conll`).  A
    sentence's lines are kept whole and split into fields when it ends."""
    layout = _Layout(name, names, allow_missing, separator)
    sentences: list[Sentence] = []
    batch_size = 0
    raw: list[str] = []  # the lines of the sentence being read
    first_line = 0
    docstart_lines: list[str] = []
    yielded = False

    def finish_sentence():
        nonlocal batch_size
        if raw:
            sentences.append(
                Sentence(
                    layout.columns(raw, first_line),
                    range(first_line, first_line + len(raw)),
                    tuple(docstart_lines),
                )
            )
            batch_size += len(raw)
            raw.clear()
            docstart_lines.clear()

    def full(at_document_start: bool) -> bool:
        return batch_tokens is not None and batch_size >= batch_tokens and (at_document_start or not whole_documents)

    for line_number, line in enumerate(lines, start=1):
        stripped = line.strip(_WHITESPACE)
        if not stripped:
            finish_sentence()
            continue
        if stripped.startswith(DOCSTART) and layout.first_field(line, stripped) == DOCSTART:
            finish_sentence()
            if not docstart_lines and full(True):
                yield Corpus(cast("tuple[str, ...]", layout.present), sentences, path, separator)
                sentences, batch_size, yielded = [], 0, True
            docstart_lines.append(line.rstrip("\r"))
            continue
        if not raw:
            if full(False):
                yield Corpus(cast("tuple[str, ...]", layout.present), sentences, path, separator)
                sentences, batch_size, yielded = [], 0, True
            first_line = line_number
        raw.append(line)
    finish_sentence()
    if sentences or docstart_lines or not yielded:
        yield Corpus(layout.present or names or (), sentences, path, separator, tuple(docstart_lines))


#: Characters str.split() takes for whitespace that CoNLL fields may hold (only " \t\r\f\v" split
#: fields): a sentence holding one is split by the regular expression instead.
_OTHER_SPACE = re.compile("[\n\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")


class _Layout:
    """The fields of a file's token lines: how they split, how many, their names."""

    def __init__(self, name: str, names: tuple[str, ...] | None, allow_missing: tuple[str, ...], separator: str | None):
        self.name, self.names, self.allow_missing, self.separator = name, names, allow_missing, separator
        self.present: tuple[str, ...] | None = None
        self.first_token_line = 0

    def first_field(self, line: str, stripped: str) -> str:
        """The first field of a non-blank line."""
        if self.separator is None:
            return _WHITESPACE_RUN.split(stripped, maxsplit=1)[0]
        return line.rstrip("\r").split(self.separator, 1)[0]

    def columns(self, lines: list[str], first_line: int) -> dict[str, list[str]]:
        """The columns of a sentence's token lines (line numbers from first_line);
        ConllFormatError names FILE:LINE of an empty field or a wrong field count."""
        if self.separator is None and self.present is not None and not _OTHER_SPACE.search("".join(lines)):
            rows = [line.split() for line in lines]
            if set(map(len, rows)) == {len(self.present)}:
                return dict(zip(self.present, map(interned, zip(*rows))))
        rows = [self._fields(line, first_line + offset) for offset, line in enumerate(lines)]
        return dict(zip(cast("tuple[str, ...]", self.present), map(interned, zip(*rows))))

    def _fields(self, line: str, line_number: int) -> list[str]:
        """The checked fields of one token line."""
        if self.separator is None:
            fields = _WHITESPACE_RUN.split(line.strip(_WHITESPACE))
        else:
            fields = line.rstrip("\r").split(self.separator)
        if "" in fields:
            raise ConllFormatError(
                f"{self.name}:{line_number}: expected non-empty fields separated "
                f"by {self.separator!r}, found an empty field "
                f"(field {fields.index('') + 1})"
            )
        if self.present is None:
            self.present = present_columns(self.names, self.allow_missing, len(fields))
            if self.present is None:
                raise ConllFormatError(
                    f"{self.name}:{line_number}: expected "
                    f"{expected_fields(cast('tuple[str, ...]', self.names), self.allow_missing)}, "
                    f"found {len(fields)} fields"
                )
            self.first_token_line = line_number
        elif len(fields) != len(self.present):
            raise ConllFormatError(
                f"{self.name}:{line_number}: expected {len(self.present)} fields "
                f"({' '.join(self.present)}) as on line {self.first_token_line}, "
                f"found {len(fields)}"
            )
        return fields


def interned(values: Iterable[str]) -> list[str]:
    """``values`` as a list of interned strings: a corpus holds each distinct word or
    label once (CoNLL-2000's 636k fields are 20k distinct strings)."""
    return list(map(sys.intern, values))


def _forbidden_in_field(separator: str) -> re.Pattern:
    if separator == " ":
        return re.compile(r"[ \t\n\r\f\v]")
    return re.compile(f"{re.escape(separator)}|[\n\r]")


def unwritable_token(columns: Sequence[Sequence[str]], separator: str) -> tuple[int, str] | None:
    """(t, why) for the first token t of a sentence's ``columns`` [C][T] that CoNLL lines
    with ``separator`` between fields cannot hold (a field empty or holding the
    separator or a line break, or a first field ``-DOCSTART-``, which would be read as
    a document's start); None when every token can be written."""
    forbidden = _forbidden_in_field(separator)
    for values in columns:
        if all(values) and not forbidden.search("".join(values)):
            continue
        for t, value in enumerate(values):
            if not value or forbidden.search(value):
                return t, (
                    f"cannot write the field {value!r}: fields must be non-empty and contain no separator or line break"
                )
    if columns and DOCSTART in columns[0]:
        return list(columns[0]).index(DOCSTART), f"cannot write a token whose first field is {DOCSTART}"
    return None


def conll_lines(
    sentences: Sequence[Sentence],
    trailing_docstart_lines: Sequence[str],
    extra_columns: Sequence[Sequence[Sequence[str]]],
    separator: str,
    target: str,
) -> list[str]:
    """The lines :func:`write_conll` writes (see there); ConllFormatError names
    TARGET:LINE (counted in these lines) of a field that cannot be written, ShapeError an
    extra column of the wrong length."""
    docstart_padding = "".join(separator + "O" for _ in extra_columns)
    out: list[str] = []
    for index, sentence in enumerate(sentences):
        for docstart_line in sentence.docstart_lines:
            out.append(docstart_line + docstart_padding + "\n")
            out.append("\n")
        columns: list[Sequence[str]] = list(sentence.columns.values())
        for extra in extra_columns:
            values = extra[index]
            if isinstance(values, str) or len(values) != len(sentence):
                raise ShapeError(
                    f"extra column for sentence {index} has "
                    f"{'a string' if isinstance(values, str) else len(values)}, "
                    f"expected a list of {len(sentence)} strings"
                )
            columns.append(values)
        problem = unwritable_token(columns, separator)
        if problem is not None:
            raise ConllFormatError(f"{target}:{len(out) + problem[0] + 1}: {problem[1]}")
        out.extend(separator.join(fields) + "\n" for fields in zip(*columns))
        out.append("\n")
    for docstart_line in trailing_docstart_lines:
        out.append(docstart_line + docstart_padding + "\n")
        out.append("\n")
    return out


def write_conll(
    corpus_or_sentences: Corpus | Sequence[Sentence],
    path_or_file: str | os.PathLike | TextIO,
    extra_columns: Sequence[Sequence[Sequence[str]]] | None = None,
    *,
    separator: str | None = None,
):
    """Write sentences in CoNLL format, each token's fields followed by any extra columns.

    ``extra_columns`` is a list of columns to append, each one list of strings
    [num_tokens] per sentence (e.g. ``[predicted_tags]``).  A blank line follows
    every sentence and every ``-DOCSTART-`` line (the CoNLL-2003 layout); a
    ``-DOCSTART-`` line gets an ``O`` field per extra column, so that conlleval
    sees the same field count on every line.  ``separator`` defaults to the
    corpus's, else a space.  A path is replaced atomically (see
    :func:`fstcrf.files.write_atomically`: "-" is standard output, a symlink's
    target is replaced, a device or FIFO is written in place); an open text
    file is written to as it is.
    """
    if isinstance(corpus_or_sentences, Corpus):
        sentences = corpus_or_sentences.sentences
        trailing = corpus_or_sentences.trailing_docstart_lines
        separator = separator or corpus_or_sentences.separator
    else:
        sentences = list(corpus_or_sentences)
        trailing = ()
    separator = separator or " "
    extra_columns = list(extra_columns or ())
    for number, extra in enumerate(extra_columns):
        if isinstance(extra, str) or len(extra) != len(sentences):
            raise ShapeError(
                f"extra column {number} must hold one list of strings per "
                f"sentence ({len(sentences)}), "
                f"got {'a string' if isinstance(extra, str) else len(extra)}"
            )

    is_stream = hasattr(path_or_file, "write")
    target = (
        getattr(path_or_file, "name", "<stream>") if is_stream else os.fspath(cast("str | os.PathLike", path_or_file))
    )
    text = "".join(conll_lines(sentences, trailing, extra_columns, separator, str(target)))
    if is_stream:
        cast(TextIO, path_or_file).write(text)
    else:
        write_atomically(cast("str | os.PathLike", path_or_file), lambda stream: stream.write(text.encode("utf-8")))
