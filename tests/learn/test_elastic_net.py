"""ChainCRF's CRFsuite settings: c1 (elastic net, zero features dropped), transitions="seen",
min_freq and algorithm_params."""

import numpy as np
import pytest

from fstcrf.corpus.conll import read_conll
from fstcrf.errors import FstcrfError
from fstcrf.model import ChainCRF, load_model
from fstcrf.corpus.synthetic import DATA_DIR

TRAIN = read_conll(DATA_DIR / "demo_train.txt")[:150]
TEST = read_conll(DATA_DIR / "demo_test.txt")[:40]


@pytest.fixture(scope="module")
def sparse_model():
    return ChainCRF(c1=0.5, sigma=3.0, max_iter=40).fit(TRAIN)


def test_l1_drops_zero_features_and_keeps_the_scores(sparse_model, tmp_path):
    dense = ChainCRF(sigma=3.0, max_iter=40).fit(TRAIN)
    assert sparse_model.features_.num_features < dense.features_.num_features
    assert (
        np.count_nonzero(sparse_model.weights_[: sparse_model.features_.num_features])
        == sparse_model.features_.num_features
    )
    assert sparse_model.history_[-1]["nonzero"] >= sparse_model.features_.num_features
    assert sparse_model.extractor_.num_predicates == sparse_model.features_.num_predicates
    assert sparse_model.extractor_.num_predicates < dense.extractor_.num_predicates
    path = tmp_path / "sparse.model"
    sparse_model.save(path)
    loaded = load_model(path)
    np.testing.assert_array_equal(loaded.weights_, sparse_model.weights_)
    assert loaded.predict(TEST) == sparse_model.predict(TEST)
    assert loaded.c1 == 0.5


def test_dropping_zero_features_changes_no_score():
    from fstcrf.features.encoding import drop_zero_features

    model = ChainCRF(sigma=3.0, max_iter=5).fit(TRAIN)
    F = model.features_.num_features
    weights = model.weights_.copy()
    weights[:F][np.random.default_rng(0).random(F) < 0.6] = 0.0
    model.weights_ = weights
    before = model.potentials(TEST)
    model.features_, model.weights_, used = drop_zero_features(model.features_, weights)
    assert not used.all()
    model.extractor_ = model.extractor_.subset(used)
    after = model.potentials(TEST)
    np.testing.assert_allclose(after.emissions, before.emissions, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(after.transitions, before.transitions)


def test_seen_transitions_keep_the_others_at_zero(tmp_path):
    model = ChainCRF(transitions="seen", max_iter=10).fit(TRAIN)
    active = model.active_edges_
    assert active.dtype == bool and 0 < active.sum() < model.topology_.num_edges
    F = model.features_.num_features
    assert np.all(model.weights_[F:][~active] == 0) and np.any(model.weights_[F:][active] != 0)
    model.save(tmp_path / "seen.model")
    loaded = load_model(tmp_path / "seen.model")
    np.testing.assert_array_equal(loaded.active_edges_, active)
    assert loaded.predict(TEST) == model.predict(TEST)


def test_min_freq_keeps_the_pairs_seen_more_often():
    every = ChainCRF(max_iter=2).fit(TRAIN)
    frequent = ChainCRF(min_freq=2, max_iter=2).fit(TRAIN)
    assert frequent.features_.num_features < every.features_.num_features


@pytest.mark.parametrize(
    "params, message",
    [
        (dict(c1=-1.0), "c1 must be a non-negative finite number"),
        (dict(c1=0.1, algorithm="perceptron"), "OWL-QN"),
        (dict(transitions="some"), "transitions must be one of"),
        (dict(algorithm_params={"memmory": 5}), "no setting 'memmory'; its settings are memory"),
        (dict(algorithm="perceptron", algorithm_params={"memory": 5}), "no setting 'memory'"),
    ],
)
def test_bad_settings_are_named_before_training(params, message):
    with pytest.raises(FstcrfError, match=message):
        ChainCRF(**params).fit(TRAIN)


def test_algorithm_params_reach_lbfgs():
    model = ChainCRF(max_iter=50, algorithm_params={"epsilon": 1e30}).fit(TRAIN)
    assert model.n_iter_ == 0 or len(model.history_) <= 1


def test_ap_stops_at_crfsuites_epsilon():
    model = ChainCRF(algorithm="ap", max_iter=30, algorithm_params={"epsilon": 0.5}).fit(TRAIN)
    assert model.n_iter_ < 30
    assert ChainCRF(algorithm="ap", max_iter=3).fit(TRAIN).n_iter_ == 3
