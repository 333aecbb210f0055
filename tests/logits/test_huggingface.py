"""The Hugging Face adapter on constructed model outputs (no transformers, no download):
subword merging, special tokens, repairs of an invalid argmax, batches, the
pipeline's output, and bad input."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fstcrf.corpus.schemes import convert
from fstcrf.errors import ArgumentTypeError, EmptySequenceError, LabelError, ScoreError, ShapeError
from fstcrf.logits import decode_logits, decode_pipeline_output, decode_subwords

from strategies import oracle_settings

ID2LABEL = {0: "O", 1: "B-PER", 2: "I-PER", 3: "B-LOC", 4: "I-LOC"}
LABELS = list(ID2LABEL.values())


def one_hot_logits(labels: list[str | None], strength: float = 6.0) -> np.ndarray:
    """float [T, L]: logits whose argmax is each label (a special token's are noise)."""
    logits = np.zeros((len(labels), len(LABELS)))
    for t, label in enumerate(labels):
        if label is not None:
            logits[t, LABELS.index(label)] = strength
    return logits


def test_subwords_merge_into_words_and_special_tokens_are_skipped():
    # [CLS] Jo ##hn lives in Par ##is [SEP]
    subwords = [None, "B-PER", "I-PER", "O", "O", "B-LOC", "I-LOC", None]
    word_ids = [None, 0, 0, 1, 2, 3, 3, None]
    offsets = [(0, 0), (0, 2), (2, 4), (5, 10), (11, 13), (14, 17), (17, 19), (0, 0)]
    logits = one_hot_logits(subwords)
    logits[0] = logits[-1] = np.nan  # special tokens' logits are never read
    decoded = decode_subwords(logits, word_ids, ID2LABEL, offsets=offsets)
    assert decoded.positions == [[0, 1, 2, 3]]
    assert decoded.labels == [["B-PER", "O", "O", "B-LOC"]]
    person, place = decoded.entities[0]
    assert (person.first, person.last, person.type, person.start, person.end) == (0, 0, "PER", 0, 4)
    assert (place.first, place.last, place.type, place.start, place.end) == (3, 3, "LOC", 14, 19)
    assert 0.99 < person.probability <= 1


def test_mean_aggregation_averages_the_subtokens_log_probabilities():
    logits = one_hot_logits(["O", "B-LOC", "O", "O"])
    first = decode_subwords(logits, [0, 0, 0, 1], LABELS, aggregation="first")
    mean = decode_subwords(logits, [0, 0, 0, 1], LABELS, aggregation="mean")
    assert first.labels == [["O", "O"]] and mean.labels == [["O", "O"]]
    log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    expected = decode_logits(np.stack([log_probs[:3].mean(axis=0), log_probs[3]]), LABELS, "iob2")
    assert mean.scores == pytest.approx(expected.scores)


def test_an_invalid_argmax_becomes_a_valid_span():
    # argmax: O I-PER I-PER O, which iob2 does not allow
    logits = np.log([[0.9, 0.04, 0.04, 0.01, 0.01], [0.1, 0.3, 0.5, 0.05, 0.05], [0.1, 0.1, 0.7, 0.05, 0.05]])
    decoded = decode_subwords(np.vstack([logits, logits[:1]]), [0, 1, 2, 3], ID2LABEL)
    assert decoded.labels == [["O", "B-PER", "I-PER", "O"]]
    assert [(e.first, e.last, e.type) for e in decoded.entities[0]] == [(1, 2, "PER")]


@oracle_settings(40)
@given(st.integers(0, 2**32 - 1))
def test_a_padded_batch_decodes_each_sentence_alone(seed):
    rng = np.random.default_rng(seed)
    word_counts = rng.integers(1, 6, size=4)
    batch_ids, alone = [], []
    logits = rng.normal(scale=3, size=(4, 16, len(LABELS)))
    for b, count in enumerate(word_counts):
        pieces = rng.integers(1, 3, size=count)
        ids = [None] + [w for w, n in enumerate(pieces) for _ in range(n)] + [None]
        ids += [None] * (16 - len(ids))
        batch_ids.append(ids)
        alone.append(decode_subwords(logits[b], ids, ID2LABEL, aggregation="mean"))
    decoded = decode_subwords(logits, batch_ids, ID2LABEL, aggregation="mean")
    assert decoded.labels == [sentence.labels[0] for sentence in alone]
    assert decoded.scores == pytest.approx([sentence.scores[0] for sentence in alone])
    for labels in decoded.labels:
        assert convert(labels, "iob2") == labels


def test_a_torch_tensor_is_read_as_its_array():
    class Tensor:  # what the adapter asks of a torch tensor
        def __init__(self, array):
            self.array = array

        def detach(self):
            return self

        def cpu(self):
            return self

        def numpy(self):
            return self.array

    logits = one_hot_logits(["B-LOC", "I-LOC"])
    assert decode_subwords(Tensor(logits), [0, 1], ID2LABEL).labels == [["B-LOC", "I-LOC"]]


def pipeline_token(index: int, entity: str, score: float, word: str, start: int) -> dict:
    return {"entity": entity, "score": score, "index": index, "word": word, "start": start, "end": start + len(word)}


def test_the_pipeline_output_is_repaired_and_its_dropped_outside_tokens_filled():
    # "John Smith visited Paris": the pipeline dropped the O token 3 (ignore_labels=["O"])
    tokens = [
        pipeline_token(1, "I-PER", 0.6, "John", 0),
        pipeline_token(2, "I-PER", 0.9, "Smith", 5),
        pipeline_token(4, "B-LOC", 0.95, "Paris", 19),
    ]
    decoded = decode_pipeline_output(tokens, ID2LABEL)
    assert decoded.positions == [[1, 2, 3, 4]]
    assert decoded.labels == [["B-PER", "I-PER", "O", "B-LOC"]]
    person, place = decoded.entities[0]
    assert (person.first, person.last, person.type, person.start, person.end) == (1, 2, "PER", 0, 10)
    assert (place.first, place.last, place.start, place.end) == (4, 4, 19, 24)
    both = decode_pipeline_output([tokens, tokens[2:]], LABELS)
    assert both.labels == [decoded.labels[0], ["B-LOC"]]


def test_full_scores_are_used_when_a_token_has_them():
    tokens = [
        {"entity": "O", "score": 0.5, "index": 1, "scores": [0.5, 0.02, 0.0, 0.48, 0.0]},
        {"entity": "I-PER", "score": 0.6, "index": 2, "scores": [0.05, 0.0, 0.6, 0.0, 0.35]},
    ]
    assert decode_pipeline_output(tokens, LABELS).labels == [["B-LOC", "I-LOC"]]
    top_scores_only = [{key: value for key, value in token.items() if key != "scores"} for token in tokens]
    assert decode_pipeline_output(top_scores_only, LABELS).labels == [["B-PER", "I-PER"]]


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: decode_subwords(np.zeros((3, 5)), [0, 1], ID2LABEL), ShapeError, "3 subtokens but word_ids has 2"),
        (lambda: decode_subwords(np.zeros((3, 5)), [0, 1, 0], ID2LABEL), ShapeError, "subtoken 2 belongs to word 0"),
        (lambda: decode_subwords(np.zeros((2, 5)), [None, None], ID2LABEL), EmptySequenceError, "no words"),
        (lambda: decode_subwords(np.zeros((2, 5)), [0, 1], {0: "O", 1: "B-PER"}), LabelError, "no label for index 2"),
        (lambda: decode_subwords(np.zeros((2, 5)), [0, 1], ID2LABEL, aggregation="max"), ArgumentTypeError, "max"),
        (lambda: decode_subwords(np.full((2, 5), np.inf), [None, 0], ID2LABEL), ScoreError, "subtoken 1, label 0"),
        (lambda: decode_subwords(np.zeros((2, 5)), [0, 1], LABELS, offsets=[(0, 1)]), ShapeError, "offsets"),
        (lambda: decode_pipeline_output([{"entity": "B-ORG", "score": 0.9, "index": 1}], LABELS), LabelError, "ORG"),
        (lambda: decode_pipeline_output([{"entity": "O", "score": 2.0, "index": 1}], LABELS), ScoreError, "2.0"),
        (lambda: decode_pipeline_output([{"entity": "O", "score": 0.9}], LABELS), ShapeError, "'index'"),
    ],
)
def test_bad_input_is_named(call, error, message):
    with pytest.raises(error, match=message):
        call()
