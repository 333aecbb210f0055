"""Non-local factors: the entity reader against read_chunks, the consistency factor's
incremental changes against its pair enumeration, the paper's penalty estimates on
hand-made documents, stored penalties, and user factors through the rescoring state."""

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from fstcrf.corpus.conll import Sentence
from fstcrf.document.consistency import ConsistencyFactor, ConsistencyPenalties, PenaltyError, estimate_penalties
from fstcrf.document.decode import estimate_consistency
from fstcrf.document.entities import EntityReader
from fstcrf.document.factors import DocumentFactor, FactorError, LabelledDocument
from fstcrf.errors import ModelFileError
from fstcrf.model import ChainCRF, load_model
from fstcrf.corpus.schemes import read_chunks
from fstcrf.engine.topology import bioes_labels, iob2_labels

from strategies import oracle_settings

TYPES = ("A", "B", "C")
LABEL_SETS = {
    "iob2": iob2_labels(TYPES[:2]),
    "iob1": ("O", "I-A", "I-B", "B-A", "B-B"),
    "bioes": bioes_labels(TYPES),
}


@st.composite
def labelled_sentences(draw):
    """(label names, label ids [T]) over one of the label sets."""
    names = LABEL_SETS[draw(st.sampled_from(sorted(LABEL_SETS)))]
    labels = draw(st.lists(st.integers(0, len(names) - 1), min_size=0, max_size=9))
    return names, labels


@given(labelled_sentences())
@oracle_settings(200)
def test_entities_are_the_chunks_conlleval_reads(case):
    names, labels = case
    reader = EntityReader(names)
    expected = [
        (first, last + 1, reader.types.index(kind))
        for first, last, kind in read_chunks([names[label] for label in labels])
    ]
    assert reader.entities(labels) == expected


@given(labelled_sentences(), st.data())
@oracle_settings(300)
def test_the_region_holds_every_entity_a_replacement_changes(case, data):
    names, labels = case
    if not labels:
        return
    reader = EntityReader(names)
    first = data.draw(st.integers(0, len(labels) - 1))
    last = data.draw(st.integers(first + 1, len(labels)))
    replacement = data.draw(st.lists(st.integers(0, len(names) - 1), min_size=last - first, max_size=last - first))
    after = labels[:first] + replacement + labels[last:]
    lo, hi = reader.region(labels, first, last)
    assert (lo, hi) == reader.region(after, first, last)
    old, new = set(reader.entities(labels)), set(reader.entities(after))
    # the region's entities (read in place, or from the slice and shifted) replace exactly the
    # ones that differ: outside the region the entity lists agree
    inside_before = set(reader.entities(labels, lo, hi))
    inside_after = {(a + lo, b + lo, k) for a, b, k in reader.entities(after[lo:hi])}
    assert inside_before <= old and inside_after <= new
    assert old - new <= inside_before and new - old <= inside_after
    assert old - inside_before == new - inside_after
    assert all(lo <= a and b <= hi for a, b, _ in inside_before | inside_after)


def test_entity_reader_rejects_labels_without_chunk_prefixes():
    with pytest.raises(ValueError, match="'X-A'"):
        EntityReader(("O", "X-A"))


def _random_penalties(rng, types, scale=1.0):
    K = len(types)
    same = rng.uniform(0.05, 1.0, (K, K))
    same = np.sqrt(same * same.T)
    sub = rng.uniform(0.05, 1.0, (K, K))
    np.fill_diagonal(same, 1.0)
    np.fill_diagonal(sub, 1.0)
    return ConsistencyPenalties(tuple(types), same, sub, scale)


@st.composite
def consistency_cases(draw):
    """(factor, document, moves): a small document whose words repeat, random penalties,
    and a list of moves (sentence, first, new labels)."""
    scheme = draw(st.sampled_from(["iob2", "bioes"]))
    types = TYPES[: draw(st.integers(2, 3))]
    names = iob2_labels(types) if scheme == "iob2" else bioes_labels(types)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    vocabulary = ["x", "y", "z"][: draw(st.integers(1, 3))]
    lengths = draw(st.lists(st.integers(1, 5), min_size=2, max_size=4))
    words = [[str(rng.choice(vocabulary)) for _ in range(T)] for T in lengths]
    # labels leaning to entities, so pairs of entities are common
    labels = [rng.integers(0, len(names), T).tolist() for T in lengths]
    document = LabelledDocument(words, tuple(names), labels, index=3)
    # penalties listing the types in another order than the reader's
    factor = ConsistencyFactor(_random_penalties(rng, tuple(reversed(types)), draw(st.sampled_from([1.0, 0.5]))))
    moves = []
    for _ in range(draw(st.integers(1, 12))):
        j = int(rng.integers(len(lengths)))
        first = int(rng.integers(lengths[j]))
        size = int(rng.integers(1, lengths[j] - first + 1))
        moves.append((j, first, rng.integers(0, len(names), size).tolist()))
    return factor, document, moves


@given(consistency_cases())
@oracle_settings(150)
def test_consistency_changes_equal_the_difference_of_enumerated_scores(case):
    factor, document, moves = case
    state = factor.attach(document)
    current = document
    for j, first, new_labels in moves:
        # a probe move first: delta must leave the state as it was
        probe = (j, 0, list(reversed(new_labels)))
        state.delta(*probe)
        expected = factor.log_score(current.relabelled(j, first, new_labels)) - factor.log_score(current)
        assert state.delta(j, first, new_labels) == pytest.approx(expected, abs=1e-9)
        assert state.delta(j, first, new_labels) == pytest.approx(expected, abs=1e-9)
        state.apply(j, first, new_labels)
        current = current.relabelled(j, first, new_labels)
    # after all the moves the state still answers exactly, for a move back to the start
    for j, sentence in enumerate(document.labels):
        expected = factor.log_score(current.relabelled(j, 0, sentence)) - factor.log_score(current)
        assert state.delta(j, 0, sentence) == pytest.approx(expected, abs=1e-9)


def test_the_consistency_score_of_a_hand_made_document():
    names = ("O", "B-A", "I-A", "B-B", "I-B")
    document = LabelledDocument([["x", "y"], ["x", "y"], ["x"]], names, [[1, 2], [3, 4], [1]])
    same = np.array([[1.0, 0.2], [0.2, 1.0]])
    sub = np.array([[1.0, 0.7], [0.4, 1.0]])
    factor = ConsistencyFactor(ConsistencyPenalties(("A", "B"), same, sub))
    # "x y" typed A and B (length 2); the B "x y" contains the A "x"; the A "x y" too (same type)
    assert factor.log_score(document) == pytest.approx(2 * math.log(0.2) + math.log(0.4))
    assert ConsistencyFactor(factor.penalties.with_scale(0.5)).log_score(document) == pytest.approx(
        0.5 * (2 * math.log(0.2) + math.log(0.4))
    )


def _hand_made_documents():
    names = ("O", "B-A", "I-A", "B-B", "I-B")
    first = LabelledDocument([["x", "y"], ["x", "y"], ["x"]], names, [[1, 2], [3, 4], [1]], 0)
    second = LabelledDocument([["x"], ["x"], ["y"], ["y", "x", "q"]], names, [[1], [1], [3], [3, 4, 0]], 1)
    return [first, second]


def test_estimated_penalties_follow_the_papers_formula():
    penalties = estimate_penalties(_hand_made_documents())
    # same-sequence pairs: "x y" A-B once; "x" A-A once (document 2); "y" alone in each document
    assert penalties.counts["same"] == [[1, 1], [1, 0]]
    # A "x y" contains an A "x"; B "x y" contains an A "x"; B "y x" contains B "y" and two A "x"
    assert penalties.counts["sub"] == [[1, 0], [3, 1]]
    # P(B | A) = 1 / (2 + 1), P(A | B) = 1 / (1 + 1)
    np.testing.assert_allclose(penalties.same, [[1, math.sqrt(1 / 6)], [math.sqrt(1 / 6), 1]])
    # theta_sub(A, B) = max(0, 1) / (1 + 1), theta_sub(B, A) = 3 / (4 + 1)
    np.testing.assert_allclose(penalties.sub, [[1, 0.5], [0.6, 1]])
    assert penalties.types == ("A", "B") and penalties.scale == 1.0
    assert estimate_penalties(_hand_made_documents(), scale=0.25).scale == 0.25


@pytest.mark.parametrize("value", [0.0, -0.3, 1.5, float("nan")])
@pytest.mark.parametrize("table", ["same", "sub"])
def test_penalties_outside_the_unit_interval_are_rejected_with_the_value(table, value):
    tables = {"same": np.ones((2, 2)), "sub": np.ones((2, 2))}
    tables[table][0, 1] = value
    with pytest.raises(PenaltyError, match=rf"{table}\[A, B\] = {value!r} is outside") as raised:
        ConsistencyPenalties(("A", "B"), tables["same"], tables["sub"])
    assert isinstance(raised.value, ValueError)


def test_a_rejected_penalty_is_written_as_a_plain_number():
    with pytest.raises(PenaltyError, match=r"sub\[B, A\] = 1\.5 is outside"):
        ConsistencyPenalties(("A", "B"), np.ones((2, 2)), np.array([[1.0, 1.0], [1.5, 1.0]]))


def test_penalty_tables_of_the_wrong_shape_or_scale_are_rejected():
    with pytest.raises(PenaltyError, match=r"shape \(3, 3\)"):
        ConsistencyPenalties(("A", "B"), np.ones((3, 3)), np.ones((2, 2)))
    for scale in (-1.0, float("inf")):
        with pytest.raises(PenaltyError, match="scale"):
            ConsistencyPenalties(("A", "B"), np.ones((2, 2)), np.ones((2, 2)), scale)
    with pytest.raises(PenaltyError, match="at least one"):
        estimate_penalties([])
    with pytest.raises(PenaltyError, match="C"):
        ConsistencyFactor(ConsistencyPenalties(("A", "B"), np.ones((2, 2)), np.ones((2, 2)))).log_score(
            LabelledDocument([["x"]], ("O", "B-C"), [[1]])
        )


def _assert_same_penalties(got, expected):
    assert got.types == expected.types and got.scale == expected.scale and got.counts == expected.counts
    np.testing.assert_array_equal(got.same, expected.same)
    np.testing.assert_array_equal(got.sub, expected.sub)


def test_penalties_round_trip_through_a_dict_and_reject_malformed_ones():
    penalties = estimate_penalties(_hand_made_documents(), scale=0.5)
    again = ConsistencyPenalties.from_dict(penalties.to_dict(), "model.fstcrf")
    _assert_same_penalties(again, penalties)
    assert again.scale == 0.5
    described = penalties.to_dict()
    del described["sub"]
    with pytest.raises(ModelFileError, match="model.fstcrf"):
        ConsistencyPenalties.from_dict(described, "model.fstcrf")


def test_equal_penalties_compare_equal():
    penalties = estimate_penalties(_hand_made_documents())
    assert ConsistencyPenalties.from_dict(penalties.to_dict(), "model.fstcrf") == penalties
    assert penalties.with_scale(0.5) != penalties


def _ner_sentences():
    rows = [
        (["Anna", "runs"], ["B-PER", "O"], True),
        (["Oslo", "grows"], ["B-LOC", "O"], False),
        (["Anna", "sleeps"], ["B-PER", "O"], False),
        (["Oslo", "Anna"], ["B-LOC", "I-LOC"], True),
        (["Anna", "runs"], ["B-LOC", "O"], False),
    ]
    return [
        Sentence({"word": words, "ner": tags}, docstart_lines=("-DOCSTART- O",) if start else ())
        for words, tags, start in rows
    ]


def test_a_saved_model_keeps_its_consistency_penalties(tmp_path):
    sentences = _ner_sentences()
    model = ChainCRF(template="bias\nword[0]\n", max_iter=5, threads=1).fit(sentences, target="ner")
    model.consistency_ = estimate_consistency(sentences, "ner", scale=0.75)
    # types (LOC, PER); document 1 has "Anna" as PER twice, document 2 a LOC "Oslo Anna"
    # containing the LOC "Anna"
    assert model.consistency_.types == ("LOC", "PER")
    assert model.consistency_.counts == {"same": [[0, 0], [0, 1]], "sub": [[1, 0], [0, 0]]}
    path = tmp_path / "model.fstcrf"
    model.save(path)
    loaded = load_model(path)
    _assert_same_penalties(loaded.consistency_, model.consistency_)
    assert loaded.consistency_.scale == 0.75 and loaded.consistency_.counts == model.consistency_.counts
    model.consistency_ = None
    model.save(path)
    assert load_model(path).consistency_ is None


class _CountB(DocumentFactor):
    """log score: -0.3 per token labelled B-A in a sentence that has the word 'x'."""

    name = "count_b"

    def log_score(self, document):
        return -0.3 * sum(
            label == 1 for words, labels in zip(document.words, document.labels) if "x" in words for label in labels
        )


class _Failing(DocumentFactor):
    """Fails (raises, or returns ``value``) once any token of the document is labelled B-A."""

    name = "failing"

    def __init__(self, value=None):
        self.value = value

    def log_score(self, document):
        if any(1 in labels for labels in document.labels):
            if self.value is None:
                raise KeyError("boom")
            return self.value
        return 0.0


def test_a_user_factor_with_only_log_score_works_through_rescoring():
    rng = np.random.default_rng(5)
    names = ("O", "B-A", "I-A")
    document = LabelledDocument([["x", "y"], ["y"], ["x", "x", "y"]], names, [[0, 1], [1], [2, 1, 0]], 4)
    factor = _CountB()
    state = factor.attach(document)
    current = document
    for _ in range(30):
        j = int(rng.integers(3))
        first = int(rng.integers(len(document.words[j])))
        new = rng.integers(0, 3, int(rng.integers(1, len(document.words[j]) - first + 1))).tolist()
        expected = factor.log_score(current.relabelled(j, first, new)) - factor.log_score(current)
        assert state.delta(j, first, new) == pytest.approx(expected)
        state.apply(j, first, new)
        current = current.relabelled(j, first, new)
    assert document.labels == [[0, 1], [1], [2, 1, 0]]  # the state keeps its own copy


@pytest.mark.parametrize(
    "factor",
    [_Failing(), _Failing(float("nan")), _Failing(float("inf")), _Failing(-float("inf")), _Failing("a string")],
)
def test_a_failing_user_factor_gives_a_factor_error_naming_the_document(factor):
    names = ("O", "B-A", "I-A")
    clean = LabelledDocument([["x", "y"], ["y"]], names, [[0, 0], [0]], 7)
    state = factor.attach(clean)
    with pytest.raises(FactorError, match=r"'failing'.*document 7"):
        state.delta(1, 0, [1])
    with pytest.raises(FactorError, match=r"document 9"):
        factor.attach(LabelledDocument([["x"]], names, [[1]], 9))
