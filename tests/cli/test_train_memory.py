"""fstcrf train --lbfgs-memory: the L-BFGS history size reaches the learner."""

import numpy as np

from fstcrf.cli import main
from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.model.chain import ChainCRF, load_model

TRAIN = str(DATA_DIR / "demo_train.txt")


def test_lbfgs_memory_trains_as_the_learner_setting(tmp_path):
    path = tmp_path / "short.model"
    assert main(["-q", "train", TRAIN, "-o", str(path), "--max-iter", "12", "--lbfgs-memory", "2"]) == 0
    trained = load_model(path)
    assert trained.algorithm_params == {"memory": 2}
    corpus = read_conll(TRAIN)
    params = trained.get_params()
    same = ChainCRF(**params).fit(corpus)
    default = ChainCRF(**{**params, "algorithm_params": None}).fit(corpus)
    np.testing.assert_array_equal(trained.weights_, same.weights_)
    # two pairs instead of ten give another path after the first few iterations
    assert not np.array_equal(same.weights_, default.weights_)


def test_lbfgs_memory_at_its_default_leaves_the_model_as_without_it(tmp_path):
    given, omitted = tmp_path / "given.model", tmp_path / "omitted.model"
    assert main(["-q", "train", TRAIN, "-o", str(given), "--max-iter", "3", "--lbfgs-memory", "10"]) == 0
    assert main(["-q", "train", TRAIN, "-o", str(omitted), "--max-iter", "3"]) == 0
    assert load_model(given).algorithm_params is None
    np.testing.assert_array_equal(load_model(given).weights_, load_model(omitted).weights_)


def test_lbfgs_memory_is_refused_for_other_learners(tmp_path, capsys):
    path = tmp_path / "m.model"
    assert main(["-q", "train", TRAIN, "-o", str(path), "--algorithm", "perceptron", "--lbfgs-memory", "3"]) == 2
    assert "--lbfgs-memory applies to --algorithm lbfgs or mce-f" in capsys.readouterr().err
    assert not path.exists()
