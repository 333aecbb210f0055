"""fstcrf.corpus.scanned (CoNLL read and written in C) against the Python reader and
writer of fstcrf.corpus.conll: the same batches, line numbers, -DOCSTART- lines,
errors and output bytes, on random files with odd whitespace, CRLF, UTF-8,
malformed lines and bad bytes, on tiny read blocks, and on the real corpora; and
from a pipe that stalls, the same sentences, each passed on once its line ends it."""

import io
import os
import queue
import threading
import time
from unittest import mock

import pytest
from hypothesis import given, strategies as st

import fstcrf.corpus.conll as conll
import fstcrf.corpus.scanned as scanned
from fstcrf.corpus.conll import Corpus, Sentence, iter_conll, write_conll
from fstcrf.corpus.scanned import ScannedCorpus, iter_scanned, tagged_lines
from fstcrf.errors import FstcrfError
from tests.strategies import oracle_settings

#: Pieces of fields: plain, UTF-8, a no-break space (a field character, not a separator),
#: a separator of some tests, and bytes that are not UTF-8 (a surrogate, a stray byte,
#: a cut sequence).
FIELD_PIECES = ["a", "b", "é", "日本", "\u00a0", "|", "-DOCSTART-", "\r"]
BAD_BYTES = [b"\xff", b"\xed\xa0\x80", b"\xe6\x97"]
SPACES = [" ", "\t", "  ", " \t", "\f", "\v", "|", "||"]


@st.composite
def conll_bytes(draw) -> bytes:
    """Lines of 1-4 fields joined by odd whitespace or "|", with blank lines (spaces,
    CR), -DOCSTART- lines, CRLF endings, a leading byte order mark and the odd bad byte."""
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["token", "token", "token", "blank", "docstart"]))
        if kind == "blank":
            line = draw(st.sampled_from(["", " ", "\r", " \t\r"])).encode()
        elif kind == "docstart":
            line = draw(st.sampled_from(["-DOCSTART- -X- O", "-DOCSTART-", " -DOCSTART-|x", "-DOCSTART-|O"])).encode()
        else:
            count = draw(st.sampled_from([2, 3, 3, 3, 4]))
            fields = [
                "".join(draw(st.lists(st.sampled_from(FIELD_PIECES), min_size=0, max_size=3))) for _ in range(count)
            ]
            gaps = [draw(st.sampled_from(SPACES)) for _ in range(count - 1)]
            text = fields[0] + "".join(gap + value for gap, value in zip(gaps, fields[1:]))
            line = (draw(st.sampled_from(["", " "])) + text + draw(st.sampled_from(["", " ", "\r", "\t"]))).encode()
            if draw(st.integers(0, 30)) == 0:
                line += draw(st.sampled_from(BAD_BYTES))
        lines.append(line)
    data = b"\n".join(lines) + draw(st.sampled_from([b"", b"\n", b"\n\n"]))
    return (b"\xef\xbb\xbf" if draw(st.booleans()) else b"") + data


def outcome(reader, data: bytes, **options) -> list:
    """The batches a reader yields (every field that matters) and the error it ends with."""
    out = []
    try:
        for batch in reader(io.BytesIO(data), name="in.txt", **options):
            out.append(
                (
                    batch.column_names,
                    [(s.columns, list(s.line_numbers or ()), s.docstart_lines) for s in batch.sentences],
                    batch.trailing_docstart_lines,
                    batch.separator,
                    batch.path,
                )
            )
    except FstcrfError as error:
        out.append((type(error).__name__, str(error)))
    return out


READING = st.fixed_dictionaries(
    {
        "columns": st.sampled_from([None, "w,p,c", "w,p,c,x"]),
        "separator": st.sampled_from([None, "|", "\t", " ", "||"]),
        "batch_tokens": st.sampled_from([None, 1, 3, 20]),
        "whole_documents": st.booleans(),
    }
)


def _options(options: dict) -> dict:
    if options["columns"] is not None:
        options = {**options, "allow_missing": options["columns"].split(",")[2:]}
    return options


@oracle_settings(400)
@given(
    data=conll_bytes(),
    options=READING,
    block=st.sampled_from([4, 7, 64, 1 << 22]),
    group=st.sampled_from([1, 2, 5, scanned.GROUP_TOKENS]),
)
def test_batches_and_errors_are_the_python_readers(data, options, block, group):
    options = _options(options)
    # tiny blocks cut sentences and lines; tiny groups make strings a sentence or two at a time
    with mock.patch.object(conll, "READ_BLOCK", block), mock.patch.object(scanned, "GROUP_TOKENS", group):
        assert outcome(iter_scanned, data, **options) == outcome(iter_conll, data, **options)


def python_bytes(batch: Corpus, extra) -> bytes:
    text = io.StringIO()
    text.name = "out.txt"
    write_conll(batch, text, extra_columns=extra)
    return text.getvalue().encode("utf-8")


def written(batches, extra_of, write) -> list:
    out = []
    try:
        for batch in batches:
            out.append(write(batch, extra_of(batch)))
    except FstcrfError as error:
        out.append((type(error).__name__, str(error)))
    return out


LABELS = st.lists(st.sampled_from(["B-NP", "O", "I-X", "é", "", "a b", "x\ny", "-DOCSTART-"]), min_size=1, max_size=4)


@oracle_settings(300)
@given(data=conll_bytes(), options=READING, labels=LABELS, columns=st.integers(0, 2), small=st.booleans())
def test_written_bytes_and_errors_are_write_conlls(data, options, labels, columns, small):
    options = _options(options)
    try:  # small blocks and groups: a batch's fields come from several scans and groups
        with (
            mock.patch.object(conll, "READ_BLOCK", 8 if small else conll.READ_BLOCK),
            mock.patch.object(scanned, "GROUP_TOKENS", 2 if small else scanned.GROUP_TOKENS),
        ):
            batches = list(iter_scanned(io.BytesIO(data), **options))
            python = list(iter_conll(io.BytesIO(data), **options))
    except FstcrfError:
        return  # a file the readers refuse (compared above)

    def extra_of(batch):
        return [
            [[labels[(t + k) % len(labels)] for t in range(len(s))] for s in batch.sentences] for k in range(columns)
        ]

    assert written(batches, extra_of, lambda batch, extra: bytes(tagged_lines(batch, extra, "out.txt"))) == written(
        python, extra_of, python_bytes
    )


def test_extra_columns_of_the_wrong_shape_raise_write_conlls_error():
    (batch,) = iter_scanned(io.BytesIO(b"a b\nc d\n"))
    with pytest.raises(FstcrfError) as python:
        python_bytes(batch, [[["x"]]])
    with pytest.raises(type(python.value), match=str(python.value)):
        tagged_lines(batch, [[["x"]]], "out.txt")


def test_a_corpus_not_read_in_c_is_written_by_python():
    corpus = Corpus(
        ("w",), [Sentence({"w": ["a", "b"]}, docstart_lines=("-DOCSTART-",))], trailing_docstart_lines=("-DOCSTART- x",)
    )
    assert tagged_lines(corpus, [[["X", "Y"]]], "out.txt") == python_bytes(corpus, [[["X", "Y"]]])


def test_batches_keep_their_fields_as_read():
    batches = list(iter_scanned(io.BytesIO("a  b\r\n\nc\tdé\n".encode()), batch_tokens=1))
    assert all(isinstance(batch, ScannedCorpus) for batch in batches)
    assert [batch.fields for batch in batches] == [b"a\nb\n", "c\ndé\n".encode()]


@pytest.mark.slow
@pytest.mark.parametrize(
    "relative, columns",
    [
        ("conll2000/test.txt", "word,pos,chunk"),
        ("conll2000/train.txt", "word,pos,chunk"),
        ("conll2002/ned.testb", None),
        ("conll2002/esp.testb", None),
    ],
)
def test_real_corpora_read_and_write_byte_for_byte(data_dir, relative, columns):
    path = data_dir / relative
    if not path.exists():
        pytest.skip(f"{path} is missing")
    options = {"columns": columns, "batch_tokens": 20_000}
    scanned, python = list(iter_scanned(path, **options)), list(iter_conll(path, **options))
    assert outcome(iter_scanned, path.read_bytes(), **options) == outcome(iter_conll, path.read_bytes(), **options)
    extra = [[[value.upper() for value in s[s.column_names[-1]]] for s in batch] for batch in scanned]
    for batch, other, labels in zip(scanned, python, extra):
        assert bytes(tagged_lines(batch, [labels], "out.txt")) == python_bytes(other, [labels])


# -- input that stalls: a pipe ------------------------------------------------------


def _flat(batches: list) -> tuple:
    """outcome()'s batches without their boundaries: the sentences in order, the last
    batch's trailing -DOCSTART- lines, and the error if any."""
    error = [item for item in batches if len(item) == 2]
    kept = [item for item in batches if len(item) != 2]
    return (
        [sentence for item in kept for sentence in item[1]],
        kept[-1][2] if kept else (),
        {(item[0], item[3]) for item in kept},
        error,
    )


def _pipe_reader(pieces: list[bytes], pause: float):
    """A reader of iter_scanned's arguments that reads them from a pipe another thread
    writes ``pieces`` to, pausing ``pause`` seconds between them."""

    def reader(_stream, **options):
        read_end, write_end = os.pipe()

        def feed():
            with open(write_end, "wb", buffering=0) as stream:
                for number, piece in enumerate(pieces):
                    if number:
                        time.sleep(pause)
                    stream.write(piece)

        feeder = threading.Thread(target=feed, daemon=True)
        feeder.start()
        with open(read_end, "rb", buffering=0) as stream:
            try:
                yield from iter_scanned(stream, **options)
            finally:
                feeder.join()

    return reader


@oracle_settings(60)
@given(data=conll_bytes(), options=READING, cuts=st.lists(st.integers(0, 400), max_size=3))
def test_a_pipe_that_stalls_gives_the_sentences_and_errors_of_the_file(data, options, cuts):
    options = _options(options)
    cuts = sorted({cut % (len(data) + 1) for cut in cuts})
    pieces = [data[start:end] for start, end in zip([0, *cuts], [*cuts, len(data)])]
    with mock.patch.object(scanned, "STALL_SECONDS", 0.002):
        sentences, trailing, layout, error = _flat(outcome(_pipe_reader(pieces, 0.01), data, **options))
    expected, expected_trailing, expected_layout, expected_error = _flat(outcome(iter_conll, data, **options))
    assert (layout, error) == (expected_layout, expected_error)
    if not error:
        assert (sentences, trailing) == (expected, expected_trailing)
        return
    # a batch that ended at a stall was passed on before the error: between the
    # sentences of the file's batches and all those finished before the bad line
    finished = _flat(outcome(iter_conll, data, **{**options, "batch_tokens": 1, "whole_documents": False}))[0]
    assert sentences[: len(expected)] == expected and finished[: len(sentences)] == sentences


def test_a_pipe_that_stalls_passes_on_each_finished_sentence_at_once():
    # a producer that writes a sentence and waits for it: without the stall rule the
    # reader would wait for a whole block (4 MiB) or the end of the input
    read_end, write_end = os.pipe()
    batches: queue.Queue = queue.Queue()

    def consume():
        with open(read_end, "rb", buffering=0) as stream:
            for batch in iter_scanned(stream, "w,p", batch_tokens=20_000):
                batches.put([s["w"] for s in batch.sentences])
        batches.put(None)

    threading.Thread(target=consume, daemon=True).start()
    with open(write_end, "wb", buffering=0) as producer:
        producer.write(b"a X\nb Y\n\nc")  # a finished sentence and the start of the next
        assert batches.get(timeout=10) == [["a", "b"]]
        producer.write(b" Z\n\n")
        assert batches.get(timeout=10) == [["c"]]
    assert batches.get(timeout=10) is None  # the end of the input: no empty batch


def test_only_pipes_terminals_and_sockets_stall(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes(b"a X\n\n")
    read_end, write_end = os.pipe()
    with open(path, "rb") as regular, open(read_end, "rb") as pipe, open(write_end, "wb"):
        assert scanned.stalling_descriptor(regular) is None
        assert scanned.stalling_descriptor(io.BytesIO(b"a X\n\n")) is None
        if os.name == "posix":
            assert scanned.stalling_descriptor(pipe) == read_end
