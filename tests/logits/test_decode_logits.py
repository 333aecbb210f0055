"""decode_logits against brute-force enumeration of every label sequence a scheme
(or a grammar) accepts, read by the corpus module's chunk reader and writer
rather than by the topology code under test."""

import dataclasses
import itertools
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fstcrf
from fstcrf.corpus.schemes import convert, read_chunks
from fstcrf.errors import EmptySequenceError, InfeasibleError, LabelError, ScoreError, ShapeError
from fstcrf.logits import decode_logits

from strategies import oracle_settings

PREFIXES = {"iob1": ("B", "I"), "iob2": ("B", "I"), "bioes": ("B", "I", "E", "S")}


def scheme_labels(scheme: str, types: list[str]) -> list[str]:
    return ["O"] + [f"{prefix}-{t}" for t in types for prefix in PREFIXES[scheme]]


def valid(sequence: tuple[str, ...], scheme: str) -> bool:
    """A sequence is valid in a scheme when writing its chunks in the scheme gives it back."""
    return convert(list(sequence), scheme) == list(sequence)


def log_softmax(rows: np.ndarray) -> np.ndarray:
    return np.log(np.exp(rows) / np.exp(rows).sum(axis=1, keepdims=True))


def best_by_enumeration(logits, labels, accepts, transitions=None, start=None, end=None):
    """The best accepted sequence and its score, trying every sequence."""
    log_probs = log_softmax(logits)
    index = {label: i for i, label in enumerate(labels)}
    best, best_score = None, -np.inf
    for sequence in itertools.product(labels, repeat=len(logits)):
        if not accepts(sequence):
            continue
        ids = [index[label] for label in sequence]
        score = sum(log_probs[t, i] for t, i in enumerate(ids))
        if transitions is not None:
            score += sum(transitions[a, b] for a, b in zip(ids, ids[1:])) + start[ids[0]] + end[ids[-1]]
        if score > best_score:
            best, best_score = sequence, score
    return best, best_score


@st.composite
def scheme_instances(draw):
    scheme = draw(st.sampled_from(sorted(PREFIXES)))
    labels = scheme_labels(scheme, ["X", "Y"][: draw(st.integers(1, 2))])
    length = draw(st.integers(1, 4 if len(labels) <= 5 else 3))
    values = st.floats(-6, 6, allow_nan=False, width=32)
    logits = np.array(draw(st.lists(values, min_size=length * len(labels), max_size=length * len(labels))))
    return scheme, labels, logits.reshape(length, len(labels))


@oracle_settings(120)
@given(scheme_instances(), st.booleans(), st.integers(0, 2**32 - 1))
def test_viterbi_equals_enumeration_of_the_scheme(instance, scored, seed):
    scheme, labels, logits = instance
    scores = {}
    if scored:
        rng = np.random.default_rng(seed)
        L = len(labels)
        scores = {"transitions": rng.normal(size=(L, L)), "start": rng.normal(size=L), "end": rng.normal(size=L)}
    decoded = decode_logits(logits, labels, scheme=scheme, **scores)
    _, best_score = best_by_enumeration(logits, labels, lambda sequence: valid(sequence, scheme), **scores)
    (found,) = decoded.labels
    assert valid(tuple(found), scheme)
    assert decoded.scores[0] == pytest.approx(best_score, abs=1e-9)


@pytest.mark.pynini
@oracle_settings(40)
@given(st.integers(1, 3), st.integers(0, 2**32 - 1))
def test_viterbi_equals_enumeration_of_a_grammar(length, seed):
    labels = scheme_labels("iob2", ["X", "Y"])
    logits = np.random.default_rng(seed).normal(scale=3, size=(length, len(labels)))

    def at_most_one_entity(sequence):
        return valid(sequence, "iob2") and len(read_chunks(sequence)) <= 1

    decoded = decode_logits(logits, labels, grammar="start = O* (any T: B-{T} I-{T}*)? O* ;")
    _, best_score = best_by_enumeration(logits, labels, at_most_one_entity)
    assert at_most_one_entity(tuple(decoded.labels[0]))
    assert decoded.scores[0] == pytest.approx(best_score, abs=1e-9)


@oracle_settings(60)
@given(st.integers(0, 2**32 - 1), st.sampled_from(sorted(PREFIXES)))
def test_a_batch_never_decodes_an_invalid_sequence_and_keeps_a_valid_argmax(seed, scheme):
    rng = np.random.default_rng(seed)
    labels = scheme_labels(scheme, ["PER", "LOC", "ORG"])
    lengths = rng.integers(1, 12, size=20)
    logits = rng.normal(scale=3, size=(20, 12, len(labels)))
    lengths[0] = 1
    logits[0, 1:] = np.nan  # padding beyond the lengths may hold anything
    decoded = decode_logits(logits, labels, scheme=scheme, lengths=lengths)
    assert [len(sentence) for sentence in decoded.labels] == lengths.tolist()
    for b, sentence in enumerate(decoded.labels):
        assert valid(tuple(sentence), scheme)
        argmax = tuple(labels[i] for i in logits[b, : lengths[b]].argmax(axis=1))
        if valid(argmax, scheme):
            assert tuple(sentence) == argmax


def test_the_argmax_is_repaired_into_a_valid_span():
    labels = ["O", "B-PER", "I-PER"]
    logits = np.log([[0.9, 0.05, 0.05], [0.1, 0.3, 0.6], [0.1, 0.2, 0.7], [0.8, 0.1, 0.1]])
    decoded = decode_logits(logits, labels, scheme="iob2")
    assert decoded.labels == [["O", "B-PER", "I-PER", "O"]]
    assert decode_logits(logits, labels).labels == [["O", "I-PER", "I-PER", "O"]]
    ((entity,),) = decoded.entities
    assert (entity.first, entity.last, entity.type) == (1, 2, "PER") and 0 < entity.probability < 1
    log_probs = np.log(np.array([0.9, 0.3, 0.7, 0.8]))
    assert decoded.scores[0] == pytest.approx(log_probs.sum())


def test_entity_probabilities_equal_enumeration():
    rng = np.random.default_rng(3)
    labels = scheme_labels("bioes", ["X"])
    logits = rng.normal(scale=2, size=(4, len(labels)))
    decoded = decode_logits(logits, labels, scheme="bioes")
    log_probs = log_softmax(logits)
    index = {label: i for i, label in enumerate(labels)}
    mass: dict = {}
    total = 0.0
    for sequence in itertools.product(labels, repeat=4):
        if not valid(sequence, "bioes"):
            continue
        p = np.exp(sum(log_probs[t, index[label]] for t, label in enumerate(sequence)))
        total += p
        for chunk in read_chunks(sequence):
            mass[chunk] = mass.get(chunk, 0.0) + p
    for entity in decoded.entities[0]:
        assert entity.probability == pytest.approx(mass[(entity.first, entity.last, entity.type)] / total)


def test_decode_logits_is_a_lazy_public_name_of_fstcrf():
    assert fstcrf.decode_logits is decode_logits


@pytest.mark.parametrize(
    "logits, lengths, error, message",
    [
        (np.zeros((3, 4)), None, ShapeError, "3 labels"),
        (np.zeros((2, 3, 3)), [2], ShapeError, "2 integers"),
        (np.zeros((2, 3, 3)), [2, 4], ShapeError, "sentence 1 has length 4"),
        (np.zeros((2, 3, 3)), [2, 0], EmptySequenceError, "sentence 1"),
        (np.zeros((0, 3)), None, EmptySequenceError, "sentence 0"),
        (np.array([[0, 0, 0], [0, np.nan, 0]]), None, ScoreError, "sentence 0, token 1, label 1 are nan"),
        (np.array([[0, 0, np.inf]], dtype=np.float32), None, ScoreError, "sentence 0, token 0, label 2 are inf"),
        (
            np.array([[[0, 0, 0], [0, 0, 0]], [[0, 0, 0], [0, 0, np.inf]]]),
            None,
            ScoreError,
            "sentence 1, token 1, label 2",
        ),
    ],
)
def test_bad_logits_are_named(logits, lengths, error, message):
    with pytest.raises(error, match=message):
        decode_logits(logits, ["O", "B-X", "I-X"], scheme="iob2", lengths=lengths)


@pytest.mark.pynini
def test_a_length_the_grammar_allows_no_sequence_of_is_named():
    grammar = "start = B-X I-X O* ;"
    with pytest.raises(InfeasibleError, match="no label sequence of length 1"):
        decode_logits(np.zeros((1, 3)), ["O", "B-X", "I-X"], grammar=grammar)
    with pytest.raises(InfeasibleError, match=r"length 1 \(sentences 1\)"):
        decode_logits(np.zeros((2, 2, 3)), ["O", "B-X", "I-X"], grammar=grammar, lengths=[2, 1])
    assert decode_logits(np.zeros((2, 3)), ["O", "B-X", "I-X"], grammar=grammar).labels == [["B-X", "I-X"]]


def test_labels_the_scheme_cannot_read_are_named():
    with pytest.raises(LabelError, match="'PER'"):
        decode_logits(np.zeros((2, 2)), ["O", "PER"], scheme="iob2")
    with pytest.raises(ShapeError, match="transitions"):
        decode_logits(np.zeros((2, 2)), ["O", "B-X"], scheme="iob2", transitions=np.zeros((3, 3)))


@oracle_settings(60)
@given(
    st.integers(0, 2**32 - 1),
    st.sampled_from(sorted(PREFIXES)),
    st.booleans(),
    st.sampled_from(["float64", "float32", "strided"]),
)
def test_one_sentence_per_call_equals_the_batch_bit_for_bit(seed, scheme, scored, layout):
    rng = np.random.default_rng(seed)
    labels = scheme_labels(scheme, ["PER", "LOC"])
    lengths = rng.integers(1, 9, size=6)
    logits = rng.normal(scale=rng.choice([0.5, 4, 40]), size=(6, 8, len(labels)))
    if layout == "float32":
        logits = logits.astype(np.float32)
    L = len(labels)
    scores = {"transitions": rng.normal(size=(L, L)), "start": rng.normal(size=L)} if scored else {}
    batch = decode_logits(logits, labels, scheme=scheme, lengths=lengths, **scores)
    offsets = batch.potentials.offsets
    for b, length in enumerate(lengths):
        one = logits[b, :length] if layout != "strided" else np.asfortranarray(logits[b, :length])
        alone = decode_logits(one, labels, scheme=scheme, **scores)
        assert alone.labels == [batch.labels[b]]
        assert alone.scores.tobytes() == batch.scores[b : b + 1].tobytes()
        assert np.array_equal(alone.paths, batch.paths[offsets[b] : offsets[b + 1]])
        assert alone.potentials.emissions.tobytes() == batch.potentials.emissions[offsets[b] : offsets[b + 1]].tobytes()
    assert np.allclose(np.exp(batch.potentials.emissions).sum(axis=1), 1, rtol=0, atol=1e-12)


def test_a_decoded_sentence_pickles_with_its_potentials():
    decoded = decode_logits(np.random.default_rng(2).normal(size=(5, 3)), ["O", "B-X", "I-X"], scheme="iob2")
    copy = pickle.loads(pickle.dumps(decoded))
    assert copy.labels == decoded.labels and copy.scores.tobytes() == decoded.scores.tobytes()
    assert copy.potentials.emissions.tobytes() == decoded.potentials.emissions.tobytes()
    assert copy.entities == decoded.entities


def test_a_decoded_sentence_is_a_dataclass_to_replace_fields_of():
    decoded = decode_logits(np.random.default_rng(3).normal(size=(5, 3)), ["O", "B-X", "I-X"], scheme="iob2")
    labels = [["O", "B-X", "I-X", "O", "O"]]
    changed = dataclasses.replace(decoded, labels=labels)
    assert changed.labels == labels and changed.paths is decoded.paths and changed.potentials is decoded.potentials
    assert dataclasses.asdict(changed)["labels"] == labels


def test_a_batch_split_over_threads_decodes_as_one_thread():
    rng = np.random.default_rng(5)
    labels = scheme_labels("bioes", ["PER", "LOC", "ORG"])
    lengths = rng.integers(1, 40, size=400)
    logits = rng.normal(scale=3, size=(400, 40, len(labels)))
    one, two = (decode_logits(logits, labels, "bioes", lengths=lengths, threads=t) for t in (1, 2))
    assert one.labels == two.labels and one.scores.tobytes() == two.scores.tobytes()
    assert one.potentials.emissions.tobytes() == two.potentials.emissions.tobytes()


def test_a_logit_that_is_not_finite_is_named_within_ragged_sentences():
    logits = np.zeros((3, 4, 3))
    logits[2, 1, 0] = np.nan
    logits[0, 3, 1] = np.inf  # padding: never read
    with pytest.raises(ScoreError, match="sentence 2, token 1, label 0 are nan"):
        decode_logits(logits, ["O", "B-X", "I-X"], scheme="iob2", lengths=[3, 4, 2])
    with pytest.raises(ScoreError, match="sentence 2, token 1, label 0"):
        decode_logits(logits, ["O", "B-X", "I-X"], "iob2", lengths=[3, 4, 2], transitions=np.zeros((3, 3)))
