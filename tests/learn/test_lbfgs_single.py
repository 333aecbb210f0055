"""L-BFGS with its history in single precision (``history="single"``, ``train
--lbfgs-precision single``): the float32 vector steps against float64 oracles, the
memory it saves, and training that reaches what double precision reaches."""

import math
import tracemalloc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fstcrf.cli import main
from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.engine import kernel
from fstcrf.errors import FstcrfError, ShapeError
from fstcrf.learn import train
from fstcrf.model.chain import ChainCRF, load_model
from objectives import DiagonalQuadratic
from strategies import oracle_settings

TRAIN = str(DATA_DIR / "demo_train.txt")


def random_pairs(rng, dimension: int, count: int, dtype) -> list:
    """``count`` curvature pairs (s, y, 1 / s.y) of dtype with s.y > 0, rho from the stored values."""
    pairs = []
    while len(pairs) < count:
        s = rng.normal(size=dimension).astype(dtype)
        y = (s + 0.3 * rng.normal(size=dimension)).astype(dtype)
        curvature = float(s.astype(np.float64) @ y.astype(np.float64))
        if curvature > 0.1:
            pairs.append((s, y, 1.0 / curvature))
    return pairs


def inverse_bfgs(pairs, dimension: int) -> np.ndarray:
    """H [D, D] by the BFGS inverse update from H0 = (s.y / y.y) I of the newest pair, in float64."""
    wide = [(s.astype(np.float64), y.astype(np.float64), rho) for s, y, rho in pairs]
    inverse = np.eye(dimension) * (float(wide[-1][0] @ wide[-1][1]) / float(wide[-1][1] @ wide[-1][1]) if wide else 1.0)
    for s, y, rho in wide:
        step = np.eye(dimension) - rho * np.outer(s, y)
        inverse = step @ inverse @ step.T + rho * np.outer(s, s)
    return inverse


@oracle_settings(60)
@given(st.integers(1, 12), st.integers(0, 5), st.integers(0, 2**32 - 1))
def test_single_two_loop_is_the_inverse_bfgs_matrix_times_the_gradient(dimension, num_pairs, seed):
    """The float32 recursion (sums in double, q rounded after each update) against the
    explicit float64 matrix of the same stored pairs: equal to float32's precision."""
    rng = np.random.default_rng(seed)
    gradient = rng.normal(size=dimension)
    pairs = random_pairs(rng, dimension, num_pairs, np.float32)
    direction = train.two_loop(gradient, pairs, np.dtype(np.float32))
    assert direction.dtype == np.float32
    expected = -inverse_bfgs(pairs, dimension) @ gradient
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(direction, expected, rtol=2e-5, atol=2e-5 * scale)


def test_two_loop_refuses_mixed_precisions():
    rng = np.random.default_rng(0)
    pairs = random_pairs(rng, 5, 2, np.float32)
    q = rng.normal(size=5)  # float64 q with float32 pairs
    with pytest.raises(ShapeError, match="must all be float64 or all float32"):
        kernel.two_loop([s for s, _, _ in pairs], [y for _, y, _ in pairs], np.ones(2), np.empty(2), q)


@oracle_settings(50)
@given(st.integers(0, 50_000), st.floats(-4.0, 4.0), st.integers(0, 2**32 - 1))
def test_single_vector_steps_are_their_double_sums(size, scale, seed):
    rng = np.random.default_rng(seed)
    a32, b32 = rng.normal(size=size).astype(np.float32), rng.normal(size=size).astype(np.float32)
    g = rng.normal(size=size)
    a64, b64 = a32.astype(np.float64), b32.astype(np.float64)
    # sums of float32 products in double: numpy's float32 dot would sum in float32
    tolerance = 1e-12 * (1.0 + float(np.abs(a64) @ np.abs(b64)))
    assert abs(kernel.history_dot(a32, b32) - math.fsum(a64 * b64)) <= tolerance
    assert abs(kernel.history_dot(g, a32) - math.fsum(g * a64)) <= 1e-12 * (1.0 + float(np.abs(g) @ np.abs(a64)))
    assert kernel.history_dot(g, a32) == kernel.history_dot(a32, g)
    out = rng.normal(size=size)
    expected = out + scale * a64
    kernel.add_scaled(out, scale, a32)
    np.testing.assert_array_equal(out, expected)
    y = a32.copy()
    kernel.change_single(y, g)
    np.testing.assert_array_equal(y, (g - a64).astype(np.float32))


@oracle_settings(30)
@given(st.integers(0, 100_001), st.integers(0, 2**32 - 1))
def test_round_in_place_gives_float32_in_half_the_memory(size, seed):
    rng = np.random.default_rng(seed)
    values = rng.normal(size=size) * 10.0 ** rng.integers(-30, 30, size=size)
    for warm in (np.zeros(0), np.zeros(2)):  # a process's first call allocates once (3.6 kB seen in CI)
        kernel.round_in_place(warm)
    tracemalloc.start()
    try:
        vector = values.copy()  # traced, so that giving half back shows
        before = tracemalloc.get_traced_memory()[0]
        rounded = kernel.round_in_place(vector)
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert rounded.dtype == np.float32 and rounded.shape == (size,)
    np.testing.assert_array_equal(rounded, values.astype(np.float32))
    assert after - before <= -4 * size + 512  # half of the 8-byte values given back (and a view object)
    # a vector that does not own its memory is copied, and left as it was
    owner = values.copy()
    view = owner[: size // 2]
    np.testing.assert_array_equal(kernel.round_in_place(view), values[: size // 2].astype(np.float32))
    np.testing.assert_array_equal(owner, values)


def test_vector_steps_refuse_what_they_cannot_read():
    with pytest.raises(ShapeError):
        kernel.history_dot(np.zeros(3, np.float32), np.zeros(4, np.float32))
    with pytest.raises(ShapeError):
        kernel.history_dot(np.zeros(3, np.int32), np.zeros(3, np.float32))
    with pytest.raises(ShapeError):
        kernel.change_single(np.zeros(3), np.zeros(3))
    with pytest.raises(ShapeError):
        kernel.add_scaled(np.zeros(3, np.float32), 1.0, np.zeros(3, np.float32))


def test_single_history_reaches_the_minimum_of_a_quadratic():
    problem = DiagonalQuadratic(2_000, seed=3)
    double = train.lbfgs(problem, sigma=math.inf, max_iter=200, tol=1e-14)
    single = train.lbfgs(problem, sigma=math.inf, max_iter=200, tol=1e-14, history="single")
    np.testing.assert_allclose(double.weights, problem.centre, atol=1e-6)
    np.testing.assert_allclose(single.weights, problem.centre, atol=1e-6)
    assert single.history[-1]["objective"] < 1e-9


@pytest.mark.parametrize("memory", [2, 4])
def test_single_history_holds_half_size_pairs(memory):
    """The weights, the trial's gradient, m pairs and two more half-size vectors (the
    direction and the previous gradient): m + 3 arrays of float64's size, against
    2m + 3 in double precision."""
    size = 400_000  # 3.2 MB per float64 array
    problem = DiagonalQuadratic(size, seed=1)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        result = train.lbfgs(problem, sigma=3.0, max_iter=3 * memory + 2, tol=1e-30, memory=memory, history="single")
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert result.n_iter == 3 * memory + 2
    arrays = peak / (8 * size)
    # making the direction: m pairs, the weights, the gradient rounded to float32 in its
    # own memory and the direction; the line search: m - 1 pairs, the weights, the
    # direction, the previous gradient and the trial's gradient: m + 2 (2m + 3 in double)
    assert arrays < memory + 2.2, arrays


@oracle_settings(20)
@given(st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_single_pairs_fill_up_to_memory_and_stay_there(memory, seed):
    problem = DiagonalQuadratic(50, seed)
    counts, dtypes = [], set()

    def record(state):
        counts.append(len(state.pairs))
        dtypes.update(array.dtype for s, y, _ in state.pairs for array in (s, y))

    train.lbfgs(problem, sigma=10.0, max_iter=8, tol=1e-30, memory=memory, history="single", checkpoint=record)
    assert counts == [min(k, memory) for k in range(1, len(counts) + 1)]
    assert dtypes == {np.dtype(np.float32)}


@pytest.mark.parametrize("linesearch", ["strong-wolfe", "Backtracking"])
def test_a_chunker_trains_to_the_same_objective_in_single_precision(linesearch):
    corpus = read_conll(TRAIN)
    settings = {"max_iter": 40, "features": "complete"}
    double = ChainCRF(**settings, algorithm_params={"linesearch": linesearch}).fit(corpus)
    single = ChainCRF(**settings, algorithm_params={"linesearch": linesearch, "history": "single"}).fit(corpus)
    first = [r["objective"] for r in double.history_]
    second = [r["objective"] for r in single.history_]
    # the same path while float32's rounding is below the steps, and the same end
    np.testing.assert_allclose(second[:5], first[:5], rtol=1e-4)
    assert abs(second[-1] - first[-1]) <= 1e-3 * abs(first[-1])
    assert single.score(corpus) == pytest.approx(double.score(corpus), abs=0.5)


def test_single_history_with_l1_trains_as_owlqn():
    corpus = read_conll(TRAIN)
    double = ChainCRF(max_iter=30, c1=0.1).fit(corpus)
    single = ChainCRF(max_iter=30, c1=0.1, algorithm_params={"history": "single"}).fit(corpus)
    assert abs(single.history_[-1]["objective"] - double.history_[-1]["objective"]) <= 1e-2 * abs(
        double.history_[-1]["objective"]
    )


def test_an_unknown_precision_is_refused():
    with pytest.raises(FstcrfError, match="unknown history precision 'half'"):
        train.lbfgs(DiagonalQuadratic(10, 0), history="half")


def test_lbfgs_precision_reaches_the_learner(tmp_path):
    path = tmp_path / "single.model"
    assert main(["-q", "train", TRAIN, "-o", str(path), "--max-iter", "8", "--lbfgs-precision", "single"]) == 0
    trained = load_model(path)
    assert trained.algorithm_params == {"history": "single"}
    again = ChainCRF(**trained.get_params()).fit(read_conll(TRAIN))
    np.testing.assert_array_equal(trained.weights_, again.weights_)
    both = tmp_path / "both.model"
    assert (
        main(
            ["-q", "train", TRAIN, "-o", str(both), "--max-iter", "3", "--lbfgs-precision", "single"]
            + ["--lbfgs-memory", "4"]
        )
        == 0
    )
    assert load_model(both).algorithm_params == {"memory": 4, "history": "single"}


def test_lbfgs_precision_is_refused_for_other_learners(tmp_path, capsys):
    path = tmp_path / "m.model"
    assert main(["-q", "train", TRAIN, "-o", str(path), "--algorithm", "sgd", "--lbfgs-precision", "single"]) == 2
    assert "--lbfgs-precision applies to --algorithm lbfgs or mce-f, not sgd" in capsys.readouterr().err
    assert not path.exists()
