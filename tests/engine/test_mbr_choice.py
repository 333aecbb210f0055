"""The kernel's choice of F1-optimal chunks among candidates (csrc/fstcrf_mbr.c)
against a plain-Python oracle of the same program on random candidate sets: the
set kept at a threshold (interval scheduling where the candidates clash), and
Dinkelbach's search, bit for bit; and against brute force over every
non-overlapping subset for the objective it maximises."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, strategies as st

from fstcrf.engine import kernel

from strategies import oracle_settings


@st.composite
def candidate_sets(draw, max_sentences: int = 3, max_length: int = 7):
    """(lengths, starts, first, last, kind, probability, adjacent) of a random batch's
    candidates in the kernel's order (sentence, first, last, type), each span once;
    probabilities drawn from a few repeated values too, so that ties occur."""
    K = draw(st.integers(1, 3))
    adjacent = np.array(draw(st.lists(st.booleans(), min_size=K, max_size=K)), dtype=np.uint8)
    lengths = draw(st.lists(st.integers(0, max_length), min_size=1, max_size=max_sentences))
    spans: list[tuple[int, int, int, int]] = []
    for b, T in enumerate(lengths):
        every = [(b, i, j, x) for i in range(T) for j in range(i, T) for x in range(K)]
        spans += sorted(draw(st.sets(st.sampled_from(every), max_size=8)) if every else [])
    values = st.one_of(st.sampled_from([0.2, 0.3, 0.5, 0.6, 1.0]), st.floats(0.01, 1.0))
    probability = np.array(draw(st.lists(values, min_size=len(spans), max_size=len(spans))), dtype=np.float64)
    sentence = np.array([s[0] for s in spans], dtype=np.int64)
    starts = np.searchsorted(sentence, np.arange(len(lengths) + 1)).astype(np.int64)
    first = np.array([s[1] for s in spans], dtype=np.int64)
    last = np.array([s[2] for s in spans], dtype=np.int64)
    kind = np.array([s[3] for s in spans], dtype=np.int32)
    return np.array(lengths, dtype=np.int64), starts, first, last, kind, probability, adjacent


def sentence_best(first, last, kind, probability, length, K, adjacent, threshold) -> list[int]:
    """The oracle's interval scheduling of one sentence: the indices of the
    non-overlapping spans above ``threshold`` maximising sum (p - threshold), the
    first best in span order (value[position][x]: the best sum before position with
    a chunk of type x ending right before it; x = K: none does)."""
    worth = [k for k in range(len(probability)) if probability[k] > threshold]
    starting: dict[int, list[int]] = {}
    for k in worth:
        starting.setdefault(first[k], []).append(k)
    positions = sorted({0, length} | set(starting) | {last[k] + 1 for k in worth})
    value = {position: [-np.inf] * (K + 1) for position in positions}
    back = {}
    value[0][K] = 0.0
    for previous, position in zip([None, *positions], positions):
        here = value[position]
        if previous is not None:
            column = max(range(K + 1), key=value[previous].__getitem__)
            if value[previous][column] > here[K]:
                here[K] = value[previous][column]
                back[position, K] = (previous, column, -1)
        for k in starting.get(position, ()):
            x, end = kind[k], last[k] + 1
            before = max([c for c in range(K + 1) if c != x or adjacent[x]], key=here.__getitem__)
            gain = here[before] + probability[k] - threshold
            if gain > value[end][x]:
                value[end][x] = gain
                back[end, x] = (position, before, k)
    chosen, state = [], (length, max(range(K + 1), key=value[length].__getitem__))
    while state[0] > 0:
        position, column, k = back[state]
        if k >= 0:
            chosen.append(k)
        state = (position, column)
    return chosen


def oracle_best(candidates, threshold) -> np.ndarray:
    """bool [M]: each sentence's candidates above the threshold where no two next to
    each other overlap or touch against ``adjacent``, else its scheduled set."""
    lengths, starts, first, last, kind, probability, adjacent = candidates
    chosen = probability > threshold
    for b, length in enumerate(lengths.tolist()):
        rows = slice(int(starts[b]), int(starts[b + 1]))
        at = [k for k in range(rows.start, rows.stop) if chosen[k]]
        clash = any(
            first[j] <= last[i] or (first[j] == last[i] + 1 and kind[j] == kind[i] and not adjacent[kind[i]])
            for i, j in zip(at, at[1:])
        )
        if clash:
            chosen[rows] = False
            picked = sentence_best(
                first[rows].tolist(), last[rows].tolist(), kind[rows].tolist(), probability[rows].tolist(),
                length, len(adjacent), adjacent, threshold,
            )  # fmt: skip
            chosen[[rows.start + k for k in picked]] = True
    return chosen


def f1(probability, chosen, expected_chunks) -> float:
    mass = 0.0
    for p in probability[chosen].tolist():  # in order, as the kernel sums
        mass += p
    total = int(np.count_nonzero(chosen)) + expected_chunks
    return 2.0 * mass / total if total else 0.0


def oracle_search(candidates, expected_chunks, floor, max_rounds=100) -> tuple[float, np.ndarray]:
    """Dinkelbach's iteration from the candidates above 1/2."""
    probability = candidates[5]
    chosen = probability > 0.5
    best = f1(probability, chosen, expected_chunks)
    threshold = max(best / 2, floor)
    for _ in range(max_rounds):
        proposal = oracle_best(candidates, threshold)
        score = f1(probability, proposal, expected_chunks)
        if score <= best + 1e-12:
            break
        chosen, best = proposal, score
        threshold = max(best / 2, floor)
    return threshold, chosen


@oracle_settings(150)
@given(candidate_sets(), st.one_of(st.sampled_from([0.2, 0.3, 0.5]), st.floats(0.0, 0.99)))
def test_the_kernel_keeps_the_oracle_s_set_at_a_threshold(candidates, threshold):
    chosen = kernel.MbrCandidates(*candidates).best(threshold)
    assert chosen.tolist() == oracle_best(candidates, threshold).tolist()


@oracle_settings(150)
@given(candidate_sets(), st.floats(0.0, 6.0), st.sampled_from([0.01, 0.2]))
def test_the_kernel_s_search_is_the_oracle_s_bit_for_bit(candidates, expected_chunks, floor):
    threshold, chosen = kernel.MbrCandidates(*candidates).search(expected_chunks, floor, 100)
    wanted_threshold, wanted = oracle_search(candidates, expected_chunks, floor)
    assert threshold == wanted_threshold
    assert chosen.tolist() == wanted.tolist()


@oracle_settings(150)
@given(candidate_sets(max_sentences=1, max_length=6), st.floats(0.0, 0.99))
def test_the_kept_set_maximises_the_sum_over_every_set_a_sentence_can_hold(candidates, threshold):
    """Brute force: no subset of non-overlapping candidates, chunks of a type
    touching only where allowed, has a larger sum of (p - threshold)."""
    lengths, starts, first, last, kind, probability, adjacent = candidates
    chosen = kernel.MbrCandidates(*candidates).best(threshold)

    def holds(subset) -> bool:
        spans = sorted(subset, key=lambda k: first[k])
        return all(
            first[j] > last[i] and not (first[j] == last[i] + 1 and kind[j] == kind[i] and not adjacent[kind[i]])
            for i, j in zip(spans, spans[1:])
        )

    M = len(probability)
    assert holds(np.flatnonzero(chosen).tolist())
    best = max(
        sum(probability[k] - threshold for k in subset)
        for size in range(M + 1)
        for subset in itertools.combinations(range(M), size)
        if holds(subset)
    )
    assert sum(probability[chosen] - threshold) == pytest.approx(best, abs=1e-12)


@pytest.mark.parametrize(
    "change",
    [
        lambda c: c[2].__setitem__(0, -1),  # a first token before the sentence
        lambda c: c[3].__setitem__(0, 9),  # a last token past it
        lambda c: c[4].__setitem__(0, 5),  # a type out of range
        lambda c: (c[2].__setitem__(1, 0), c[3].__setitem__(1, 0)),  # out of order
        lambda c: c[0].__setitem__(0, -3),  # a negative length
    ],
)
def test_candidates_out_of_range_are_refused_before_anything_is_read_past_them(change):
    lengths = np.array([4], dtype=np.int64)
    starts = np.array([0, 2], dtype=np.int64)
    candidates = [
        lengths,
        starts,
        np.array([1, 2], dtype=np.int64),
        np.array([1, 3], dtype=np.int64),
        np.array([0, 1], dtype=np.int32),
        np.array([0.6, 0.7]),
        np.array([1, 0], dtype=np.uint8),
    ]
    change(candidates)
    made = kernel.MbrCandidates(*candidates)
    with pytest.raises(RuntimeError, match="mbr_best"):
        made.best(0.3)
    with pytest.raises(RuntimeError, match="mbr_search"):
        made.search(1.0, 0.01, 10)
