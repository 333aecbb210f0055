"""The C kernel against brute-force enumeration of every state sequence (tests/oracles.py)."""

import math

import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

import fstcrf
from fstcrf.errors import InfeasibleError
from fstcrf.engine.topology import Topology

from oracles import BruteForce, allowed_sequences, count_sequences_by_matrix_power, enumerate_state_paths
from strategies import Spec, batches, feasible_instances, instances, oracle_settings, specs, three_cycle_spec

KBEST_CAP = 300  # k = (number of allowed sequences) + 2, capped: fc_kbest inserts in O(k) per candidate


# ---------------------------------------------------------------------------
# feasibility
# ---------------------------------------------------------------------------


def reachable_by_matrix_power(spec, length):
    """bool [S]: states some allowed prefix of ``length`` tokens ends in."""
    S = spec.num_states
    adjacency = np.zeros((S, S), dtype=np.int64)
    adjacency[spec.edge_src, spec.edge_dst] = 1
    vector = np.asarray(spec.start, dtype=np.int64)
    for _ in range(length - 1):
        vector = np.minimum(vector @ adjacency, 1)
    return vector > 0


@pytest.mark.slow
@oracle_settings(200)
@given(specs(), st.permutations(range(1, 13)))
def test_is_feasible_matches_bruteforce(spec, query_order):
    # the oracle's two counts agree where both are cheap
    for T in range(1, 7):
        assert len(allowed_sequences(spec, T)) == count_sequences_by_matrix_power(spec, T)
        assert len(enumerate_state_paths(spec, T)) == count_sequences_by_matrix_power(spec, T)
    expected = {T: count_sequences_by_matrix_power(spec, T) > 0 for T in range(1, 13)}
    # increasing queries, then queries in a random order on a fresh topology (periodic cache)
    topology = spec.topology()
    assert {T: topology.is_feasible(T) for T in range(1, 13)} == expected
    fresh = spec.topology()
    assert {T: fresh.is_feasible(T) for T in query_order} == expected
    fresh = spec.topology()
    for T in query_order:
        np.testing.assert_array_equal(fresh.reachable_at(T), reachable_by_matrix_power(spec, T))


@pytest.mark.slow
@oracle_settings(200)
@given(instances(feasible=None, num_sentences=(1, 3)))
def test_potentials_raise_infeasible_iff_no_sequence(inst):
    if inst.feasible:
        pot = inst.potentials()
        assert pot.num_sequences == len(inst.lengths)
        return
    with pytest.raises(InfeasibleError):
        inst.potentials()


def test_three_cycle_only_lengths_one_mod_three():
    spec = three_cycle_spec(extra_states=1)
    topology = spec.topology()
    for T in range(1, 16):
        assert topology.is_feasible(T) == (T % 3 == 1), T
        assert (count_sequences_by_matrix_power(spec, T) > 0) == (T % 3 == 1)
    rng = np.random.default_rng(3)
    for T in (2, 3, 5, 6):
        with pytest.raises(InfeasibleError):
            fstcrf.Potentials(topology, rng.normal(size=(T, 4)))
    with pytest.raises(InfeasibleError, match="sentences 1"):
        fstcrf.Potentials(topology, rng.normal(size=(1 + 2 + 4, 4)), [1, 2, 4])
    pot = fstcrf.Potentials(topology, rng.normal(size=(1 + 4 + 7, 4)), [1, 4, 7])
    path = fstcrf.viterbi(pot).paths
    np.testing.assert_array_equal(path, [0, 0, 1, 2, 0, 0, 1, 2, 0, 1, 2, 0])


# ---------------------------------------------------------------------------
# single sentences
# ---------------------------------------------------------------------------


@oracle_settings(150)
@given(instances(feasible=None))
def test_forward_backward_matches_bruteforce(inst):
    if not inst.feasible:
        with pytest.raises(InfeasibleError):
            inst.potentials()
        return
    pot = inst.potentials()
    oracle = inst.oracle(0)
    result = fstcrf.forward_backward(pot)
    assert math.isclose(result.log_z[0], oracle.log_z, rel_tol=1e-9, abs_tol=1e-12)
    np.testing.assert_allclose(result.node_marginals, oracle.node_marginals, rtol=0, atol=1e-9)
    np.testing.assert_allclose(result.edge_counts, oracle.edge_counts, rtol=0, atol=1e-9)
    assert fstcrf.log_partition(pot)[0] == result.log_z[0]


@oracle_settings(60)
@given(batches(), st.sampled_from([1, 2]))
def test_edge_counts_of_each_sentence_match_bruteforce(inst, threads):
    pot = inst.potentials()
    each = fstcrf.forward_backward(pot, each_sentence=True, threads=threads)
    summed = fstcrf.forward_backward(pot, threads=threads)
    assert each.edge_counts.shape == (len(inst.lengths), inst.topology.num_edges)
    for b in range(len(inst.lengths)):
        np.testing.assert_allclose(each.edge_counts[b], inst.oracle(b).edge_counts, rtol=0, atol=1e-9)
    np.testing.assert_allclose(each.edge_counts.sum(axis=0), summed.edge_counts, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(each.node_marginals, summed.node_marginals)
    np.testing.assert_array_equal(each.log_z, summed.log_z)


def check_viterbi(inst, b, path, score):
    """Kernel Viterbi path/score of sentence b against brute force."""
    oracle = inst.oracle(b)
    path = tuple(int(s) for s in path)
    # same addition order and monotone rounding: the best score is reproduced bit for bit
    assert score == oracle.best_score
    assert oracle.score_of(path) == oracle.best_score
    if inst.exact_arithmetic() or len(oracle.paths_scoring(oracle.best_score)) == 1:
        assert path == oracle.best_path  # includes the tie rule (last token backwards, smallest)
    else:  # a float tie made by rounding: any path of the best score
        assert path in oracle.paths_scoring(oracle.best_score)


@oracle_settings(150)
@given(feasible_instances())
def test_viterbi_matches_bruteforce(inst):
    pot = inst.potentials()
    decoded = fstcrf.viterbi(pot)
    check_viterbi(inst, 0, decoded.paths, decoded.scores[0])
    # Potentials.score adds in the same order
    assert pot.score(decoded.paths)[0] == decoded.scores[0]
    for path in inst.oracle(0).paths[:20]:
        assert pot.score(path)[0] == inst.oracle(0).score_of(path)


@pytest.mark.slow
@oracle_settings(150)
@given(feasible_instances(score_kinds=("integer",), max_states=3))
def test_viterbi_tie_breaking_integer_scores(inst):
    """Small integer scores over few states: many exact ties."""
    decoded = fstcrf.viterbi(inst.potentials())
    oracle = inst.oracle(0)
    assert tuple(decoded.paths.tolist()) == oracle.ranked()[0][1]
    assert decoded.scores[0] == oracle.ranked()[0][0]


def test_viterbi_tie_rule_all_zero_scores():
    """Every path ties: the winner is the smallest sequence read backwards."""
    topology = fstcrf.first_order(["a", "b", "c"])
    pot = fstcrf.Potentials(topology, np.zeros((4, 3)))
    assert fstcrf.viterbi(pot).paths.tolist() == [0, 0, 0, 0]
    # only 0->1, 1->2, 2->0, 2->2; may not end in state 0: the smallest LAST
    # state is 1, reached only by ... 2 -> 0 -> 1
    topology = Topology(["a", "b", "c"], [0, 1, 2], [0, 1, 2, 2], [1, 2, 0, 2], [True] * 3, [False, True, True])
    pot = fstcrf.Potentials(topology, np.zeros((3, 3)))
    oracle = BruteForce(topology, np.zeros((3, 3)))
    assert tuple(fstcrf.viterbi(pot).paths.tolist()) == oracle.best_path == (2, 0, 1)


@pytest.mark.slow
@oracle_settings(150)
@given(feasible_instances())
def test_max_marginals_match_bruteforce(inst):
    pot = inst.potentials()
    table, best = fstcrf.max_marginals(pot)
    oracle = inst.oracle(0)
    assert best[0] == oracle.best_score
    expected = oracle.max_marginals
    np.testing.assert_array_equal(np.isfinite(table), np.isfinite(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(table[finite], expected[finite], rtol=0, atol=1e-9)
    if inst.exact_arithmetic():
        np.testing.assert_array_equal(table, expected)


def check_kbest(inst, b, listed, found, k):
    """(score, path) list of sentence b from the kernel against the oracle's ranking."""
    oracle = inst.oracle(b)
    ranked = oracle.ranked()
    assert found == min(k, oracle.num_paths)
    assert len(listed) == found
    scores = [s for s, _ in listed]
    paths = [tuple(int(x) for x in p) for _, p in listed]
    assert scores == [s for s, _ in ranked[:found]]  # bit for bit, best first
    assert len(set(paths)) == len(paths)
    for score, path in zip(scores, paths):
        assert oracle.score_of(path) == score
    if inst.exact_arithmetic():
        assert paths == [p for _, p in ranked[:found]]  # order including ties
    elif found == oracle.num_paths:
        assert set(paths) == {p for _, p in ranked}


@pytest.mark.slow
@oracle_settings(150)
@given(feasible_instances())
def test_kbest_full_list_matches_bruteforce(inst):
    oracle = inst.oracle(0)
    k = min(oracle.num_paths + 2, KBEST_CAP)
    pot = inst.potentials()
    result = fstcrf.kbest(pot, k)
    found = int(result.found[0])
    check_kbest(inst, 0, result.sentence_paths(pot, 0), found, k)
    # the missing ranks are marked
    assert np.all(result.scores[0, found:] == -np.inf)
    assert np.all(result.paths[found:] == -1)
    if k >= oracle.num_paths:
        assert found == oracle.num_paths
    # k = 1 is Viterbi
    top = fstcrf.kbest(pot, 1)
    decoded = fstcrf.viterbi(pot)
    assert top.scores[0, 0] == decoded.scores[0]
    np.testing.assert_array_equal(top.paths[0], decoded.paths)


@pytest.mark.slow
@oracle_settings(150)
@given(feasible_instances(score_kinds=("integer",), max_states=3))
def test_kbest_tie_order_integer_scores(inst):
    oracle = inst.oracle(0)
    k = min(oracle.num_paths + 2, KBEST_CAP)
    pot = inst.potentials()
    result = fstcrf.kbest(pot, k)
    listed = [(s, tuple(p.tolist())) for s, p in result.sentence_paths(pot, 0)]
    assert listed == oracle.ranked()[:k]


# ---------------------------------------------------------------------------
# gradient identity by central finite differences
# ---------------------------------------------------------------------------

H = 1e-5
GRAD_TOL = 1e-6


def central_difference(f, x, index):
    up, down = x.copy(), x.copy()
    up[index] += H
    down[index] -= H
    return (f(up) - f(down)) / (2 * H)


@pytest.mark.slow
@oracle_settings(60)
@given(feasible_instances())
def test_gradient_identity_finite_differences(inst):
    """d log Z / d emissions[t, s] = p(y_t = s), d log Z / d transitions[e] =
    expected count of e, d log Z / d start[s] = p(y_1 = s), d log Z / d final[s] = p(y_T = s)."""
    pot = inst.potentials()
    result = fstcrf.forward_backward(pot)
    oracle = inst.oracle(0)
    T = inst.lengths[0]

    def log_z(**replaced):
        return float(fstcrf.log_partition(inst.potentials(**replaced))[0])

    for t in range(T):
        for s in range(inst.spec.num_states):
            g = central_difference(lambda x: log_z(emissions=x), inst.emissions, (t, s))
            assert abs(g - result.node_marginals[t, s]) <= GRAD_TOL, (t, s)
            assert abs(g - oracle.node_marginals[t, s]) <= GRAD_TOL, (t, s)
    for e in range(inst.topology.num_edges):
        g = central_difference(lambda x: log_z(transitions=x), inst.transitions, e)
        assert abs(g - result.edge_counts[e]) <= GRAD_TOL, e
        assert abs(g - oracle.edge_counts[e]) <= GRAD_TOL, e
    for s in range(inst.spec.num_states):
        g = central_difference(lambda x: log_z(start=x), inst.start, s)
        expected = result.node_marginals[0, s] if inst.spec.start[s] else 0.0
        assert abs(g - expected) <= GRAD_TOL, s
        g = central_difference(lambda x: log_z(final=x), inst.final, s)
        expected = result.node_marginals[T - 1, s] if inst.spec.final[s] else 0.0
        assert abs(g - expected) <= GRAD_TOL, s


# ---------------------------------------------------------------------------
# batches and threads
# ---------------------------------------------------------------------------


@pytest.mark.slow
@oracle_settings(100)
@given(batches(), st.sampled_from([1, 2]))
def test_batches_and_threads_match_one_by_one(inst, threads):
    pot = inst.potentials()
    B = len(inst.lengths)
    fb = fstcrf.forward_backward(pot, threads=threads)
    vit = fstcrf.viterbi(pot, threads=threads)
    mm, mm_best = fstcrf.max_marginals(pot, threads=threads)
    k = 7
    kb = fstcrf.kbest(pot, k, threads=threads)
    total_counts = np.zeros(inst.topology.num_edges)
    for b in range(B):
        rows = inst.rows(b)
        alone = inst.potentials(sentences=[b])
        fb1 = fstcrf.forward_backward(alone)
        total_counts += fb1.edge_counts
        # a sentence's results do not depend on its batch or on the threads
        assert fb.log_z[b] == fb1.log_z[0]
        np.testing.assert_array_equal(fb.node_marginals[rows], fb1.node_marginals)
        vit1 = fstcrf.viterbi(alone)
        assert vit.scores[b] == vit1.scores[0]
        np.testing.assert_array_equal(vit.paths[rows], vit1.paths)
        mm1, best1 = fstcrf.max_marginals(alone)
        np.testing.assert_array_equal(mm[rows], mm1)
        assert mm_best[b] == best1[0]
        kb1 = fstcrf.kbest(alone, k)
        assert kb.found[b] == kb1.found[0]
        np.testing.assert_array_equal(kb.scores[b], kb1.scores[0])
        np.testing.assert_array_equal(kb.paths[:, rows], kb1.paths)
        # and against brute force
        oracle = inst.oracle(b)
        assert math.isclose(fb.log_z[b], oracle.log_z, rel_tol=1e-9, abs_tol=1e-12)
        np.testing.assert_allclose(fb.node_marginals[rows], oracle.node_marginals, rtol=0, atol=1e-9)
        check_viterbi(inst, b, vit.paths[rows], vit.scores[b])
        check_kbest(inst, b, kb.sentence_paths(pot, b), int(kb.found[b]), k)
    np.testing.assert_allclose(fb.edge_counts, total_counts, rtol=0, atol=1e-9)
    expected_counts = sum(inst.oracle(b).edge_counts for b in range(B))
    np.testing.assert_allclose(fb.edge_counts, expected_counts, rtol=0, atol=1e-9 * B)
    # sampling: the threads never change the draws
    draws = fstcrf.sample(pot, 5, seed=11, threads=threads)
    np.testing.assert_array_equal(draws, fstcrf.sample(pot, 5, seed=11, threads=1))
    for b in range(B):
        for row in draws[:, inst.rows(b)]:
            assert np.isfinite(inst.oracle(b).score_of(row))


# ---------------------------------------------------------------------------
# sampling
# ---------------------------------------------------------------------------

# Sampling power.  Moving mass d from cell b to cell a (p'_a = p_a + d,
# p'_b = p_b - d) gives the Pearson statistic a noncentral chi-square with
# df = cells - 1 and lambda = N d^2 (1/p_a + 1/p_b), which is smallest for the two
# largest cells -- the hardest such error to see.  With d = 0.02, N = 100 000 and
# alpha = 1e-3 the instances below have lambda = 876 (df 80), 263 (df 4) and 490
# (df 20 after merging), power 1.0000 (N = 20 000 would already give >= 0.999);
# the worst case over ANY instance (p_a = p_b = 1/2, lambda = 0.0016 N = 160)
# still has power >= 0.99999 for df <= 100.  Both are asserted below.
SAMPLE_ALPHA = 1e-3  # significance level of the goodness-of-fit test
SAMPLE_DRAWS = 100_000  # draws per instance
MASS_MOVED = 0.02  # the error the test must detect: 2% of the probability mass
REQUIRED_POWER = 0.99


def fixed_sampling_instances():
    """(name, potentials, spec) of small instances with 5..100 allowed paths."""
    rng = np.random.default_rng(20261121)
    out = []
    # first order, 3 states, T = 4 (81 paths), mild scores
    topo = fstcrf.first_order(["a", "b", "c"])
    out.append(
        ("first-order", fstcrf.Potentials(topo, rng.normal(0, 0.7, (4, 3)), None, rng.normal(0, 0.7, topo.num_edges)))
    )
    # a 3-cycle plus a random component, T = 4 (some lengths infeasible)
    spec = Spec(
        5,
        np.array([0, 1, 2, 3, 3, 4, 4]),
        np.array([1, 2, 0, 3, 4, 3, 4]),
        np.array([1, 0, 0, 1, 0], bool),
        np.array([1, 0, 0, 0, 1], bool),
    )
    topo = spec.topology()
    out.append(
        (
            "cycle",
            fstcrf.Potentials(
                topo,
                rng.normal(0, 1.0, (4, 5)),
                None,
                rng.normal(0, 1.0, topo.num_edges),
                rng.normal(0, 1, 5),
                rng.normal(0, 1, 5),
            ),
        )
    )
    # skewed: many paths with expected counts < 5 (cells to merge)
    topo = fstcrf.iob2(["NP"])
    out.append(
        ("iob2-skewed", fstcrf.Potentials(topo, rng.normal(0, 3.0, (5, 3)), None, rng.normal(0, 1.0, topo.num_edges)))
    )
    return out


def merge_small_cells(expected, observed, minimum=5.0):
    """Pool every cell with expected count < minimum into one cell (and that
    pool into the smallest other cell if it is still below minimum)."""
    small = expected < minimum
    exp_cells, obs_cells = list(expected[~small]), list(observed[~small])
    if small.any():
        pooled_e, pooled_o = expected[small].sum(), observed[small].sum()
        if pooled_e < minimum and exp_cells:
            i = int(np.argmin(exp_cells))
            exp_cells[i] += pooled_e
            obs_cells[i] += pooled_o
        else:
            exp_cells.append(pooled_e)
            obs_cells.append(pooled_o)
    return np.array(exp_cells), np.array(obs_cells)


def power_to_detect_moved_mass(probabilities, draws, alpha, mass=MASS_MOVED):
    """Power of the chi-square test (df = cells - 1) against moving ``mass`` of
    probability from one cell to another, for the pair of cells where that is
    hardest to see.  Noncentrality lambda = N sum (p'_i - p_i)^2 / p_i =
    N mass^2 (1/p_a + 1/p_b), smallest for the two largest cells."""
    p = np.sort(probabilities)[::-1]
    assert p[0] >= mass  # the donor cell can give the mass
    lam = draws * mass**2 * (1 / p[0] + 1 / p[1])
    df = len(p) - 1
    return stats.ncx2.sf(stats.chi2.isf(alpha, df), df, lam), lam, df


def test_sampling_power_worst_case_documented():
    """Documented worst case over ANY instance: 1/p_a + 1/p_b >= 4 when
    p_a + p_b <= 1, so lambda >= 0.0016 N = 160 at N = 100 000.  With df up to
    100 merged cells the power at alpha = 1e-3 is still >= 0.99."""
    lam = SAMPLE_DRAWS * MASS_MOVED**2 * 4
    assert lam == pytest.approx(160.0)
    for df in (1, 10, 50, 100):
        power = stats.ncx2.sf(stats.chi2.isf(SAMPLE_ALPHA, df), df, lam)
        assert power >= REQUIRED_POWER, (df, power)


@pytest.mark.parametrize("case", range(3))
def test_sample_frequencies_chi_square(case):
    name, pot = fixed_sampling_instances()[case]
    oracle = BruteForce(
        pot.topology,
        pot.emissions,
        pot.transitions,
        np.where(np.isfinite(pot.start), pot.start, 0.0),
        np.where(np.isfinite(pot.final), pot.final, 0.0),
    )
    assert 5 <= oracle.num_paths <= 200
    draws = fstcrf.sample(pot, SAMPLE_DRAWS, seed=12345)
    index = {tuple(p.tolist()): i for i, p in enumerate(oracle.paths)}
    cells = np.array([index[tuple(row)] for row in draws.tolist()])  # KeyError = a forbidden path
    observed = np.bincount(cells, minlength=oracle.num_paths).astype(float)
    expected = SAMPLE_DRAWS * oracle.probabilities
    expected_cells, observed_cells = merge_small_cells(expected, observed)
    assert expected_cells.min() >= 5 and expected_cells.sum() == pytest.approx(SAMPLE_DRAWS)
    df = len(expected_cells) - 1
    # the test is sensitive enough: power >= 0.99 against moving 2% of the mass
    # between the two largest (merged) cells, the hardest such perturbation here
    power, lam, _ = power_to_detect_moved_mass(expected_cells / SAMPLE_DRAWS, SAMPLE_DRAWS, SAMPLE_ALPHA)
    assert power >= REQUIRED_POWER, (name, power, lam, df)
    p_value = chi_square_p_value(expected_cells, observed_cells)
    assert p_value >= SAMPLE_ALPHA, (name, df, p_value)
    # and the test does catch such an error: a multinomial sample from the
    # perturbed distribution (2% moved between the two largest cells) is rejected
    order = np.argsort(expected_cells)[::-1]
    perturbed = expected_cells / SAMPLE_DRAWS
    perturbed[order[0]] -= MASS_MOVED
    perturbed[order[1]] += MASS_MOVED
    wrong = np.random.default_rng(case).multinomial(SAMPLE_DRAWS, perturbed)
    assert chi_square_p_value(expected_cells, wrong) < SAMPLE_ALPHA


def chi_square_p_value(expected, observed):
    statistic = float(np.sum((observed - expected) ** 2 / expected))
    return stats.chi2.sf(statistic, len(expected) - 1)


def test_sample_reproducibility_contract():
    """fc_sample: draw r of sentence b depends on (seed, index of b in the batch
    given to the Python API, r) only -- not on threads or the other sentences."""
    rng = np.random.default_rng(7)
    topo = fstcrf.first_order(["a", "b", "c", "d"])
    lengths = [3, 5, 2, 6, 4]
    emissions = rng.normal(0, 1, (sum(lengths), 4))
    trans = rng.normal(0, 1, topo.num_edges)
    pot = fstcrf.Potentials(topo, emissions, lengths, trans)
    draws1 = fstcrf.sample(pot, 50, seed=99, threads=1)
    draws2 = fstcrf.sample(pot, 50, seed=99, threads=2)
    np.testing.assert_array_equal(draws1, draws2)
    np.testing.assert_array_equal(draws1, fstcrf.sample(pot, 50, seed=99, threads=3))
    # the first r draws do not depend on how many are asked for
    np.testing.assert_array_equal(fstcrf.sample(pot, 20, seed=99), draws1[:20])
    # the sentence at index 0 of the batch = the same sentence alone
    first = fstcrf.Potentials(topo, emissions[:3], None, trans)
    np.testing.assert_array_equal(fstcrf.sample(first, 50, seed=99), draws1[:, :3])
    # the sentence at index 2 with different other sentences around it
    other_lengths = [6, 1, 2]
    other = np.concatenate([rng.normal(0, 1, (7, 4)), emissions[8:10]])
    pot_other = fstcrf.Potentials(topo, other, other_lengths, trans)
    np.testing.assert_array_equal(fstcrf.sample(pot_other, 50, seed=99, threads=2)[:, 7:9], draws1[:, 8:10])
    # another seed changes the draws
    assert not np.array_equal(fstcrf.sample(pot, 50, seed=100), draws1)


def test_feasibility_survives_pickling_also_from_before_it_was_remembered():
    spec = three_cycle_spec(extra_states=1)
    topology = spec.topology()
    assert [topology.is_feasible(T) for T in (4, 5, 4)] == [True, False, True]
    state = dict(vars(topology))
    del state["feasibility"]  # as pickled by a release that kept reachable sets and no feasibility
    state.update(_reachable=[topology.start.copy()], _cycle_start=None)
    old = Topology.__new__(Topology)
    old.__setstate__(state)
    assert [old.is_feasible(T) for T in range(1, 16)] == [T % 3 == 1 for T in range(1, 16)]
    again = pickle.loads(pickle.dumps(old))
    assert [again.is_feasible(T) for T in range(1, 16)] == [T % 3 == 1 for T in range(1, 16)]


def test_reachable_sets_pickled_unpacked_by_an_earlier_release_are_found_again():
    spec = three_cycle_spec(extra_states=1)
    topology = spec.topology()
    assert topology.is_feasible(4)
    feasibility = topology.feasibility
    feasibility._reachable = [topology.start.copy()]  # as an earlier release kept them: bool arrays
    again = pickle.loads(pickle.dumps(topology))
    assert [again.is_feasible(T) for T in range(1, 16)] == [T % 3 == 1 for T in range(1, 16)]
