"""Bad input to the scoring functions raises typed errors that say where."""

import pytest

from fstcrf.errors import ArgumentTypeError, FstcrfError, LabelError, ShapeError
from fstcrf.corpus.evaluate import detect_scheme, is_chunk_labels, mcnemar, scheme_mismatch, score_chunks, score_labels


@pytest.mark.parametrize("score", [score_chunks, score_labels])
@pytest.mark.parametrize("value, token", [("B-NP|I-NP", 1), ("?", 1), ("NN|VB", 1), ("O|B-NP", 1)])
def test_partial_gold_labels_are_rejected(score, value, token):
    gold = [["B-NP", "O"], ["B-NP", value, "O"]]
    pred = [["B-NP", "O"], ["B-NP", "I-NP", "O"]]
    with pytest.raises(LabelError, match=r"gold labels must be single labels: sentence 1 token 1 has") as caught:
        score(gold, pred)
    assert (caught.value.sentence, caught.value.position) == (1, token)
    assert repr(value) in str(caught.value)


def test_partial_gold_labels_are_rejected_by_mcnemar():
    with pytest.raises(LabelError, match="sentence 0 token 2"):
        mcnemar([["O", "O", "?"]], [["O", "O", "O"]], [["O", "O", "O"]])


@pytest.mark.parametrize("score", [score_chunks, score_labels])
def test_ragged_input_names_the_sentence(score):
    with pytest.raises(ShapeError, match="sentence 2 has 3 gold tags but 2 predicted"):
        score([["O"], [], ["O", "B-NP", "I-NP"]], [["O"], [], ["O", "B-NP"]])
    with pytest.raises(ShapeError, match="3 gold sentences but 2 predicted"):
        score([["O"], ["O"], ["O"]], [["O"], ["O"]])


@pytest.mark.parametrize("score", [score_chunks, score_labels])
@pytest.mark.parametrize(
    "gold, pred, message",
    [
        ("B-NP I-NP", [["B-NP"]], "gold must be sentences .lists of labels., got the string 'B-NP I-NP'"),
        (["B-NP", "I-NP"], ["B-NP", "I-NP"], "gold sentence 0 is the string 'B-NP', not a list of labels"),
        ([["B-NP", "O"]], [["B-NP", 0]], "predicted sentence 0 token 1: labels must be strings, got int 0"),
        ([["B-NP", None]], [["B-NP", "O"]], "gold sentence 0 token 1: labels must be strings, got NoneType"),
    ],
)
def test_wrong_types_are_argument_type_errors(score, gold, pred, message):
    with pytest.raises(ArgumentTypeError, match=message) as caught:
        score(gold, pred)
    assert isinstance(caught.value, TypeError) and isinstance(caught.value, ValueError)


def test_wrong_types_in_scheme_detection():
    with pytest.raises(ArgumentTypeError, match="got the string"):
        detect_scheme("B-NP")
    with pytest.raises(ArgumentTypeError, match="sentence 0 is the string"):
        is_chunk_labels(["B-NP", "O"])
    with pytest.raises(ArgumentTypeError, match="model_labels must be a list of labels"):
        scheme_mismatch("B-NP", [["B-NP"]])


def test_bad_tags_in_bioes_scoring_name_side_sentence_and_token():
    with pytest.raises(LabelError, match=r"predicted sentence 1: tag 'Q-NP' at token 2") as caught:
        score_chunks([["S-NP"], ["B-NP", "I-NP", "E-NP"]], [["S-NP"], ["B-NP", "I-NP", "Q-NP"]])
    assert (caught.value.sentence, caught.value.position) == (1, 2)


def test_unknown_scheme_is_a_label_error():
    with pytest.raises(LabelError, match="scheme must be one of iob1, iob2, bioes or None, got 'IOB2'"):
        score_labels([["O"]], [["O"]], scheme="IOB2")


def test_every_error_is_a_value_error():
    for bad in (
        lambda: score_chunks([["?"]], [["O"]]),
        lambda: score_labels([["O"]], []),
        lambda: score_labels("O", "O"),
    ):
        with pytest.raises(FstcrfError):
            bad()
        with pytest.raises(ValueError):
            bad()
