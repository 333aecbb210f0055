"""fstcrf.sklearn.CRF.tagger_ (python-crfsuite's Tagger over the fitted model) and the
other expectations of sklearn-crfsuite's own test suite: the arrays predict returns,
sequence accuracy over sequences of other lengths."""

import itertools
import math
import pickle

import numpy as np
import pytest

from fstcrf.pycrfsuite import Tagger
from fstcrf.sklearn import CRF, metrics
from weather import weather


@pytest.mark.parametrize("algorithm", ["lbfgs", "l2sgd", "ap", "pa", "arow"])
def test_the_tagger_is_none_before_fit_and_the_fitted_model_after(algorithm):
    xseq, yseq = weather()
    crf = CRF(algorithm)
    assert crf.tagger_ is None
    crf.fit([xseq] * 3, [yseq] * 3)
    tagger = crf.tagger_
    assert isinstance(tagger, Tagger) and crf.tagger_ is tagger
    assert tagger.labels() == crf.classes_
    assert tagger.tag(xseq) == crf.predict_single(xseq)
    tagger.set(xseq)
    for position, row in enumerate(crf.predict_marginals_single(xseq)):
        assert set(row) == set(tagger.labels())
        for label, probability in row.items():
            assert tagger.marginal(label, position) == pytest.approx(probability, abs=1e-12)
    best = tagger.tag(xseq[:5])
    probabilities = [tagger.probability(list(path)) for path in itertools.product(crf.classes_, repeat=5)]
    assert math.isclose(sum(probabilities), 1.0, rel_tol=1e-9)
    assert tagger.probability(best) == max(probabilities)
    info = tagger.info()
    assert info.state_features == crf.state_features_ and info.transitions == crf.transition_features_
    assert list(info.attributes) == crf.attributes_ and set(info.labels) == set(crf.classes_)


def test_the_tagger_follows_refits_pickles_and_model_files(tmp_path):
    xseq, yseq = weather()
    path = str(tmp_path / "model.fstcrf")
    crf = CRF(model_filename=path).fit([xseq], [yseq])
    first = crf.tagger_
    crf.fit([xseq[:4]], [["rainy"] * 4])
    assert crf.tagger_ is not first and crf.tagger_.labels() == ["rainy"]
    again = pickle.loads(pickle.dumps(crf))
    assert "_tagger" not in again.__dict__ and again.tagger_.tag(xseq[:4]) == ["rainy"] * 4
    loaded = CRF(model_filename=path)  # the model file of the last fit, read on first use
    assert loaded.tagger_.tag(xseq) == ["rainy"] * len(xseq)


def test_a_reading_crf_tags_token_dicts_holding_the_lower_label():
    X = [[{"w": word, "pos": pos} for word, pos in zip(["the", "dog", "runs"], ["D", "N", "V"])]] * 4
    y = [["B-NP", "I-NP", "B-VP"]] * 4
    crf = CRF(reads="pos", max_iterations=30).fit(X, y)
    assert crf.tagger_.tag(X[0]) == crf.predict_single(X[0]) == y[0]


def test_predict_returns_sklearn_crfsuites_arrays():
    xseq, yseq = weather()
    crf = CRF().fit([xseq], [yseq])
    predicted = crf.predict([xseq, xseq])
    assert predicted.shape == (2, len(xseq)) and (predicted == yseq).all()
    ragged = crf.predict([xseq, xseq[:3]])
    assert ragged.shape == (2,) and ragged[1] == yseq[:3]
    marginals = crf.predict_marginals([xseq])
    assert marginals.shape == (1, len(xseq)) and isinstance(marginals[0, 0], dict)
    assert np.array_equal(crf.predict([]), np.array([], dtype=object))


def test_sequence_accuracy_counts_a_sequence_of_another_length_as_wrong():
    assert metrics.sequence_accuracy_score([[1, 2], [3]], [[3], [1, 2]]) == 0
    assert metrics.sequence_accuracy_score([[1, 2], [3], [4]], [[1, 2], [4], [4]]) == pytest.approx(2 / 3)
    assert metrics.sequence_accuracy_score([], []) == 0


@pytest.mark.pynini
def test_the_tagger_of_a_grammar_or_second_order_crf_decodes_as_predict():
    X = [[{"w": "x"}, {"w": "y"}, {"w": "z"}]] * 6 + [[{"w": "q"}, {"w": "y"}]] * 2
    y = [["B-X", "I-X", "O"]] * 6 + [["O", "O"]] * 2
    test = [[{"w": "q"}, {"w": "y"}, {"w": "y"}], [{"w": "y"}], [{"w": "x"}, {"w": "y"}]]
    for crf in (
        CRF(c2=0.01, max_iterations=40, all_possible_transitions=True, grammar="iob2").fit(X, y),
        CRF(c2=0.01, max_iterations=40, order=2).fit(X, y),
    ):
        tagger = crf.tagger_
        for xseq in test:
            assert tagger.tag(xseq) == crf.predict_single(xseq)
            for position, row in enumerate(crf.predict_marginals_single(xseq)):
                assert [tagger.marginal(label, position) for label in row] == pytest.approx(list(row.values()))
            paths = [list(path) for path in itertools.product(crf.classes_, repeat=len(xseq))]
            assert sum(tagger.probability(path) for path in paths) == pytest.approx(1.0)
        if crf.grammar is not None:  # a sequence the grammar forbids has probability 0
            tagger.set(test[1])
            assert tagger.probability(["I-X"]) == 0.0
