"""Factorised joint inference against the dense cross-product kernel and
against pynini composition of per-component lattice transducers."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fstcrf
from fstcrf import errors
from fstcrf.engine import joint
from fstcrf.engine.topology import Topology, bioes, first_order, iob2

try:  # the tests that need pynini are marked pynini: the CI leg without it skips them
    import pynini
except ImportError:
    pynini = None

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None)


def random_topology(rng, num_states):
    mask = rng.random((num_states, num_states)) < 0.6
    np.fill_diagonal(mask, True)
    src, dst = np.nonzero(mask)
    start = rng.random(num_states) < 0.7
    start[0] = True
    final = rng.random(num_states) < 0.7
    final[0] = True
    return Topology([f"s{i}" for i in range(num_states)], np.arange(num_states), src, dst, start, final)


def random_joint(seed, num_components, scale=2.0, with_mask=False):
    """A random chain of components whose emissions and transitions read the
    state of the component below; returns the potentials and the component
    scores they were built from."""
    rng = np.random.default_rng(seed)
    comps = [random_topology(rng, int(rng.integers(2, 4))) for _ in range(num_components)]
    sizes = [c.num_states for c in comps]
    allowed = None
    if with_mask:
        allowed = rng.random(int(np.prod(sizes))) < 0.8
        allowed[0] = True
    space = joint.JointSpace(comps, allowed)
    lengths = rng.integers(1, 6, size=3)
    N = int(lengths.sum())
    emissions = [rng.normal(scale=scale, size=(N, sizes[0]))]
    emissions += [rng.normal(scale=scale, size=(N, sizes[k - 1], sizes[k])) for k in range(1, num_components)]
    transitions = [rng.normal(scale=scale, size=space.transition_shape(k)) for k in range(num_components)]
    start = rng.normal(size=space.num_states)
    final = rng.normal(size=space.num_states)
    try:
        jp = joint.JointPotentials(space, joint.joint_emissions(space, emissions), lengths, transitions, start, final)
    except errors.InfeasibleError:
        return None
    return jp, emissions


@SETTINGS
@given(seed=st.integers(0, 10_000), num_components=st.integers(1, 3), with_mask=st.booleans())
def test_factorised_equals_dense_cross_product(seed, num_components, with_mask):
    built = random_joint(seed, num_components, with_mask=with_mask)
    if built is None:
        return
    jp, _ = built
    dense = jp.to_product()
    result = joint.joint_posteriors(jp)
    expected = fstcrf.forward_backward(dense)
    np.testing.assert_allclose(result.log_z, expected.log_z, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(result.node_marginals, expected.node_marginals, atol=1e-9)
    projected = joint.product_edge_counts(jp.space, expected.edge_counts)
    for k, (counts, oracle) in enumerate(zip(result.edge_counts, projected)):
        assert counts.shape == jp.space.transition_shape(k)
        np.testing.assert_allclose(counts, oracle, atol=1e-9)
        # every transition of every sentence takes one edge of each component
        assert counts.sum() == pytest.approx(jp.num_tokens - jp.num_sequences, rel=1e-12)
    decoded = joint.joint_viterbi(jp)
    best = fstcrf.viterbi(dense)
    np.testing.assert_allclose(decoded.scores, best.scores, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(dense.score(decoded.paths), decoded.scores, rtol=1e-9, atol=1e-9)
    if jp.space.allowed is not None:
        assert jp.space.allowed[decoded.paths].all()


def component_lattice(jp, emissions, k, sentence):
    """Component k of one sentence as an epsilon-free transducer: input = the
    state of component k-1 at the new token (key = state + 1), output = the
    state of component k; component 0 is an acceptor over its own states.
    Weights are negated scores (log64)."""
    space = jp.space
    topo = space.components[k]
    rows = jp.sentence(sentence)
    T = rows.stop - rows.start
    e = emissions[k][rows]
    fst = pynini.Fst(arc_type="log64")
    initial = fst.add_state()
    fst.set_start(initial)
    nodes = [[fst.add_state() for _ in range(topo.num_states)] for _ in range(T)]
    for lower in range(1 if k == 0 else space.sizes[k - 1]):

        def arc(state, t, score, target):
            key_in = state + 1 if k == 0 else lower + 1
            fst.add_arc(target[0], pynini.Arc(key_in, state + 1, pynini.Weight("log64", -score), target[1]))

        for s in np.flatnonzero(topo.start):
            arc(s, 0, e[0, s] if k == 0 else e[0, lower, s], (initial, nodes[0][s]))
        for t in range(1, T):
            for edge, (a, b) in enumerate(zip(topo.edge_src, topo.edge_dst)):
                score = jp.transitions[k][lower, edge] + (e[t, b] if k == 0 else e[t, lower, b])
                arc(b, t, score, (nodes[t - 1][a], nodes[t][b]))
    for s in np.flatnonzero(topo.final):
        fst.set_final(nodes[T - 1][s])
    return fst


def composed_lattice(jp, emissions, sentence):
    """The joint lattice as the composition L0 o T1 o ... o T_{N-1}."""
    lattice = component_lattice(jp, emissions, 0, sentence)
    for k in range(1, len(jp.space.components)):
        lattice = pynini.compose(lattice, component_lattice(jp, emissions, k, sentence).arcsort("ilabel"))
    return lattice


@pytest.mark.pynini
@settings(max_examples=25, deadline=None, derandomize=True, database=None)
@given(seed=st.integers(0, 10_000), num_components=st.integers(2, 3))
def test_factorised_equals_pynini_composition(seed, num_components):
    rng = np.random.default_rng(seed)
    comps = [random_topology(rng, int(rng.integers(2, 4))) for _ in range(num_components)]
    space = joint.JointSpace(comps)
    lengths = rng.integers(1, 5, size=2)
    N = int(lengths.sum())
    emissions = [rng.normal(size=(N, space.sizes[0]))]
    emissions += [rng.normal(size=(N, space.sizes[k - 1], space.sizes[k])) for k in range(1, num_components)]
    transitions = [rng.normal(size=space.transition_shape(k)) for k in range(num_components)]
    try:
        jp = joint.JointPotentials(space, joint.joint_emissions(space, emissions), lengths, transitions)
    except errors.InfeasibleError:
        return
    log_z, _ = joint.joint_forward_backward(jp, marginals=False)
    decoded = joint.joint_viterbi(jp)
    for b in range(len(lengths)):
        lattice = composed_lattice(jp, emissions, b)
        distance = pynini.shortestdistance(lattice, delta=1e-30, reverse=True)[lattice.start()]
        assert -float(distance) == pytest.approx(log_z[b], rel=1e-8, abs=1e-8)
        best = pynini.shortestdistance(pynini.arcmap(lattice, map_type="to_std"), reverse=True)[lattice.start()]
        assert -float(best) == pytest.approx(decoded.scores[b], rel=1e-5, abs=1e-4)


def test_joint_kbest_and_sampling_follow_the_joint_distribution():
    jp, _ = random_joint(11, 2)
    best = joint.joint_viterbi(jp)
    top = joint.joint_kbest(jp, 3)
    np.testing.assert_allclose(top.scores[:, 0], best.scores, rtol=1e-12)
    assert np.all(np.diff(top.scores, axis=1) <= 0)
    draws = joint.joint_sample(jp, 4000, seed=3)
    _, marginals = joint.joint_forward_backward(jp)
    frequencies = (
        np.stack([np.bincount(draws[:, n], minlength=jp.space.num_states) for n in range(jp.num_tokens)]) / 4000
    )
    np.testing.assert_allclose(frequencies, marginals, atol=0.04)


def test_component_marginals_and_states_round_trip():
    built = random_joint(3, 3)
    jp, _ = built
    _, marginals = joint.joint_forward_backward(jp)
    per_component = joint.component_marginals(jp.space, marginals)
    for k, m in enumerate(per_component):
        assert m.shape == (jp.num_tokens, jp.space.sizes[k])
        np.testing.assert_allclose(m.sum(axis=1), 1.0, atol=1e-12)
    states = jp.space.component_states(np.arange(jp.space.num_states))
    np.testing.assert_array_equal(jp.space.joint_state(states), np.arange(jp.space.num_states))


@pytest.mark.parametrize("wide_sentences", [[0, 1, 2], [0]])
def test_wide_score_spreads_fall_back_to_exact_dense_inference(wide_sentences):
    """Every sentence, or only the first (4 tokens), spreads too widely for the linear
    domain; the others keep the factorised pass and add their own counts."""
    jp, _ = random_joint(5, 2)
    emissions = jp.emissions.copy()
    for b in wide_sentences:
        emissions[jp.sentence(b)] *= 200.0
    start, final = (np.where(np.isfinite(v), v, 0.0) for v in (jp.start, jp.final))
    jp = joint.JointPotentials(jp.space, emissions, jp.lengths, jp.transitions, start, final)
    log_z, marginals = joint.joint_forward_backward(jp)
    expected = fstcrf.forward_backward(jp.to_product())
    np.testing.assert_allclose(log_z, expected.log_z, rtol=1e-12)
    np.testing.assert_allclose(marginals, expected.node_marginals, atol=1e-9)
    oracle = joint.product_edge_counts(jp.space, expected.edge_counts)
    for counts, projected in zip(joint.joint_posteriors(jp).edge_counts, oracle):
        np.testing.assert_allclose(counts, projected, atol=1e-9)


def test_threads_give_identical_results():
    rng = np.random.default_rng(0)
    space = joint.JointSpace([iob2(["NP", "VP"]), first_order(["a", "b", "c"])])
    lengths = rng.integers(1, 30, size=50)
    N = int(lengths.sum())
    jp = joint.JointPotentials(
        space,
        rng.normal(size=(N, space.num_states)),
        lengths,
        [rng.normal(size=space.transition_shape(k)) for k in range(2)],
    )
    one = joint.joint_forward_backward(jp, threads=1)
    two = joint.joint_forward_backward(jp, threads=2)
    np.testing.assert_array_equal(one[0], two[0])
    np.testing.assert_array_equal(one[1], two[1])
    # each thread sums its own sentences' edge counts: equal up to the order of the sum
    for a, b in zip(
        joint.joint_posteriors(jp, threads=1).edge_counts, joint.joint_posteriors(jp, threads=2).edge_counts
    ):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    np.testing.assert_array_equal(joint.joint_viterbi(jp, threads=1).paths, joint.joint_viterbi(jp, threads=2).paths)


def test_bad_joint_input():
    space = joint.JointSpace([iob2(["NP"]), bioes(["X"])])
    with pytest.raises(errors.ShapeError):
        joint.JointPotentials(space, np.zeros((3, space.num_states + 1)))
    with pytest.raises(errors.ShapeError):
        joint.JointPotentials(space, np.zeros((3, space.num_states)), None, [np.zeros(3)])
    with pytest.raises(errors.ScoreError):
        joint.JointPotentials(space, np.full((3, space.num_states), np.nan))
    with pytest.raises(errors.CompositionError):
        joint.JointSpace([iob2(["NP"]), bioes(["X"])], allowed=np.zeros(space.num_states, dtype=bool))
    with pytest.raises(errors.ShapeError):
        joint.joint_emissions(space, [np.zeros((3, 3)), np.zeros((3, 2, 5))])


def brute_force_edge_counts(jp, emissions, sentence):
    """Expected (lower state, edge) counts per component of one sentence, by
    enumerating every sequence of joint states and scoring it from the
    component scores (no product topology)."""
    space = jp.space
    rows = jp.sentence(sentence)
    T = rows.stop - rows.start
    edge_ids = [{(a, b): e for e, (a, b) in enumerate(zip(t.edge_src, t.edge_dst))} for t in space.components]
    weights, uses = [], []
    for path in itertools.product(range(space.num_states), repeat=T):
        states = space.component_states(np.array(path))  # [T, N]
        if space.allowed is not None and not space.allowed[list(path)].all():
            continue
        score = jp.start[path[0]] + jp.final[path[-1]]
        used = [np.zeros(space.transition_shape(k)) for k in range(len(space.components))]
        feasible = np.isfinite(score)
        for k, topo in enumerate(space.components):
            for t in range(T):
                lower = 0 if k == 0 else states[t, k - 1]
                score += (
                    emissions[k][rows.start + t, states[t, 0]]
                    if k == 0
                    else emissions[k][rows.start + t, lower, states[t, k]]
                )
                if t == 0:
                    continue
                edge = edge_ids[k].get((states[t - 1, k], states[t, k]))
                if edge is None:
                    feasible = False
                    break
                score += jp.transitions[k][lower, edge]
                used[k][lower, edge] += 1
        if feasible:
            weights.append(score)
            uses.append(used)
    weights = np.exp(np.array(weights) - np.logaddexp.reduce(weights))
    return [sum(w * u[k] for w, u in zip(weights, uses)) for k in range(len(space.components))]


@settings(max_examples=15, deadline=None, derandomize=True, database=None)
@given(seed=st.integers(0, 10_000), num_components=st.integers(2, 3), with_mask=st.booleans())
def test_joint_edge_counts_equal_brute_force_enumeration(seed, num_components, with_mask):
    rng = np.random.default_rng(seed)
    comps = [random_topology(rng, 2) for _ in range(num_components)]
    allowed = None
    if with_mask:
        allowed = rng.random(2**num_components) < 0.8
        allowed[0] = True
    space = joint.JointSpace(comps, allowed)
    lengths = rng.integers(1, 4, size=2)
    N = int(lengths.sum())
    emissions = [rng.normal(size=(N, 2))] + [rng.normal(size=(N, 2, 2)) for _ in range(1, num_components)]
    transitions = [rng.normal(size=space.transition_shape(k)) for k in range(num_components)]
    try:
        jp = joint.JointPotentials(
            space,
            joint.joint_emissions(space, emissions),
            lengths,
            transitions,
            rng.normal(size=space.num_states),
            rng.normal(size=space.num_states),
        )
    except errors.InfeasibleError:
        return
    counts = joint.joint_posteriors(jp, marginals=False).edge_counts
    expected = [sum(parts) for parts in zip(*[brute_force_edge_counts(jp, emissions, b) for b in range(len(lengths))])]
    for got, oracle in zip(counts, expected):
        np.testing.assert_allclose(got, oracle, atol=1e-10)


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(seed=st.integers(0, 10_000), num_components=st.integers(1, 3), with_mask=st.booleans())
def test_clamping_to_partial_observations_and_to_one_path(seed, num_components, with_mask):
    """jp.clamp(allowed) sums over the paths that keep to ``allowed`` (checked on the dense
    product, whose Potentials.clamp is the oracle); clamped to one sampled path,
    joint_posteriors equals path_posteriors: the path's score, one-hot marginals, its counts."""
    made = random_joint(seed, num_components, with_mask=with_mask)
    if made is None:
        return
    jp, _ = made
    rng = np.random.default_rng(seed)
    path = joint.joint_sample(jp, 1, seed=seed)[0]
    allowed = rng.random(jp.emissions.shape) < 0.5
    allowed[np.arange(jp.num_tokens), path] = True
    clamped = joint.joint_posteriors(jp.clamp(allowed))
    dense = fstcrf.forward_backward(jp.to_product().clamp(allowed), edge_counts=False)
    np.testing.assert_allclose(clamped.log_z, dense.log_z, rtol=1e-10)
    np.testing.assert_allclose(clamped.node_marginals, dense.node_marginals, atol=1e-10)
    one = np.zeros_like(allowed)
    one[np.arange(jp.num_tokens), path] = True
    exact = joint.joint_posteriors(jp.clamp(one))
    fast = joint.path_posteriors(jp, path)
    np.testing.assert_allclose(fast.log_z, exact.log_z, rtol=1e-10)
    np.testing.assert_allclose(fast.node_marginals, exact.node_marginals, atol=1e-10)
    for got, expected in zip(fast.edge_counts, exact.edge_counts):
        np.testing.assert_allclose(got, expected, atol=1e-10)


def test_path_posteriors_refuse_paths_outside_the_space():
    jp, _ = random_joint(3, 2, with_mask=True)
    outside = np.flatnonzero(~jp.space.allowed)
    if len(outside):
        with pytest.raises(errors.InfeasibleError, match="does not allow"):
            joint.path_posteriors(jp, np.full(jp.num_tokens, outside[0]))
    with pytest.raises(errors.ShapeError, match="paths must be joint states"):
        joint.path_posteriors(jp, np.zeros(jp.num_tokens + 1, dtype=np.int64))


def test_a_checked_transition_table_made_writeable_again_is_checked_again():
    jp, _ = random_joint(5, 2)
    table = np.array(jp.transitions[1])
    table.flags.writeable = False
    joint.JointPotentials(jp.space, jp.emissions, jp.lengths, [jp.transitions[0], table])  # checked, then kept
    table.flags.writeable = True
    table[0, 0] = np.nan
    with pytest.raises(errors.ScoreError, match=r"transitions\[1\]"):
        joint.JointPotentials(jp.space, jp.emissions, jp.lengths, [jp.transitions[0], table])
