"""Commands and packages whose optional dependency is missing stop at once with one line
naming the extra to install (exit 2), never a traceback: --dask without distributed,
the benchmarks against python-crfsuite and sklearn-crfsuite without them, and
``fstcrf.sklearn`` without scikit-learn."""

import sys

import pytest

from fstcrf import cli
from fstcrf.corpus.synthetic import DATA_DIR
from needs import refusal_without

TRAIN = str(DATA_DIR / "demo_train.txt")


@pytest.mark.parametrize(
    "missing, command, message",
    [
        ("distributed", ["train", TRAIN, "--dask", "local:1", "-o", "{out}"], "--dask needs distributed"),
        ("distributed", ["tag", "{model}", TRAIN, "--dask", "local:1", "-o", "{out}"], "--dask needs distributed"),
        ("pycrfsuite", ["bench", "train", "--vs", "crfsuite", "--data", "{data}"], "bench train needs pycrfsuite"),
        ("pycrfsuite", ["bench", "tag", "--data", "{data}"], "bench tag needs pycrfsuite"),
        ("sklearn_crfsuite", ["bench", "sklearn", "--data", "{data}"], "bench sklearn needs sklearn_crfsuite"),
    ],
)
def test_a_missing_extra_is_named_before_any_work(missing, command, message, monkeypatch, tmp_path, capsys):
    model = tmp_path / "demo.model"
    assert cli.main(["-q", "train", TRAIN, "--max-iter", "2", "-o", str(model)]) == 0
    monkeypatch.setitem(sys.modules, missing, None)  # import now raises ImportError
    given = [part.format(out=tmp_path / "out", model=model, data=tmp_path) for part in command]
    capsys.readouterr()
    assert cli.main(["-q", *given]) == 2
    err = capsys.readouterr().err
    assert message in err and "pip install 'fstcrf[" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_fstcrf_sklearn_without_scikit_learn_names_the_extra():
    assert "fstcrf.sklearn needs sklearn, which is not installed: pip install 'fstcrf[sklearn]'" in refusal_without(
        "sklearn", "fstcrf.sklearn"
    )
