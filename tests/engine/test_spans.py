"""Span (entity) probabilities against brute-force enumeration, and the chunk rule
against the corpus's chunk reader."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

from fstcrf.corpus.schemes import read_chunks
from fstcrf.engine.spans import decoded_entities, entity_probabilities, path_chunks, state_labels
from fstcrf.engine.inference import Potentials, viterbi
from fstcrf.engine.topology import first_order, iob2
from fstcrf.errors import LabelError, ShapeError

from strategies import batches, oracle_settings

CHUNK_LABELS = ("O", "B-A", "I-A", "B-B", "I-B", "E-A", "S-B")


def _exact_span_probabilities(instance, b: int, labels: list[str]) -> dict[tuple[int, int, str], float]:
    """Every span's probability by enumerating the sentence's allowed paths."""
    oracle = instance.oracle(b)
    totals: dict[tuple[int, int, str], float] = {}
    for path, probability in zip(oracle.paths, oracle.probabilities):
        for span in read_chunks([labels[s] for s in path]):
            totals[span] = totals.get(span, 0.0) + probability
    return totals


@given(batches(), st.data())
@oracle_settings(150)
def test_every_span_probability_is_the_enumerated_one(instance, data):
    labels = data.draw(
        st.lists(st.sampled_from(CHUNK_LABELS), min_size=instance.spec.num_states, max_size=instance.spec.num_states)
    )
    pot = instance.potentials()
    spans, expected = [], []
    for b, T in enumerate(instance.lengths):
        exact = _exact_span_probabilities(instance, b, labels)
        candidates = [(i, j, x) for i in range(T) for j in range(i, T) for x in ("A", "B", "C")]
        spans.append(candidates)
        expected.append([exact.get(span, 0.0) for span in candidates])
    for got, want in zip(entity_probabilities(pot, labels, spans), expected):
        np.testing.assert_allclose(got, want, atol=1e-9, rtol=1e-7)


@given(st.lists(st.sampled_from(CHUNK_LABELS), min_size=1, max_size=12))
@oracle_settings(300)
def test_the_pairwise_chunk_rule_reads_what_the_corpus_reader_reads(sequence):
    assert path_chunks(sequence) == read_chunks(sequence)


def test_decoded_entities_of_a_sharp_model_are_near_certain_and_match_the_path():
    topology = iob2(["PER", "LOC"])
    labels = state_labels(topology)
    wanted = ["B-PER", "I-PER", "O", "B-LOC", "B-LOC"]
    emissions = np.full((len(wanted), topology.num_states), -10.0)
    for t, label in enumerate(wanted):
        emissions[t, labels.index(label)] = 10.0
    pot = Potentials(topology, emissions)
    entities = decoded_entities(pot, labels, viterbi(pot).paths)[0]
    assert [(e.first, e.last, e.type) for e in entities] == [(0, 1, "PER"), (3, 3, "LOC"), (4, 4, "LOC")]
    assert all(e.probability > 0.999 for e in entities)


def test_a_flat_model_spreads_the_mass_as_counting_says():
    """Uniform scores over IOB2 with one type: P(a single-token entity at the only
    token) is 1 of the 2 sequences (B, O) of length 1."""
    topology = iob2(["X"])
    labels = state_labels(topology)
    pot = Potentials(topology, np.zeros((1, topology.num_states)))
    [[probability]] = entity_probabilities(pot, labels, [[(0, 0, "X")]])
    assert probability == pytest.approx(0.5)


def test_spans_outside_the_sentence_and_non_chunk_labels_are_refused():
    topology = first_order(["NN", "VB"])
    pot = Potentials(topology, np.zeros((3, 2)))
    with pytest.raises(LabelError, match="'NN' is not O or B-"):
        entity_probabilities(pot, state_labels(topology), [[(0, 0, "X")]])
    topology = iob2(["X"])
    pot = Potentials(topology, np.zeros((3, topology.num_states)))
    with pytest.raises(ShapeError, match=r"span \(2, 3\) is outside its 3 tokens"):
        entity_probabilities(pot, state_labels(topology), [[(2, 3, "X")]])
    with pytest.raises(ShapeError, match="expected spans for 1 sentences"):
        entity_probabilities(pot, state_labels(topology), [])
