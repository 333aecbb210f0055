"""What the previous release wrote or imported still works: every old module path
(fstcrf.moved.MOVED) is its new module, and pickles and model files written by
fstcrf 0.1.0 load and tag as they did.  The files in tests/data were written by
0.1.0 from the demo corpus: a first-order chunker, and a POS tagger composed
with a chunker that reads its labels, with the labels each gave on the first 20
sentences of demo_test.txt."""

import importlib
import pickle
from pathlib import Path

import pytest

from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.model import load_model
from fstcrf.moved import MOVED

LEGACY = Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_module_path_is_its_new_module(old):
    assert importlib.import_module(old) is importlib.import_module(MOVED[old])


def test_the_names_of_the_modules_that_became_packages_are_importable_from_them():
    """fstcrf.bench and fstcrf.cli were modules; what they held moved into submodules."""
    from fstcrf import bench, cli
    from fstcrf.bench import compose, harness, partial
    from fstcrf.cli import app, common
    from fstcrf.learn.settings import DEFAULT_SIGMA

    assert [name for name in bench.__all__ if not hasattr(bench, name)] == []
    assert bench.bench_compose is compose.bench_compose and bench.hide_labels is partial.hide_labels
    assert bench.best_time is harness.best_time
    assert (cli.main, cli.build_parser, cli.find_conll2000) == (app.main, app.build_parser, common.find_conll2000)
    assert cli.DEFAULT_SIGMA == DEFAULT_SIGMA


def test_pickles_of_the_previous_release_load_and_tag_as_they_did():
    with open(LEGACY / "objects-0.1.0.pkl", "rb") as stream:
        objects = pickle.load(stream)
    assert objects["version"] == "0.1.0"
    test = list(read_conll(str(DATA_DIR / "demo_test.txt")))[:20]
    assert objects["chain"].predict(test) == objects["chain_labels"]
    assert objects["joint"].predict(test) == objects["joint_labels"]


def test_model_files_of_the_previous_release_load_and_tag_as_they_did():
    with open(LEGACY / "objects-0.1.0.pkl", "rb") as stream:
        objects = pickle.load(stream)
    test = list(read_conll(str(DATA_DIR / "demo_test.txt")))[:20]
    assert load_model(LEGACY / "chunker-0.1.0.model").predict(test) == objects["chain_labels"]
