"""fstcrf.sklearn.CRF inside scikit-learn's model selection, and beside
sklearn_crfsuite on real data."""

import numpy as np
import pytest
import scipy.stats
import sklearn_crfsuite
from sklearn.metrics import make_scorer
from sklearn.model_selection import GridSearchCV, RandomizedSearchCV, cross_val_score

from fstcrf.bench.sklearn import read_sentences, sent2features, sent2labels
from fstcrf.sklearn import CRF, metrics, scorers
from test_sklearn import toy_corpus


def test_cross_val_score_with_the_flat_accuracy_scorer():
    X, y = toy_corpus(30)
    scores = cross_val_score(CRF(c2=0.1, max_iterations=20), X, y, cv=3, scoring=scorers.flat_accuracy)
    assert scores.shape == (3,) and np.all(scores == 1.0)
    sequence = cross_val_score(CRF(c2=0.1, max_iterations=20), X, y, cv=3, scoring=scorers.sequence_accuracy)
    assert np.all(sequence == 1.0)


@pytest.mark.slow
def test_randomized_and_grid_search_with_two_jobs():
    X, y = toy_corpus(30, seed=2)
    f1 = scorers.flat_f1(["A", "B", "C"])
    search = RandomizedSearchCV(
        CRF(max_iterations=15, all_possible_transitions=True),
        {"c1": scipy.stats.expon(scale=0.5), "c2": scipy.stats.expon(scale=0.05)},
        cv=3,
        n_iter=4,
        n_jobs=2,
        random_state=0,
        scoring=f1,
    )
    search.fit(X, y)
    assert len(search.cv_results_["params"]) == 4 and search.best_score_ > 0.9
    assert set(search.best_params_) == {"c1", "c2"}
    assert list(search.best_estimator_.predict(X[:1])[0]) == y[0]
    grid = GridSearchCV(
        CRF(max_iterations=15), {"c2": [0.01, 1.0]}, cv=2, n_jobs=2, scoring=make_scorer(metrics.flat_accuracy_score)
    )
    grid.fit(X, y)
    assert grid.best_params_["c2"] in (0.01, 1.0)


@pytest.mark.slow
def test_close_to_sklearn_crfsuite_on_conll2002_spanish(data_file):
    train = read_sentences(data_file("conll2002/esp.train"), 1500)
    dev = read_sentences(data_file("conll2002/esp.testa"), 500)
    X, y = [sent2features(s) for s in train], [sent2labels(s) for s in train]
    X_dev, y_dev = [sent2features(s) for s in dev], [sent2labels(s) for s in dev]
    settings = dict(c1=0.1, c2=0.1, max_iterations=50, all_possible_transitions=True)
    scores = []
    for crf in (CRF(**settings), sklearn_crfsuite.CRF(**settings)):
        crf.fit(X, y)
        labels = [label for label in crf.classes_ if label != "O"]
        scores.append(metrics.flat_f1_score(y_dev, crf.predict(X_dev), average="weighted", labels=labels))
    assert scores[0] > 0.5 and abs(scores[0] - scores[1]) < 0.02, scores
