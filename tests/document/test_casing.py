"""The casing columns: case classes, capitals lines, and case_doc against a direct
enumeration of its definition on random documents."""

import pytest
from hypothesis import given, settings, strategies as st

from fstcrf.corpus.conll import Sentence
from fstcrf.document.casing import CASING_COLUMNS, case_class, casing_columns, is_capitals_line


def _sentence(words):
    return Sentence({"word": list(words)})


@pytest.mark.parametrize(
    "word, expected",
    [
        ("japan", "lower"),
        ("JAPAN", "upper"),
        ("Japan", "title"),
        ("A", "title"),
        ("iPod", "mixed"),
        ("McDonald", "title"),
        ("U.S.", "upper"),
        ("1996", None),
        (",", None),
        ("3-day", "lower"),
    ],
)
def test_case_classes(word, expected):
    assert case_class(word) == expected


def test_capitals_lines_need_two_lettered_words_and_no_lower_case():
    assert is_capitals_line(["SOCCER", "-", "JAPAN", "WIN", "."])
    assert not is_capitals_line(["SOCCER", "-", "Japan", "win"])
    assert not is_capitals_line(["ROME", "1996-08-30"])  # one lettered word
    assert not is_capitals_line(["1", "2"])


def test_a_headline_word_reads_how_the_text_writes_it():
    sentences = [
        _sentence(["JAPAN", "GET", "LUCKY", "WIN"]),
        _sentence(["Japan", "beat", "the", "Japan", "side"]),
        _sentence(["They", "win", "in", "japan"]),
        _sentence(["Lucky", "escape"]),
    ]
    extended = casing_columns(sentences, [(0, 4)])
    case_doc = [sentence["case_doc"] for sentence in extended]
    # the headline's JAPAN: the text has one title-case and one lower-case japan at
    # reliable positions (the first Japan starts its sentence and does not count)
    assert case_doc[0] == ["lower+title", "none", "none", "lower"]
    # the second Japan leaves out its own title-case vote
    assert case_doc[1][3] == "lower"
    assert case_doc[1][0] == "lower+title"
    # "Lucky" starts its sentence and the headline is in capitals: no reliable occurrence
    assert case_doc[3][0] == "none"
    assert [sentence["caps_line"] for sentence in extended][:2] == [
        ["caps"] * 4,
        ["init", "body", "body", "body", "body"],
    ]


def test_documents_do_not_see_each_other():
    sentences = [_sentence(["in", "Paris"]), _sentence(["PARIS", "NEWS"])]
    assert casing_columns(sentences, [(0, 1), (1, 2)])[1]["case_doc"] == ["none", "none"]
    assert casing_columns(sentences, [(0, 2)])[1]["case_doc"] == ["title", "none"]


@st.composite
def _documents(draw):
    vocabulary = ["paris", "Paris", "PARIS", "pArIs", "may", "May", "MAY", "1", "-"]
    sentences = [
        _sentence(draw(st.lists(st.sampled_from(vocabulary), min_size=1, max_size=5)))
        for _ in range(draw(st.integers(1, 6)))
    ]
    cuts = sorted(set(draw(st.lists(st.integers(1, len(sentences) - 1), max_size=3)))) if len(sentences) > 1 else []
    bounds = [0] + cuts + [len(sentences)]
    return sentences, list(zip(bounds[:-1], bounds[1:]))


@settings(max_examples=150, deadline=None)
@given(_documents())
def test_case_doc_matches_a_pairwise_enumeration(case):
    sentences, spans = case
    extended = casing_columns(sentences, spans)
    for first, last in spans:
        tokens = [(index, position) for index in range(first, last) for position in range(len(sentences[index]))]

        def reliable_class(index, position):
            words = sentences[index]["word"]
            if position == 0 or is_capitals_line(words):
                return None
            return case_class(words[position])

        for index, position in tokens:
            word = sentences[index]["word"][position].lower()
            others = {
                reliable_class(*other)
                for other in tokens
                if other != (index, position) and sentences[other[0]]["word"][other[1]].lower() == word
            } - {None}
            expected = "+".join(sorted(others)) if others else "none"
            assert extended[index]["case_doc"][position] == expected
            assert set(extended[index].column_names) == {"word", *CASING_COLUMNS}
