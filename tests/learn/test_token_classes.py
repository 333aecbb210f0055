"""Transition scores that depend on a per-token class (trans[c, e] into a token of
class c, e.g. the label a lower tagger gives it): every kernel routine against
brute-force enumeration, pynini on the exported lattice, and the class-free kernel."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fstcrf
from fstcrf.engine import lattice
from fstcrf.errors import ShapeError

from oracles import BruteForce
from strategies import batches, feasible_instances, oracle_settings

try:  # the tests that need pynini are marked pynini: the CI leg without it skips them
    import pynini
except ImportError:
    pynini = None


@st.composite
def classed(draw, instances=batches(), spread=(1.0, 1.0, 100.0)):
    """(instance, class table [C, E], token classes [N]); a spread of 100 sends sentences
    to the kernel's exact log-domain pass."""
    inst = draw(instances)
    C = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    scale = draw(st.sampled_from(spread))
    table = rng.uniform(-5, 5, (C, inst.topology.num_edges)) * scale
    token_class = rng.integers(0, C, sum(inst.lengths))
    return inst, table, token_class, scale


def potentials(inst, table, token_class, scale=1.0) -> fstcrf.Potentials:
    return fstcrf.Potentials(
        inst.topology, inst.emissions * scale, inst.lengths, table, inst.start, inst.final, token_class=token_class
    )


def oracle(inst, table, token_class, b, scale=1.0) -> BruteForce:
    rows = inst.rows(b)
    return BruteForce(
        inst.topology, inst.emissions[rows] * scale, table, inst.start, inst.final, token_class=token_class[rows]
    )


@pytest.mark.slow
@oracle_settings(150)
@given(classed())
def test_sum_product_matches_bruteforce(case):
    inst, table, token_class, scale = case
    fb = fstcrf.forward_backward(potentials(inst, table, token_class, scale), threads=2)
    counts = np.zeros_like(table)
    for b in range(len(inst.lengths)):
        brute = oracle(inst, table, token_class, b, scale)
        assert fb.log_z[b] == pytest.approx(brute.log_z, rel=1e-9, abs=1e-9)
        np.testing.assert_allclose(fb.node_marginals[inst.rows(b)], brute.node_marginals, atol=1e-9)
        counts += brute.edge_counts
    np.testing.assert_allclose(fb.edge_counts, counts, atol=1e-8)


@pytest.mark.slow
@oracle_settings(150)
@given(classed())
def test_max_product_matches_bruteforce(case):
    inst, table, token_class, scale = case
    pot = potentials(inst, table, token_class, scale)
    best = fstcrf.viterbi(pot)
    top = fstcrf.kbest(pot, 4)
    max_marginals, _ = fstcrf.max_marginals(pot)
    for b in range(len(inst.lengths)):
        brute = oracle(inst, table, token_class, b, scale)
        assert best.scores[b] == pytest.approx(brute.best_score, rel=1e-12, abs=1e-9)
        assert brute.score_of(best.paths[inst.rows(b)]) == pytest.approx(brute.best_score, rel=1e-12, abs=1e-9)
        expected = [score for score, _ in brute.ranked()[:4]]
        np.testing.assert_allclose(top.scores[b, : len(expected)], expected, rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(max_marginals[inst.rows(b)], brute.max_marginals, rtol=1e-12, atol=1e-9)


@pytest.mark.slow
@oracle_settings(100)
@given(classed(), st.integers(0, 2**32 - 1))
def test_span_viterbi_matches_bruteforce(case, seed):
    inst, table, token_class, scale = case
    pot = potentials(inst, table, token_class, scale)
    rng = np.random.default_rng(seed)
    sentence = rng.integers(0, len(inst.lengths), 3)
    first = np.array([rng.integers(0, inst.lengths[b]) for b in sentence])
    length = np.array([rng.integers(1, inst.lengths[b] - f + 1) for b, f in zip(sentence, first)])
    allowed = rng.random((int(length.sum()), inst.topology.num_states)) < 0.6
    result = fstcrf.span_viterbi(pot, sentence, first, length, allowed)
    row = 0
    for k, b in enumerate(sentence):
        brute = oracle(inst, table, token_class, b, scale)
        box = allowed[row : row + length[k]]
        row += length[k]
        keeps = np.all(box[np.arange(length[k]), brute.paths[:, first[k] : first[k] + length[k]]], axis=1)
        inside = brute.scores[keeps].max(initial=-math.inf)
        outside = brute.scores[~keeps].max(initial=-math.inf)
        assert result.inside[k] == pytest.approx(inside, rel=1e-12, abs=1e-9)
        assert result.outside[k] == pytest.approx(outside, rel=1e-12, abs=1e-9)


@pytest.mark.pynini
@oracle_settings(60)
@given(classed(instances=feasible_instances(), spread=(1.0,)))
def test_lattice_export_matches_pynini(case):
    inst, table, token_class, _ = case
    pot = potentials(inst, table, token_class)
    fst = lattice.to_fst(pot, arc_type="log64")
    distance = pynini.shortestdistance(fst, reverse=True, delta=1e-30)[fst.start()]
    # pynini prints weights with ~7 significant digits; the brute-force tests check precision
    assert -float(distance) == pytest.approx(fstcrf.log_partition(pot)[0], rel=1e-6, abs=1e-6)
    tropical = lattice.to_fst(pot, arc_type="tropical")
    best = pynini.shortestdistance(tropical, reverse=True)[tropical.start()]
    assert -float(best) == pytest.approx(fstcrf.viterbi(pot).scores[0], abs=1e-4)  # single precision


@oracle_settings(60)
@given(classed(spread=(1.0,)))
def test_equal_rows_are_the_class_free_model(case):
    inst, table, token_class, _ = case
    same = np.repeat(table[:1], len(table), axis=0)
    with_classes = potentials(inst, same, token_class)
    without = fstcrf.Potentials(inst.topology, inst.emissions, inst.lengths, table[0], inst.start, inst.final)
    a, b = fstcrf.forward_backward(with_classes), fstcrf.forward_backward(without)
    np.testing.assert_allclose(a.log_z, b.log_z, rtol=1e-12)
    np.testing.assert_allclose(a.edge_counts.sum(axis=0), b.edge_counts, atol=1e-10)
    np.testing.assert_array_equal(fstcrf.viterbi(with_classes).paths, fstcrf.viterbi(without).paths)
    np.testing.assert_array_equal(fstcrf.sample(with_classes, 20, seed=3), fstcrf.sample(without, 20, seed=3))


@pytest.mark.slow
@oracle_settings(40)
@given(classed(spread=(1.0,)))
def test_samples_are_drawn_under_the_class_scores(case):
    """Exact sampling: on a sentence with few paths the empirical path frequencies
    match the brute-force probabilities (chi-square, alpha = 1e-3)."""
    from scipy import stats

    inst, table, token_class, _ = case
    brute = oracle(inst, table, token_class, 0)
    if brute.num_paths < 2 or brute.num_paths > 40:
        return
    pot = potentials(inst, table, token_class).select([0])
    draws = fstcrf.sample(pot, 20000, seed=7)
    index = {tuple(path): i for i, path in enumerate(brute.paths.tolist())}
    counts = np.bincount([index[tuple(row)] for row in draws.tolist()], minlength=brute.num_paths)
    expected = brute.probabilities * len(draws)
    keep = expected >= 5
    if keep.sum() < 2:
        return
    observed = np.append(counts[keep], counts[~keep].sum())
    expected = np.append(expected[keep], expected[~keep].sum())
    observed, expected = observed[expected > 0], expected[expected > 0]
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_token_classes_are_validated():
    topology = fstcrf.first_order(["a", "b"])
    emissions = np.zeros((3, 2))
    with pytest.raises(ShapeError, match="token_class"):
        fstcrf.Potentials(topology, emissions, None, np.zeros((2, 4)))
    with pytest.raises(ShapeError, match=r"\[0, 2\)"):
        fstcrf.Potentials(topology, emissions, None, np.zeros((2, 4)), token_class=[0, 1, 2])
    with pytest.raises(ShapeError, match="shape"):
        fstcrf.Potentials(topology, emissions, None, np.zeros((2, 4)), token_class=[0, 1])
    with pytest.raises(ShapeError, match="one row per class"):
        fstcrf.Potentials(topology, emissions, None, np.zeros(4), token_class=[0, 0, 0])
