"""The calibration experiment: its binning and ECE by hand, the temperature fit, and
one run on slices of CoNLL-2003."""

from __future__ import annotations

import numpy as np
import pytest

from fstcrf.corpus.conll import Corpus
from fstcrf.experiments import calibration
from fstcrf.experiments.transfer import read_conll2003


def test_bins_and_expected_calibration_error_by_hand():
    confidences = np.array([0.05, 0.15, 0.95, 1.0, 0.55])
    correct = np.array([False, True, True, False, True])
    result = calibration.reliability(confidences, correct, bins=10)
    assert result.counts == [1, 1, 0, 0, 0, 1, 0, 0, 0, 2]
    assert result.accuracy[9] == 0.5 and result.confidence[9] == pytest.approx(0.975)
    expected = (0.05 + 0.85 + 0.45 + 2 * 0.475) / 5
    assert result.ece == pytest.approx(expected)


@pytest.fixture(scope="module")
def corpora(data_file):
    folder = data_file("conll2003/eng.train").parent
    return read_conll2003(folder)


def test_a_run_on_slices_reports_every_measure(corpora):
    train, dev, test = (
        Corpus(corpora[n].column_names, corpora[n].sentences[:k])
        for n, k in (("eng.train", 300), ("eng.testa", 100), ("eng.testb", 100))
    )
    result = calibration.measure(train, dev, test, threads=1, max_iter=5)
    assert result.entities == sum(result.exact.counts) == sum(result.tempered.counts)
    assert 0 <= result.exact.ece <= 1 and 0 <= result.tempered.ece <= 1
    assert 0.05 < result.temperature < 20
    assert "ECE: exact" in calibration.format_result(result)
