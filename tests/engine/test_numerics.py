"""The kernel stays exact and finite on long sentences with extreme scores: on 100,000
tokens against a blocked log-space reference (products of step matrices within
blocks, chained from block to block, a few hundred numpy steps where
reference.forward_backward takes four a token), itself checked against
reference.forward_backward on short sentences."""

import math

import numpy as np
import pytest

import fstcrf
from fstcrf.engine import reference
from fstcrf.engine.topology import Topology, iob2

#: Tokens per block of the blocked reference (about the square root of a long sentence).
BLOCK = 300


def _log_sum(scores, axis):
    """log sum exp of ``scores`` over ``axis`` (one axis), shifted by its maximum; -inf where all are."""
    peak = scores.max(axis=axis, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(divide="ignore"):
        return np.squeeze(peak, axis) + np.log(np.exp(scores - peak).sum(axis=axis))


def _log_product(left, right):
    """[..., S, S] x [..., S, S] in the log semiring: log sum_k exp(left[i, k] + right[k, j])."""
    return _log_sum(left[..., :, :, None] + right[..., None, :, :], axis=-2)


def _max_product(left, right):
    """[..., S, S] x [..., S, S] in the max-plus semiring."""
    return (left[..., :, :, None] + right[..., None, :, :]).max(axis=-2)


def _normalised(scores, axes):
    """``scores`` less their maximum over ``axes`` (one per leading index), and those maxima."""
    peak = scores.max(axis=axes, keepdims=True)
    return scores - peak, peak.reshape(peak.shape[: scores.ndim - len(axes)])


def _steps(pot, block):
    """The step matrices of sentence 0 (step m, from token m to m + 1: the transition
    into m + 1 plus its emission), padded with the identity (of both semirings) to
    whole blocks: [blocks, block, S, S]."""
    emit = pot.emissions[pot.sentence(0)]
    T, S = emit.shape
    blocks = -(-(T - 1) // block)
    padded = np.broadcast_to(np.where(np.eye(S, dtype=bool), 0.0, -np.inf), (blocks * block, S, S)).copy()
    padded[: T - 1] = reference.dense_transitions(pot, 0)[1:] + emit[1:, None, :]
    return padded.reshape(blocks, block, S, S)


def _running_products(steps, product, backwards=False):
    """The products of each block's steps from its first to each step (``backwards``:
    from each step to its last), each less its maximum, [blocks, block, S, S], and the
    log-scale of each block's whole product that the normalising took off [blocks]."""
    order = range(steps.shape[1] - 1, -1, -1) if backwards else range(steps.shape[1])
    products, scale = np.empty_like(steps), np.zeros(len(steps))
    previous = None
    for k in order:  # one step of every block at once
        if previous is None:
            here = steps[:, k]
        else:
            here = (
                product(steps[:, k], products[:, previous])
                if backwards
                else product(products[:, previous], steps[:, k])
            )
        products[:, k], peak = _normalised(here, (1, 2))
        scale += peak
        previous = k
    return products, scale


def blocked_forward_backward(pot, block=BLOCK):
    """(log Z, node marginals [T, S]) of sentence 0 from the products of its step matrices
    within blocks of ``block`` tokens, chained from block to block: about 2 block + 2 T /
    block numpy steps instead of reference.forward_backward's 4 T, the sums associated
    otherwise than in the kernel and the reference (which take the tokens in order), and
    every vector and product kept less its maximum, so that the marginals lose no
    precision to the size of the forward and backward scores."""
    emit = pot.emissions[pot.sentence(0)]
    T, S = emit.shape
    steps = _steps(pot, block)
    prefix, block_scale = _running_products(steps, _log_product)
    suffix, _ = _running_products(steps, _log_product, backwards=True)
    blocks = len(steps)
    into = np.empty((blocks + 1, S))  # forward scores at the first token of each block, and after the last
    into[0], scale = _normalised(pot.start + emit[0], (0,))
    scales = [float(scale)]
    for c in range(blocks):
        into[c + 1], scale = _normalised(_log_sum(into[c][:, None] + prefix[c, -1], axis=0), (0,))
        scales += [float(block_scale[c]), float(scale)]
    out = np.empty((blocks + 1, S))  # backward scores at the same tokens
    out[blocks] = pot.final
    for c in range(blocks - 1, -1, -1):
        out[c], _ = _normalised(_log_sum(suffix[c, 0] + out[c + 1][None, :], axis=1), (0,))
    alpha = _log_sum(into[:-1, None, :, None] + prefix, axis=2).reshape(-1, S)[: T - 1]
    beta = _log_sum(suffix + out[1:, None, None, :], axis=3).reshape(-1, S)[: T - 1]
    joint = np.concatenate([into[:1], alpha]) + np.concatenate([beta, out[-1:]])
    log_z = math.fsum(scales) + _log_sum(into[-1] + pot.final, axis=0)
    return log_z, np.exp(joint - _log_sum(joint, axis=1)[:, None])


def blocked_best_score(pot, block=BLOCK):
    """The best path's score of sentence 0 by the same blocks in the max-plus semiring."""
    prefix, block_scale = _running_products(_steps(pot, block), _max_product)
    score = pot.start + pot.emissions[pot.sentence(0)][0]
    for total, scale in zip(prefix[:, -1], block_scale):
        score = (score[:, None] + total).max(axis=0) + scale
    return float((score + pot.final).max())


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


@pytest.mark.parametrize("magnitude", [1.0, 50.0])
def test_blocked_reference_is_the_reference_on_short_sentences(magnitude):
    """The long sentences' oracle against reference.forward_backward and viterbi: one
    token, less than a block, whole blocks and a partial last block."""
    rng = np.random.default_rng(3)
    for length in (1, 2, 6, 7, 8, 15, 40, 120):
        topo = masked_random_topology(rng, int(rng.integers(2, 7)), 0.4)
        S = topo.num_states
        pot = fstcrf.Potentials(
            topo,
            rng.uniform(-magnitude, magnitude, (length, S)),
            None,
            rng.uniform(-magnitude, magnitude, topo.num_edges),
            rng.uniform(-magnitude, magnitude, S),
            rng.uniform(-magnitude, magnitude, S),
        )
        log_z, marginals = blocked_forward_backward(pot, block=7)
        expected_log_z, expected_marginals, _ = reference.forward_backward(pot)
        assert log_z == pytest.approx(expected_log_z, rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(marginals, expected_marginals, atol=1e-12)
        assert blocked_best_score(pot, block=7) == pytest.approx(reference.viterbi(pot)[1], rel=1e-12, abs=1e-12)


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
    log_z, marginals = blocked_forward_backward(pot)
    assert np.isfinite(result.log_z[0])
    assert abs(result.log_z[0] - log_z) <= 1e-9 * abs(log_z)
    assert np.all(np.isfinite(result.node_marginals))
    np.testing.assert_allclose(result.node_marginals.sum(axis=1), 1.0, atol=1e-9)
    # the kernel's forward and backward scores grow to about log Z, which a double
    # holds to eps |log Z| (0.3-0.6 of it apart from an extended-precision run); the
    # blocked reference keeps its scores small and is within 1e-11 of that run
    np.testing.assert_allclose(result.node_marginals, marginals, atol=max(1e-9, 2 * np.finfo(float).eps * abs(log_z)))
    np.testing.assert_allclose(result.edge_counts.sum(), T - 1, rtol=1e-9)
    best = blocked_best_score(pot)
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
