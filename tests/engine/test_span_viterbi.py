"""span_viterbi (fc_span_viterbi) against brute-force enumeration, max-marginals,
Viterbi and clamped Viterbi, plus its argument checks in Python and in C."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fstcrf
from fstcrf import errors
from fstcrf.engine import kernel
from fstcrf.engine.inference import ChunkStructs, lengths_to_offsets, max_marginals
from fstcrf.engine.span_paths import span_viterbi

from strategies import instances, oracle_settings

SCORE_TOL = 1e-9
MASK_ROWS = ("random", "random", "all", "none", "one")  # how a span token's allowed row is drawn


@dataclass
class Spans:
    """K spans over a batch, in the order given to span_viterbi."""

    sentence: np.ndarray  # int [K]
    first: np.ndarray  # int [K] first token within the sentence
    length: np.ndarray  # int [K]
    allowed: np.ndarray  # bool [sum(length), S]

    def mask(self, k: int) -> np.ndarray:
        """bool [length[k], S]: the allowed rows of span k."""
        offsets = lengths_to_offsets(self.length)
        return self.allowed[offsets[k] : offsets[k + 1]]

    def run(self, pot, **kwargs):
        return span_viterbi(pot, self.sentence, self.first, self.length, self.allowed, **kwargs)


@st.composite
def span_cases(draw, max_spans: int = 8):
    """A feasible batch of 1-4 sentences and 1..max_spans random spans over it, in any
    sentence order, with rows allowing a random set, every state, no state or one state."""
    inst = draw(instances(feasible=True, num_sentences=(1, 4)))
    S = inst.spec.num_states
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    sentence, first, length, rows = [], [], [], []
    for _ in range(draw(st.integers(1, max_spans))):
        b = draw(st.integers(0, len(inst.lengths) - 1))
        a = draw(st.integers(0, inst.lengths[b] - 1))
        L = draw(st.integers(1, inst.lengths[b] - a))
        sentence.append(b)
        first.append(a)
        length.append(L)
        for _ in range(L):
            kind = draw(st.sampled_from(MASK_ROWS))
            row = np.full(S, kind == "all")
            if kind == "random":
                row = rng.random(S) < 0.5
            elif kind == "one":
                row[rng.integers(S)] = True
            rows.append(row)
    return inst, Spans(np.array(sentence), np.array(first), np.array(length), np.array(rows).reshape(-1, S))


def bruteforce_span(oracle, first: int, mask: np.ndarray) -> tuple[float, float]:
    """(inside, outside): best score of the enumerated paths that keep to mask [L, S]
    on tokens first .. first+L-1, and of those that do not (-inf if none)."""
    keeps = np.ones(oracle.num_paths, dtype=bool)
    for i, row in enumerate(mask):
        keeps &= row[oracle.paths[:, first + i]]

    def best(selected):
        return float(oracle.scores[selected].max()) if selected.any() else -math.inf

    return best(keeps), best(~keeps)


def assert_score(got: float, expected: float):
    if expected == -math.inf:
        assert got == -math.inf
    else:
        assert math.isclose(got, expected, rel_tol=1e-12, abs_tol=SCORE_TOL), (got, expected)


def check_span_path(sentence_pot, path, score: float, first: int, mask: np.ndarray, inside: bool):
    """A returned path is -1 throughout without a score, else an allowed path that
    keeps to the mask (inside) or leaves it (outside) and scores the returned score."""
    if score == -math.inf:
        assert np.all(path == -1)
        return
    kept = all(mask[i, path[first + i]] for i in range(len(mask)))
    assert kept == inside
    assert_score(float(sentence_pot.score(path)[0]), score)  # -inf for a forbidden path


@pytest.mark.slow
@oracle_settings(200)
@given(span_cases())
def test_span_viterbi_matches_bruteforce(case):
    inst, spans = case
    pot = inst.potentials()
    result = spans.run(pot)
    singles = {b: inst.potentials(sentences=[b]) for b in set(spans.sentence.tolist())}
    for k, (b, a) in enumerate(zip(spans.sentence.tolist(), spans.first.tolist())):
        mask = spans.mask(k)
        expected_inside, expected_outside = bruteforce_span(inst.oracle(b), a, mask)
        assert_score(result.inside[k], expected_inside)
        assert_score(result.outside[k], expected_outside)
        inside_path, outside_path = result.span_paths(k)
        assert len(inside_path) == inst.lengths[b]
        check_span_path(singles[b], inside_path, result.inside[k], a, mask, inside=True)
        check_span_path(singles[b], outside_path, result.outside[k], a, mask, inside=False)


@pytest.mark.slow
@oracle_settings(100)
@given(span_cases())
def test_best_of_inside_and_outside_is_viterbi(case):
    inst, spans = case
    pot = inst.potentials()
    result = spans.run(pot, paths=False)
    assert result.inside_paths is None and result.outside_paths is None
    best = fstcrf.viterbi(pot).scores[spans.sentence]
    np.testing.assert_allclose(np.maximum(result.inside, result.outside), best, rtol=0, atol=SCORE_TOL)


@pytest.mark.slow
@oracle_settings(100)
@given(instances(feasible=True, num_sentences=(1, 3)))
def test_single_state_span_is_max_marginal(inst):
    """A one-token span allowing only s at t: inside = max-marginal of (t, s) and
    outside = the best max-marginal of the other states at t."""
    pot = inst.potentials()
    S = inst.spec.num_states
    table, _ = max_marginals(pot)
    tokens = np.arange(pot.num_tokens)
    sentence = np.repeat(np.arange(pot.num_sequences), pot.lengths)
    spans = Spans(
        np.repeat(sentence, S),
        np.repeat(tokens - pot.offsets[sentence], S),
        np.ones(pot.num_tokens * S, dtype=np.int64),
        np.tile(np.eye(S, dtype=bool), (pot.num_tokens, 1)),
    )
    result = spans.run(pot)
    inside = result.inside.reshape(-1, S)
    np.testing.assert_array_equal(np.isfinite(inside), np.isfinite(table))
    np.testing.assert_allclose(inside, table, rtol=0, atol=SCORE_TOL)
    others = np.array([[np.delete(row, s).max(initial=-np.inf) for s in range(S)] for row in table])
    np.testing.assert_array_equal(np.isfinite(result.outside.reshape(-1, S)), np.isfinite(others))
    np.testing.assert_allclose(result.outside.reshape(-1, S), others, rtol=0, atol=SCORE_TOL)


@oracle_settings(60)
@given(span_cases(max_spans=12))
def test_threads_and_span_order_do_not_change_results(case):
    inst, spans = case
    pot = inst.potentials()
    one = spans.run(pot)
    two = spans.run(pot, threads=2)
    for name in ("inside", "outside", "inside_paths", "outside_paths", "path_offsets"):
        np.testing.assert_array_equal(getattr(two, name), getattr(one, name))
    # the same spans reversed: the same per-span results, in the new order
    K = len(spans.sentence)
    reverse = np.arange(K)[::-1]
    rows = np.split(spans.allowed, np.cumsum(spans.length)[:-1])
    reversed_spans = Spans(
        spans.sentence[reverse], spans.first[reverse], spans.length[reverse], np.concatenate([rows[k] for k in reverse])
    )
    again = reversed_spans.run(pot, threads=2)
    np.testing.assert_array_equal(again.inside, one.inside[reverse])
    np.testing.assert_array_equal(again.outside, one.outside[reverse])
    for position, k in enumerate(reverse):
        for got, expected in zip(again.span_paths(position), one.span_paths(k)):
            np.testing.assert_array_equal(got, expected)


def clamped_viterbi_score(sentence_pot, clamp: np.ndarray) -> float:
    """Best score of the paths keeping to clamp [T, S] (-inf if a row is empty)."""
    if not clamp.any(axis=1).all():
        return -math.inf
    return float(fstcrf.viterbi(sentence_pot.clamp(clamp)).scores[0])


def test_long_sentences_match_clamped_viterbi():
    """On a complete topology (every clamp leaving a state per token is feasible):
    inside = Viterbi clamped to the span's mask, outside = the best over tokens i of
    Viterbi clamped to the mask before i and to its complement at i."""
    rng = np.random.default_rng(5)
    S = 6
    topo = fstcrf.first_order([f"l{i}" for i in range(S)])
    lengths = [300, 1, 250, 40]
    pot = fstcrf.Potentials(
        topo,
        rng.normal(0, 3, (sum(lengths), S)),
        lengths,
        rng.normal(0, 3, topo.num_edges),
        rng.normal(size=S),
        rng.normal(size=S),
    )
    K = 25
    sentence = rng.integers(0, len(lengths), K)
    first = np.array([rng.integers(0, lengths[b]) for b in sentence])
    length = np.array([rng.integers(1, min(12, lengths[b] - a) + 1) for b, a in zip(sentence, first)])
    allowed = rng.random((int(length.sum()), S)) < 0.6
    allowed[3] = True
    allowed[5] = False
    spans = Spans(sentence, first, length, allowed)
    result = spans.run(pot, threads=2)
    for k, (b, a, L) in enumerate(zip(sentence.tolist(), first.tolist(), length.tolist())):
        single = pot.select([b])
        mask = spans.mask(k)
        clamp = np.ones((lengths[b], S), dtype=bool)
        clamp[a : a + L] = mask
        assert math.isclose(result.inside[k], clamped_viterbi_score(single, clamp), rel_tol=1e-9)
        expected_outside = -math.inf
        for i in range(L):
            clamp = np.ones((lengths[b], S), dtype=bool)
            clamp[a : a + i] = mask[:i]
            clamp[a + i] = ~mask[i]
            expected_outside = max(expected_outside, clamped_viterbi_score(single, clamp))
        assert math.isclose(result.outside[k], expected_outside, rel_tol=1e-9)
        for path, score, inside in zip(result.span_paths(k), (result.inside[k], result.outside[k]), (True, False)):
            check_span_path(single, path, score, a, mask, inside)


def test_no_spans():
    pot = fstcrf.Potentials(fstcrf.iob2(["NP"]), np.zeros((5, 3)), [2, 3])
    result = span_viterbi(pot, [], [], [], np.zeros((0, 3), dtype=bool), threads=2)
    assert result.inside.shape == result.outside.shape == (0,)
    assert result.inside_paths.shape == (0,)
    np.testing.assert_array_equal(result.path_offsets, [0])


# ---------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------


@pytest.fixture
def two_sentences():
    """iob2(NP) (3 states), sentences of 3 and 4 tokens."""
    rng = np.random.default_rng(1)
    topo = fstcrf.iob2(["NP"])
    return fstcrf.Potentials(topo, rng.normal(size=(7, 3)), [3, 4], rng.normal(size=topo.num_edges))


def good_arguments():
    return dict(span_sentence=[1, 0], span_first=[1, 0], span_length=[2, 3], allowed=np.ones((5, 3), dtype=bool))


@pytest.mark.parametrize(
    "change, error, message",
    [
        (dict(span_sentence=[[1, 0]]), errors.ShapeError, "span_sentence must be a 1-D integer array"),
        (dict(span_first=[1.0, 0.0]), errors.ShapeError, "span_first must be a 1-D integer array"),
        (dict(span_length=[True, True]), errors.ShapeError, "span_length must be a 1-D integer array"),
        (dict(span_first=[1]), errors.ShapeError, "one entry per span"),
        (dict(span_sentence=[2, 0]), errors.LabelError, r"span 0: sentence 2 is out of range \[0, 2\)"),
        (dict(span_sentence=[1, -1]), errors.LabelError, "span 1: sentence -1"),
        (dict(span_length=[0, 3], allowed=np.ones((3, 3), dtype=bool)), errors.ShapeError, "span 0 has length 0"),
        (
            dict(span_first=[3, 0]),
            errors.ShapeError,
            r"span 0 covers tokens 3 \.\. 4 of sentence 1, which has tokens 0 \.\. 3",
        ),
        (dict(span_first=[1, -1]), errors.ShapeError, "span 1 covers tokens -1"),
        (dict(allowed=np.ones((4, 3), dtype=bool)), errors.ShapeError, r"shape \(5, 3\)"),
        (dict(allowed=np.ones((5, 2), dtype=bool)), errors.ShapeError, r"shape \(5, 3\)"),
        (dict(allowed=np.ones((5, 3), dtype=np.int64)), errors.ShapeError, "must be a bool array"),
    ],
)
def test_bad_input_raises_typed_errors(two_sentences, change, error, message):
    arguments = {**good_arguments(), **change}
    with pytest.raises(error, match=message):
        span_viterbi(two_sentences, **arguments)
    span_viterbi(two_sentences, **good_arguments())


def call_kernel(pot, sentence, first, length, mask_offsets, allowed, path_offsets, k: int = 3):
    """fc_span_viterbi on the whole batch with outputs pre-filled with 7; returns
    (the error its status raised or None, inside, outside, inside_path, outside_path)."""
    chunk = ChunkStructs(pot, 0, pot.num_sequences, k=k)
    K, P = len(sentence), max(int(path_offsets[-1]), 1)
    inside, outside = np.full(K, 7.0), np.full(K, 7.0)
    inside_path, outside_path = np.full(P, 7, dtype=np.int32), np.full(P, 7, dtype=np.int32)
    try:
        kernel.span_viterbi(
            chunk.graph,
            chunk.scores,
            chunk.batch,
            np.asarray(sentence, np.int32),
            np.asarray(first, np.int64),
            np.asarray(length, np.int64),
            np.asarray(mask_offsets, np.int64),
            np.asarray(allowed, np.uint8),
            np.asarray(path_offsets, np.int64),
            inside,
            outside,
            inside_path,
            outside_path,
            chunk.workspace,
        )
    except (RuntimeError, errors.InfeasibleError) as error:
        return error, inside, outside, inside_path, outside_path
    return None, inside, outside, inside_path, outside_path


@pytest.mark.parametrize(
    "change",
    [
        dict(sentence=[1, 0]),  # not sorted by sentence
        dict(sentence=[0, 2]),  # no such sentence
        dict(first=[-1, 0]),
        dict(first=[2, 0]),  # tokens 2..3 of a 3-token sentence
        dict(length=[0, 3], mask_offsets=[0, 0, 3]),
        dict(mask_offsets=[0, 1, 5]),  # span 0 has 2 rows
        dict(mask_offsets=[1, 3, 6]),
        dict(path_offsets=[0, 4, 8]),  # sentence 0 has 3 tokens
        dict(path_offsets=[1, 4, 8]),
        dict(k=1),  # workspace sized for k = 1
    ],
)
def test_kernel_rejects_bad_arguments_before_writing(two_sentences, change):
    arguments = dict(
        sentence=[0, 1],
        first=[1, 0],
        length=[2, 3],
        mask_offsets=[0, 2, 5],
        allowed=np.ones((5, 3)),
        path_offsets=[0, 3, 7],
    )
    error, *outputs = call_kernel(two_sentences, **{**arguments, **change})
    assert type(error) is RuntimeError and "rejected the arguments of span_viterbi" in str(error)
    for output in outputs:
        assert np.all(output == 7)
    assert call_kernel(two_sentences, **arguments)[0] is None


def test_kernel_reports_an_infeasible_sentence():
    """A clamp can leave a sentence without any path: FC_INFEASIBLE (InfeasibleError),
    and its spans get -inf scores and -1 paths while the other sentences' spans are computed."""
    topo = fstcrf.iob2(["NP"])
    rng = np.random.default_rng(2)
    pot = fstcrf.Potentials(topo, rng.normal(size=(5, 3)), [2, 3])
    clamp = np.ones((5, 3), dtype=bool)
    clamp[2] = ~topo.start  # sentence 1 must start in I-NP
    error, inside, outside, inside_path, outside_path = call_kernel(
        pot.clamp(clamp), [0, 1], [0, 1], [2, 1], [0, 2, 3], np.ones((3, 3)), [0, 2, 5]
    )
    assert isinstance(error, errors.InfeasibleError)
    assert inside[0] == fstcrf.viterbi(pot.select([0])).scores[0] and outside[0] == -np.inf
    assert inside[1] == outside[1] == -np.inf
    assert np.all(inside_path[2:] == -1) and np.all(outside_path == -1)
