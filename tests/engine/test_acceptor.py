"""Acceptor arrays (fstcrf.engine.acceptor): reachability and the product of two
acceptors against plain-Python breadth-first references (and pynini), and the work
they do: in proportion to the states and arcs they reach, never a whole-automaton
array per breadth-first level (a chain of a thousand levels was quadratic)."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstcrf.engine import acceptor as acceptor_module
from fstcrf.engine.acceptor import Acceptor, connect, from_arcs, intersect, reached


# -- references --------------------------------------------------------------------


def reached_by_search(num_states: int, origin, tail, head) -> np.ndarray:
    """bool [Q]: breadth-first search over Python lists."""
    following = collections.defaultdict(list)
    for source, target in zip(tail.tolist(), head.tolist()):
        following[source].append(target)
    seen = set(origin)
    queue = collections.deque(seen)
    while queue:
        for target in following[queue.popleft()]:
            if target not in seen:
                seen.add(target)
                queue.append(target)
    return np.isin(np.arange(num_states), sorted(seen))


def product_by_queue(left: Acceptor, right: Acceptor) -> Acceptor:
    """The connected product, numbered as OpenFst numbers it: pairs in order of first
    appearance, each pair's arcs in ``left``'s order (``right`` deterministic)."""
    moves = {(q, k): d for q, k, d in zip(right.arc_src.tolist(), right.arc_key.tolist(), right.arc_dst.tolist())}
    arcs_of = collections.defaultdict(list)
    for q, k, d in zip(left.arc_src.tolist(), left.arc_key.tolist(), left.arc_dst.tolist()):
        arcs_of[q].append((k, d))
    pairs = [(left.start, right.start)]
    ids = {pairs[0]: 0}
    arcs = []
    for source, (q, r) in enumerate(pairs):  # the list grows while it is read: a FIFO queue
        for key, target in arcs_of[q]:
            if (r, key) in moves:
                pair = (target, moves[(r, key)])
                if pair not in ids:
                    ids[pair] = len(pairs)
                    pairs.append(pair)
                arcs.append((source, key, ids[pair]))
    final = [bool(left.final[q] and right.final[r]) for q, r in pairs]
    return connect(from_arcs(len(pairs), 0, final, arcs))


@st.composite
def graphs(draw, max_states: int = 40):
    """(Q, origin, tail, head): a random directed graph and where to start."""
    num_states = draw(st.integers(1, max_states))
    state = st.integers(0, num_states - 1)
    arcs = draw(st.lists(st.tuples(state, state), max_size=3 * num_states))
    tail = np.array([a for a, _ in arcs], dtype=np.int64)
    head = np.array([b for _, b in arcs], dtype=np.int64)
    return num_states, draw(st.lists(state, min_size=1, max_size=3)), tail, head


@st.composite
def array_acceptors(draw, num_keys: int, deterministic: bool, max_states: int = 30):
    """A random epsilon-free acceptor over keys 1..num_keys, deterministic if asked,
    with back arcs and long chains (many breadth-first levels, states met again)."""
    num_states = draw(st.integers(1, max_states))
    state = st.integers(0, num_states - 1)
    chain = [(q, draw(st.integers(1, num_keys)), q + 1) for q in range(num_states - 1) if draw(st.booleans())]
    extra = draw(st.lists(st.tuples(state, st.integers(1, num_keys), state), max_size=2 * num_states))
    arcs = chain + extra
    if deterministic:
        arcs = list({(q, k): (q, k, d) for q, k, d in arcs}.values())
    final = draw(st.lists(st.booleans(), min_size=num_states, max_size=num_states))
    return from_arcs(num_states, 0, final, arcs)


def assert_same_acceptor(built: Acceptor, expected: Acceptor) -> None:
    assert (built.num_states, built.start) == (expected.num_states, expected.start)
    for name in ("final", "arc_src", "arc_key", "arc_dst"):
        np.testing.assert_array_equal(getattr(built, name), getattr(expected, name), err_msg=name)


# -- results -----------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(graphs())
def test_reached_equals_breadth_first_search(graph):
    num_states, origin, tail, head = graph
    expected = reached_by_search(num_states, origin, tail, head)
    np.testing.assert_array_equal(reached(num_states, np.array(origin), tail, head), expected)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_intersection_equals_the_queue_reference(data):
    left = data.draw(array_acceptors(3, deterministic=data.draw(st.booleans())))
    right = data.draw(array_acceptors(3, deterministic=True))
    assert_same_acceptor(intersect(left, right), product_by_queue(left, right))


@pytest.mark.pynini
@settings(max_examples=60, deadline=None)
@given(st.data())
def test_intersection_of_deep_acceptors_equals_pynini(data):
    """Deeper machines than tests/engine/test_direct_topology.py draws: long chains,
    back arcs, many breadth-first levels."""
    import pynini

    from fstcrf.engine.bounded import as_arrays, to_fst

    drawn = data.draw(array_acceptors(3, deterministic=True))
    # each state's arcs by key, as a topology's and a determinised machine's are
    by_key = np.lexsort((drawn.arc_key, drawn.arc_src))
    left = Acceptor(
        drawn.num_states, 0, drawn.final, *(a[by_key] for a in (drawn.arc_src, drawn.arc_key, drawn.arc_dst))
    )
    right = data.draw(array_acceptors(3, deterministic=True))
    expected = pynini.intersect(to_fst(left), pynini.arcsort(to_fst(right), "ilabel"))
    expected.connect()
    assert_same_acceptor(intersect(left, right), as_arrays(expected))


# -- the work done ------------------------------------------------------------------


class CountingNumpy:
    """numpy for the acceptor module, counting the cells of every array its functions
    are given or return (np.zeros(Q) counts Q, np.concatenate of a list its result)."""

    def __init__(self) -> None:
        self.cells = 0

    def __getattr__(self, name: str):
        value = getattr(np, name)
        if isinstance(value, type) or not callable(value):
            return value

        def counted(*args, **kwargs):
            result = value(*args, **kwargs)
            given_arrays = [item for item in (*args, *kwargs.values()) if isinstance(item, np.ndarray)]
            returned = list(result) if isinstance(result, tuple) else [result]
            self.cells += sum(item.size for item in given_arrays + returned if isinstance(item, np.ndarray))
            return result

        return counted


def chain(length: int) -> Acceptor:
    """States 0 -> 1 -> ... -> length-1, reading key 1, the last final."""
    return from_arcs(length, 0, [q == length - 1 for q in range(length)], [(q, 1, q + 1) for q in range(length - 1)])


def test_reachability_works_in_what_it_reaches(monkeypatch):
    length = 3000
    fsa = chain(length)
    counting = CountingNumpy()
    monkeypatch.setattr(acceptor_module, "np", counting)
    assert reached(length, np.array([0]), fsa.arc_src, fsa.arc_dst).all()
    assert counting.cells < 100 * length  # a whole-automaton array per level: 3,000 per state


def test_intersection_works_in_what_it_reaches(monkeypatch):
    length = 3000
    left, anything = chain(length), from_arcs(1, 0, [True], [(0, 1, 0), (0, 2, 0)])
    counting = CountingNumpy()
    monkeypatch.setattr(acceptor_module, "np", counting)
    product = intersect(left, anything)
    assert product.num_states == length
    assert counting.cells < 400 * length  # merging the pairs known so far at each level: 15,000 per state
