"""Reading and writing CoNLL column files."""

import io
import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstcrf.corpus.conll import Corpus, Sentence, read_conll, write_conll
from fstcrf.errors import ConllFormatError, FstcrfError, ShapeError


def write_bytes(tmp_path, content: bytes, name="data.txt"):
    path = tmp_path / name
    path.write_bytes(content)
    return path


def test_reads_sentences_with_default_three_column_names(tmp_path):
    path = write_bytes(tmp_path, b"He PRP B-NP\nran VBD B-VP\n\n\n\nOK UH O\n")
    corpus = read_conll(path)
    assert corpus.column_names == ("word", "pos", "chunk")
    assert len(corpus) == 2 and corpus.num_tokens == 3
    assert corpus.column("word") == [["He", "ran"], ["OK"]]
    assert corpus.sentences[0]["chunk"] == ["B-NP", "B-VP"]
    assert list(corpus.sentences[0].line_numbers) == [1, 2]
    assert list(corpus.sentences[1].line_numbers) == [6]
    assert [len(sentence) for sentence in corpus] == [2, 1]
    assert corpus.path == path


def test_default_names_for_other_field_counts(tmp_path):
    corpus = read_conll(write_bytes(tmp_path, b"a b\nc d\n"))
    assert corpus.column_names == ("col0", "col1")
    corpus = read_conll(write_bytes(tmp_path, b"a b c d\n"))
    assert corpus.column_names == ("col0", "col1", "col2", "col3")


def test_column_names_as_string_or_sequence(tmp_path):
    path = write_bytes(tmp_path, b"Madrid NP B-LOC\n\n")
    assert read_conll(path, columns="word, pos ,ner").column_names == ("word", "pos", "ner")
    assert read_conll(path, columns=["w", "p", "n"]).column("n") == [["B-LOC"]]
    with pytest.raises(FstcrfError, match="repeat"):
        read_conll(path, columns="word,word,ner")
    with pytest.raises(FstcrfError, match="non-empty"):
        read_conll(path, columns="word,,ner")


def test_whitespace_runs_and_crlf_line_ends(tmp_path):
    path = write_bytes(tmp_path, b"  a\t b   c \r\n\r\n \t \r\nd e f\r\n")
    corpus = read_conll(path)
    assert corpus.column("word") == [["a"], ["d"]]
    assert corpus.column("chunk") == [["c"], ["f"]]


def test_non_ascii_spaces_stay_inside_fields(tmp_path):
    path = write_bytes(tmp_path, "10\u00a0000 CD O\n".encode())
    assert read_conll(path).column("word") == [["10\u00a0000"]]


def test_docstart_lines_mark_documents_and_are_not_tokens(tmp_path):
    text = (
        "-DOCSTART- -X- O\n"
        "De Art O\n"
        "tekst N O\n"
        "\n"
        "-DOCSTART- -X- O\n"
        "\n"
        "Hij Pron O\n"
        "-DOCSTART- -X- O\n"
        "Zij Pron O\n"
        "\n"
        "-DOCSTART- -X- O\n"
    )
    corpus = read_conll(write_bytes(tmp_path, text.encode()))
    assert corpus.column("word") == [["De", "tekst"], ["Hij"], ["Zij"]]
    assert [sentence.document_start for sentence in corpus] == [True, True, True]
    assert corpus.sentences[0].docstart_lines == ("-DOCSTART- -X- O",)
    assert corpus.trailing_docstart_lines == ("-DOCSTART- -X- O",)
    assert corpus.num_tokens == 4


def test_sentence_without_docstart_has_no_document_start(tmp_path):
    corpus = read_conll(write_bytes(tmp_path, b"-DOCSTART- O\n\na O\n\nb O\n"))
    assert [sentence.document_start for sentence in corpus] == [True, False]


def test_empty_file_reads_as_empty_corpus(tmp_path):
    corpus = read_conll(write_bytes(tmp_path, b"\n\n"), columns="word,pos")
    assert len(corpus) == 0 and corpus.num_tokens == 0
    assert corpus.column_names == ("word", "pos")


def test_ragged_line_names_file_line_and_counts(tmp_path):
    path = write_bytes(tmp_path, b"a b c\n\nd e\n")
    with pytest.raises(ConllFormatError) as error:
        read_conll(path)
    message = str(error.value)
    assert f"{path}:3:" in message
    assert "expected 3 fields" in message and "found 2" in message and "line 1" in message


def test_fewer_fields_than_named_is_an_error_without_allow_missing(tmp_path):
    path = write_bytes(tmp_path, b"\na b\n")
    with pytest.raises(ConllFormatError, match=re.escape(f"{path}:2:") + ".*expected 3 fields.*found 2"):
        read_conll(path, columns="word,pos,chunk")


def test_more_fields_than_named_is_an_error(tmp_path):
    path = write_bytes(tmp_path, b"a b c d\n")
    with pytest.raises(ConllFormatError, match=re.escape(f"{path}:1:") + ".*found 4"):
        read_conll(path, columns="word,pos,chunk")


def test_a_sentence_without_a_column_read_is_one_error_everywhere(tmp_path):
    """Sentence.values_of, which the tag dictionary, the attribute models and the
    two-stage tagger's majority columns share: MissingColumnError, both the
    ConllFormatError and the TemplateError those raised before."""
    from fstcrf.document.two_stage import majority_columns
    from fstcrf.errors import MissingColumnError, TemplateError
    from fstcrf.features.attributes import AttributeExtractor

    sentence = read_conll(write_bytes(tmp_path, b"a DT\nb NN\n"), columns="word,pos")[0]
    assert sentence.values_of("pos", 0) == ["DT", "NN"]
    with pytest.raises(
        MissingColumnError, match="^why: sentence 3 has no column 'ner'; its columns are word, pos; for"
    ):
        sentence.values_of("ner", 3, "why", "for")
    assert issubclass(MissingColumnError, ConllFormatError) and issubclass(MissingColumnError, TemplateError)
    with pytest.raises(MissingColumnError, match="majority_columns: sentence 0 has no column 'token'"):
        majority_columns([sentence], [["O", "O"]], [(0, 1)], word_column="token")
    with pytest.raises(MissingColumnError, match="sentence 0 has no column 'attributes'.*token dicts"):
        AttributeExtractor().fit_transform([sentence])


def test_allow_missing_trailing_columns(tmp_path):
    two_fields = write_bytes(tmp_path, b"a DT\nb NN\n", "two.txt")
    corpus = read_conll(two_fields, columns="word,pos,chunk", allow_missing=("chunk",))
    assert corpus.column_names == ("word", "pos")
    with pytest.raises(ConllFormatError, match="no column 'chunk'.*word, pos"):
        corpus.column("chunk")
    three_fields = write_bytes(tmp_path, b"a DT B-NP\n", "three.txt")
    corpus = read_conll(three_fields, columns="word,pos,chunk", allow_missing=("chunk",))
    assert corpus.column_names == ("word", "pos", "chunk")


def test_allow_missing_must_be_consistent_through_the_file(tmp_path):
    path = write_bytes(tmp_path, b"a DT\n\nb NN B-NP\n")
    with pytest.raises(ConllFormatError, match=re.escape(f"{path}:3:")):
        read_conll(path, columns="word,pos,chunk", allow_missing=("chunk",))


def test_allow_missing_covers_only_trailing_columns(tmp_path):
    path = write_bytes(tmp_path, b"a DT\n")
    with pytest.raises(ConllFormatError, match="expected 3 fields"):
        read_conll(path, columns="word,pos,chunk", allow_missing=("pos",))
    one_field = write_bytes(tmp_path, b"a\n", "one.txt")
    corpus = read_conll(one_field, columns="word,pos,chunk", allow_missing=("pos", "chunk"))
    assert corpus.column_names == ("word",)


def test_allow_missing_needs_known_column_names(tmp_path):
    path = write_bytes(tmp_path, b"a DT\n")
    with pytest.raises(FstcrfError, match="explicit column names"):
        read_conll(path, allow_missing=("chunk",))
    with pytest.raises(FstcrfError, match="not all among"):
        read_conll(path, columns="word,pos", allow_missing=("chunk",))


def test_tab_separator_keeps_spaces_and_rejects_empty_fields(tmp_path):
    path = write_bytes(tmp_path, b"New York\tNNP\tB-LOC\n\na\t\tO\n")
    with pytest.raises(ConllFormatError) as error:
        read_conll(path, separator="\t")
    assert f"{path}:3:" in str(error.value) and "empty field" in str(error.value)
    good = write_bytes(tmp_path, b"New York\tNNP\tB-LOC\n", "good.txt")
    assert read_conll(good, separator="\t").column("word") == [["New York"]]


def test_invalid_utf8_names_the_line(tmp_path):
    path = write_bytes(tmp_path, b"a b c\n\nd \xff c\n")
    with pytest.raises(ConllFormatError) as error:
        read_conll(path)
    assert f"{path}:3:" in str(error.value) and "0xff" in str(error.value)


def test_sentence_columns_must_have_one_length():
    with pytest.raises(ShapeError):
        Sentence({"word": ["a", "b"], "pos": ["DT"]})


def test_writes_fields_extra_columns_and_docstart_lines(tmp_path):
    text = "-DOCSTART- -X- O\nDe Art O\nKoen N B-PER\n\nOK Int O\n"
    corpus = read_conll(write_bytes(tmp_path, text.encode()))
    predicted = [["O", "B-PER"], ["B-MISC"]]
    out = io.StringIO()
    write_conll(corpus, out, extra_columns=[predicted])
    assert out.getvalue() == ("-DOCSTART- -X- O O\n\nDe Art O O\nKoen N B-PER B-PER\n\nOK Int O B-MISC\n\n")
    out = io.StringIO()
    write_conll(corpus.sentences, out)
    assert out.getvalue() == "-DOCSTART- -X- O\n\nDe Art O\nKoen N B-PER\n\nOK Int O\n\n"


def test_writes_with_the_corpus_separator(tmp_path):
    path = write_bytes(tmp_path, b"New York\tNNP\n")
    corpus = read_conll(path, separator="\t")
    out = io.StringIO()
    write_conll(corpus, out, extra_columns=[[["B-LOC"]]])
    assert out.getvalue() == "New York\tNNP\tB-LOC\n\n"


def test_extra_columns_must_match_the_sentences(tmp_path):
    corpus = read_conll(write_bytes(tmp_path, b"a b\nc d\n\ne f\n"))
    with pytest.raises(ShapeError, match="one list of strings per sentence"):
        write_conll(corpus, io.StringIO(), extra_columns=[[["x", "y"]]])
    with pytest.raises(ShapeError, match="sentence 1"):
        write_conll(corpus, io.StringIO(), extra_columns=[[["x", "y"], ["z", "w"]]])
    with pytest.raises(ShapeError, match="sentence 0"):
        write_conll(corpus, io.StringIO(), extra_columns=[["xy", ["z"]]])


def test_fields_with_whitespace_cannot_be_written(tmp_path):
    sentences = [Sentence({"word": ["a", "b"]}), Sentence({"word": ["New York"]})]
    with pytest.raises(ConllFormatError, match=r"out\.txt:4:.*'New York'"):
        write_conll(sentences, tmp_path / "out.txt")
    with pytest.raises(ConllFormatError, match="''"):
        write_conll([Sentence({"word": ["a"]})], io.StringIO(), extra_columns=[[[""]]])
    with pytest.raises(ConllFormatError, match="<stream>:2: .*-DOCSTART-"):
        write_conll([Sentence({"word": ["a", "-DOCSTART-"]})], io.StringIO())


def test_writing_a_path_replaces_it_atomically(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old\n")
    bad = [Sentence({"word": ["a b"]})]
    with pytest.raises(ConllFormatError):
        write_conll(bad, target)
    assert target.read_text() == "old\n"
    write_conll([Sentence({"word": ["a"], "tag": ["O"]})], target)
    assert target.read_text() == "a O\n\n"
    assert sorted(os.listdir(tmp_path)) == ["out.txt"]
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask


def test_interrupted_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    def failing_replace(source, destination):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        write_conll([Sentence({"word": ["a"]})], tmp_path / "out.txt")
    assert os.listdir(tmp_path) == []


field_text = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters=" \t\n\r\f\v\ufeff"), min_size=1, max_size=6
).filter(lambda value: value != "-DOCSTART-")


@st.composite
def corpora(draw):
    num_columns = draw(st.integers(1, 4))
    names = tuple(f"col{index}" for index in range(num_columns))
    sentences = []
    for _ in range(draw(st.integers(0, 5))):
        length = draw(st.integers(1, 4))
        columns = {name: draw(st.lists(field_text, min_size=length, max_size=length)) for name in names}
        docstart = draw(st.sampled_from([(), ("-DOCSTART- x",), ("-DOCSTART-", "-DOCSTART-")]))
        sentences.append(Sentence(columns, docstart_lines=docstart))
    return Corpus(names, sentences)


@settings(max_examples=60, deadline=None)
@given(corpus=corpora())
def test_write_then_read_round_trips(tmp_path_factory, corpus):
    path = tmp_path_factory.mktemp("round_trip") / "corpus.txt"
    write_conll(corpus, path)
    again = read_conll(path, columns=corpus.column_names if corpus.sentences else None)
    assert again.sentences == corpus.sentences


@pytest.mark.parametrize(
    "relative_path, num_sentences, num_tokens, num_documents",
    [
        ("conll2000/train.txt", 8936, 211727, 0),
        ("conll2002/esp.train", 8323, 264715, 0),
        ("conll2002/ned.train", 15806, 202644, 287),
    ],
)
@pytest.mark.slow
def test_real_files_round_trip(data_file, tmp_path, relative_path, num_sentences, num_tokens, num_documents):
    corpus = read_conll(data_file(relative_path))
    assert (len(corpus), corpus.num_tokens) == (num_sentences, num_tokens)
    assert sum(sentence.document_start for sentence in corpus) == num_documents
    write_conll(corpus, tmp_path / "copy.txt")
    again = read_conll(tmp_path / "copy.txt")
    assert again.column_names == corpus.column_names
    assert again.sentences == corpus.sentences
    assert [s.document_start for s in again] == [s.document_start for s in corpus]


def test_with_column_replaces_or_adds_a_column_and_keeps_the_file_positions():
    sentence = Sentence({"word": ["a", "b"], "chunk": ["B-NP", "I-NP"]}, [3, 4], ("-DOCSTART- -X- O",))
    replaced = sentence.with_column("chunk", ["O", "O"])
    assert replaced["chunk"] == ["O", "O"] and sentence["chunk"] == ["B-NP", "I-NP"]
    assert list(replaced.line_numbers) == [3, 4] and replaced.docstart_lines == sentence.docstart_lines
    added = sentence.with_column("pos", ["DT", "NN"])
    assert added.column_names == ("word", "chunk", "pos")
    with pytest.raises(ShapeError):
        sentence.with_column("pos", ["DT"])
    several = sentence.with_columns({"chunk": ["O", "O"], "pos": ["DT", "NN"], "ner": ["O", "B-PER"]})
    assert several.column_names == ("word", "chunk", "pos", "ner")
    assert several["chunk"] == ["O", "O"] and sentence.column_names == ("word", "chunk")
    assert list(several.line_numbers) == [3, 4] and several.docstart_lines == sentence.docstart_lines
    with pytest.raises(ShapeError):
        sentence.with_columns({"pos": ["DT", "NN"], "ner": ["O"]})


def test_a_corpus_holds_each_distinct_field_once(tmp_path):
    path = tmp_path / "repeated.txt"
    path.write_text("".join(f"w{i % 3} NN B-NP\nw{i % 2} VB O\n\n" for i in range(6)), encoding="utf-8")
    corpus = read_conll(path)
    fields = [value for sentence in corpus for column in sentence.columns.values() for value in column]
    assert len(fields) == 36 and len({id(value) for value in fields}) == len(set(fields)) == 7
    assert list(corpus[5].line_numbers) == [16, 17]
