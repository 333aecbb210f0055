"""Span (entity) probabilities against brute-force enumeration, and the chunk rule
against the corpus's chunk reader."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, strategies as st

import fstcrf.engine.spans as spans
from fstcrf.corpus.schemes import read_chunks
from fstcrf.engine.spans import decoded_entities, entity_probabilities, path_chunks, state_labels
from fstcrf.engine.inference import Potentials, viterbi
from fstcrf.engine import kernel
from fstcrf.engine.topology import first_order, iob2
from fstcrf.errors import LabelError, ShapeError

from strategies import batches, oracle_settings

CHUNK_LABELS = ("O", "B-A", "I-A", "B-B", "I-B", "E-A", "S-B")


def _exact_span_probabilities(instance, b: int, labels: list[str]) -> dict[tuple[int, int, str], float]:
    """Every span's probability by enumerating the sentence's allowed paths."""
    oracle = instance.oracle(b)
    totals: dict[tuple[int, int, str], float] = {}
    for path, probability in zip(oracle.paths, oracle.probabilities):
        for span in read_chunks([labels[s] for s in path]):
            totals[span] = totals.get(span, 0.0) + probability
    return totals


@given(instance=batches(), data=st.data())
@oracle_settings(150)
def test_every_span_probability_is_the_enumerated_one(instance, data):
    labels = data.draw(
        st.lists(st.sampled_from(CHUNK_LABELS), min_size=instance.spec.num_states, max_size=instance.spec.num_states)
    )
    pot = instance.potentials()
    asked, expected = [], []
    for b, T in enumerate(instance.lengths):
        exact = _exact_span_probabilities(instance, b, labels)
        candidates = [(i, j, x) for i in range(T) for j in range(i, T) for x in ("A", "B", "C")]
        asked.append(candidates)
        expected.append([exact.get(span, 0.0) for span in candidates])
    got_all = entity_probabilities(pot, labels, asked)
    for got, want in zip(got_all, expected):
        np.testing.assert_allclose(got, want, atol=1e-9, rtol=1e-7)


@given(instance=batches(), data=st.data())
@oracle_settings(80)
def test_scores_too_wide_for_the_linear_domain_are_exact_in_the_log_domain(instance, data):
    """Each sentence's emissions scaled by its own factor, the shared scores by another
    (a small temperature): sentences the linear domain cannot hold (a row's mass under
    1e-100) are redone in the log domain, in the same batch as those it holds."""
    labels = data.draw(
        st.lists(st.sampled_from(CHUNK_LABELS), min_size=instance.spec.num_states, max_size=instance.spec.num_states)
    )
    factors = np.array(
        data.draw(
            st.lists(
                st.sampled_from([1.0, 40.0, 1e3, 1e5]), min_size=len(instance.lengths), max_size=len(instance.lengths)
            )
        )
    )
    shared = data.draw(st.sampled_from([1.0, 300.0]))
    scaled = dataclasses.replace(
        instance,
        emissions=instance.emissions * np.repeat(factors, instance.lengths)[:, None],
        transitions=instance.transitions * shared,
        start=instance.start * shared,
        final=instance.final * shared,
        _oracles={},
    )
    asked, expected = [], []
    for b, T in enumerate(scaled.lengths):
        exact = _exact_span_probabilities(scaled, b, labels)
        candidates = [(i, j, x) for i in range(T) for j in range(i, T) for x in ("A", "B")]
        asked.append(candidates)
        expected.append([exact.get(span, 0.0) for span in candidates])
    for got, want in zip(entity_probabilities(scaled.potentials(), labels, asked), expected):
        np.testing.assert_allclose(got, want, atol=1e-9, rtol=1e-7)


def test_a_first_token_whose_linear_mass_underflows_is_exact():
    """The states a path may start in are 800 nats below the token's best state, which
    may not start: both linear weights underflow to 0, so the linear first row has no
    mass; the log domain gives the enumerated probabilities."""
    topology = first_order(["O", "B-A", "I-A"])
    emissions = np.zeros((2, 3))
    emissions[0] = [0.0, -800.0, -800.0]
    start = np.array([-1000.0, 0.0, -1000.0])
    pot = Potentials(topology, emissions, start=start)
    chunks = spans.ChunkEdges.of(pot.topology, ["O", "B-A", "I-A"])
    one = tuple(np.zeros(1, dtype=dtype) for dtype in (np.int32, np.int64, np.int64, np.int32))
    assert not kernel.chunk_probabilities(*spans.kernel_structs(pot), chunks.reading, one)[1].any()
    # paths start in B-A (start 0, emission -800) or elsewhere (start -1000): B-A at token 0
    # has probability 1 up to exp(-200); then each of the three labels at token 1 is as likely
    got = entity_probabilities(pot, ["O", "B-A", "I-A"], [[(0, 0, "A"), (0, 1, "A")]])[0]
    np.testing.assert_allclose(got, [2 / 3, 1 / 3], rtol=1e-12)


def chunks_by_scanning(tags):
    """An independent reading: scan the tags keeping the chunk that is open (the
    state machine of conlleval's reader, honouring E and S)."""
    chunks, open_chunk = [], None  # open_chunk: (first token, type)
    for position, tag in enumerate(tags):
        prefix, _, chunk_type = tag.partition("-")
        continued = open_chunk is not None and prefix in ("I", "E") and chunk_type == open_chunk[1]
        if open_chunk is not None and not continued:
            chunks.append((open_chunk[0], position - 1, open_chunk[1]))
            open_chunk = None
        if prefix == "O":
            continue
        if open_chunk is None:
            open_chunk = (position, chunk_type)
        if prefix in ("E", "S"):
            chunks.append((open_chunk[0], position, chunk_type))
            open_chunk = None
    if open_chunk is not None:
        chunks.append((open_chunk[0], len(tags) - 1, open_chunk[1]))
    return chunks


@given(st.lists(st.sampled_from(CHUNK_LABELS), min_size=1, max_size=12))
@oracle_settings(300)
def test_the_pairwise_chunk_rule_reads_what_a_scan_of_the_tags_reads(sequence):
    assert path_chunks(sequence) == read_chunks(sequence) == chunks_by_scanning(sequence)


def test_decoded_entities_of_a_sharp_model_are_near_certain_and_match_the_path():
    topology = iob2(["PER", "LOC"])
    labels = state_labels(topology)
    wanted = ["B-PER", "I-PER", "O", "B-LOC", "B-LOC"]
    emissions = np.full((len(wanted), topology.num_states), -10.0)
    for t, label in enumerate(wanted):
        emissions[t, labels.index(label)] = 10.0
    pot = Potentials(topology, emissions)
    entities = decoded_entities(pot, labels, viterbi(pot).paths)[0]
    assert [(e.first, e.last, e.type) for e in entities] == [(0, 1, "PER"), (3, 3, "LOC"), (4, 4, "LOC")]
    assert all(e.probability > 0.999 for e in entities)


def test_a_flat_model_spreads_the_mass_as_counting_says():
    """Uniform scores over IOB2 with one type: P(a single-token entity at the only
    token) is 1 of the 2 sequences (B, O) of length 1."""
    topology = iob2(["X"])
    labels = state_labels(topology)
    pot = Potentials(topology, np.zeros((1, topology.num_states)))
    [[probability]] = entity_probabilities(pot, labels, [[(0, 0, "X")]])
    assert probability == pytest.approx(0.5)


def test_spans_outside_the_sentence_and_non_chunk_labels_are_refused():
    topology = first_order(["NN", "VB"])
    pot = Potentials(topology, np.zeros((3, 2)))
    with pytest.raises(LabelError, match="'NN' is not O or B-"):
        entity_probabilities(pot, state_labels(topology), [[(0, 0, "X")]])
    topology = iob2(["X"])
    pot = Potentials(topology, np.zeros((3, topology.num_states)))
    with pytest.raises(ShapeError, match=r"span \(2, 3\) is outside its 3 tokens"):
        entity_probabilities(pot, state_labels(topology), [[(2, 3, "X")]])
    with pytest.raises(ShapeError, match="expected spans for 1 sentences"):
        entity_probabilities(pot, state_labels(topology), [])


@given(st.integers(0, 2**32 - 1), st.integers(1, 4), st.booleans())
@oracle_settings(40)
def test_each_component_of_a_joint_model_has_the_enumerated_span_probabilities(seed, length, masked):
    from fstcrf.engine.joint import JointPotentials, JointSpace
    from fstcrf.engine.spans import joint_state_labels
    from oracles import BruteForce

    rng = np.random.default_rng(seed)
    components = [iob2(["A"]), iob2(["A", "B"])]
    sizes = [t.num_states for t in components]
    allowed = rng.random(int(np.prod(sizes))) < 0.8 if masked else None
    if allowed is not None:
        allowed[0] = True  # (O, O) keeps every length feasible
    space = JointSpace(components, allowed)
    transitions = [rng.normal(size=space.transition_shape(k)) for k in range(2)]
    jp = JointPotentials(space, rng.normal(size=(length, space.num_states)), None, transitions)
    product = jp.to_product()
    oracle = BruteForce(product.topology, product.emissions, product.transitions, product.start, product.final)
    for k in range(2):
        labels = joint_state_labels(space, k)
        exact: dict = {}
        for path, probability in zip(oracle.paths, oracle.probabilities):
            for span in read_chunks([labels[s] for s in path]):
                exact[span] = exact.get(span, 0.0) + probability
        spans = [(i, j, x) for i in range(length) for j in range(i, length) for x in ("A", "B")]
        [got] = entity_probabilities(product, labels, [spans])
        np.testing.assert_allclose(got, [exact.get(span, 0.0) for span in spans], atol=1e-9)


@given(instance=batches(), data=st.data())
@oracle_settings(100)
def test_a_path_s_chunks_in_one_call_are_the_pairwise_rule_s_with_the_enumerated_probabilities(instance, data):
    """fc_path_chunks on any state path (a Viterbi path or not): the chunks the
    pairwise rule reads off its labels, each with its enumerated probability, and the
    values of chunk_probabilities bit for bit."""
    labels = data.draw(
        st.lists(st.sampled_from(CHUNK_LABELS), min_size=instance.spec.num_states, max_size=instance.spec.num_states)
    )
    pot = instance.potentials()
    N, S = pot.num_tokens, pot.topology.num_states
    path = np.array(data.draw(st.lists(st.integers(0, S - 1), min_size=N, max_size=N)), dtype=np.int32)
    chunks = spans.ChunkEdges.of(pot.topology, labels)
    graph, scores, arrays = spans.kernel_structs(pot)
    room = kernel.PathChunks(graph, chunks.reading, np.ascontiguousarray(arrays[1]).ravel(), 1, N)
    count = room.found(scores, kernel.input_pointer(path), list(instance.lengths))
    found = [[] for _ in instance.lengths]
    for b, first, last, kind in zip(room.sentence, room.first, room.last, room.kind[:count].tolist()):
        found[b].append((int(first), int(last), chunks.types[kind]))
    offsets = instance.offsets
    assert found == [path_chunks([labels[s] for s in path[offsets[b] : offsets[b + 1]]]) for b in range(len(found))]
    if not count:
        return
    in_kernel = (room.sentence[:count], room.first[:count], room.last[:count], room.kind[:count])
    probability, exact = kernel.chunk_probabilities(graph, scores, arrays, chunks.reading, in_kernel)
    assert room.probability[:count].tobytes() == probability.tobytes()
    assert room.exact[: len(found)].tolist() == exact.astype(np.int32).tolist()
    for b, sentence_chunks in enumerate(found):
        if exact[b]:
            enumerated = _exact_span_probabilities(instance, b, labels)
            got = room.probability[:count][room.sentence[:count] == b]
            np.testing.assert_allclose(got, [enumerated.get(span, 0.0) for span in sentence_chunks], atol=1e-9)


def test_the_chunk_calls_refuse_sizes_and_spans_that_would_read_out_of_bounds():
    """The bindings check the batch against the graph and the reading before C reads
    them; C refuses a span outside its sentence or of an unknown type, and a path's
    state out of range is an infinite path, never a read."""
    topology = first_order(["O", "B-A", "I-A"])
    pot = Potentials(topology, np.zeros((3, 3)), [2, 1])
    chunks = spans.ChunkEdges.of(topology, ["O", "B-A", "I-A"])
    graph, scores, arrays = spans.kernel_structs(pot)

    def span(sentence, first, last, kind):
        dtypes = (np.int32, np.int64, np.int64, np.int32)
        return tuple(np.array([value], dtype=dtype) for value, dtype in zip((sentence, first, last, kind), dtypes))

    with pytest.raises(ShapeError):
        kernel.chunk_probabilities(graph, scores, (arrays[0], np.zeros((4, 3)), None), chunks.reading, span(0, 0, 0, 0))
    with pytest.raises(ShapeError):
        kernel.chunk_candidates(graph, scores, (np.array([0, 2, 4]), arrays[1], None), chunks.reading, 0.1)
    for bad in (span(1, 0, 1, 0), span(2, 0, 0, 0), span(0, 1, 0, 0), span(0, 0, 0, 1), span(-1, 0, 0, 0)):
        with pytest.raises(RuntimeError, match="rejected"):
            kernel.chunk_probabilities(graph, scores, arrays, chunks.reading, bad)
    assert kernel.finite_paths(graph, scores, arrays, np.array([0, 7, -3], dtype=np.int32)).tolist() == [False, False]
    room = kernel.PathChunks(graph, chunks.reading, np.zeros(12), 1, 4)
    for bad_state in (3, -1):
        with pytest.raises(RuntimeError, match="rejected"):
            room.found(scores, kernel.input_pointer(np.array([0, bad_state, 1], dtype=np.int32)), [2, 1])
    with pytest.raises(ShapeError):
        room.found(scores, kernel.input_pointer(np.zeros(5, dtype=np.int32)), [2, 3])
    with pytest.raises(ShapeError):
        kernel.PathChunks(graph, chunks.reading, np.zeros(11), 1, 4)  # emissions for fewer tokens
