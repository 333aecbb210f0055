"""Temperatures (issue 62): any temperature in the documented range decodes exactly,
also one so small that the tempered scores span more than the linear domain holds
(span probabilities then move to the log domain); one outside it is refused where it
is given, naming the option; calibrate fits one inside it."""

from __future__ import annotations

import numpy as np
import pytest

from fstcrf.cli import main
from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.engine.inference import Potentials
from fstcrf.engine.tempering import TEMPERATURE_RANGE, tempered
from fstcrf.errors import ScoreError
from fstcrf.model import ChainCRF

TEST = str(DATA_DIR / "demo_test.txt")
TRAIN = str(DATA_DIR / "demo_train.txt")


def _rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line.strip()]


def test_mbr_and_entity_probabilities_at_a_tiny_temperature(demo_chunker, capsys):
    """At T = 1e-4 the chunker's distribution is all but its Viterbi path: MBR writes
    the Viterbi chunks, and the Viterbi chunks have probability 1."""
    model = str(demo_chunker)
    assert main(["-q", "tag", model, TEST]) == 0
    viterbi = _rows(capsys.readouterr().out)
    assert main(["-q", "tag", model, TEST, "--decode", "mbr", "--mbr-temperature", "1e-4"]) == 0
    mbr = _rows(capsys.readouterr().out)
    agree = np.mean([a[-1] == b[-1] for a, b in zip(viterbi, mbr)])
    assert len(mbr) == len(viterbi) and agree > 0.99
    assert main(["-q", "tag", model, TEST, "--entity-probabilities", "--temperature", "1e-4"]) == 0
    probabilities = [row[-1] for row in _rows(capsys.readouterr().out)]
    assert {value for value in probabilities if value != "_"} <= {"1.0000", "0.9999"}


@pytest.mark.parametrize("option", ["--mbr-temperature", "--temperature", "--t-start", "--t-end"])
@pytest.mark.parametrize("value", ["1e-308", "0", "2e6"])
def test_a_temperature_outside_the_range_is_refused_naming_the_option(demo_chunker, capsys, option, value):
    with pytest.raises(SystemExit):
        main(["-q", "tag", str(demo_chunker), TEST, option, value])
    assert f"argument {option}: expected a number from 1e-06 to 1e+06, got {value}" in capsys.readouterr().err


def test_tempered_scores_that_would_overflow_are_refused(demo_chunker):
    model = ChainCRF.load(demo_chunker)
    pot = model.potentials(read_conll(TEST, ["word", "pos", "chunk"]).sentences[:3])
    assert np.isfinite(tempered(pot, TEMPERATURE_RANGE[0]).emissions).all()
    huge = Potentials(pot.topology, pot.emissions * 1e304, pot.lengths)  # no model scores so, but any may
    with pytest.raises(ScoreError, match="temperature 1e-06 is too small for these scores"):
        tempered(huge, TEMPERATURE_RANGE[0])


def test_calibrate_fits_a_temperature_that_decodes(tmp_path, capsys):
    """A model calibrated on its own training data (underconfident there: T < 1) writes
    the fitted temperature into the copy, which MBR then decodes at."""
    model, calibrated = str(tmp_path / "m.model"), str(tmp_path / "c.model")
    assert main(["-q", "train", TRAIN, "--max-iter", "60", "-o", model]) == 0
    assert main(["-q", "calibrate", model, TRAIN, "-o", calibrated]) == 0
    fitted = float(capsys.readouterr().out.split()[0])
    low, high = TEMPERATURE_RANGE
    assert low <= fitted <= high
    assert ChainCRF.load(calibrated).mbr_temperature_ == pytest.approx(fitted, rel=1e-3)
    assert main(["-q", "tag", calibrated, TEST, "--decode", "mbr"]) == 0
    assert len(_rows(capsys.readouterr().out)) == len(_rows(open(TEST).read()))
