"""The training algorithms: they learn, log, keep the best weights and survive Ctrl-C."""

import logging

import numpy as np
import pytest

from fstcrf.learn import train
from fstcrf.corpus.conll import Corpus, read_conll
from fstcrf.errors import FstcrfError
from fstcrf.corpus.evaluate import score_chunks
from fstcrf.model import ChainCRF
from fstcrf.learn.objective import TrainingSet
from corpora import TEMPLATE, chunk_corpus, random_corpus, training_set

SETTINGS = {"lbfgs": dict(max_iter=60), "perceptron": dict(max_iter=10), "sgd": dict(max_iter=10, learning_rate=0.2)}


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("algorithm", list(SETTINGS))
def test_each_algorithm_learns_a_synthetic_task(algorithm, order):
    train_corpus, test_corpus = chunk_corpus(1, 60), chunk_corpus(2, 40)
    model = ChainCRF(TEMPLATE, order=order, algorithm=algorithm, **SETTINGS[algorithm]).fit(train_corpus)
    assert model.predict(train_corpus) == train_corpus.column("chunk")
    assert model.score(test_corpus).f1 == 100.0
    assert 1 <= model.n_iter_ <= SETTINGS[algorithm]["max_iter"] and not model.interrupted_


def test_history_records_and_logging(caplog):
    corpus, dev = chunk_corpus(1, 30), chunk_corpus(2, 10)
    with caplog.at_level(logging.INFO, logger="fstcrf.learn.train"):
        model = ChainCRF(TEMPLATE, max_iter=5).fit(corpus, dev=dev)
    assert [r["iteration"] for r in model.history_] == [1, 2, 3, 4, 5]
    for record in model.history_:
        assert set(record) == {
            "algorithm",
            "iteration",
            "objective",
            "gradient_norm",
            "nonzero",
            "seconds",
            "elapsed",
            "dev_score",
            "dev_metric",
        }
        assert record["seconds"] > 0 and record["gradient_norm"] > 0 and 0 <= record["dev_score"] <= 100
        assert record["dev_metric"] == "F1"
    objectives = [r["objective"] for r in model.history_]
    assert objectives == sorted(objectives, reverse=True)
    assert len([m for m in caplog.messages if m.startswith("lbfgs iteration")]) == 5
    assert "dev F1" in caplog.messages[-1]


@pytest.mark.parametrize("algorithm", list(SETTINGS))
def test_the_weights_of_the_best_dev_iteration_are_kept(algorithm):
    corpus, dev = random_corpus(3, 60), chunk_corpus(4, 20)  # noisy training data
    model = ChainCRF(TEMPLATE, algorithm=algorithm, max_iter=6).fit(corpus, dev=dev)
    scores = [r["dev_score"] for r in model.history_]
    assert model.best_iteration_ == int(np.argmax(scores)) + 1
    assert model.score(dev).f1 == pytest.approx(max(scores), abs=1e-12)


def test_without_dev_the_final_weights_are_kept():
    corpus = chunk_corpus(1, 30)
    seen = []
    model = ChainCRF(TEMPLATE, max_iter=4).fit(corpus, callback=lambda r: seen.append(r["iteration"]))
    assert seen == [1, 2, 3, 4] and model.best_iteration_ == 4


@pytest.mark.parametrize("algorithm", list(SETTINGS))
def test_callback_can_stop_training(algorithm):
    model = ChainCRF(TEMPLATE, algorithm=algorithm, max_iter=20).fit(
        random_corpus(5, 40), callback=lambda record: record["iteration"] == 3
    )
    assert model.n_iter_ == 3 and not model.interrupted_


@pytest.mark.parametrize("algorithm", list(SETTINGS))
def test_ctrl_c_keeps_the_best_weights(algorithm):
    corpus, dev = chunk_corpus(1, 40), chunk_corpus(2, 10)

    def interrupt(record):
        if record["iteration"] == 3:
            raise KeyboardInterrupt

    model = ChainCRF(TEMPLATE, algorithm=algorithm, max_iter=20).fit(corpus, dev=dev, callback=interrupt)
    assert model.interrupted_ and model.n_iter_ == 3
    assert model.score(dev).f1 == pytest.approx(max(r["dev_score"] for r in model.history_), abs=1e-12)


def test_ctrl_c_inside_a_gradient_keeps_the_last_iteration(monkeypatch):
    corpus = chunk_corpus(1, 30)
    original = TrainingSet.loss_and_gradient
    calls = []
    kept = []

    def interrupted_on_the_eighth_call(self, theta):
        calls.append(1)
        if len(calls) == 8:
            raise KeyboardInterrupt
        return original(self, theta)

    monkeypatch.setattr(TrainingSet, "loss_and_gradient", interrupted_on_the_eighth_call)
    model = ChainCRF(TEMPLATE, max_iter=50).fit(corpus, callback=lambda r: kept.append(r))
    assert model.interrupted_ and 1 <= model.n_iter_ < 8 and model.best_iteration_ == model.n_iter_
    assert model.predict(corpus)


def test_sgd_refuses_a_step_that_flips_the_weights():
    problem = training_set(chunk_corpus(1, 4), 1, "supported")
    with pytest.raises(FstcrfError, match="learning_rate"):
        train.sgd(problem, sigma=0.1, learning_rate=1.0)


def test_no_prior_is_allowed():
    problem = training_set(chunk_corpus(1, 20), 1, "supported")
    result = train.lbfgs(problem, sigma=float("inf"), max_iter=5)
    assert result.n_iter == 5 and np.all(np.isfinite(result.weights))


@pytest.mark.slow
def test_real_data_first_order_chunking(data_file):
    """Order 1, 500 training sentences, 30 L-BFGS iterations: 89.7 F1 on the first 300 test
    sentences when measured; the most-frequent-tag baseline scores 77-80 on such data."""
    train_corpus = read_conll(data_file("conll2000/train.txt"))
    test_corpus = read_conll(data_file("conll2000/test.txt"))
    small = Corpus(train_corpus.column_names, train_corpus.sentences[:500])
    test = Corpus(test_corpus.column_names, test_corpus.sentences[:300])
    model = ChainCRF("crfpp", max_iter=30).fit(small)
    scores = model.score(test)
    baseline = most_frequent_tag(small, test)
    assert scores.f1 > 87.0 and scores.f1 > baseline + 7.0


def most_frequent_tag(train_corpus: Corpus, test_corpus: Corpus) -> float:
    """F1 of tagging each word with its most frequent training tag (by POS for unknown words)."""
    counts: dict = {}
    for sentence in train_corpus:
        for word, pos, chunk in zip(sentence["word"], sentence["pos"], sentence["chunk"]):
            for key in (("word", word), ("pos", pos)):
                counts.setdefault(key, {}).setdefault(chunk, 0)
                counts[key][chunk] += 1

    def tag(word, pos):
        table = counts.get(("word", word)) or counts.get(("pos", pos)) or {"O": 1}
        return max(table, key=table.get)

    predicted = [[tag(w, p) for w, p in zip(s["word"], s["pos"])] for s in test_corpus]
    return score_chunks(test_corpus.column("chunk"), predicted).f1


def test_lbfgs_reaches_the_optimum_scipy_finds():
    """The native L-BFGS against scipy's L-BFGS-B on the same penalised objective."""
    import scipy.optimize
    from fstcrf.corpus.synthetic import DATA_DIR

    corpus = read_conll(DATA_DIR / "demo_train.txt")
    corpus.sentences = corpus.sentences[:150]
    problem = training_set(corpus, 1, "supported")
    sigma = 2.0

    def penalised(theta):
        loss, gradient = problem.loss_and_gradient(theta)
        return loss + 0.5 * float(theta @ theta) / sigma**2, gradient + theta / sigma**2

    reference = scipy.optimize.minimize(
        penalised,
        np.zeros(problem.num_weights),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 2000, "ftol": 1e-15, "gtol": 1e-9},
    )
    result = train.lbfgs(problem, sigma=sigma, max_iter=2000, tol=1e-13)
    assert result.history[-1]["objective"] == pytest.approx(reference.fun, rel=1e-8)
    np.testing.assert_allclose(result.weights, reference.x, atol=1e-3)
    objectives = [record["objective"] for record in result.history]
    assert all(b <= a for a, b in zip(objectives, objectives[1:]))  # Armijo: every step descends


def test_a_training_set_pickles_and_gives_the_same_objective():
    import pickle

    problem = training_set(chunk_corpus(1, 20), 2, "supported")
    copy = pickle.loads(pickle.dumps(problem))
    theta = np.random.default_rng(0).normal(0.0, 0.1, problem.num_weights)
    loss, gradient = problem.loss_and_gradient(theta)
    copied_loss, copied_gradient = copy.loss_and_gradient(theta)
    assert copied_loss == loss and np.array_equal(copied_gradient, gradient)
