"""fstcrf.pycrfsuite beside python-crfsuite where the two once parted: positions and
groups given as bools, Decimal item values, and L-BFGS with max_iterations=0."""

from decimal import Decimal

import numpy as np
import pytest

import fstcrf.pycrfsuite as ours
from fstcrf.errors import ArgumentTypeError, FeatureValueError
from needs import import_or_skip
from weather import weather

real = import_or_skip("pycrfsuite", "needs python-crfsuite: pip install 'fstcrf[bench]'")

XSEQ, YSEQ = weather()
BOTH = pytest.mark.parametrize("module", [real, ours], ids=["python-crfsuite", "fstcrf"])


def trained(module, path, params=None, xseq=XSEQ, group=0):
    trainer = module.Trainer(params=params, verbose=False)
    trainer.append(xseq, YSEQ, group)
    trainer.train(str(path))
    return str(path)


def with_decimals(xseq):
    return [
        {name: Decimal(str(value)) if isinstance(value, (int, float)) else value for name, value in item.items()}
        for item in xseq
    ]


@BOTH
def test_a_position_or_a_group_given_as_a_bool_is_its_integer(module, tmp_path):
    with module.Tagger().open(trained(module, tmp_path / "model", group=True)) as tagger:
        tagger.set(XSEQ)
        for label in ("sunny", "rainy"):
            assert tagger.marginal(label, True) == tagger.marginal(label, 1)
            assert tagger.marginal(label, False) == tagger.marginal(label, 0)
            assert tagger.marginal(label, np.True_) == tagger.marginal(label, 1)


def test_a_position_with_a_fraction_is_still_refused(tmp_path):
    with ours.Tagger().open(trained(ours, tmp_path / "model")) as tagger:
        tagger.set(XSEQ)
        with pytest.raises(ArgumentTypeError, match="position"):
            tagger.marginal("sunny", 1.5)  # python-crfsuite cuts it to 1


@BOTH
def test_decimal_values_are_read_as_floats(module, tmp_path):
    decimals = with_decimals(XSEQ)
    assert module.ItemSequence(decimals).items() == module.ItemSequence(XSEQ).items()
    with module.Tagger().open(trained(module, tmp_path / "model", xseq=decimals)) as tagger:
        assert tagger.tag(decimals) == tagger.tag(XSEQ)
        tagger.set(decimals)
        from_decimals = [tagger.marginal("sunny", t) for t in range(len(XSEQ))]
        tagger.set(XSEQ)
        assert from_decimals == [tagger.marginal("sunny", t) for t in range(len(XSEQ))]


def test_a_decimal_that_is_no_finite_number_is_refused():
    for value in ("NaN", "sNaN", "Infinity", "1e400"):  # python-crfsuite keeps nan and inf
        with pytest.raises(FeatureValueError, match="values must be finite"):
            ours.ItemSequence([{"a": Decimal(value)}])


@BOTH
def test_lbfgs_with_max_iterations_0_trains_until_convergence(module, tmp_path):
    answers = []
    for name, params in (("zero", {"max_iterations": 0}), ("default", None)):
        with module.Tagger().open(trained(module, tmp_path / name, params)) as tagger:
            tagger.set(XSEQ)
            answers.append([tagger.marginal("sunny", t) for t in range(len(XSEQ))])
    assert answers[0] == pytest.approx(answers[1], abs=1e-9)


@BOTH
def test_lbfgs_with_max_iterations_0_logs_its_convergence(module, tmp_path, capsys):
    trainer = module.Trainer(params={"max_iterations": 0}, verbose=True)
    trainer.append(XSEQ, YSEQ)
    capsys.readouterr()
    trainer.train(str(tmp_path / "model"))
    log = capsys.readouterr().out
    assert "L-BFGS resulted in convergence" in log and "maximum number of iterations" not in log
