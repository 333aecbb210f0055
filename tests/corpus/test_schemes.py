"""Chunk tagging schemes: reading agrees with conlleval where conlleval reads the
scheme, conversions keep every chunk (IOB1 as seqeval reads it), and bad tags name their place."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstcrf.cli import main
from fstcrf.corpus.conll import read_conll
from fstcrf.errors import LabelError
from fstcrf.corpus.evaluate import score_chunks
from fstcrf.corpus.schemes import convert, read_chunks, write_chunks

IOB = ["O", "B-NP", "I-NP", "B-VP", "I-VP"]
BIOES = IOB + ["E-NP", "S-NP", "E-VP", "S-VP"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(IOB), min_size=1, max_size=10), st.lists(st.sampled_from(IOB), min_size=1, max_size=10))
def test_iob_chunks_are_those_conlleval_counts(a, b):
    """IOB1 / IOB2 tags (conlleval's own schemes): the same chunks, counted and matched."""
    b = (b * len(a))[: len(a)]
    scores = score_chunks([a], [b])
    assert len(read_chunks(a)) == scores.num_gold_chunks
    assert len(read_chunks(b)) == scores.num_predicted_chunks
    assert len(set(read_chunks(a)) & set(read_chunks(b))) == scores.num_correct_chunks


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(BIOES), min_size=1, max_size=10))
def test_conversions_keep_every_chunk(tags):
    chunks = read_chunks(tags)
    for scheme in ("iob1", "iob2", "bioes"):
        converted = convert(tags, scheme)
        assert read_chunks(converted) == chunks
        assert convert(converted, scheme) == converted  # written exactly
    assert convert(convert(tags, "bioes"), "iob2") == convert(tags, "iob2")


def test_bioes_reading():
    assert read_chunks(["S-NP", "S-NP", "B-VP", "E-VP", "O", "B-NP", "I-NP"]) == [
        (0, 0, "NP"),
        (1, 1, "NP"),
        (2, 3, "VP"),
        (5, 6, "NP"),
    ]
    assert write_chunks([(0, 0, "NP"), (1, 3, "VP")], 5, "bioes") == ["S-NP", "B-VP", "I-VP", "E-VP", "O"]
    assert write_chunks([(0, 0, "NP"), (1, 3, "VP")], 5, "iob2") == ["B-NP", "B-VP", "I-VP", "I-VP", "O"]


def test_iob1_writing():
    chunks = [(0, 1, "NP"), (2, 2, "NP"), (3, 3, "VP"), (5, 5, "NP"), (6, 6, "NP")]
    assert write_chunks(chunks, 7, "iob1") == ["I-NP", "I-NP", "B-NP", "I-VP", "O", "I-NP", "B-NP"]
    assert convert(["B-NP", "B-NP", "O", "B-VP", "I-VP"], "iob1") == ["I-NP", "B-NP", "O", "I-VP", "I-VP"]


try:
    from seqeval.scheme import IOB1, Entities
except ImportError:
    IOB1 = None


@pytest.mark.skipif(IOB1 is None, reason="seqeval is not installed")
@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(BIOES), max_size=10))
def test_iob1_written_is_what_seqeval_strict_reads(tags):
    converted = convert(tags, "iob1")
    assert not any(tag.startswith(("E-", "S-")) for tag in converted)
    read = [
        (first, last - 1, kind)
        for _, kind, first, last in (entity.to_tuple() for entity in Entities([converted], IOB1).entities[0])
    ]
    assert sorted(read) == read_chunks(tags)


@pytest.mark.parametrize("tag", ["X-NP", "B-", "NP", "B"])
def test_bad_tags_are_label_errors(tag):
    with pytest.raises(LabelError, match="token 1"):
        read_chunks(["O", tag])
    with pytest.raises(LabelError, match="scheme"):
        write_chunks([], 1, "ioe")


def test_convert_command(tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("He PRP B-NP\nran VBD B-VP\nhome NN B-NP\nfast RB I-NP\n\nOk UH O\n\n", encoding="utf-8")
    assert main(["-q", "convert", str(source), "-o", str(tmp_path / "bioes.txt"), "--scheme", "bioes"]) == 0
    assert read_conll(tmp_path / "bioes.txt").column("chunk") == [["S-NP", "S-VP", "B-NP", "E-NP"], ["O"]]
    assert (
        main(["-q", "convert", str(tmp_path / "bioes.txt"), "-o", str(tmp_path / "back.txt"), "--scheme", "iob2"]) == 0
    )
    assert read_conll(tmp_path / "back.txt").column("chunk") == read_conll(source).column("chunk")
    source.write_text("Hi UH O\n\nHe PRP B-NP\nran VBD Q-VP\n", encoding="utf-8")
    assert main(["-q", "convert", str(source), "-o", str(tmp_path / "bad.txt"), "--scheme", "bioes"]) != 0
    assert f"{source}:4: tag 'Q-VP'" in capsys.readouterr().err
    assert not (tmp_path / "bad.txt").exists()
