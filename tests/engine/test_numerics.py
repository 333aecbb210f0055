"""The kernel stays exact and finite on long sentences with extreme scores."""

import numpy as np
import pytest

import fstcrf
from fstcrf.engine import reference
from fstcrf.engine.topology import Topology, iob2


def masked_random_topology(rng, num_states, density):
    mask = rng.random((num_states, num_states)) < density
    np.fill_diagonal(mask, True)  # keeps every length feasible
    src, dst = np.nonzero(mask)
    labels = [f"s{i}" for i in range(num_states)]
    start = rng.random(num_states) < 0.5
    start[0] = True
    final = rng.random(num_states) < 0.5
    final[0] = True
    return Topology(labels, np.arange(num_states), src, dst, start, final)


@pytest.mark.slow
@pytest.mark.parametrize("magnitude", [1.0, 100.0, 10_000.0])
def test_long_sentence_extreme_scores_match_log_space_reference(magnitude):
    rng = np.random.default_rng(int(magnitude))
    topo = masked_random_topology(rng, 5, 0.5)
    T = 100_000
    pot = fstcrf.Potentials(
        topo,
        rng.uniform(-magnitude, magnitude, (T, 5)),
        None,
        rng.uniform(-magnitude, magnitude, topo.num_edges),
        rng.uniform(-magnitude, magnitude, 5),
        rng.uniform(-magnitude, magnitude, 5),
    )
    result = fstcrf.forward_backward(pot)
    log_z, marginals, _ = reference.forward_backward(pot)
    assert np.isfinite(result.log_z[0])
    assert abs(result.log_z[0] - log_z) <= 1e-9 * abs(log_z)
    assert np.all(np.isfinite(result.node_marginals))
    np.testing.assert_allclose(result.node_marginals.sum(axis=1), 1.0, atol=1e-9)
    np.testing.assert_allclose(result.node_marginals, marginals, atol=1e-9)
    np.testing.assert_allclose(result.edge_counts.sum(), T - 1, rtol=1e-9)
    path, best = reference.viterbi(pot)
    decoded = fstcrf.viterbi(pot)
    assert abs(decoded.scores[0] - best) <= 1e-9 * abs(best)
    assert abs(pot.score(decoded.paths)[0] - decoded.scores[0]) <= 1e-9 * abs(best)


def test_only_path_through_hugely_unlikely_states_is_found():
    """Forward scaling must not underflow the only feasible continuation."""
    topo = Topology(["a", "b", "c"], [0, 1, 2], [0, 1, 2], [0, 2, 2], [True, True, False], [False, False, True])
    # state a is very attractive but a dead end; b -> c is the only way to finish
    T = 50
    emit = np.zeros((T, 3))
    emit[:, 0] = 5_000.0
    emit[0, 1] = -5_000.0
    pot = fstcrf.Potentials(topo, emit, None, [0.0, -3_000.0, 0.0])
    log_z = fstcrf.log_partition(pot)[0]
    assert log_z == pytest.approx(-8_000.0, rel=1e-12)
    marginals = fstcrf.forward_backward(pot).node_marginals
    np.testing.assert_allclose(marginals[:, 0], 0.0, atol=0)
    np.testing.assert_allclose(marginals[1:, 2], 1.0, rtol=1e-12)


def test_large_batch_equals_sentence_by_sentence_and_threads_agree():
    rng = np.random.default_rng(7)
    topo = iob2(["NP", "VP", "PP"])
    lengths = rng.integers(1, 40, size=300)
    pot = fstcrf.Potentials(
        topo, rng.normal(size=(lengths.sum(), topo.num_states)) * 3, lengths, rng.normal(size=topo.num_edges)
    )
    one = fstcrf.forward_backward(pot, threads=1)
    two = fstcrf.forward_backward(pot, threads=2)
    np.testing.assert_array_equal(one.log_z, two.log_z)
    np.testing.assert_array_equal(one.node_marginals, two.node_marginals)
    np.testing.assert_allclose(one.edge_counts, two.edge_counts, rtol=1e-12)
    for b in (0, 17, 299):
        rows = pot.sentence(b)
        alone = fstcrf.Potentials(topo, pot.emissions[rows], None, pot.transitions)
        np.testing.assert_allclose(fstcrf.log_partition(alone)[0], one.log_z[b], rtol=1e-13)
    np.testing.assert_array_equal(fstcrf.viterbi(pot, threads=1).paths, fstcrf.viterbi(pot, threads=2).paths)
    np.testing.assert_array_equal(fstcrf.sample(pot, 3, seed=5, threads=1), fstcrf.sample(pot, 3, seed=5, threads=2))


@pytest.mark.parametrize("magnitude", [1.0, 60.0, 300.0, 3000.0])
def test_scaled_and_log_domain_paths_agree_with_reference(magnitude):
    """Small spreads run in the linear domain, large ones fall back to the log
    domain (per sentence); both must match the log-space reference."""
    rng = np.random.default_rng(11)
    for trial in range(20):
        topo = masked_random_topology(rng, int(rng.integers(2, 7)), 0.4)
        lengths = rng.integers(1, 30, size=4)
        pot = fstcrf.Potentials(
            topo,
            rng.uniform(-magnitude, magnitude, (lengths.sum(), topo.num_states)),
            lengths,
            rng.uniform(-magnitude, magnitude, topo.num_edges),
        )
        result = fstcrf.forward_backward(pot)
        counts = np.zeros((topo.num_states, topo.num_states))
        for b in range(len(lengths)):
            log_z, marginals, edges = reference.forward_backward(pot, b)
            assert result.log_z[b] == pytest.approx(log_z, rel=1e-12, abs=1e-12)
            np.testing.assert_allclose(result.node_marginals[pot.sentence(b)], marginals, atol=1e-10)
            counts += edges
        np.testing.assert_allclose(result.edge_counts, counts[topo.edge_src, topo.edge_dst], atol=1e-9)
