"""fstcrf.sklearn.CRF against sklearn_crfsuite's contract, brute force and sklearn.metrics."""

import itertools
import math
import pickle

import numpy as np
import pytest
import sklearn.metrics
from sklearn.base import clone

from fstcrf.features.attributes import FeatureValueError, attribute_pairs
from fstcrf.errors import ArgumentTypeError, EmptySequenceError, FstcrfError, LabelError, ShapeError
from fstcrf.sklearn import CRF, metrics

WORDS = {"A": ["the", "a"], "B": ["dog", "cat", "fish"], "C": ["runs", "eats"]}


def toy_corpus(count: int, seed: int = 0):
    """Sentences of word dicts whose label follows from the word (and the order A B C)."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(count):
        labels = ["A", "B", "C"][: rng.integers(1, 4)]
        words = [str(rng.choice(WORDS[label])) for label in labels]
        X.append([{"bias": 1.0, "word": word, "suffix": {"1": word[-1:]}, "long": len(word) > 3} for word in words])
        y.append(labels)
    return X, y


@pytest.fixture(scope="module")
def fitted():
    X, y = toy_corpus(40)
    return CRF(c2=0.1, max_iterations=50, all_possible_transitions=True).fit(X, y), X, y


def test_learns_toy_data_and_returns_sklearn_crfsuite_shapes(fitted):
    crf, X, y = fitted
    predicted = crf.predict(X)
    assert predicted.dtype == object and predicted.shape == (len(X),)
    assert [list(p) for p in predicted] == y
    assert crf.predict_single(X[0]) == y[0]
    assert crf.score(X, y) == 1.0
    assert crf.classes_ == ["A", "B", "C"]
    assert list(crf.predict([[], X[1]])[0]) == []
    assert crf.training_log_ and crf.training_log_[-1]["iteration"] >= 1


def test_marginals_sum_to_one_and_agree_with_predict(fitted):
    crf, X, _ = fitted
    for xseq, marginals, best in zip(X, crf.predict_marginals(X), crf.predict(X)):
        assert len(marginals) == len(xseq)
        for token, label in zip(marginals, best):
            assert set(token) == {"A", "B", "C"}
            assert math.isclose(sum(token.values()), 1.0, rel_tol=1e-9)
            assert max(token, key=token.get) == label
    assert crf.predict_marginals_single(X[2]) == crf.predict_marginals([X[2]])[0]


def _brute_force(crf, xseq):
    """(best labels, marginals [T][label]) by enumerating every labelling with the
    weights read from state_features_ and transition_features_."""
    labels = crf.classes_
    state, transition = crf.state_features_, crf.transition_features_
    emission = [
        {
            label: sum(value * state.get((name, label), 0.0) for name, value in attribute_pairs(token))
            for label in labels
        }
        for token in xseq
    ]
    scores = {}
    for path in itertools.product(labels, repeat=len(xseq)):
        scores[path] = sum(emission[t][label] for t, label in enumerate(path)) + sum(
            transition.get(pair, 0.0) for pair in zip(path, path[1:])
        )
    top = max(scores.values())
    z = sum(math.exp(score - top) for score in scores.values())
    marginals = [
        {
            label: sum(math.exp(score - top) for path, score in scores.items() if path[t] == label) / z
            for label in labels
        }
        for t in range(len(xseq))
    ]
    return list(max(scores, key=scores.get)), marginals


@pytest.mark.parametrize("transitions", [True, False])
def test_learned_weights_reproduce_predictions_by_enumeration(transitions):
    rng = np.random.default_rng(7)
    names = ["p", "q", "r", "s"]
    X = [
        [
            {name: float(rng.normal()) for name in rng.choice(names, 2, replace=False)} | {"w": str(rng.integers(3))}
            for _ in range(rng.integers(1, 5))
        ]
        for _ in range(30)
    ]
    y = [[str(rng.choice(["X", "Y", "Z"])) for _ in xseq] for xseq in X]
    crf = CRF(c2=0.05, max_iterations=30, all_possible_transitions=transitions).fit(X, y)
    if not transitions:
        seen = {pair for labels in y for pair in zip(labels, labels[1:])}
        assert set(crf.transition_features_) <= seen
    assert crf.num_attributes_ == len(crf.attributes_) == len({name for name, _ in crf.state_features_})
    test = [[{"p": 0.5, "w": "1"}, {"q": -1.0, "s": 2.0}, {"r": 1.5, "w": "2"}], [{"w": "0", "p": -2.0}]]
    for xseq, best, marginals in zip(test, crf.predict(test), crf.predict_marginals(test)):
        expected_best, expected_marginals = _brute_force(crf, xseq)
        assert list(best) == expected_best
        for token, expected in zip(marginals, expected_marginals):
            for label in crf.classes_:
                assert token[label] == pytest.approx(expected[label], abs=1e-9)


def test_a_real_valued_feature_decides_the_label():
    X = [[{"bias": 1.0, "v": float(v)}] for v in (-3, -2, -1, 1, 2, 3)]
    y = [["neg"], ["neg"], ["neg"], ["pos"], ["pos"], ["pos"]]
    crf = CRF(c2=0.01, max_iterations=50).fit(X, y)
    assert [list(p) for p in crf.predict([[{"bias": 1.0, "v": 5.0}], [{"bias": 1.0, "v": -0.5}]])] == [["pos"], ["neg"]]
    # the same values as categories say nothing about an unseen value
    X_categorical = [[{"bias": 1.0, "v": str(token["v"])}] for (token,) in X]
    crf = CRF(c2=0.01, max_iterations=50).fit(X_categorical, y)
    assert crf.predict_marginals_single([{"bias": 1.0, "v": "5.0"}])[0]["pos"] == pytest.approx(0.5, abs=1e-6)


BAD_INPUTS = [
    (lambda X, y: (X, y[:-1]), ShapeError, r"X has 5 sequences but y has 4"),
    (lambda X, y: (X, y[:2] + [y[2][:-1]] + y[3:]), ShapeError, r"sentence 2, token 1"),
    (lambda X, y: (X[:3] + [[]] + X[4:], y[:3] + [[]] + y[4:]), EmptySequenceError, r"sentence 3"),
    (lambda X, y: (X, y[:1] + [[y[1][0], None]] + y[2:]), LabelError, r"sentence 1, token 1"),
    (lambda X, y: (X, y[:3] + [[y[3][0], "B LOC"]] + y[4:]), LabelError, r"sentence 3, token 1: .*whitespace"),
    (lambda X, y: (X, y[:3] + [["<eps>", y[3][1]]] + y[4:]), LabelError, r"sentence 3, token 0: .*'<eps>'"),
    (lambda X, y: (X[:4] + [[X[4][0], {"v": math.nan}]], y), FeatureValueError, r"sentence 4, token 1"),
    (lambda X, y: (X[:4] + [[X[4][0], {"v": -math.inf}]], y), FeatureValueError, r"sentence 4, token 1"),
    (lambda X, y: (X[:2] + [[{"v": None}, X[2][1]]] + X[3:], y), FeatureValueError, r"sentence 2, token 0"),
    (lambda X, y: (X[:2] + [[{"v": object()}, X[2][1]]] + X[3:], y), FeatureValueError, r"sentence 2, token 0"),
]


def two_token_corpus():
    return [[{"w": "a"}, {"w": "b"}] for _ in range(5)], [["A", "B"] for _ in range(5)]


@pytest.mark.parametrize("corrupt, error, where", BAD_INPUTS)
def test_bad_input_raises_before_training_and_writes_nothing(tmp_path, corrupt, error, where):
    X, y = corrupt(*two_token_corpus())
    path = tmp_path / "model.fstcrf"
    crf = CRF(model_filename=str(path))
    with pytest.raises(error, match=where) as raised:
        crf.fit(X, y)
    assert isinstance(raised.value, FstcrfError) and isinstance(raised.value, ValueError)
    assert not path.exists() and crf.classes_ is None
    assert crf.crf_ is None and crf.training_log_ is None  # None before fit, as in sklearn-crfsuite


def test_bad_dev_data_and_parameters_raise(tmp_path):
    X, y = two_token_corpus()
    path = tmp_path / "model.fstcrf"
    with pytest.raises(LabelError, match=r"y_dev sentence 1, token 0: the label 'Q'"):
        CRF(model_filename=str(path)).fit(X, y, X_dev=X[:2], y_dev=[["A", "B"], ["Q", "B"]])
    with pytest.raises(FeatureValueError, match=r"sentence 0, token 1"):
        CRF(model_filename=str(path)).fit(X, y, X_dev=[[{"w": "a"}, {"w": math.nan}]], y_dev=[["A", "B"]])
    with pytest.raises(FstcrfError, match="both X_dev and y_dev"):
        CRF().fit(X, y, X_dev=X)
    for params, message in [
        ({"c1": -0.1}, "c1"),
        ({"c2": -1}, "c2"),
        ({"c2": math.nan}, "c2"),
        ({"algorithm": "ap", "c2": 0.1}, "takes no c2"),
        ({"algorithm": "lbfgs", "pa_type": 1}, "takes no pa_type"),
        ({"algorithm": "arow", "c1": 0.1}, "takes no c1"),
        ({"algorithm": "crf"}, "algorithm must be"),
        ({"max_iterations": -1}, "max_iterations"),
        ({"algorithm": "ap", "max_iterations": 0}, "max_iterations must be at least 1 for ap"),
        ({"c2": "abc"}, "parameter 'c2' takes a finite number"),
        ({"min_freq": "often"}, "parameter 'min_freq' takes a finite number"),
        ({"keep_tempfiles": True}, "keep_tempfiles"),
        ({"trainer_cls": object}, "trainer_cls"),
        ({"min_freq": -1}, "min_freq"),
    ]:
        with pytest.raises(FstcrfError, match=message):
            CRF(model_filename=str(path), **params).fit(X, y)
    with pytest.raises(ArgumentTypeError, match="c2"):
        CRF(c2=[1]).fit(X, y)
    with pytest.raises(ArgumentTypeError):
        CRF().fit("word", y)
    assert not path.exists()


def test_parameters_map_to_chain_crf():
    model = CRF(
        c1=0.2,
        c2=0.5,
        max_iterations=7,
        num_memories=4,
        epsilon=1e-4,
        min_freq=2,
        all_possible_states=True,
        all_possible_transitions=True,
        order=2,
    ).chain_crf()
    assert (model.c1, model.sigma, model.max_iter, model.min_freq) == (0.2, 1.0, 7, 2.0)
    assert (model.features, model.transitions, model.order) == ("complete", "all", 2)
    assert model.algorithm_params == {"memory": 4, "epsilon": 1e-4}
    default = CRF().chain_crf()
    assert (default.algorithm, default.c1, default.sigma, default.transitions, default.features) == (
        "lbfgs",
        0.0,
        math.sqrt(0.5),
        "seen",
        None,
    )
    assert math.isinf(CRF(c2=0).chain_crf().sigma)
    assert CRF(algorithm="pa", pa_type=2, c=0.5).chain_crf().algorithm_params == {"pa_type": 2, "c": 0.5}
    assert CRF(algorithm="ap").chain_crf().max_iter == 100


def test_get_params_set_params_clone():
    crf = CRF(c1=0.1, c2=0.2, all_possible_transitions=True, order=2)
    params = crf.get_params()
    assert params["c1"] == 0.1 and params["all_possible_transitions"] is True and params["order"] == 2
    assert set(params) >= {
        "algorithm",
        "min_freq",
        "all_possible_states",
        "max_iterations",
        "num_memories",
        "epsilon",
        "period",
        "delta",
        "pa_type",
        "c",
        "variance",
        "gamma",
        "averaging",
        "verbose",
        "model_filename",
        "grammar",
    }
    copy = clone(crf)
    assert copy is not crf and copy.get_params() == params
    assert crf.set_params(c1=0.5) is crf and crf.c1 == 0.5


def test_pickle_and_model_file_round_trips(fitted, tmp_path):
    crf, X, y = fitted
    again = pickle.loads(pickle.dumps(crf))
    assert [list(p) for p in again.predict(X)] == [list(p) for p in crf.predict(X)]
    assert again.predict_marginals(X[:3]).tolist() == crf.predict_marginals(X[:3]).tolist()
    assert again.state_features_ == crf.state_features_
    path = tmp_path / "m.fstcrf"
    saved = CRF(c2=0.1, max_iterations=20, model_filename=str(path)).fit(X, y)
    assert path.is_file()
    loaded = CRF(model_filename=str(path))
    assert loaded.classes_ == saved.classes_
    assert loaded.predict_marginals(X).tolist() == saved.predict_marginals(X).tolist()
    assert loaded.transition_features_ == saved.transition_features_


def test_verbose_prints_one_line_per_iteration(capsys):
    X, y = two_token_corpus()
    crf = CRF(max_iterations=3, verbose=True).fit(X, y)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("Iter")]
    assert len(lines) == len(crf.training_log_)


def test_metrics_equal_sklearn_on_flat_lists():
    rng = np.random.default_rng(1)
    labels = ["O", "B-PER", "I-PER", "B-LOC"]
    y_true = [list(rng.choice(labels, rng.integers(1, 6))) for _ in range(30)]
    y_pred = [[label if rng.random() < 0.7 else str(rng.choice(labels)) for label in seq] for seq in y_true]
    flat_true, flat_pred = sum(y_true, []), sum(y_pred, [])
    chosen = labels[1:]
    assert metrics.flat_accuracy_score(y_true, y_pred) == sklearn.metrics.accuracy_score(flat_true, flat_pred)
    for ours, theirs in [
        (metrics.flat_f1_score, sklearn.metrics.f1_score),
        (metrics.flat_precision_score, sklearn.metrics.precision_score),
        (metrics.flat_recall_score, sklearn.metrics.recall_score),
    ]:
        assert ours(y_true, y_pred, average="weighted", labels=chosen) == theirs(
            flat_true, flat_pred, average="weighted", labels=chosen
        )
    assert metrics.flat_classification_report(
        y_true, y_pred, labels=chosen, digits=3
    ) == sklearn.metrics.classification_report(flat_true, flat_pred, labels=chosen, digits=3)
    exact = sum(t == p for t, p in zip(y_true, y_pred)) / len(y_true)
    assert metrics.sequence_accuracy_score(y_true, y_pred) == exact
    assert metrics.sequence_accuracy_score([["A", "B"]] * 2, np.array([["A", "B"], ["A", "C"]])) == 0.5
    with pytest.raises(ShapeError, match="sentence 1"):
        metrics.flat_accuracy_score([["A"], ["B"]], [["A"], ["B", "C"]])


def _iob2_valid(labels):
    return all(
        not label.startswith("I-") or (previous in ("B-" + label[2:], label))
        for previous, label in zip(["O"] + list(labels), labels)
    )


@pytest.mark.pynini
def test_grammar_and_order_two_extras():
    # "y" is always I-X in training, so after "q" (O) the free model predicts I-X after O
    X = [[{"w": "x"}, {"w": "y"}, {"w": "z"}]] * 6 + [[{"w": "q"}, {"w": "y"}]] * 2
    y = [["B-X", "I-X", "O"]] * 6 + [["O", "O"]] * 2
    test = [[{"w": "q"}, {"w": "y"}, {"w": "y"}], [{"w": "y"}]]
    free = CRF(c2=0.01, max_iterations=40, all_possible_transitions=True).fit(X, y)
    assert not all(_iob2_valid(labels) for labels in free.predict(test))
    constrained = CRF(c2=0.01, max_iterations=40, all_possible_transitions=True, grammar="iob2").fit(X, y)
    assert all(_iob2_valid(labels) for labels in constrained.predict(test))
    for marginals in constrained.predict_marginals(test):
        assert marginals[0]["I-X"] == pytest.approx(0.0, abs=1e-12)
    second = CRF(c2=0.01, max_iterations=40, order=2).fit(X, y)
    assert [list(labels) for labels in second.predict(X)] == y
    assert all(isinstance(key, tuple) and len(key) == 2 for key in second.transition_features_)


def test_predict_single_is_predict_of_one_sequence_and_refuses_what_it_refuses(fitted):
    crf, _, _ = fitted
    X, _ = toy_corpus(60, seed=7)
    X = [[{**token, "noise": str(n % 3)} for n, token in enumerate(xseq)] for xseq in X]  # unseen names too
    assert [crf.predict_single(xseq) for xseq in X] == [list(labels) for labels in crf.predict(X)]
    for bad in ([{"word": object()}], [{"word": {"1": "dog"}, "x": float("nan")}], "dog"):
        with pytest.raises(FstcrfError) as single:
            crf.predict_single(bad)
        with pytest.raises(FstcrfError) as batch:
            crf.predict([bad])
        assert type(single.value) is type(batch.value)
