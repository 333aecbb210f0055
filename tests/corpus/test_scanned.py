"""fstcrf.corpus.scanned (CoNLL read and written in C) against the Python reader and
writer of fstcrf.corpus.conll: the same batches, line numbers, -DOCSTART- lines,
errors and output bytes, on random files with odd whitespace, CRLF, UTF-8,
malformed lines and bad bytes, on tiny read blocks, and on the real corpora."""

import io
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
