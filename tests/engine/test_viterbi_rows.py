"""Viterbi over complete graphs of up to 20 states, too many for brute force, against
a numpy Viterbi that keeps the kernel's rules: scores added in the same order, the
first source of the largest score kept, the smallest state of the best final score.

The kernel pushes each source along its leaving row (targets in blocks of eight,
four, two and one) and finds the back pointers of the best path afterwards, or, for
a batch of fewer tokens than transition classes, pulls each state's entering
sources with back pointers at every token: small integer scores make exact ties
everywhere, so both must give the reference's paths and scores bit for bit.
"""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import fstcrf

from strategies import oracle_settings


def reference_viterbi(emissions, lengths, scores, start, final, token_class):
    """Paths int [N] and scores float [B]; scores [C, S, S] by source then target."""
    paths, best = [], []
    first = 0
    for length in lengths:
        emit = emissions[first : first + length]
        alpha = start + emit[0]
        back = []
        for t in range(1, length):
            candidates = alpha[:, None] + scores[token_class[first + t]]  # [source, target]
            back.append(np.argmax(candidates, axis=0))  # the first source among ties
            alpha = candidates.max(axis=0) + emit[t]
        closing = alpha + final
        state = int(np.argmax(closing))
        path = [state]
        for pointers in reversed(back):
            state = int(pointers[state])
            path.append(state)
        paths.extend(reversed(path))
        best.append(closing[path[0]])
        first += length
    return np.array(paths), np.array(best)


@st.composite
def complete_batches(draw):
    num_states = draw(st.integers(1, 20))
    num_classes = draw(st.integers(1, 3))
    lengths = draw(st.lists(st.integers(1, 7), min_size=1, max_size=4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    high = draw(st.sampled_from([1, 3]))  # scores in [-high, high]: ties everywhere, or fewer
    topology = fstcrf.first_order([f"s{k}" for k in range(num_states)])
    N, E = sum(lengths), topology.num_edges
    emissions = rng.integers(-high, high + 1, (N, num_states)).astype(float)
    transitions = rng.integers(-high, high + 1, (num_classes, E)).astype(float)
    start, final = (rng.integers(-high, high + 1, num_states).astype(float) for _ in range(2))
    token_class = rng.integers(0, num_classes, N)
    return topology, emissions, lengths, transitions, start, final, token_class


@oracle_settings(100)
@given(complete_batches())
def test_viterbi_on_complete_graphs_matches_reference(batch):
    topology, emissions, lengths, transitions, start, final, token_class = batch
    pot = fstcrf.Potentials(topology, emissions, lengths, transitions, start, final, token_class)
    decoded = fstcrf.viterbi(pot)
    scores = np.full((len(transitions), topology.num_states, topology.num_states), -np.inf)
    scores[:, topology.edge_src, topology.edge_dst] = transitions
    paths, best = reference_viterbi(emissions, lengths, scores, start, final, token_class)
    np.testing.assert_array_equal(decoded.paths, paths)
    np.testing.assert_array_equal(decoded.scores, best)


def test_viterbi_one_token_a_class_fewer_than_classes():
    """A batch of fewer tokens than classes is searched with back pointers at every
    token; the same sentence among more tokens by pushed rows: the same path."""
    topology = fstcrf.first_order([f"s{k}" for k in range(11)])
    rng = np.random.default_rng(5)
    transitions = rng.integers(-1, 2, (6, topology.num_edges)).astype(float)
    emissions = rng.integers(-1, 2, (3, 11)).astype(float)
    alone = fstcrf.viterbi(fstcrf.Potentials(topology, emissions, [3], transitions, token_class=[0, 4, 5]))
    repeated = fstcrf.Potentials(topology, np.tile(emissions, (2, 1)), [3, 3], transitions, token_class=[0, 4, 5] * 2)
    both = fstcrf.viterbi(repeated)
    np.testing.assert_array_equal(both.paths, np.tile(alone.paths, 2))
    np.testing.assert_array_equal(both.scores, np.tile(alone.scores, 2))
