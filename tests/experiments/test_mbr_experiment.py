"""The MBR experiment: its bootstrap and F1 counts by hand, the sampled expected F1 of a
certain chain, and a run on the demo chunker against the model's own decoders."""

from __future__ import annotations

import numpy as np
import pytest

from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.evaluate import score_labels
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.engine.inference import Potentials
from fstcrf.engine.spans import Entity, state_labels
from fstcrf.engine.topology import first_order
from fstcrf.experiments import mbr
from fstcrf.model import ChainCRF

GOLD = [["B-A", "I-A", "O"], ["O", "B-B", "O", "B-A"], ["B-A", "O"]]


def test_sentence_counts_and_f1_by_hand():
    predicted = [["B-A", "O", "O"], ["O", "B-B", "O", "B-A"], ["O", "O"]]
    counts = mbr.sentence_counts(GOLD, predicted)
    np.testing.assert_array_equal(counts, [[0, 1, 1], [2, 2, 2], [0, 0, 1]])
    assert mbr.counts_f1(counts.sum(axis=0)) == pytest.approx(200 * 2 / (3 + 4))
    assert mbr.counts_f1(np.zeros(3)) == 0.0


def test_the_bootstrap_of_equal_outputs_is_zero_and_of_a_perfect_one_is_positive():
    same = mbr.paired_bootstrap(GOLD, GOLD, GOLD, resamples=200)
    assert (same.difference, same.low, same.high, same.p_value) == (0.0, 0.0, 0.0, 1.0)
    nothing = [["O"] * len(labels) for labels in GOLD]
    gain = mbr.paired_bootstrap(GOLD, nothing, GOLD, resamples=200)
    assert gain.difference == 100.0 and gain.low == 100.0 and gain.p_value == 0.0


def test_the_sampled_expected_f1_of_a_certain_chain_is_its_f1():
    labels = ("O", "B-A", "I-A")
    topology = first_order(labels)
    emissions = np.full((4, 3), -40.0)
    emissions[np.arange(4), [1, 2, 0, 1]] = 0.0  # B-A I-A O B-A, all but certain
    pot = Potentials(topology, emissions)
    right = [[Entity(0, 1, "A", 1.0), Entity(3, 3, "A", 1.0)]]
    assert mbr.sampled_expected_f1(pot, state_labels(topology), right, 5)[0] == pytest.approx(100.0)
    half = [[Entity(0, 1, "A", 1.0), Entity(2, 3, "A", 0.0)]]
    assert mbr.sampled_expected_f1(pot, state_labels(topology), half, 5) == pytest.approx((50.0, 0.0))


@pytest.mark.slow
def test_a_run_on_the_demo_chunker_scores_the_models_decoders(demo_chunker):
    test = str(DATA_DIR / "demo_test.txt")
    result = mbr.measure(ChainCRF.load(demo_chunker), test, test, draws=3, repeats=1, resamples=100)
    model = ChainCRF.load(demo_chunker)
    corpus = read_conll(test, columns=model.columns_)
    gold = corpus.column("chunk")
    viterbi, plain, tempered = result["test"].decodings
    assert viterbi.f1 == score_labels(gold, model.predict(corpus)).f1
    assert plain.f1 == score_labels(gold, model.predict_mbr(corpus)).f1
    assert tempered.f1 == score_labels(gold, model.predict_mbr(corpus, temperature=result["temperature"])).f1
    assert 0.0 < plain.threshold < 1.0 and plain.threshold == pytest.approx(plain.expected_f1 / 200)
    assert plain.bootstrap.difference == pytest.approx(plain.f1 - viterbi.f1)
    assert len(result["dev"].sampled) == 4 and not result["test"].sampled
    assert "F1" in mbr.format_result(result["dev"])


def test_a_given_temperature_is_not_fitted(demo_chunker):
    test = str(DATA_DIR / "demo_test.txt")
    result = mbr.measure(ChainCRF.load(demo_chunker), test, test, draws=0, repeats=1, resamples=10, temperature=1.5)
    assert result["temperature"] == 1.5 and result["test"].decodings[2].name == "mbr at T = 1.5000"
