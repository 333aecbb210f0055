"""CRFsuite's online learners (fstcrf.online) and the sparse path difference they use."""
import math
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstcrf import online, train
from fstcrf.errors import ArgumentTypeError, FstcrfError
from test_model import chunk_corpus, random_corpus, reading_training_set, training_set

LEARNERS = {"pa": (online.passive_aggressive, dict(max_iter=10)),
            "arow": (online.arow, dict(max_iter=10)),
            "l2sgd": (online.l2sgd, dict(max_iter=12, c2=0.01, calibration_samples=20))}


@dataclass
class Scores:
    primary: float
    metric: str = "accuracy"


def dense_difference(problem, index, plus, minus) -> np.ndarray:
    out = np.zeros(problem.num_weights)
    problem.add_path_difference(index, plus, minus, out, 1.0)
    return out


def sentence_accuracy(problem, weights) -> float:
    """Percent of the sentences whose gold path is the unique best."""
    return 100.0 * np.mean([problem.rival(weights, i) is None for i in range(problem.num_sequences)])


# -- the sparse path difference ------------------------------------------------------

@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10 ** 6), order=st.sampled_from([1, 2]),
       feature_set=st.sampled_from(["supported", "complete"]), reading=st.booleans())
def test_sparse_path_difference_equals_the_dense_one(seed, order, feature_set, reading):
    corpus = random_corpus(seed, 6)
    problem = (reading_training_set(corpus, order, threads=1) if reading
               else training_set(corpus, order, feature_set, threads=1))
    rng = np.random.default_rng(seed)
    for index in range(problem.num_sequences):
        gold = problem.gold(index)
        rival = problem.rival(rng.normal(size=problem.num_weights), index)
        for plus, minus in [(gold, gold)] + ([] if rival is None else [(gold, rival), (rival, gold)]):
            dense = dense_difference(problem, index, plus, minus)
            indices, values = problem.path_difference(index, plus, minus)
            assert indices.dtype == np.int64 and np.all(np.diff(indices) > 0) and np.all(values != 0)
            np.testing.assert_array_equal(indices, np.flatnonzero(dense))
            np.testing.assert_allclose(values, dense[indices], rtol=0, atol=1e-12)


# -- single updates against their closed forms ---------------------------------------

def one_sentence_problem():
    problem = training_set(chunk_corpus(7, 1), 1, "supported", threads=1)
    zero = np.zeros(problem.num_weights)
    gold, rival = problem.gold(0), problem.rival(zero, 0)
    return problem, gold, rival, dense_difference(problem, 0, gold, rival)


@pytest.mark.parametrize("pa_type,c,error_sensitive", [(0, 1.0, True), (1, 0.01, True), (1, 100.0, False),
                                                       (2, 0.3, True)])
def test_passive_aggressive_step_is_the_closed_form(pa_type, c, error_sensitive):
    problem, gold, rival, delta = one_sentence_problem()
    wrong = int(np.count_nonzero(gold != rival))
    cost = math.sqrt(wrong) if error_sensitive else 1.0        # the margin is 0 at w = 0
    norm2 = float(delta @ delta)
    tau = {0: cost / norm2, 1: min(c, cost / norm2), 2: cost / (norm2 + 0.5 / c)}[pa_type]
    result = online.passive_aggressive(problem, pa_type, c, error_sensitive, averaging=False, max_iter=1)
    np.testing.assert_allclose(result.weights, tau * delta, rtol=1e-12, atol=1e-15)
    assert result.history[0]["objective"] == pytest.approx(cost)
    if pa_type == 0:      # PA: afterwards gold beats that rival by exactly the required margin
        assert float(result.weights @ delta) == pytest.approx(math.sqrt(wrong))
    # averaged: u = 2 after one sentence, so w - u^-1 * (1 * tau * delta) = tau * delta / 2
    averaged = online.passive_aggressive(problem, pa_type, c, error_sensitive, averaging=True, max_iter=1)
    np.testing.assert_allclose(averaged.weights, tau * delta / 2, rtol=1e-12, atol=1e-15)


def test_arow_first_step_is_the_closed_form():
    problem, gold, rival, delta = one_sentence_problem()
    wrong = int(np.count_nonzero(gold != rival))
    variance, gamma = 0.7, 2.5
    alpha = wrong / (gamma + variance * float(delta @ delta))
    result = online.arow(problem, variance, gamma, max_iter=1)
    np.testing.assert_allclose(result.weights, alpha * variance * delta, rtol=1e-12, atol=1e-15)


def test_arow_update_against_the_full_covariance_closed_form():
    rng = np.random.default_rng(3)
    D, gamma, cost = 9, 1.7, 2.2
    mean, covariance = rng.normal(size=D), rng.uniform(0.2, 2.0, size=D)
    indices = np.array([0, 2, 3, 7])
    x = np.zeros(D)
    x[indices] = rng.normal(size=len(indices))
    sigma = np.diag(covariance)
    expected_mean = mean + cost / (gamma + x @ sigma @ x) * sigma @ x
    # the diagonal approximation keeps the diagonal of the updated precision
    expected_precision = np.diag(np.linalg.inv(sigma) + np.outer(x, x) / gamma)
    online.arow_update(mean, covariance, indices, x[indices], cost, gamma)
    np.testing.assert_allclose(mean, expected_mean, rtol=1e-12)
    np.testing.assert_allclose(1.0 / covariance, expected_precision, rtol=1e-12)


# -- learning, records, stopping ---------------------------------------------------

@pytest.mark.parametrize("name", list(LEARNERS))
def test_each_learner_separates_a_separable_set(name):
    learner, params = LEARNERS[name]
    problem = training_set(chunk_corpus(1, 40), 1, "supported")
    result = learner(problem, **params)
    assert sentence_accuracy(problem, result.weights) == 100.0
    assert 1 <= result.n_iter <= params["max_iter"] and not result.interrupted
    assert [r["iteration"] for r in result.history] == list(range(1, result.n_iter + 1))
    assert all(r["algorithm"] == name and r["seconds"] > 0 for r in result.history)


@pytest.mark.parametrize("name", list(LEARNERS))
def test_best_dev_iteration_callback_stop_and_ctrl_c(name):
    learner, params = LEARNERS[name]
    problem = training_set(random_corpus(3, 40), 1, "supported")      # noisy: the scores move

    def evaluate(weights):
        return Scores(sentence_accuracy(problem, weights))

    result = learner(problem, **{**params, "max_iter": 4}, evaluate=evaluate)
    scores = [r["dev_score"] for r in result.history]
    assert result.best_iteration == int(np.argmax(scores)) + 1
    assert evaluate(result.weights).primary == max(scores)

    stopped = learner(problem, **params, callback=lambda record: record["iteration"] == 2)
    assert stopped.n_iter == 2 and not stopped.interrupted

    def interrupt(record):
        if record["iteration"] == 3:
            raise KeyboardInterrupt

    interrupted = learner(problem, **params, evaluate=evaluate, callback=interrupt)
    assert interrupted.interrupted and interrupted.n_iter == 3
    assert evaluate(interrupted.weights).primary == max(r["dev_score"] for r in interrupted.history)


def test_l2sgd_objective_decreases_towards_the_lbfgs_optimum():
    problem = training_set(random_corpus(5, 40), 1, "supported")
    c2 = 0.5

    def objective(weights):
        return problem.loss_and_gradient(weights)[0] + c2 * float(weights @ weights)

    seen = []
    online.l2sgd(problem, c2=c2, max_iter=15, calibration_samples=40,
                 evaluate=lambda w: seen.append(objective(w)) or Scores(-seen[-1]))
    optimum = objective(train.lbfgs(problem, sigma=math.sqrt(0.5 / c2), max_iter=200).weights)
    start = objective(np.zeros(problem.num_weights))
    assert seen[-1] < seen[7] < seen[3] < seen[0] < start        # SGD: down, though not at every epoch
    assert seen[-1] - optimum < 0.1 * (start - optimum)


def test_stopping_tests():
    problem = training_set(chunk_corpus(1, 30), 1, "supported")
    arow = online.arow(problem, max_iter=50)          # epsilon 0: stops after an epoch without mistakes
    assert arow.n_iter < 50 and arow.history[-1]["objective"] == 0.0
    assert arow.history[-2]["objective"] > 0.0
    assert online.passive_aggressive(problem, max_iter=50, epsilon=1e9).n_iter == 1
    assert online.passive_aggressive(problem, max_iter=4).n_iter == 4            # epsilon 0: never
    sgd = online.l2sgd(problem, max_iter=50, period=3, delta=10.0, calibration_samples=10)
    assert sgd.n_iter == 4


@pytest.mark.parametrize("learner,params,error", [
    (online.passive_aggressive, dict(pa_type=3), FstcrfError),
    (online.passive_aggressive, dict(pa_type=1.0), ArgumentTypeError),
    (online.passive_aggressive, dict(c=0.0), FstcrfError),
    (online.passive_aggressive, dict(c="1"), ArgumentTypeError),
    (online.passive_aggressive, dict(error_sensitive=1), ArgumentTypeError),
    (online.passive_aggressive, dict(averaging=None), ArgumentTypeError),
    (online.passive_aggressive, dict(epsilon=-1.0), FstcrfError),
    (online.passive_aggressive, dict(max_iter=0), FstcrfError),
    (online.arow, dict(variance=-1.0), FstcrfError),
    (online.arow, dict(gamma=math.inf), FstcrfError),
    (online.arow, dict(max_iter=2.5), ArgumentTypeError),
    (online.arow, dict(epsilon=math.nan), FstcrfError),
    (online.l2sgd, dict(c2=0.0), FstcrfError),
    (online.l2sgd, dict(period=0), FstcrfError),
    (online.l2sgd, dict(delta=-1e-6), FstcrfError),
    (online.l2sgd, dict(calibration_eta=0.0), FstcrfError),
    (online.l2sgd, dict(calibration_rate=1.0), FstcrfError),
    (online.l2sgd, dict(calibration_samples=1.5), ArgumentTypeError),
    (online.l2sgd, dict(calibration_candidates=0), FstcrfError),
    (online.l2sgd, dict(calibration_max_trials=-3), FstcrfError),
])
def test_bad_parameters_raise_typed_errors(learner, params, error):
    problem = training_set(chunk_corpus(1, 3), 1, "supported", threads=1)
    with pytest.raises(error) as raised:
        learner(problem, **params)
    assert next(iter(params)) in str(raised.value) and isinstance(raised.value, ValueError)


def test_l2sgd_refuses_a_calibration_eta_whose_prior_step_flips_the_weights():
    problem = training_set(chunk_corpus(1, 3), 1, "supported", threads=1)
    with pytest.raises(FstcrfError, match="calibration_eta"):
        online.l2sgd(problem, c2=10.0, calibration_eta=1.0, calibration_max_trials=2)
