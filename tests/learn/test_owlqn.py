"""L1 / elastic-net training (OWL-QN) and CRFsuite's L-BFGS options of train.lbfgs.

Oracles: the L1 optimality (subgradient) conditions, scipy's L-BFGS-B on the
split form theta = u - v (u, v >= 0), the L-BFGS of train.py as it was before
these options (read from git), and the stopping rules recomputed from the
records.
"""

import math
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.optimize
from hypothesis import given, settings
from hypothesis import strategies as st

from fstcrf.learn import linesearch, train
from fstcrf.errors import ArgumentTypeError, FstcrfError, ShapeError
from corpora import chunk_corpus, random_corpus, training_set
from objectives import Logistic, Quadratic
from history import module_at

#: The last commit of fstcrf/train.py before l1 and the CRFsuite options: its lbfgs is the old path.
BEFORE_OWLQN = "f3e5a9b1feba33e70bdf3e4db101dccb7c5b9886"


def problems(seed: int, num_weights: int):
    return st.sampled_from([Quadratic(seed, num_weights), Logistic(seed, num_weights)])


def smooth_gradient(problem, sigma: float, theta: np.ndarray) -> np.ndarray:
    return problem.loss_and_gradient(theta)[1] + theta / sigma**2


def objective(problem, sigma: float, l1: float, theta: np.ndarray) -> float:
    return problem.loss_and_gradient(theta)[0] + 0.5 * float(theta @ theta) / sigma**2 + l1 * float(np.abs(theta).sum())


def check_l1_optimal(problem, sigma: float, l1: float, theta: np.ndarray, tolerance: float) -> None:
    """The subgradient conditions: g + l1 sign(theta) = 0 off zero, |g| <= l1 at zero."""
    gradient = smooth_gradient(problem, sigma, theta)
    nonzero = theta != 0.0
    np.testing.assert_array_less(np.abs(gradient[nonzero] + l1 * np.sign(theta[nonzero])), tolerance)
    np.testing.assert_array_less(np.abs(gradient[~nonzero]), l1 + tolerance)


def split_optimum(
    problem, sigma: float, l1: float, free: np.ndarray | None = None, start: np.ndarray | None = None
) -> tuple[np.ndarray, float]:
    """scipy's L-BFGS-B on the ``free`` weights written as u - v (u, v >= 0; all weights by
    default), the others held at ``start``: (theta [D], objective).  The split form is
    degenerate (u and v may both stay positive), so L-BFGS-B is restarted from
    u = max(theta, 0), v = max(-theta, 0) until the objective stops falling."""
    size = problem.num_weights
    start = np.zeros(size) if start is None else start
    free = np.ones(size, dtype=bool) if free is None else free
    count = int(free.sum())

    def theta_of(uv):
        theta = start.copy()
        theta[free] = uv[:count] - uv[count:]
        return theta

    def split_objective(uv):
        theta = theta_of(uv)
        gradient = smooth_gradient(problem, sigma, theta)[free]
        return objective(problem, sigma, l1, theta), np.concatenate([gradient + l1, -gradient + l1])

    theta, best = start.copy(), math.inf
    while True:
        found = scipy.optimize.minimize(
            split_objective,
            np.concatenate([np.maximum(theta[free], 0.0), np.maximum(-theta[free], 0.0)]),
            jac=True,
            method="L-BFGS-B",
            bounds=[(0.0, None)] * (2 * count),
            options={"maxiter": 5000, "ftol": 0.0, "gtol": 1e-13},
        )
        if not found.fun < best:
            return theta, best
        theta, best = theta_of(found.x), float(found.fun)


@settings(max_examples=15, deadline=None)
@given(
    st.integers(0, 10_000), st.integers(2, 8), st.sampled_from([math.inf, 1.0, 3.0]), st.floats(0.01, 5.0), st.data()
)
def test_owlqn_is_l1_optimal_and_matches_the_split_form(seed, num_weights, sigma, l1, data):
    problem = data.draw(problems(seed, num_weights))
    result = train.lbfgs(problem, sigma, max_iter=1000, tol=1e-15, l1=l1)
    check_l1_optimal(problem, sigma, l1, result.weights, 1e-4 * max(1.0, l1))
    reference, reference_objective = split_optimum(problem, sigma, l1)
    final = objective(problem, sigma, l1, result.weights)
    assert final <= reference_objective + 1e-9 * max(1.0, abs(reference_objective))
    np.testing.assert_allclose(result.weights, reference, atol=1e-4)


def test_owlqn_on_a_tiny_crf():
    problem = training_set(chunk_corpus(1, 12), 1, "supported")
    sigma, l1 = 3.0, 0.3
    result = train.lbfgs(problem, sigma, max_iter=1000, tol=1e-15, l1=l1)
    check_l1_optimal(problem, sigma, l1, result.weights, 1e-4)
    reference, reference_objective = split_optimum(problem, sigma, l1)
    assert result.history[-1]["objective"] == pytest.approx(reference_objective, rel=1e-9)
    np.testing.assert_allclose(result.weights, reference, atol=1e-4)
    assert 0 < np.count_nonzero(result.weights) < problem.num_weights / 2


def test_records_count_the_l1_term_and_the_nonzero_weights():
    problem = training_set(chunk_corpus(1, 20), 1, "supported")
    sigma, l1 = 3.0, 0.3
    seen = []
    result = train.lbfgs(
        problem,
        sigma,
        max_iter=15,
        l1=l1,
        evaluate=lambda theta: seen.append(theta.copy()) or SimpleNamespace(primary=0.0, metric="none"),
    )
    assert len(seen) == len(result.history) == 15
    for theta, record in zip(seen, result.history):
        assert record["objective"] == pytest.approx(objective(problem, sigma, l1, theta), rel=1e-12)
        assert record["nonzero"] == np.count_nonzero(theta)
    assert result.history[0]["nonzero"] > result.history[-1]["nonzero"]  # L1 zeroes weights it had moved
    plain = train.lbfgs(problem, sigma, max_iter=3)
    assert [record["nonzero"] for record in plain.history] == [problem.num_weights] * 3


def test_a_warm_start_is_recorded_with_its_l1_term():
    problem = Logistic(3, 5)
    initial = np.array([1.0, -2.0, 0.0, 0.5, 0.0])
    result = train.lbfgs(problem, 2.0, max_iter=3, l1=0.7, initial=initial)
    start = result.history[0]
    assert start["iteration"] == 0 and start["nonzero"] == 3
    assert start["objective"] == pytest.approx(objective(problem, 2.0, 0.7, initial), rel=1e-14)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 8), st.sampled_from([math.inf, 2.0]), st.data())
def test_an_l1_above_the_gradient_at_zero_keeps_every_weight_at_zero(seed, num_weights, sigma, data):
    problem = data.draw(problems(seed, num_weights))
    largest = float(np.abs(problem.loss_and_gradient(np.zeros(num_weights))[1]).max())
    result = train.lbfgs(problem, sigma, l1=1.01 * largest)
    assert not result.weights.any() and result.n_iter == 0


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000), st.integers(4, 8), st.data())
def test_a_larger_l1_keeps_fewer_weights(seed, num_weights, data):
    problem = data.draw(problems(seed, num_weights))
    largest = float(np.abs(problem.loss_and_gradient(np.zeros(num_weights))[1]).max())
    counts = [
        np.count_nonzero(train.lbfgs(problem, 2.0, max_iter=500, tol=1e-12, l1=l1).weights)
        for l1 in (1e-6 * largest, 0.9 * largest)
    ]
    assert counts[0] == num_weights and counts[1] < num_weights


def test_crf_nonzero_weights_fall_as_l1_grows():
    problem = training_set(random_corpus(3, 30), 1, "supported")
    counts = [np.count_nonzero(train.lbfgs(problem, 3.0, max_iter=200, l1=l1).weights) for l1 in (0.01, 0.3, 3.0)]
    assert counts[0] > counts[1] > counts[2] > 0


def previous_train_module():
    """fstcrf.learn.train as of BEFORE_OWLQN, imported from git as fstcrf.train_before_owlqn."""
    return module_at(BEFORE_OWLQN, "fstcrf/train.py", "fstcrf.train_before_owlqn", "fstcrf")


def scipy_shaped_line_search(f, fprime, xk, pk, gfk=None, old_fval=None, c1=None, c2=None, maxiter=10, **_):
    """linesearch.strong_wolfe_step behind scipy.optimize.line_search's signature (the step first)."""

    def along(step):
        x = xk + step * pk
        return f(x), float(fprime(x) @ pk), None

    found = linesearch.strong_wolfe_step(along, old_fval, float(gfk @ pk), maxiter)
    return (None if found is None else found[0],)


@pytest.mark.parametrize("order, sigma", [(1, 1.0), (2, math.inf)])
def test_without_l1_the_iterates_are_the_old_ones_to_rounding(order, sigma, monkeypatch):
    """The old L-BFGS loop with today's two-loop recursion (in C since; its rounding
    differs from the old numpy one) and line search (ours since, where the old loop
    called scipy's): both are checked on their own below.  Bit for bit until the line
    search moved the weights in place (its trial points, and the pairs' steps, then
    differ by rounding): now to 1e-9 of the largest weight (element by element, a weight
    near zero can differ by more than 1e-9 of itself: 1.5e-9 with numpy 2.4's BLAS)."""
    old = previous_train_module()
    old._two_loop = train.two_loop
    monkeypatch.setattr(scipy.optimize, "line_search", scipy_shaped_line_search)
    problem = training_set(random_corpus(order, 25), order, "supported")
    old_thetas, new_thetas = [], []

    def keeping(thetas):
        return lambda theta: thetas.append(theta.copy()) or SimpleNamespace(primary=0.0, metric="none")

    before = old.lbfgs(problem, sigma, 30, 1e-9, keeping(old_thetas))
    after = train.lbfgs(problem, sigma, 30, 1e-9, keeping(new_thetas), l1=0.0)
    assert len(new_thetas) == len(old_thetas) > 5
    for a, b in zip(old_thetas, new_thetas):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-9 * np.abs(a).max())
    np.testing.assert_allclose(
        [r["objective"] for r in after.history], [r["objective"] for r in before.history], rtol=1e-9
    )
    norms = [r["gradient_norm"] for r in before.history]  # near the optimum: to 1e-9 of the first
    np.testing.assert_allclose([r["gradient_norm"] for r in after.history], norms, rtol=1e-9, atol=1e-9 * norms[0])


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12), st.integers(0, 5), st.integers(0, 2**32 - 1))
def test_two_loop_is_the_inverse_bfgs_matrix_times_the_gradient(dimension, num_pairs, seed):
    """-H g with H built explicitly by the BFGS inverse update from H0 = (s.y / y.y) I of
    the newest pair, and the old numpy recursion, agree with the BLAS recursion."""
    rng = np.random.default_rng(seed)
    gradient = rng.normal(size=dimension)
    pairs = []
    while len(pairs) < num_pairs:
        s = rng.normal(size=dimension)
        y = s + 0.3 * rng.normal(size=dimension)
        if s @ y > 0.1:
            pairs.append((s, y, 1.0 / float(s @ y)))
    inverse = np.eye(dimension) * (
        float(pairs[-1][0] @ pairs[-1][1]) / float(pairs[-1][1] @ pairs[-1][1]) if pairs else 1.0
    )
    for s, y, rho in pairs:
        step = np.eye(dimension) - rho * np.outer(s, y)
        inverse = step @ inverse @ step.T + rho * np.outer(s, s)
    direction = train.two_loop(gradient, pairs)
    np.testing.assert_allclose(direction, -inverse @ gradient, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(direction, previous_train_module()._two_loop(gradient, pairs), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("l1", [0.0, 0.5])
def test_frozen_weights_stay_at_their_start_and_the_rest_is_optimal(l1):
    problem = Logistic(11, 6)
    sigma = 2.0
    initial = np.array([0.5, 0.0, -1.0, 0.0, 0.0, 0.0])
    frozen = np.array([True, True, False, False, True, False])
    result = train.lbfgs(problem, sigma, max_iter=500, tol=1e-15, l1=l1, initial=initial, frozen=frozen)
    assert np.array_equal(result.weights[frozen], initial[frozen])
    reference, _ = split_optimum(problem, sigma, l1, ~frozen, initial)
    np.testing.assert_allclose(result.weights, reference, atol=1e-5)


def test_frozen_crf_weights_stay_put():
    problem = training_set(chunk_corpus(1, 20), 1, "supported")
    frozen = np.zeros(problem.num_weights, dtype=bool)
    frozen[::3] = True
    for l1 in (0.0, 0.1):
        weights = train.lbfgs(problem, 3.0, max_iter=10, l1=l1, frozen=frozen).weights
        assert not weights[frozen].any() and weights[~frozen].any()


def recorded_run(problem, sigma, **options):
    """(result, the weights of each record) of an lbfgs run."""
    thetas = []
    result = train.lbfgs(
        problem,
        sigma,
        evaluate=lambda theta: thetas.append(theta.copy()) or SimpleNamespace(primary=0.0, metric="none"),
        **options,
    )
    return result, thetas


@pytest.mark.parametrize("l1", [0.0, 0.2])
def test_epsilon_stops_at_the_first_small_gradient(l1):
    problem = training_set(chunk_corpus(1, 20), 1, "supported")
    epsilon = 1e-2
    result, thetas = recorded_run(problem, 3.0, max_iter=500, tol=1e-300, l1=l1, epsilon=epsilon)
    small = [
        record["gradient_norm"] <= epsilon * max(1.0, float(np.linalg.norm(theta)))
        for record, theta in zip(result.history, thetas)
    ]
    assert small[-1] and not any(small[:-1]) and 3 < result.n_iter < 500
    if l1:  # the pseudo-gradient is what the record shows
        theta = thetas[-1]
        steepest = train.pseudo_gradient(theta, smooth_gradient(problem, 3.0, theta), l1, None)
        assert result.history[-1]["gradient_norm"] == pytest.approx(float(np.linalg.norm(steepest)), rel=1e-9)


def test_epsilon_met_at_the_start_runs_no_iteration():
    problem = Quadratic(2, 4)
    result = train.lbfgs(problem, math.inf, initial=problem.centre.copy(), epsilon=1e-8)
    assert result.n_iter == 0 and np.array_equal(result.weights, problem.centre)


@pytest.mark.parametrize("period, delta, l1", [(3, 1e-3, 0.0), (1, 1e-2, 0.0), (5, None, 0.1), (None, 1e-3, 0.0)])
def test_the_delta_test_stops_where_crfsuite_would(period, delta, l1):
    problem = training_set(chunk_corpus(2, 20), 1, "supported")
    result = train.lbfgs(problem, 3.0, max_iter=500, tol=0.5, l1=l1, period=period, delta=delta)
    period = train.CRFSUITE_PERIOD if period is None else period
    delta = train.CRFSUITE_DELTA if delta is None else delta
    losses = [objective(problem, 3.0, l1, np.zeros(problem.num_weights))] + [
        record["objective"] for record in result.history
    ]
    stops = [k for k in range(period, len(losses)) if (losses[k - period] - losses[k]) / abs(losses[k]) < delta]
    assert stops and stops[0] == result.n_iter < 500
    assert result.n_iter > 2  # tol = 0.5 alone would have stopped after the first iterations


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(1.0, 100.0), min_size=1, max_size=30), st.integers(1, 6), st.floats(0.0, 0.2))
def test_the_delta_test_against_its_formula(losses, period, delta):
    converged = train.stopping_test(1e-7, None, period, delta, [losses[0]])
    theta, steepest = np.ones(2), np.ones(2)
    stops = [converged(theta, loss, steepest) for loss in losses[1:]]
    expected = [k >= period and (losses[k - period] - losses[k]) / losses[k] < delta for k in range(1, len(losses))]
    assert stops == expected


def test_the_tol_test_is_the_default():
    problem = training_set(chunk_corpus(2, 20), 1, "supported")
    result = train.lbfgs(problem, 3.0, max_iter=500, tol=1e-3)
    losses = [record["objective"] for record in result.history]
    drops = [a - b <= 1e-3 * max(abs(a), abs(b), 1.0) for a, b in zip(losses, losses[1:])]
    assert drops[-1] and not any(drops[:-1])


@pytest.mark.parametrize("linesearch", ["Backtracking", "StrongBacktracking"])
def test_backtracking_searches_reach_the_optimum_with_descending_steps(linesearch):
    problem = Logistic(5, 6)
    sigma = 2.0
    result = train.lbfgs(problem, sigma, max_iter=500, tol=1e-15, linesearch=linesearch)
    reference, reference_objective = split_optimum(problem, sigma, 0.0)
    np.testing.assert_allclose(result.weights, reference, atol=1e-5)
    losses = [objective(problem, sigma, 0.0, np.zeros(6))] + [r["objective"] for r in result.history]
    assert all(b < a for a, b in zip(losses, losses[1:-1]))


@pytest.mark.parametrize(
    "name, condition",
    [("strong-wolfe", None), ("MoreThuente", None), ("Backtracking", "wolfe"), ("StrongBacktracking", "strong-wolfe")],
)
def test_each_line_search_name_runs_its_search(monkeypatch, name, condition):
    conditions = []
    backtracking = linesearch.backtracking

    def spy(*arguments):
        conditions.append(arguments[6])
        return backtracking(*arguments)

    monkeypatch.setattr(train, "backtracking", spy)
    train.lbfgs(Logistic(5, 4), 2.0, max_iter=5, linesearch=name)
    assert conditions == ([] if condition is None else [condition] * len(conditions)) and (
        condition is None or conditions
    )


@pytest.mark.parametrize("strong", [False, True])
def test_a_backtracking_step_meets_the_wolfe_conditions(strong):
    problem = Quadratic(7, 5)

    def smooth(theta):
        return problem.loss_and_gradient(theta)

    rng = np.random.default_rng(0)
    for _ in range(20):
        theta = rng.normal(0.0, 3.0, 5)
        loss, gradient = smooth(theta)
        direction = -gradient * rng.uniform(1e-3, 1.0)  # steps from far too short to too long
        found = linesearch.backtracking(
            smooth, theta, loss, gradient, direction, 0.0, "strong-wolfe" if strong else "wolfe", 40
        )
        point, point_loss, point_gradient = found
        slope, point_slope = float(gradient @ direction), float(point_gradient @ direction)
        assert point_loss <= loss + linesearch.ARMIJO * float(gradient @ (point - theta))
        assert point_slope >= linesearch.CURVATURE * slope
        if strong:
            assert abs(point_slope) <= -linesearch.CURVATURE * slope


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10_000), st.floats(1e-3, 1e2), st.sampled_from(["quadratic", "logistic", "quartic"]))
def test_the_zoom_search_meets_the_strong_wolfe_conditions(seed, scale, shape):
    """Steps from far too short to far too long: the step found (often in the zoom,
    after bracketing) meets both strong Wolfe conditions, within its evaluations."""
    rng = np.random.default_rng(seed)
    problem = Quadratic(seed, 5) if shape == "quadratic" else Logistic(seed % 50, 5)
    if shape == "quartic":

        def smooth(theta):
            return float(np.sum(theta**4) + theta @ theta), 4 * theta**3 + 2 * theta
    else:
        smooth = problem.loss_and_gradient
    start = rng.normal(0.0, 2.0, 5)
    theta = start.copy()
    loss, gradient = smooth(theta)
    direction = -gradient * scale
    calls = []

    def counted(point):
        assert point is theta  # the trial points are made in theta's array
        calls.append(point.copy())
        return smooth(point)

    with np.errstate(over="ignore"):  # long trial steps overflow exp in the logistic loss
        found = linesearch.zoom_search(counted, theta, loss, gradient, direction, 40)
    assert len(calls) <= 40
    assert found is not None
    step, point_loss, point_gradient = found
    # each move rounds once per coordinate, on the order of the largest trial point
    largest = max(float(np.abs(point).max()) for point in [start, *calls])
    np.testing.assert_allclose(theta, start + step * direction, rtol=0, atol=1e-15 * (len(calls) + 1) * largest)
    slope, point_slope = float(gradient @ direction), float(point_gradient @ direction)
    assert point_loss <= loss + linesearch.ARMIJO * step * slope
    assert abs(point_slope) <= -linesearch.CURVATURE * slope
    assert np.array_equal(theta, calls[-1])
    assert (point_loss, *point_gradient) == (smooth(theta)[0], *smooth(theta)[1])


def test_a_failed_or_interrupted_zoom_search_moves_theta_back():
    problem = Quadratic(3, 4)
    start = np.linspace(-1.0, 2.0, 4)
    theta = start.copy()
    loss, gradient = problem.loss_and_gradient(theta)
    assert linesearch.zoom_search(problem.loss_and_gradient, theta, loss, gradient, gradient, 20) is None
    np.testing.assert_allclose(theta, start, rtol=0, atol=1e-14)
    trials = []

    def interrupted(point):
        trials.append(point.copy())
        if len(trials) == 3:
            raise KeyboardInterrupt
        return 1.0 - len(trials), -gradient  # always lower and steeper: the search goes on

    with pytest.raises(KeyboardInterrupt):
        linesearch.zoom_search(interrupted, theta, loss, gradient, -gradient, 20)
    assert not np.allclose(trials[1], start)
    np.testing.assert_allclose(theta, start, rtol=0, atol=1e-14)


def test_the_zoom_search_refuses_an_ascent_and_stops_at_its_budget():
    problem = Quadratic(3, 4)
    theta = np.ones(4)
    loss, gradient = problem.loss_and_gradient(theta)
    assert linesearch.zoom_search(problem.loss_and_gradient, theta, loss, gradient, gradient, 20) is None
    calls = []

    def never_flat(step):  # keeps descending steeply: no step is acceptable
        calls.append(step)
        return -10.0 * step, -10.0, None

    assert linesearch.strong_wolfe_step(never_flat, 0.0, -1.0, 7) is None and len(calls) == 7


@given(st.floats(-3, 3), st.floats(0.1, 3), st.floats(-2, 2), st.floats(-2, 2))
def test_the_cubic_minimiser_finds_the_minimum_of_a_cubic(low, width, root, curvature):
    """For f(x) = (x - root)^2 (1 + c (x - root)) / 2 near its local minimum at root."""

    def f(x):
        return 0.5 * (x - root) ** 2 * (1.0 + curvature * (x - root))

    def df(x):
        return (x - root) * (1.0 + curvature * (x - root)) + 0.5 * curvature * (x - root) ** 2

    a, b = low, low + width  # f is a cubic: the interpolant is f itself
    assert linesearch.cubic_minimiser(a, f(a), df(a), b, f(b), df(b)) == pytest.approx(root, abs=1e-6)
    assert linesearch.cubic_minimiser(b, f(b), df(b), a, f(a), df(a)) == pytest.approx(root, abs=1e-6)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.05, 3.0))
def test_an_owlqn_step_moves_each_weight_against_its_pseudo_gradient_within_its_orthant(seed, l1):
    problem = Quadratic(seed, 6)
    rng = np.random.default_rng(seed)
    theta = np.where(rng.random(6) < 0.3, 0.0, rng.normal(0.0, 2.0, 6))
    gradient = problem.loss_and_gradient(theta)[1]
    steepest = train.pseudo_gradient(theta, gradient, l1, None)
    direction = -steepest + rng.normal(0.0, 2.0 * np.abs(steepest).max(), 6)  # some components ascend
    found = linesearch.backtracking(
        problem.loss_and_gradient, theta, objective(problem, math.inf, l1, theta), steepest, direction, l1, "armijo", 60
    )
    if found is not None:
        point = found[0]
        assert np.all((point - theta) * steepest <= 0.0)
        assert np.all(point * theta >= 0.0)  # no weight crosses zero
        assert np.all(point[theta == 0.0] * steepest[theta == 0.0] <= 0.0)
        assert found[1] == pytest.approx(objective(problem, math.inf, l1, point), rel=1e-12)


def test_with_l1_every_line_search_name_backtracks_the_same_way():
    problem = Logistic(8, 5)
    runs = [train.lbfgs(problem, 2.0, max_iter=30, l1=0.4, linesearch=name).weights for name in train.LINE_SEARCHES]
    assert all(np.array_equal(runs[0], weights) for weights in runs)


def test_memory_is_honoured():
    problem = Quadratic(4, 8)
    short = train.lbfgs(problem, math.inf, max_iter=500, tol=1e-15, memory=1)
    long = train.lbfgs(problem, math.inf, max_iter=500, tol=1e-15, memory=8)
    np.testing.assert_allclose(short.weights, problem.centre, atol=1e-4)
    np.testing.assert_allclose(long.weights, problem.centre, atol=1e-4)
    assert long.n_iter < short.n_iter


@pytest.mark.parametrize("l1, linesearch", [(0.3, "strong-wolfe"), (0.0, "Backtracking")])
def test_max_linesearch_bounds_the_evaluations_per_iteration(l1, linesearch):
    problem = Quadratic(6, 6)
    calls = []
    counting = SimpleNamespace(
        num_weights=6,
        num_sequences=1,
        loss_and_gradient=lambda theta: calls.append(1) or problem.loss_and_gradient(theta),
    )
    per_iteration = []
    train.lbfgs(
        counting,
        math.inf,
        max_iter=40,
        l1=l1,
        linesearch=linesearch,
        max_linesearch=2,
        callback=lambda record: per_iteration.append(len(calls)) and None,
    )
    evaluations = np.diff([1] + per_iteration)
    assert len(per_iteration) > 3 and evaluations.max() <= 4  # 2 trials, twice with a restart


@pytest.mark.parametrize(
    "options, error",
    [
        ({"l1": -0.1}, FstcrfError),
        ({"l1": math.inf}, FstcrfError),
        ({"l1": math.nan}, FstcrfError),
        ({"l1": "0.1"}, ArgumentTypeError),
        ({"l1": True}, ArgumentTypeError),
        ({"memory": 0}, FstcrfError),
        ({"memory": 2.5}, ArgumentTypeError),
        ({"epsilon": -1e-5}, FstcrfError),
        ({"epsilon": "small"}, ArgumentTypeError),
        ({"period": 0}, FstcrfError),
        ({"period": 1.5}, ArgumentTypeError),
        ({"delta": -1e-5}, FstcrfError),
        ({"delta": math.inf}, FstcrfError),
        ({"linesearch": "wolfe"}, FstcrfError),
        ({"linesearch": 1}, ArgumentTypeError),
        ({"max_linesearch": 0}, FstcrfError),
        ({"max_linesearch": 3.0}, ArgumentTypeError),
        ({"frozen": [True, False, True]}, ArgumentTypeError),
        ({"frozen": np.zeros(3)}, ShapeError),
        ({"frozen": np.zeros(4, dtype=bool)}, ShapeError),
    ],
)
def test_bad_options_raise_typed_errors(options, error):
    with pytest.raises(error, match=next(iter(options))) as raised:
        train.lbfgs(Quadratic(0, 3), **options)
    assert isinstance(raised.value, ValueError)


def test_an_unknown_line_search_names_the_available_ones():
    with pytest.raises(FstcrfError, match="MoreThuente, Backtracking, StrongBacktracking"):
        train.lbfgs(Quadratic(0, 3), linesearch="More-Thuente")
