"""The seminar announcements reader, its repairs of malformed tags, the
``fstcrf seminars`` command and the scorers of the papers."""

import logging
import re
from collections import Counter

import pytest

from fstcrf.cli import main
from fstcrf.corpus.conll import read_conll
from fstcrf.errors import ArgumentTypeError, ConllFormatError, FstcrfError, LabelError, ShapeError
from fstcrf.experiments.seminars import (
    FIELDS,
    FieldScore,
    count_seminars,
    document_column,
    document_scores,
    group_documents,
    mean_f1,
    read_seminar,
    read_seminars,
    seminar_corpus,
    seminar_paths,
    token_scores,
)

ANNOUNCEMENT = """\
<0.1.2.3@cs.cmu.edu.0>
Type:     cmu.cs.scs
Who:      <speaker>Dr. Jane Smith</speaker>, CMU
Time:     <stime>3:30pm</stime> - <etime>5:00 p.m</etime>.
Place:    <location>Wean Hall
          5409</location>
Host:     Bob Jones

<paragraph><sentence><speaker>Smith</speaker> will talk at <stime>3:30</stime> in
<location>DH 2315</sentence></location>.  <sentence>All welcome</sentence>.</paragraph>
"""

#: README of the corpus: tagged instances / documents containing the field.
README_COUNTS = {
    "all": (
        {"speaker": 756, "location": 642, "stime": 982, "etime": 431},
        {"speaker": 409, "location": 464, "stime": 485, "etime": 227},
    ),
    "training": (
        {"speaker": 419, "location": 356, "stime": 600, "etime": 248},
        {"speaker": 240, "location": 282, "stime": 301, "etime": 129},
    ),
    "test": (
        {"speaker": 337, "location": 286, "stime": 382, "etime": 183},
        {"speaker": 169, "location": 182, "stime": 184, "etime": 98},
    ),
}


def write(folder, name: str, text: str):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def rows(document):
    """[(word, field)] per sentence."""
    return [list(zip(sentence["word"], sentence["field"])) for sentence in document.sentences]


def words(tmp_path, text: str) -> list[str]:
    document = read_seminar(write(tmp_path, "1.txt", text))
    return [word for sentence in document.sentences for word in sentence["word"]]


def test_announcement_tokens_labels_and_sentences(tmp_path):
    document = read_seminar(write(tmp_path, "7.txt", ANNOUNCEMENT))
    assert document.text == re.sub(r"</?[a-z]+>", "", ANNOUNCEMENT)
    assert document.repairs == [] and document.split_tokens == 0
    assert rows(document) == [
        [("<", "O"), ("0.1.2.3@cs.cmu.edu.0", "O"), (">", "O")],
        [("Type:", "O"), ("cmu", "O"), (".", "O"), ("cs", "O"), (".", "O"), ("scs", "O")],
        [("Who:", "O"), ("Dr.", "B-speaker"), ("Jane", "I-speaker"), ("Smith", "I-speaker"), (",", "O"), ("CMU", "O")],
        [
            ("Time:", "O"),
            ("3:30", "B-stime"),
            ("pm", "I-stime"),
            ("-", "O"),
            ("5:00", "B-etime"),
            ("p.m", "I-etime"),
            (".", "O"),
        ],
        # a line break inside a field ends no sentence
        [("Place:", "O"), ("Wean", "B-location"), ("Hall", "I-location"), ("5409", "I-location")],
        [("Host:", "O"), ("Bob", "O"), ("Jones", "O")],
        # tagged sentences run over line breaks; the "." after </sentence> stays with its sentence, and
        # the </sentence> inside the location crosses it without harm
        [
            ("Smith", "B-speaker"),
            ("will", "O"),
            ("talk", "O"),
            ("at", "O"),
            ("3:30", "B-stime"),
            ("in", "O"),
            ("DH", "B-location"),
            ("2315", "I-location"),
            (".", "O"),
        ],
        [("All", "O"), ("welcome", "O"), (".", "O")],
    ]
    assert [sentence.docstart_lines for sentence in document.sentences] == [("-DOCSTART- O",)] + [()] * 7
    assert document.sentences[4].line_numbers == [5, 5, 5, 6]
    assert [(mention.field, document.mention_text(mention)) for mention in document.mentions] == [
        ("speaker", "Dr. Jane Smith"),
        ("stime", "3:30pm"),
        ("etime", "5:00 p.m"),
        ("location", "Wean Hall\n          5409"),
        ("speaker", "Smith"),
        ("stime", "3:30"),
        ("location", "DH 2315"),
    ]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("at 3:30pm, or 5pm", ["at", "3:30", "pm", ",", "or", "5", "pm"]),
        ("4:00-5:30 p.m. today", ["4:00", "-", "5:30", "p.m", ".", "today"]),
        ("10:30 a.m", ["10:30", "a.m"]),
        ("Who: Dr. J. Smith", ["Who:", "Dr.", "J.", "Smith"]),
        ("PostedBy: x E-mail:y", ["PostedBy:", "x", "E-mail:", "y"]),
        ("IBM's T.J. Watson, e.g. here", ["IBM", "'s", "T.J.", "Watson", ",", "e.g.", "here"]),
        ("don't", ["do", "n't"]),
        ("mail maa+@ISL1.RI.CMU.EDU.", ["mail", "maa+@ISL1.RI.CMU.EDU", "."]),
        ("see http://www.cs.cmu.edu/~x/.", ["see", "http://www.cs.cmu.edu/~x/", "."]),
        ("WEH 4623, 1,000 people", ["WEH", "4623", ",", "1,000", "people"]),
        ("29-Nov-94 Carnegie-Mellon 4P56", ["29", "-", "Nov", "-", "94", "Carnegie-Mellon", "4P56"]),
        ("-------- ... !?", ["--------", "...", "!", "?"]),
    ],
)
def test_tokeniser(tmp_path, text, expected):
    assert words(tmp_path, text) == expected


def test_a_token_is_cut_at_a_field_edge_inside_it(tmp_path):
    document = read_seminar(write(tmp_path, "1.txt", "by <speaker>Mel Siege</speaker>l now\n"))
    assert rows(document) == [[("by", "O"), ("Mel", "B-speaker"), ("Siege", "I-speaker"), ("l", "O"), ("now", "O")]]
    assert document.split_tokens == 1


def test_sentence_breaks_from_structure_tags_and_lines(tmp_path):
    text = (
        "Header one\nHeader two\n<paragraph>First part\nstill first.  <sentence>Second\n"
        "one</sentence>.</paragraph> after\n<sentence>Outside a paragraph</sentence> rest of line\nlast\n"
    )
    document = read_seminar(write(tmp_path, "1.txt", text))
    assert [" ".join(sentence["word"]) for sentence in document.sentences] == [
        "Header one",
        "Header two",
        "First part still first .",
        "Second one .",
        "after",
        "Outside a paragraph rest of line",
        "last",
    ]


def repairs(document):
    return [(repair.line, repair.kind, repair.tag) for repair in document.repairs]


def test_field_left_open_at_the_end_is_dropped_with_a_warning(tmp_path, caplog):
    path = write(tmp_path, "1.txt", "Time: 3:30\nWho: <speaker>Jane Smith\nmore\n")
    with caplog.at_level(logging.WARNING, logger="fstcrf"):
        document = read_seminar(path)
    assert repairs(document) == [(2, "unclosed", "<speaker>")]
    assert document.mentions == []
    assert {label for sentence in document.sentences for label in sentence["field"]} == {"O"}
    assert f"{path}:2: unclosed <speaker>" in caplog.text


def test_field_tags_unclosed_mismatched_and_stray(tmp_path):
    text = "<speaker>Ann <location>Room 1</location>\n<speaker>Bob</location> and</etime> <stime>3</stime>\n"
    document = read_seminar(write(tmp_path, "1.txt", text))
    assert repairs(document) == [
        (1, "unclosed", "<speaker>"),
        (2, "mismatched", "</location>"),
        (2, "stray", "</etime>"),
    ]
    assert rows(document) == [
        [("Ann", "O"), ("Room", "B-location"), ("1", "I-location")],
        [("Bob", "B-speaker"), ("and", "O"), ("3", "B-stime")],
    ]
    assert Counter(f"{repair.kind} {repair.tag}" for repair in document.repairs) == count_seminars([document]).repairs


def test_unknown_tags_are_dropped_and_counted(tmp_path, caplog):
    path = write(tmp_path, "1.txt", "Topic: <b>bold</b> talk\n")
    with caplog.at_level(logging.WARNING, logger="fstcrf"):
        document = read_seminar(path)
    assert document.text == "Topic: bold talk\n"
    assert repairs(document) == [(1, "unknown", "<b>"), (1, "unknown", "</b>")]
    assert f"{path}:1: unknown <b>" in caplog.text


def test_structure_tags_unclosed_reopened_and_crossed(tmp_path):
    text = (
        "<paragraph>one\ntwo</paragraph>\n"
        "<paragraph><sentence>three\nfour</paragraph></sentence>\n"  # crossed: no repair
        "<paragraph>five\n<paragraph>six\nseven\n"  # opened twice, open at the end
        "</sentence>\n"
    )
    document = read_seminar(write(tmp_path, "1.txt", text))
    assert repairs(document) == [
        (5, "unclosed", "<paragraph>"),
        (8, "stray", "</sentence>"),
        (6, "unclosed", "<paragraph>"),
    ]
    assert [" ".join(sentence["word"]) for sentence in document.sentences] == [
        "one two",
        "three four",
        "five",
        "six seven",
    ]


def test_mention_without_text_is_dropped(tmp_path):
    document = read_seminar(write(tmp_path, "1.txt", "Who: <speaker> </speaker>\nWhere: <location></location>x\n"))
    assert repairs(document) == [(1, "empty", "<speaker>"), (2, "empty", "<location>")]
    assert document.mentions == []


def test_empty_file_warns_and_is_left_out(tmp_path, caplog):
    write(tmp_path, "1.txt", ANNOUNCEMENT)
    empty = write(tmp_path, "2.txt", "")
    with caplog.at_level(logging.WARNING, logger="fstcrf"):
        documents = read_seminars(tmp_path)
    assert f"{empty}:1: no text" in caplog.text
    assert [len(document.sentences) for document in documents] == [8, 0]
    assert len(group_documents(seminar_corpus(documents))) == 1
    counts = count_seminars(documents)
    assert (counts.documents, counts.empty_documents, counts.sentences) == (2, 1, 8)


def test_invalid_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "1.txt"
    path.write_bytes(b"Who: x\nTime: \xff\n")
    with pytest.raises(ConllFormatError, match=rf"{re.escape(str(path))}:2: expected UTF-8"):
        read_seminar(path)


def test_paths_sorted_by_numeric_name(tmp_path):
    for name in ["training/10.txt", "training/9.txt", "test/100.txt", "notes.txt", "test/readme.md"]:
        write(tmp_path, name, "x\n")
    assert [path.relative_to(tmp_path).as_posix() for path in seminar_paths(tmp_path)] == [
        "training/9.txt",
        "training/10.txt",
        "test/100.txt",
        "notes.txt",
    ]
    (tmp_path / "empty").mkdir()
    with pytest.raises(FstcrfError, match=r"no \*\.txt files"):
        seminar_paths(tmp_path / "empty")
    with pytest.raises(FstcrfError, match="not a folder"):
        read_seminars(tmp_path / "notes.txt")


def test_command_writes_columns_and_docstart_lines(tmp_path, caplog):
    folder = tmp_path / "seminars"
    write(folder, "training/2.txt", ANNOUNCEMENT)
    write(folder, "training/10.txt", "Time: <stime>4 pm</stime>\n")
    write(folder, "test/11.txt", "")
    output = tmp_path / "out.txt"
    with caplog.at_level(logging.INFO, logger="fstcrf"):
        assert main(["seminars", str(folder), "-o", str(output)]) == 0
    text = output.read_text()
    assert text.count("-DOCSTART-") == 2 and text.startswith("-DOCSTART- O\n\n<")
    written = read_conll(output, columns="word,field")
    expected = seminar_corpus(read_seminars(folder))
    assert [sentence.columns for sentence in written] == [sentence.columns for sentence in expected]
    assert [sentence.document_start for sentence in written] == [True] + [False] * 7 + [True]
    assert "3 documents (1 without text), 9 sentences, 44 tokens" in caplog.text
    assert "speaker 2 in 1 documents, location 2 in 1 documents, stime 3 in 2 documents" in caplog.text
    assert "repaired tags: none" in caplog.text


def test_command_refuses_to_overwrite_an_announcement(tmp_path, capsys):
    announcement = write(tmp_path, "1.txt", ANNOUNCEMENT)
    assert main(["-q", "seminars", str(tmp_path), "-o", str(announcement)]) == 2
    assert "is the same file as the input" in capsys.readouterr().err
    assert announcement.read_text() == ANNOUNCEMENT


def test_command_on_a_missing_folder_is_one_line(tmp_path, capsys):
    assert main(["-q", "seminars", str(tmp_path / "none"), "-o", str(tmp_path / "out.txt")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_real_corpus_counts_match_the_readme(data_dir):
    documents = read_seminars(data_dir / "seminars")
    assert len(documents) == 485
    for part, (mentions, with_field) in README_COUNTS.items():
        chosen = [document for document in documents if part in ("all", document.path.parent.name)]
        counts = count_seminars(chosen)
        assert counts.mentions == mentions, part
        assert counts.documents_with == with_field, part
    assert [
        (document.path.name, repair.line, repair.kind, repair.tag)
        for document in documents
        for repair in document.repairs
    ] == [("165.txt", 16, "unclosed", "<paragraph>"), ("397.txt", 24, "unclosed", "<sentence>")]
    for document in documents:
        raw = document.path.read_text()
        assert document.text == re.sub(r"</?[a-z]+>", "", raw)
        tokens = "".join(word for sentence in document.sentences for word in sentence["word"])
        assert tokens == "".join(document.text.split()), document.path
    gold = document_column(seminar_corpus(documents), "field")
    tokens = document_column(seminar_corpus(documents), "word")
    assert len(gold) == 485
    assert all(score.f1 == 100.0 for score in document_scores(tokens, gold, gold).values())


# The scorers.  Documents are [sentences][tokens].

WORDS = [
    [["Host:", "Bob", "Ray"], ["Who:", "Jane", "Smith", "and", "Jane", "Smith"]],
    [["Speaker:", "Bob"]],
    [["Hi", "Alice"]],
    [["By", "Carl"]],
]
GOLD = [
    [["O", "O", "O"], ["O", "B-speaker", "I-speaker", "O", "B-speaker", "I-speaker"]],
    [["O", "B-speaker"]],
    [["O", "O"]],
    [["O", "B-speaker"]],
]


def test_document_scores_one_value_per_document():
    predicted = [
        # "Bob Ray" first, "Jane Smith" twice: the most frequent value is correct, the first is not
        [["O", "B-speaker", "I-speaker"], ["O", "B-speaker", "I-speaker", "O", "B-speaker", "I-speaker"]],
        [["B-speaker", "O"]],  # wrong value
        [["O", "B-speaker"]],  # a value where there is no true mention
        [["O", "O"]],  # nothing predicted
    ]
    scores = document_scores(WORDS, GOLD, predicted, fields=("speaker",))
    assert scores == {"speaker": FieldScore(correct=1, predicted=3, gold=3)}
    assert scores["speaker"].precision == pytest.approx(100 / 3)
    assert scores["speaker"].f1 == pytest.approx(100 / 3)
    first = document_scores(WORDS, GOLD, predicted, fields=("speaker",), pick="first")
    assert first == {"speaker": FieldScore(correct=0, predicted=3, gold=3)}


def test_document_scores_match_any_true_mention_as_words():
    words = [[["at", "3:30", "PM"], ["Time:", "3:30", "pm", "or", "3:30"]]]
    gold = [[["O", "B-stime", "I-stime"], ["O", "B-stime", "I-stime", "O", "B-stime"]]]
    # the value is matched against every true mention, wherever it is
    predicted = [[["O", "O", "O"], ["O", "O", "O", "O", "B-stime"]]]
    assert document_scores(words, gold, predicted)["stime"] == FieldScore(1, 1, 1)
    # case is not normalised: "3:30 pm" is a true value, the untagged "3:30 PM" is not
    gold = [[["O", "O", "O"], ["O", "B-stime", "I-stime", "O", "O"]]]
    predicted = [[["O", "B-stime", "I-stime"], ["O", "O", "O", "O", "O"]]]
    assert document_scores(words, gold, predicted)["stime"] == FieldScore(0, 1, 1)


def test_document_scores_ties_go_to_the_earliest_and_inside_starts_a_mention():
    words = [[["Ann", "and", "Bob"]]]
    gold = [[["B-speaker", "O", "O"]]]
    assert document_scores(words, gold, [[["B-speaker", "O", "B-speaker"]]])["speaker"] == FieldScore(1, 1, 1)
    assert document_scores(words, gold, [[["O", "O", "I-speaker"]]])["speaker"] == FieldScore(0, 1, 1)


def test_empty_predictions_score_zero():
    predicted = [[["O"] * len(sentence) for sentence in document] for document in GOLD]
    scores = document_scores(WORDS, GOLD, predicted)
    assert scores["speaker"] == FieldScore(0, 0, 3)
    assert scores["location"] == FieldScore(0, 0, 0)
    assert all(score.f1 == 0.0 for score in scores.values())
    assert mean_f1(scores) == 0.0
    assert token_scores(GOLD, predicted)["speaker"] == FieldScore(0, 0, 6)


def test_token_scores_per_field_and_their_mean():
    gold = [[["B-speaker", "I-speaker", "O", "B-stime"]], [["B-location", "O"]]]
    predicted = [[["B-speaker", "O", "B-speaker", "B-stime"]], [["I-location", "B-etime"]]]
    scores = token_scores(gold, predicted)
    assert scores == {
        "speaker": FieldScore(1, 2, 2),
        "location": FieldScore(1, 1, 1),
        "stime": FieldScore(1, 1, 1),
        "etime": FieldScore(0, 1, 0),
    }
    assert scores["speaker"].f1 == 50.0
    assert mean_f1(scores) == pytest.approx((50 + 100 + 100 + 0) / 4)
    assert list(scores) == list(FIELDS)


def test_scorers_reject_bad_input():
    with pytest.raises(ShapeError, match="2 documents, expected 4"):
        document_scores(WORDS, GOLD, GOLD[:2])
    with pytest.raises(ShapeError, match="document 1 sentence 0 has 1 tokens, expected 2"):
        token_scores(GOLD, [GOLD[0], [["O"]], GOLD[2], GOLD[3]])
    with pytest.raises(ArgumentTypeError):
        token_scores("B-speaker", "B-speaker")
    with pytest.raises(LabelError, match="predicted document 0 sentence 0"):
        token_scores([[["O"]]], [[["speaker"]]])
    with pytest.raises(FstcrfError, match="pick must be one of"):
        document_scores(WORDS, GOLD, GOLD, pick="longest")
    with pytest.raises(FstcrfError):
        mean_f1({})
