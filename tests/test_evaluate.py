"""Chunk scores equal to conlleval's, and McNemar's test."""
import math
from collections import Counter, defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstcrf.conll import read_conll
from fstcrf.errors import ShapeError
from fstcrf.evaluate import mcnemar, score_chunks

try:  # seqeval is an optional oracle, installed with the test extra
    from seqeval import metrics as seqeval_metrics
    from seqeval.metrics.sequence_labeling import get_entities as seqeval_entities
except ImportError:
    seqeval_metrics = None

needs_seqeval = pytest.mark.skipif(seqeval_metrics is None, reason="seqeval is not installed")


def num_chunks(tags):
    """How many chunks conlleval finds in one sentence of tags."""
    return score_chunks([tags], [tags]).num_gold_chunks


def test_report_matches_conlleval_worked_by_hand():
    gold = [["B-NP", "I-NP", "O", "B-VP"], ["B-NP"]]
    pred = [["B-NP", "I-NP", "O", "B-NP"], ["I-NP"]]
    scores = score_chunks(gold, pred)
    # gold chunks NP(0-1) VP(3) NP(0); predicted NP(0-1) NP(3) NP(0), the last
    # one opened by I-NP after the sentence start; NP(0-1) and NP(0) are correct.
    assert (scores.num_gold_chunks, scores.num_predicted_chunks,
            scores.num_correct_chunks) == (3, 3, 2)
    assert (scores.num_tokens, scores.num_correct_tokens) == (5, 3)
    assert scores.accuracy == pytest.approx(60.0)
    assert scores.precision == pytest.approx(200 / 3)
    assert scores.recall == pytest.approx(200 / 3)
    assert scores.f1 == pytest.approx(200 / 3)
    noun_phrases = scores.per_type["NP"]
    assert (noun_phrases.precision, noun_phrases.recall) == (pytest.approx(200 / 3), 100.0)
    assert noun_phrases.f1 == pytest.approx(80.0)
    assert (noun_phrases.num_predicted, noun_phrases.num_gold,
            noun_phrases.num_correct) == (3, 2, 2)
    assert list(scores.per_type) == ["NP", "VP"]
    assert scores.format() == (
        "processed 5 tokens with 3 phrases; found: 3 phrases; correct: 2.\n"
        "accuracy:  60.00%; precision:  66.67%; recall:  66.67%; FB1:  66.67\n"
        "               NP: precision:  66.67%; recall: 100.00%; FB1:  80.00  3\n"
        "               VP: precision:   0.00%; recall:   0.00%; FB1:   0.00  0\n")


def test_iob1_and_iob2_spellings_of_the_same_chunks_agree():
    scores = score_chunks([["B-NP", "I-NP", "B-NP"]], [["I-NP", "I-NP", "B-NP"]])
    assert (scores.num_correct_chunks, scores.f1) == (2, 100.0)
    assert scores.accuracy == pytest.approx(200 / 3)


def test_chunk_must_end_where_the_gold_chunk_ends():
    scores = score_chunks([["B-NP", "I-NP"]], [["B-NP", "O"]])
    assert (scores.num_gold_chunks, scores.num_predicted_chunks,
            scores.num_correct_chunks) == (1, 1, 0)


def test_chunk_types_must_agree():
    scores = score_chunks([["B-NP", "I-NP"]], [["B-VP", "I-VP"]])
    assert scores.num_correct_chunks == 0
    assert scores.format().endswith("FB1:   0.00  0\n"
                                    "               VP: precision:   0.00%; recall:   0.00%; "
                                    "FB1:   0.00  1\n")


@pytest.mark.parametrize("tags, expected", [
    (["O", "I-NP"], 1),                      # I after O opens a chunk
    (["B-NP", "I-VP"], 2),                   # a change of type closes one and opens another
    (["I-NP", "I-NP", "B-NP"], 2),           # IOB1
    (["B-NP", "B-NP", "I-NP", "O"], 2),      # IOB2
    (["[-NP", "]-NP"], 2),                   # bracket chunks have length 1
    (["B", "I", "O", "B"], 2),               # tags without a type: the empty type
])
def test_chunk_boundaries_follow_conlleval_rules(tags, expected):
    assert num_chunks(tags) == expected


@pytest.mark.parametrize("tags, expected", [
    (["I-NP", "E-NP", "E-NP"], 2),           # IOE: E then E is a new chunk
    (["I-NP", "I-NP", "E-NP", "I-NP"], 2),   # IOE: I after E is a new chunk
    (["E-NP", "B-NP"], 2),                   # conlleval has no rule for B after E: it read 1
    (["S-NP", "S-NP"], 2),                   # nor any rule for S tags: it read 1
    (["S-NP", "S-VP"], 2),
    (["B-NP", "E-NP", "S-NP", "O", "S-VP"], 3),
])
def test_e_and_s_tags_end_chunks(tags, expected):
    assert num_chunks(tags) == expected


def test_a_sentence_end_closes_chunks():
    assert score_chunks([["I-NP"], ["I-NP"]], [["I-NP"], ["I-NP"]]).num_gold_chunks == 2
    scores = score_chunks([["B-NP"], ["I-NP"]], [["B-NP"], ["B-NP"]])
    assert (scores.num_correct_chunks, scores.accuracy) == (2, 50.0)


def test_type_zero_is_the_empty_type_as_in_conlleval():
    scores = score_chunks([["B-0", "O"]], [["B", "O"]])
    assert scores.num_correct_chunks == 1 and scores.accuracy == 100.0
    assert list(scores.per_type) == [""]
    assert scores.format().splitlines()[-1] == (" " * 17 + ": precision: 100.00%; "
                                                "recall: 100.00%; FB1: 100.00  1")


def test_no_tokens_prints_only_the_counts():
    scores = score_chunks([], [])
    assert scores.f1 == scores.accuracy == 0.0
    assert scores.format() == "processed 0 tokens with 0 phrases; found: 0 phrases; correct: 0.\n"


def test_no_predicted_chunks_scores_zero():
    scores = score_chunks([["B-NP", "O"]], [["O", "O"]])
    assert (scores.precision, scores.recall, scores.f1, scores.accuracy) == (0.0, 0.0, 0.0, 50.0)


def test_lengths_must_agree():
    with pytest.raises(ShapeError, match="sentence 1"):
        score_chunks([["O"], ["O", "O"]], [["O"], ["O"]])
    with pytest.raises(ShapeError, match="2 gold sentences but 1"):
        score_chunks([["O"], ["O"]], [["O"]])


def test_conll2000_baseline_reproduces_the_published_scores(data_file):
    """The CoNLL-2000 baseline: each POS tag's most frequent chunk tag in train.

    Tjong Kim Sang & Buchholz (2000) report precision 72.58%, recall 82.14%,
    FB1 77.07 for it on the test set.
    """
    train = read_conll(data_file("conll2000/train.txt"))
    test = read_conll(data_file("conll2000/test.txt"))
    chunk_counts = defaultdict(Counter)
    for sentence in train:
        for pos, chunk in zip(sentence["pos"], sentence["chunk"]):
            chunk_counts[pos][chunk] += 1
    best = {pos: counts.most_common(1)[0][0] for pos, counts in chunk_counts.items()}
    predicted = [[best.get(pos, "O") for pos in sentence["pos"]] for sentence in test]
    report = score_chunks(test.column("chunk"), predicted).format().splitlines()
    assert report[0] == ("processed 47377 tokens with 23852 phrases; found: 26992 phrases; "
                         "correct: 19592.")
    assert report[1] == "accuracy:  77.29%; precision:  72.58%; recall:  82.14%; FB1:  77.07"


TYPES = ["NP", "VP", "PP"]
tags = st.sampled_from(["O"] + [f"{prefix}-{kind}" for prefix in "BI" for kind in TYPES])


@st.composite
def gold_and_predicted(draw):
    lengths = draw(st.lists(st.integers(0, 8), max_size=5))
    gold = [draw(st.lists(tags, min_size=length, max_size=length)) for length in lengths]
    pred = [draw(st.lists(tags, min_size=length, max_size=length)) for length in lengths]
    return gold, pred


@needs_seqeval
@settings(max_examples=400, deadline=None)
@given(gold_and_predicted())
def test_agrees_with_seqeval_default_mode(sentences):
    """seqeval's default mode follows conlleval's rules for B-, I- and O tags.

    Only B-/I-/O tags are drawn (IOB1, IOB2 and invalid mixtures such as
    O I-NP or B-NP I-VP): seqeval's E and S rules differ from conlleval's,
    which has no S rule and starts no chunk at B after E of the same type.
    """
    gold, pred = sentences
    scores = score_chunks(gold, pred)
    gold_chunks = set(seqeval_entities(gold))
    predicted_chunks = set(seqeval_entities(pred))
    correct_chunks = gold_chunks & predicted_chunks
    assert scores.num_gold_chunks == len(gold_chunks)
    assert scores.num_predicted_chunks == len(predicted_chunks)
    assert scores.num_correct_chunks == len(correct_chunks)
    for kind, type_scores in scores.per_type.items():
        assert type_scores.num_gold == sum(chunk[0] == kind for chunk in gold_chunks)
        assert type_scores.num_predicted == sum(chunk[0] == kind for chunk in predicted_chunks)
        assert type_scores.num_correct == sum(chunk[0] == kind for chunk in correct_chunks)
    if scores.num_tokens:
        assert scores.precision == pytest.approx(
            100 * seqeval_metrics.precision_score(gold, pred, zero_division=0))
        assert scores.recall == pytest.approx(
            100 * seqeval_metrics.recall_score(gold, pred, zero_division=0))
        assert scores.f1 == pytest.approx(
            100 * seqeval_metrics.f1_score(gold, pred, zero_division=0))
        assert scores.accuracy == pytest.approx(
            100 * seqeval_metrics.accuracy_score(gold, pred))


@needs_seqeval
@pytest.mark.parametrize("tags", [["E-NP", "B-NP"], ["S-NP", "S-NP"]])
def test_e_and_s_tags_read_as_seqeval_reads_them(tags):
    """Corners where conlleval reads one chunk (it has no rule for S tags, nor
    for B after E of the same type): E and S end a chunk, as in seqeval."""
    assert num_chunks(tags) == len(seqeval_entities([tags])) == 2


def test_mcnemar_counts_one_sided_errors():
    gold = [["B-NP", "I-NP", "O"], ["B-VP"]]
    pred_a = [["B-NP", "I-NP", "B-NP"], ["B-VP"]]   # wrong at token 3
    pred_b = [["B-NP", "O", "O"], ["O"]]           # wrong at tokens 2 and 4
    result = mcnemar(gold, pred_a, pred_b)
    assert (result.n01, result.n10) == (2, 1)
    assert result.method == "exact"
    assert result.p_value == pytest.approx(1.0)
    swapped = mcnemar(gold, pred_b, pred_a)
    assert (swapped.n01, swapped.n10, swapped.p_value) == (1, 2, result.p_value)


def test_mcnemar_exact_binomial_for_few_disagreements():
    gold = [["O"] * 5]
    result = mcnemar(gold, gold, [["B-NP"] * 5])
    assert (result.n01, result.n10, result.method) == (5, 0, "exact")
    assert result.p_value == pytest.approx(2 * 0.5 ** 5)


def test_mcnemar_chi_square_with_continuity_correction():
    gold = [["O"] * 40]
    pred_a = [["O"] * 30 + ["B-NP"] * 10]
    pred_b = [["B-NP"] * 30 + ["O"] * 10]
    result = mcnemar(gold, pred_a, pred_b)
    assert (result.n01, result.n10, result.method) == (30, 10, "chi2")
    statistic = (abs(30 - 10) - 1) ** 2 / 40
    assert result.p_value == pytest.approx(math.erfc(math.sqrt(statistic / 2)))


def test_mcnemar_without_disagreements():
    gold = [["B-NP", "O"]]
    result = mcnemar(gold, gold, [["B-NP", "B-VP"]])
    assert (result.n01, result.n10) == (1, 0)
    same = mcnemar(gold, [["O", "O"]], [["O", "O"]])
    assert (same.n01, same.n10, same.p_value) == (0, 0, 1.0)


def test_mcnemar_lengths_must_agree():
    with pytest.raises(ShapeError):
        mcnemar([["O", "O"]], [["O", "O"]], [["O"]])
