"""CRFsuite's online learners (fstcrf.learn.online) and the sparse path difference they use."""

import math
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fstcrf.learn import online, train
from fstcrf.features.encoding import TransitionWeights
from fstcrf.errors import ArgumentTypeError, FstcrfError
from fstcrf.grammar import load_grammar, restrict_to
from fstcrf.corpus.labels import gold_label_set
from fstcrf.learn.objective import Scorer, TrainingSet
from oracles import BruteForce
from corpora import chunk_corpus, random_corpus, reading_training_set, training_set

try:  # the tests that need pynini are marked pynini: the CI leg without it skips them
    from fstcrf.grammar import compile_grammar
except ImportError:
    compile_grammar = None

LEARNERS = {
    "pa": (online.passive_aggressive, dict(max_iter=10)),
    "arow": (online.arow, dict(max_iter=10)),
    "l2sgd": (online.l2sgd, dict(max_iter=12, c2=0.01, calibration_samples=20)),
}


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


# -- the rival and its sparse feature difference -----------------------------------


def brute_force_rival(problem, theta, index):
    """The rival by enumeration: the best allowed path if it is not gold, else the
    second best if it scores as high, else None (ties ranked by the kernel's rule)."""
    pot = problem.scorer.potentials(problem.encoded, theta, index, index + 1)
    state_map = np.arange(pot.topology.num_states)
    if problem.scorer.constrained is not None:
        restriction = restrict_to(pot, problem.scorer.constrained)
        pot, state_map = restriction.potentials, restriction.state_map
    oracle = BruteForce(pot.topology, pot.emissions, pot.transitions, pot.start, pot.final, pot.token_class)
    ranked = oracle.ranked()
    gold = problem.gold(index)
    if not np.array_equal(state_map[list(ranked[0][1])], gold):
        return state_map[list(ranked[0][1])]
    if len(ranked) > 1 and ranked[1][0] >= ranked[0][0]:
        return state_map[list(ranked[1][1])]
    return None


@pytest.mark.pynini
@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    order=st.sampled_from([1, 2]),
    reading=st.booleans(),
    constrained=st.booleans(),
    weights=st.sampled_from(["normal", "integers", "zero"]),
)
@pytest.mark.slow
def test_rival_is_the_brute_force_best_incorrect_path_and_its_difference_the_dense_one(
    seed, order, reading, constrained, weights
):
    corpus = random_corpus(seed, 10)
    labels = gold_label_set(corpus.column("chunk"))
    assume(not constrained or {"I-NP", "I-VP"} <= set(labels))  # the grammar names them
    constraint = compile_grammar(load_grammar("iob2"), labels) if constrained else None
    problem = (
        reading_training_set(corpus, order, constraint, threads=1)
        if reading
        else training_set(corpus, order, "supported", threads=1, constraint=constraint)
    )
    rng = np.random.default_rng(seed)
    # small integers make every sum exact, so ties between paths are exact too
    theta = {
        "normal": rng.normal(size=problem.num_weights),
        "integers": rng.integers(-1, 2, size=problem.num_weights).astype(float),
        "zero": np.zeros(problem.num_weights),
    }[weights]
    for index in range(problem.num_sequences):
        if problem.scorer.topology.num_states ** problem.encoded.lengths[index] > 10**5:
            continue  # too many sequences to enumerate
        expected = brute_force_rival(problem, theta, index)
        rival, mistake = problem.rival(theta, index), problem.mistake(theta, index)
        if expected is None:
            assert rival is None and mistake is None
            continue
        np.testing.assert_array_equal(rival, expected)
        gold = problem.gold(index)
        wrong, indices, values = mistake
        assert wrong == np.count_nonzero(gold != rival)
        dense = dense_difference(problem, index, gold, rival)
        assert indices.dtype == np.int64 and np.all(np.diff(indices) > 0) and np.all(values != 0)
        np.testing.assert_array_equal(indices, np.flatnonzero(dense))
        np.testing.assert_allclose(values, dense[indices], rtol=0, atol=1e-12)


def test_inactive_transitions_score_nothing_in_the_rival_search_and_sentence_gradients():
    """Transition weights "seen in training" only (TransitionWeights.active)."""
    base = training_set(random_corpus(12, 12), 1, "supported", threads=1)
    topology = base.scorer.topology
    active = np.random.default_rng(12).random(topology.num_edges) < 0.5
    active[topology.edge_ids[base.states[:-1], base.states[1:]]] = True  # the gold paths stay feasible
    scorer = Scorer(base.scorer.features, topology, 1, transitions=TransitionWeights(topology.num_edges, active=active))
    problem = TrainingSet(scorer, base.encoded, base.states, base.allowed_labels)
    theta = np.random.default_rng(13).normal(size=problem.num_weights)
    for index in range(problem.num_sequences):
        expected = brute_force_rival(problem, theta, index)
        rival = problem.rival(theta, index)
        assert (rival is None) == (expected is None)
        if rival is not None:
            np.testing.assert_array_equal(rival, expected)
            indices = problem.mistake(theta, index)[1]
            assert np.all(active[indices[indices >= scorer.features.num_features] - scorer.features.num_features])
    loss, gradient = problem.loss_and_gradient(theta)
    total, summed = 0.0, np.zeros(problem.num_weights)
    for index in range(problem.num_sequences):
        total += problem.add_gradient(theta / 2, 2.0, index, summed, -1.0)
    assert total == pytest.approx(loss, rel=1e-10)
    np.testing.assert_allclose(-summed, gradient, atol=1e-9)


def dense_mistake_epochs(problem, epochs, update):
    """The epochs of :func:`online._mistake_epochs` with dense differences: on each
    mistake, ``update(step, wrong, delta [D], margin)``."""
    rng = np.random.default_rng(0)
    weights, step = np.zeros(problem.num_weights), 1
    for _ in range(epochs):
        for index in rng.permutation(problem.num_sequences):
            rival = problem.rival(weights, index)
            if rival is not None:
                gold = problem.gold(index)
                delta = dense_difference(problem, index, gold, rival)
                update(weights, step, int(np.count_nonzero(gold != rival)), delta, float(weights @ delta))
            step += 1
    return weights, step


@pytest.mark.parametrize("reading", [False, True])
def test_pa_and_arow_epochs_equal_dense_reference_updates(reading):
    corpus = random_corpus(11, 30)
    problem = reading_training_set(corpus, 1, threads=1) if reading else training_set(corpus, 2, "supported", threads=1)
    c = 0.5
    averaged = np.zeros(problem.num_weights)

    def pa_step(weights, step, wrong, delta, margin):
        norm2 = float(delta @ delta)
        if norm2 > 0:
            tau = min(c, (math.sqrt(wrong) - margin) / norm2)
            weights += tau * delta
            averaged[:] += tau * step * delta

    weights, steps = dense_mistake_epochs(problem, 3, pa_step)
    result = online.passive_aggressive(problem, 1, c, max_iter=3)
    np.testing.assert_allclose(result.weights, weights - averaged / steps, rtol=1e-10, atol=1e-12)

    covariance = np.ones(problem.num_weights)

    def arow_step(weights, step, wrong, delta, margin):
        alpha = (wrong - margin) / (1.0 + float(delta * covariance @ delta))
        weights += alpha * covariance * delta
        covariance[:] = 1.0 / (1.0 / covariance + delta * delta)

    weights, _ = dense_mistake_epochs(problem, 3, arow_step)
    np.testing.assert_allclose(online.arow(problem, max_iter=3).weights, weights, rtol=1e-10, atol=1e-12)


# -- single updates against their closed forms ---------------------------------------


def one_sentence_problem():
    problem = training_set(chunk_corpus(7, 1), 1, "supported", threads=1)
    zero = np.zeros(problem.num_weights)
    gold, rival = problem.gold(0), problem.rival(zero, 0)
    return problem, gold, rival, dense_difference(problem, 0, gold, rival)


@pytest.mark.parametrize(
    "pa_type,c,error_sensitive", [(0, 1.0, True), (1, 0.01, True), (1, 100.0, False), (2, 0.3, True)]
)
def test_passive_aggressive_step_is_the_closed_form(pa_type, c, error_sensitive):
    problem, gold, rival, delta = one_sentence_problem()
    wrong = int(np.count_nonzero(gold != rival))
    cost = math.sqrt(wrong) if error_sensitive else 1.0  # the margin is 0 at w = 0
    norm2 = float(delta @ delta)
    tau = {0: cost / norm2, 1: min(c, cost / norm2), 2: cost / (norm2 + 0.5 / c)}[pa_type]
    result = online.passive_aggressive(problem, pa_type, c, error_sensitive, averaging=False, max_iter=1)
    np.testing.assert_allclose(result.weights, tau * delta, rtol=1e-12, atol=1e-15)
    assert result.history[0]["objective"] == pytest.approx(cost)
    if pa_type == 0:  # PA: afterwards gold beats that rival by exactly the required margin
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
    problem = training_set(random_corpus(3, 40), 1, "supported")  # noisy: the scores move

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
    online.l2sgd(
        problem,
        c2=c2,
        max_iter=15,
        calibration_samples=40,
        evaluate=lambda w: seen.append(objective(w)) or Scores(-seen[-1]),
    )
    optimum = objective(train.lbfgs(problem, sigma=math.sqrt(0.5 / c2), max_iter=200).weights)
    start = objective(np.zeros(problem.num_weights))
    assert seen[-1] < seen[7] < seen[3] < seen[0] < start  # SGD: down, though not at every epoch
    assert seen[-1] - optimum < 0.1 * (start - optimum)


def test_stopping_tests():
    problem = training_set(chunk_corpus(1, 30), 1, "supported")
    arow = online.arow(problem, max_iter=50)  # epsilon 0: stops after an epoch without mistakes
    assert arow.n_iter < 50 and arow.history[-1]["objective"] == 0.0
    assert arow.history[-2]["objective"] > 0.0
    assert online.passive_aggressive(problem, max_iter=50, epsilon=1e9).n_iter == 1
    assert online.passive_aggressive(problem, max_iter=4).n_iter == 4  # epsilon 0: never
    sgd = online.l2sgd(problem, max_iter=50, period=3, delta=10.0, calibration_samples=10)
    assert sgd.n_iter == 4


@pytest.mark.parametrize(
    "learner,params,error",
    [
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
    ],
)
def test_bad_parameters_raise_typed_errors(learner, params, error):
    problem = training_set(chunk_corpus(1, 3), 1, "supported", threads=1)
    with pytest.raises(error) as raised:
        learner(problem, **params)
    assert next(iter(params)) in str(raised.value) and isinstance(raised.value, ValueError)


def test_l2sgd_refuses_a_calibration_eta_whose_prior_step_flips_the_weights():
    problem = training_set(chunk_corpus(1, 3), 1, "supported", threads=1)
    with pytest.raises(FstcrfError, match="calibration_eta"):
        online.l2sgd(problem, c2=10.0, calibration_eta=1.0, calibration_max_trials=2)
