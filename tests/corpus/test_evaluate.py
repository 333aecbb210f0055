"""Chunk scores equal to conlleval's on IOB tags and to seqeval's strict mode on
valid tags of any scheme, token accuracy for other labels, and McNemar's test."""

import math
from collections import Counter, defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstcrf.corpus.conll import read_conll
from fstcrf.errors import LabelError, ShapeError
from fstcrf.corpus.evaluate import (
    ChunkScores,
    TagScores,
    detect_scheme,
    is_chunk_labels,
    mcnemar,
    scheme_mismatch,
    score_chunks,
    score_labels,
)
from fstcrf.corpus.schemes import convert, read_chunks, write_chunks

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
    assert (scores.num_gold_chunks, scores.num_predicted_chunks, scores.num_correct_chunks) == (3, 3, 2)
    assert (scores.num_tokens, scores.num_correct_tokens) == (5, 3)
    assert scores.accuracy == pytest.approx(60.0)
    assert scores.precision == pytest.approx(200 / 3)
    assert scores.recall == pytest.approx(200 / 3)
    assert scores.f1 == pytest.approx(200 / 3)
    noun_phrases = scores.per_type["NP"]
    assert (noun_phrases.precision, noun_phrases.recall) == (pytest.approx(200 / 3), 100.0)
    assert noun_phrases.f1 == pytest.approx(80.0)
    assert (noun_phrases.num_predicted, noun_phrases.num_gold, noun_phrases.num_correct) == (3, 2, 2)
    assert list(scores.per_type) == ["NP", "VP"]
    assert scores.format() == (
        "processed 5 tokens with 3 phrases; found: 3 phrases; correct: 2.\n"
        "accuracy:  60.00%; precision:  66.67%; recall:  66.67%; FB1:  66.67\n"
        "               NP: precision:  66.67%; recall: 100.00%; FB1:  80.00  3\n"
        "               VP: precision:   0.00%; recall:   0.00%; FB1:   0.00  0\n"
    )


def test_iob1_and_iob2_spellings_of_the_same_chunks_agree():
    scores = score_chunks([["B-NP", "I-NP", "B-NP"]], [["I-NP", "I-NP", "B-NP"]])
    assert (scores.num_correct_chunks, scores.f1) == (2, 100.0)
    assert scores.accuracy == pytest.approx(200 / 3)


def test_chunk_must_end_where_the_gold_chunk_ends():
    scores = score_chunks([["B-NP", "I-NP"]], [["B-NP", "O"]])
    assert (scores.num_gold_chunks, scores.num_predicted_chunks, scores.num_correct_chunks) == (1, 1, 0)


def test_chunk_types_must_agree():
    scores = score_chunks([["B-NP", "I-NP"]], [["B-VP", "I-VP"]])
    assert scores.num_correct_chunks == 0
    assert scores.format().endswith(
        "FB1:   0.00  0\n               VP: precision:   0.00%; recall:   0.00%; FB1:   0.00  1\n"
    )


@pytest.mark.parametrize(
    "tags, expected",
    [
        (["O", "I-NP"], 1),  # I after O opens a chunk
        (["B-NP", "I-VP"], 2),  # a change of type closes one and opens another
        (["I-NP", "I-NP", "B-NP"], 2),  # IOB1
        (["B-NP", "B-NP", "I-NP", "O"], 2),  # IOB2
        (["[-NP", "]-NP"], 2),  # bracket chunks have length 1
        (["B", "I", "O", "B"], 2),  # tags without a type: the empty type
    ],
)
def test_chunk_boundaries_follow_conlleval_rules(tags, expected):
    assert num_chunks(tags) == expected


@pytest.mark.parametrize(
    "tags, expected",
    [
        (["I-NP", "E-NP", "E-NP"], 2),  # IOE: E then E is a new chunk
        (["I-NP", "I-NP", "E-NP", "I-NP"], 2),  # IOE: I after E is a new chunk
        (["E-NP", "B-NP"], 2),  # conlleval has no rule for B after E: it read 1
        (["S-NP", "S-NP"], 2),  # nor any rule for S tags: it read 1
        (["S-NP", "S-VP"], 2),
        (["B-NP", "E-NP", "S-NP", "O", "S-VP"], 3),
    ],
)
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
    assert scores.format().splitlines()[-1] == (" " * 17 + ": precision: 100.00%; recall: 100.00%; FB1: 100.00  1")


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


@pytest.mark.slow
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
    assert report[0] == ("processed 47377 tokens with 23852 phrases; found: 26992 phrases; correct: 19592.")
    assert report[1] == "accuracy:  77.29%; precision:  72.58%; recall:  82.14%; FB1:  77.07"


TYPES = ["NP", "VP", "PP"]
tags = st.sampled_from(["O"] + [f"{prefix}-{kind}" for prefix in "BI" for kind in TYPES])


@st.composite
def gold_and_predicted(draw):
    lengths = draw(st.lists(st.integers(0, 8), max_size=5))
    gold = [draw(st.lists(tags, min_size=length, max_size=length)) for length in lengths]
    pred = [draw(st.lists(tags, min_size=length, max_size=length)) for length in lengths]
    return gold, pred


@pytest.mark.slow
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
        assert scores.precision == pytest.approx(100 * seqeval_metrics.precision_score(gold, pred, zero_division=0))
        assert scores.recall == pytest.approx(100 * seqeval_metrics.recall_score(gold, pred, zero_division=0))
        assert scores.f1 == pytest.approx(100 * seqeval_metrics.f1_score(gold, pred, zero_division=0))
        assert scores.accuracy == pytest.approx(100 * seqeval_metrics.accuracy_score(gold, pred))


@needs_seqeval
@pytest.mark.parametrize("tags", [["E-NP", "B-NP"], ["S-NP", "S-NP"]])
def test_e_and_s_tags_read_as_seqeval_reads_them(tags):
    """Corners where conlleval reads one chunk (it has no rule for S tags, nor
    for B after E of the same type): E and S end a chunk, as in seqeval."""
    assert num_chunks(tags) == len(seqeval_entities([tags])) == 2


def test_mcnemar_counts_one_sided_errors():
    gold = [["B-NP", "I-NP", "O"], ["B-VP"]]
    pred_a = [["B-NP", "I-NP", "B-NP"], ["B-VP"]]  # wrong at token 3
    pred_b = [["B-NP", "O", "O"], ["O"]]  # wrong at tokens 2 and 4
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
    assert result.p_value == pytest.approx(2 * 0.5**5)


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


# Scheme-aware scoring: BIOES tags, gold and prediction in different schemes,
# seqeval's strict mode (with the matching scheme class) as the oracle on valid
# sequences, and token accuracy for labels without chunk structure.

try:
    from seqeval.scheme import IOB1, IOB2, IOBES, IOE2, Entities

    SEQEVAL_SCHEMES = {"iob1": IOB1, "iob2": IOB2, "bioes": IOBES}
except ImportError:
    SEQEVAL_SCHEMES = {}


@st.composite
def chunkings(draw, length):
    """Non-overlapping chunks (first, last, type) of a sentence of ``length`` tokens."""
    chunks, position = [], 0
    while position < length:
        if draw(st.booleans()):
            position += 1  # an O token
            continue
        last = min(length - 1, position + draw(st.integers(0, 3)))
        chunks.append((position, last, draw(st.sampled_from(TYPES))))
        position = last + 1
    return chunks


@st.composite
def two_chunkings(draw):
    """Gold and predicted chunks [num_sentences] of the same sentence lengths."""
    lengths = draw(st.lists(st.integers(0, 8), max_size=5))
    return lengths, [draw(chunkings(n)) for n in lengths], [draw(chunkings(n)) for n in lengths]


def seqeval_chunks(sentences, scheme):
    """seqeval's strict reading: the set of (sentence, type, first, last + 1)."""
    return {
        entity.to_tuple()
        for entity in [e for sentence in Entities(sentences, SEQEVAL_SCHEMES[scheme]).entities for e in sentence]
    }


def scheme_pairs():
    return [(gold, pred) for gold in ("iob1", "iob2", "bioes") for pred in ("iob1", "iob2", "bioes")]


@pytest.mark.slow
@needs_seqeval
@pytest.mark.parametrize("gold_scheme, pred_scheme", scheme_pairs())
@settings(max_examples=100, deadline=None)
@given(sentences=two_chunkings())
def test_valid_sequences_agree_with_seqeval_strict(gold_scheme, pred_scheme, sentences):
    """Valid tags in any two schemes: the chunks seqeval's strict mode reads on each side."""
    lengths, gold_chunks, pred_chunks = sentences
    gold = [write_chunks(chunks, n, gold_scheme) for chunks, n in zip(gold_chunks, lengths)]
    pred = [write_chunks(chunks, n, pred_scheme) for chunks, n in zip(pred_chunks, lengths)]
    scores = score_chunks(gold, pred)
    expected_gold = seqeval_chunks(gold, gold_scheme)
    expected_pred = seqeval_chunks(pred, pred_scheme)
    expected_correct = expected_gold & expected_pred
    assert (scores.num_gold_chunks, scores.num_predicted_chunks, scores.num_correct_chunks) == (
        len(expected_gold),
        len(expected_pred),
        len(expected_correct),
    )
    for kind, type_scores in scores.per_type.items():
        assert (type_scores.num_gold, type_scores.num_predicted, type_scores.num_correct) == tuple(
            sum(chunk[1] == kind for chunk in chunks) for chunks in (expected_gold, expected_pred, expected_correct)
        )
    if gold_scheme == pred_scheme and expected_gold | expected_pred:
        strict = {"mode": "strict", "scheme": SEQEVAL_SCHEMES[gold_scheme], "zero_division": 0}
        assert scores.f1 == pytest.approx(100 * seqeval_metrics.f1_score(gold, pred, **strict))
        assert scores.precision == pytest.approx(100 * seqeval_metrics.precision_score(gold, pred, **strict))
        assert scores.recall == pytest.approx(100 * seqeval_metrics.recall_score(gold, pred, **strict))
    # token accuracy compares the prediction written in the gold's scheme
    if any(lengths):
        rewritten = [write_chunks(chunks, n, gold_scheme) for chunks, n in zip(pred_chunks, lengths)]
        same_family = (gold_scheme == "bioes") == (pred_scheme == "bioes")
        compared = pred if same_family or not any(pred_chunks) or not any(gold_chunks) else rewritten
        assert scores.accuracy == pytest.approx(100 * seqeval_metrics.accuracy_score(gold, compared))


@needs_seqeval
@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["O"] + [f"{p}-{kind}" for p in "IE" for kind in TYPES]), max_size=10))
def test_ioe_tags_are_read_by_the_bioes_rules(tags):
    """Valid IOE2 tags (every chunk ends with E) read as seqeval's strict IOE2 reads them."""
    if (
        tags
        and tags[-1].startswith("I-")
        or any(a.startswith("I-") and a[2:] != b[2:] for a, b in zip(tags, tags[1:] + ["O"]))
    ):
        return  # not valid IOE2: an I- tag must be followed by the same type
    expected = {
        (first, last - 1, kind) for _, kind, first, last in (e.to_tuple() for e in Entities([tags], IOE2).entities[0])
    }
    assert set(read_chunks(tags)) == expected
    assert score_chunks([tags], [tags]).num_gold_chunks == len(expected)


BIOES_TAGS = st.sampled_from(["O"] + [f"{p}-{kind}" for p in "BIES" for kind in TYPES])


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.data())
def test_scores_depend_only_on_the_chunks(data):
    """Any tags, valid or not: rewriting the prediction in another scheme keeps
    its chunks, hence the chunk counts (the gold is BIOES, read by the BIOES rules)."""
    lengths = data.draw(st.lists(st.integers(1, 8), min_size=1, max_size=4))
    gold = [data.draw(st.lists(BIOES_TAGS, min_size=n, max_size=n)) for n in lengths]
    pred = [data.draw(st.lists(BIOES_TAGS, min_size=n, max_size=n)) for n in lengths]
    gold.append(["S-NP"])  # keeps the gold column BIOES
    pred.append(["O"])
    scores = score_chunks(gold, pred)
    counts = (scores.num_gold_chunks, scores.num_predicted_chunks, scores.num_correct_chunks)
    assert counts == (
        sum(len(read_chunks(tags)) for tags in gold),
        sum(len(read_chunks(tags)) for tags in pred),
        sum(len(set(read_chunks(a)) & set(read_chunks(b))) for a, b in zip(gold, pred)),
    )
    for scheme in ("iob1", "iob2", "bioes"):
        rewritten = score_chunks(gold, [convert(tags, scheme) for tags in pred])
        assert (rewritten.num_gold_chunks, rewritten.num_predicted_chunks, rewritten.num_correct_chunks) == counts
        assert rewritten.per_type == scores.per_type


def test_bioes_tags_are_scored_by_their_chunks():
    gold = [["S-NP", "S-NP", "B-VP", "E-VP", "O"], ["B-NP", "I-NP", "E-NP"]]
    pred = [["S-NP", "B-NP", "E-NP", "S-VP", "O"], ["B-NP", "I-NP", "E-NP"]]
    scores = score_chunks(gold, pred)
    # gold NP(0) NP(1) VP(2-3) | NP(0-2); predicted NP(0) NP(1-2) VP(3) | NP(0-2)
    assert (scores.num_gold_chunks, scores.num_predicted_chunks, scores.num_correct_chunks) == (4, 4, 2)
    assert (scores.per_type["NP"].num_correct, scores.per_type["VP"].num_correct) == (2, 0)
    assert scores.accuracy == pytest.approx(100 * 5 / 8)
    assert (scores.metric, scores.primary, scores.f1) == ("F1", 50.0, 50.0)


def test_iob2_gold_against_the_same_chunks_in_bioes_scores_100():
    gold = [["B-NP", "I-NP", "B-NP", "O", "B-VP"]]
    pred = [["B-NP", "E-NP", "S-NP", "O", "S-VP"]]
    for scores in (score_chunks(gold, pred), score_chunks(pred, gold), score_labels(gold, pred)):
        assert (scores.num_correct_chunks, scores.f1, scores.accuracy) == (3, 100.0, 100.0)
    iob1 = [["I-NP", "I-NP", "B-NP", "O", "I-VP"]]
    assert detect_scheme(iob1) == "iob1"
    assert (score_chunks(iob1, pred).f1, score_chunks(iob1, pred).accuracy) == (100.0, 100.0)
    # IOB1 against IOB2 stays conlleval's: chunks match, tags differ
    assert (score_chunks(iob1, gold).f1, score_chunks(iob1, gold).accuracy) == (100.0, 60.0)


def test_declared_scheme():
    gold = [["B-NP", "I-NP", "O"]]
    assert score_chunks(gold, gold, scheme="iob2").f1 == 100.0
    assert score_chunks(gold, [["B-NP", "E-NP", "O"]], scheme="bioes").f1 == 100.0
    assert score_labels([["O", "O"]], [["O", "O"]], scheme="iob2").metric == "F1"
    with pytest.raises(LabelError, match="predicted tags have E- or S- tags, which IOB2"):
        score_chunks(gold, [["B-NP", "E-NP", "O"]], scheme="iob2")
    with pytest.raises(LabelError, match="gold tags have E- or S- tags, which IOB1"):
        score_chunks([["S-NP"]], [["B-NP"]], scheme="iob1")
    with pytest.raises(LabelError, match="scheme must be one of iob1, iob2, bioes or None, got 'bilou'"):
        score_chunks(gold, gold, scheme="bilou")


@pytest.mark.parametrize(
    "sentences, scheme",
    [
        ([["B-NP", "I-NP", "O", "B-VP"], ["B-PP"]], "iob2"),
        ([["B-NP"], ["O", "I-NP"]], "iob1"),  # I after O
        ([["B-NP", "I-VP"]], "iob1"),  # I after another type
        ([["I-NP"]], "iob1"),  # I at the sentence start
        ([["B-NP", "B-NP", "I-NP"]], "iob2"),
        ([["B-NP", "E-NP", "O"]], "bioes"),
        ([["S-PER"]], "bioes"),
        ([["I-NP", "E-NP"]], "bioes"),  # IOE: read by the BIOES rules
        ([["B-NP|I-NP", "I-NP"], ["?"]], "iob2"),  # partial labels: no I after O seen
        ([["O", "?", "I-NP"]], "iob2"),
        ([["O", "I-NP|O"]], "iob2"),
        ([["O", "O"]], None),  # no chunk at all
        ([], None),
        ([["NN", "VBD"]], None),  # POS tags
        ([["B-NP", "NN"]], None),  # a non-O label without prefix
        ([["B", "I"]], None),  # no type
        ([["X-NP"]], None),
        ([["?"]], None),
    ],
)
def test_detect_scheme(sentences, scheme):
    assert detect_scheme(sentences) == scheme
    assert is_chunk_labels(sentences) == (scheme is not None)


def test_detects_the_schemes_of_conll_files(data_file):
    test = read_conll(data_file("conll2000/test.txt"))
    assert detect_scheme(test.column("chunk")) == "iob2"
    assert detect_scheme(test.column("pos")) is None
    ner = read_conll(data_file("conll2003/eng.testb"))
    assert detect_scheme(ner.column(ner.column_names[-1])) == "iob1"


@pytest.mark.slow
@needs_seqeval
def test_conll2000_in_bioes_agrees_with_conlleval_and_seqeval_strict(data_file):
    """CoNLL-2000 test converted to BIOES: conlleval read 22,665 phrases for
    23,852 and scored IOB2 gold against the same chunks in BIOES 92.58."""
    gold = read_conll(data_file("conll2000/test.txt")).column("chunk")
    # a prediction that errs: every 7th token O and every 11th a B-NP (invalid IOB2 in places)
    pred = [["O" if i % 7 == 3 else "B-NP" if i % 11 == 5 else tag for i, tag in enumerate(tags)] for tags in gold]
    gold_bioes = [convert(tags, "bioes") for tags in gold]
    pred_bioes = [convert(tags, "bioes") for tags in pred]
    same = score_chunks(gold, gold_bioes)
    assert (same.num_gold_chunks, same.num_correct_chunks, same.f1, same.accuracy) == (23852, 23852, 100.0, 100.0)
    assert score_chunks(gold_bioes, gold_bioes).num_gold_chunks == 23852
    conlleval = score_chunks(gold, pred)
    for scores in (
        score_chunks(gold_bioes, pred_bioes),
        score_chunks(gold, pred_bioes),
        score_chunks(gold_bioes, pred),
    ):
        assert scores.per_type == conlleval.per_type
        assert (scores.precision, scores.recall, scores.f1) == (conlleval.precision, conlleval.recall, conlleval.f1)
    expected = seqeval_chunks(gold_bioes, "bioes"), seqeval_chunks(pred_bioes, "bioes")
    assert (conlleval.num_gold_chunks, conlleval.num_predicted_chunks, conlleval.num_correct_chunks) == (
        len(expected[0]),
        len(expected[1]),
        len(expected[0] & expected[1]),
    )
    assert score_chunks(gold_bioes, pred).accuracy == score_chunks(gold_bioes, pred_bioes).accuracy


def test_labels_without_chunk_structure_are_scored_by_token_accuracy():
    gold = [["DT", "NN", "VBD"], ["NN"]]
    pred = [["DT", "VBD", "VBD"], ["NN"]]
    scores = score_labels(gold, pred)
    assert isinstance(scores, TagScores)
    assert (scores.num_tokens, scores.num_correct_tokens) == (4, 3)
    assert (scores.metric, scores.primary, scores.accuracy) == ("accuracy", 75.0, 75.0)
    assert list(scores.per_tag) == ["DT", "NN", "VBD"]
    nouns, verbs = scores.per_tag["NN"], scores.per_tag["VBD"]
    assert (nouns.precision, nouns.recall, nouns.num_predicted, nouns.num_gold, nouns.num_correct) == (
        100.0,
        50.0,
        1,
        2,
        1,
    )
    assert (verbs.precision, verbs.recall, verbs.f1) == (50.0, 100.0, pytest.approx(200 / 3))
    assert scores.format() == (
        "processed 4 tokens; accuracy:  75.00%\n"
        "               DT: precision: 100.00%; recall: 100.00%; FB1: 100.00  1\n"
        "               NN: precision: 100.00%; recall:  50.00%; FB1:  66.67  1\n"
        "              VBD: precision:  50.00%; recall: 100.00%; FB1:  66.67  2\n"
    )
    assert score_labels([], []).format() == "processed 0 tokens; accuracy:   0.00%\n"


def test_pos_tags_of_conll2000_get_token_accuracy(data_file):
    """A POS model used to be scored with chunk F1 0.00."""
    gold = read_conll(data_file("conll2000/test.txt")).column("pos")
    pred = [["NN" if i % 10 == 0 else tag for i, tag in enumerate(tags)] for tags in gold]
    right = sum(g == p for gs, ps in zip(gold, pred) for g, p in zip(gs, ps))
    scores = score_labels(gold, pred)
    assert (scores.metric, scores.num_tokens, scores.num_correct_tokens) == ("accuracy", 47377, right)
    assert scores.primary == pytest.approx(100 * right / 47377) and 80 < scores.primary < 100
    assert sum(tag.num_gold for tag in scores.per_tag.values()) == 47377
    assert scores.format().startswith(f"processed 47377 tokens; accuracy: {100 * right / 47377:6.2f}%\n")


def test_score_labels_picks_chunk_scores_for_chunk_labels():
    chunks = score_labels([["B-NP", "I-NP", "O"]], [["B-NP", "O", "O"]])
    assert isinstance(chunks, ChunkScores)
    assert (chunks.metric, chunks.primary) == ("F1", 0.0)
    # all-O gold against chunk predictions is still chunk scoring
    assert isinstance(score_labels([["O", "O"]], [["B-NP", "O"]]), ChunkScores)
    assert isinstance(score_labels([["O", "O"]], [["O", "O"]]), TagScores)


@pytest.mark.parametrize(
    "model_labels, file_sentences, message",
    [
        (
            ["O", "B-NP", "I-NP", "E-NP", "S-NP"],
            [["B-NP", "I-NP", "O"]],
            "the model's labels are BIOES but the file's gold labels are IOB2: ",
        ),
        (["O", "B-NP", "I-NP"], [["S-NP", "O"]], "the model's labels are IOB but the file's gold labels are BIOES: "),
        (
            ["O", "B-NP", "I-NP"],
            [["I-NP", "S-NP"]],
            "the model's labels are IOB but the file's gold labels are BIOES: ",
        ),
        (
            ["NN", "VB"],
            [["B-NP"]],
            "the model has labels without chunk structure but the file's gold labels are IOB2 chunk labels",
        ),
        (
            ["O", "B-NP", "I-NP", "E-NP", "S-NP"],
            [["NN"]],
            "the model has BIOES chunk labels but the file's gold labels are labels without chunk structure",
        ),
    ],
)
def test_scheme_mismatch_says_what_differs(model_labels, file_sentences, message):
    warning = scheme_mismatch(model_labels, file_sentences)
    assert warning.startswith(message) and "\n" not in warning


@pytest.mark.parametrize(
    "model_labels, file_sentences",
    [
        (["O", "B-NP", "I-NP"], [["B-NP", "I-NP"]]),
        (["O", "B-NP", "I-NP", "I-VP", "B-VP"], [["I-NP", "O", "I-VP"]]),  # IOB1 file, IOB model
        (["O", "B-NP", "I-NP", "E-NP", "S-NP"], [["S-NP", "B-NP", "E-NP"]]),
        (["O", "B-NP", "I-NP", "E-NP", "S-NP"], [["O", "?"]]),  # nothing to tell
        (["NN", "VB"], [["VB", "NN"]]),
    ],
)
def test_scheme_mismatch_is_none_when_schemes_agree(model_labels, file_sentences):
    assert scheme_mismatch(model_labels, file_sentences) is None
