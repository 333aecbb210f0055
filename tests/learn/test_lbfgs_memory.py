"""What L-BFGS keeps in memory, and that keeping less left its arithmetic alone."""

import tracemalloc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.engine import kernel
from fstcrf.learn import train
from fstcrf.learn.objective import sparse_counts
from fstcrf.model.chain import ChainCRF
from objectives import DiagonalQuadratic
from strategies import oracle_settings

#: Objectives of 20 iterations on the demo corpus with 3 correction pairs, from fstcrf
#: before training kept fewer arrays (commit 418c8eb): supported features (every gold
#: count non-zero, kept dense) and complete features (gold counts kept sparse).
BEFORE = {
    "supported": [
        8032.455549314704,
        2833.2573004393275,
        1718.5027049750213,
        883.8428179177897,
        489.7511376692743,
        291.01219471209805,
        213.42800162814487,
        135.6328106882204,
        91.43957563476752,
        48.83902440377443,
        24.359921283056682,
        15.359805256608558,
        11.751957903949588,
        8.694251966965863,
        7.976309464456529,
        7.791434152693453,
        7.52782036969075,
        7.456032324705167,
        7.375511003600356,
        7.274649340307148,
    ],
    "complete": [
        7899.969044680814,
        2754.1385036018514,
        1656.9930078358998,
        832.5088903774371,
        449.464311375782,
        253.85160528362638,
        177.8666941299674,
        104.0514524181448,
        63.56197439192112,
        28.878981852726795,
        13.691649793377808,
        9.422925317044875,
        7.778910721531801,
        6.243878847110717,
        5.778918976819459,
        5.559334182296263,
        5.501128243265887,
        5.4637637159713455,
        5.332005541077932,
        5.19952120185995,
    ],
}


@pytest.mark.parametrize("features", list(BEFORE))
def test_objectives_are_those_before_the_memory_changes(features):
    corpus = read_conll(DATA_DIR / "demo_train.txt")
    model = ChainCRF(max_iter=20, threads=2, features=features, algorithm_params={"memory": 3}).fit(corpus)
    np.testing.assert_allclose([r["objective"] for r in model.history_], BEFORE[features], rtol=1e-9, atol=0)


@pytest.mark.parametrize("memory", [2, 4])
def test_lbfgs_holds_the_pairs_and_three_arrays(memory):
    size = 400_000  # 3.2 MB per array
    problem = DiagonalQuadratic(size, seed=1)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        result = train.lbfgs(problem, sigma=3.0, max_iter=3 * memory + 2, tol=1e-30, memory=memory)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert result.n_iter == 3 * memory + 2
    arrays = peak / (8 * size)
    # the m pairs, the weights, gradient and the direction being made: 2m + 3 (during
    # the line search one pair fewer, the trial made in the weights' array, and its
    # gradient); 2m + 4 before the trial points moved the weights in place, 2m + 9 before that
    assert arrays < 2 * memory + 3.5, arrays


@oracle_settings(30)
@given(st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_pairs_fill_up_to_memory_and_stay_there(memory, seed):
    problem = DiagonalQuadratic(50, seed)
    counts = []
    train.lbfgs(
        problem, sigma=10.0, max_iter=8, tol=1e-30, memory=memory, checkpoint=lambda s: counts.append(len(s.pairs))
    )
    # the pair dropped before each line search is replaced by the new one
    assert counts == [min(k, memory) for k in range(1, len(counts) + 1)]


def test_monitor_without_copies_keeps_the_arrays_it_is_given():
    theta = np.arange(4.0)
    monitor = train.Monitor("lbfgs", None, None, copy=False)
    monitor.end_iteration(theta, 1.0)
    assert monitor.kept_weights is theta and monitor.result(theta).weights is theta
    copying = train.Monitor("lbfgs", None, None)
    copying.end_iteration(theta, 1.0)
    assert copying.kept_weights is not theta and np.array_equal(copying.kept_weights, theta)
    assert copying.result(theta).weights is not theta


def test_monitor_without_evaluation_copies_each_iteration_into_one_array():
    theta = np.arange(4.0)
    monitor = train.Monitor("bandit", None, None)
    monitor.end_iteration(theta, 1.0)
    kept = monitor.kept_weights
    theta += 1.0  # the learner moves its weights in place
    monitor.end_iteration(theta, 0.5)
    assert monitor.kept_weights is kept and np.array_equal(kept, theta)
    theta += 1.0  # an iteration interrupted half way
    monitor.interrupted = True
    for handed_over in (False, True):
        result = monitor.result(theta, handed_over=handed_over)
        assert np.array_equal(result.weights, theta - 1.0) and result.best_iteration == 2
        assert result.weights is not kept


def test_final_weights_handed_over_are_returned_without_a_copy():
    theta = np.arange(4.0)
    monitor = train.Monitor("bandit", None, None)
    monitor.end_iteration(theta, 1.0)
    assert monitor.result(theta, handed_over=True).weights is theta
    assert monitor.result(theta).weights is not theta


@oracle_settings(50)
@given(st.lists(st.sampled_from([0.0, 0.0, 0.0, 1.0, 2.5, -1.0]), min_size=1, max_size=60))
def test_sparse_counts_give_back_the_counts(values):
    counts = np.array(values)
    index, kept = sparse_counts(counts)
    rebuilt = np.zeros_like(counts)
    rebuilt[index] = kept
    np.testing.assert_array_equal(rebuilt, counts)
    dense = isinstance(index, slice)
    whole = bool(np.all(counts == np.round(counts)))
    # whole counts are kept as int32 (4 bytes, exactly), others as float64
    assert dense or kept.dtype == (np.int32 if whole else np.float64)
    # sparse only when the indices and values take less memory than the counts
    assert dense == (np.count_nonzero(counts) * (8 if whole else 12) >= 8 * len(counts))


@oracle_settings(50)
@given(st.integers(0, 200_000), st.floats(-4.0, 4.0), st.integers(0, 2**32 - 1))
def test_add_scaled_is_out_plus_scale_times_x(size, scale, seed):
    rng = np.random.default_rng(seed)
    out, x = rng.normal(size=size), rng.normal(size=size)
    expected = out + scale * x
    kernel.add_scaled(out, scale, x)
    np.testing.assert_array_equal(out, expected)
