"""F1-optimal (MBR) decoding against brute force over every label sequence of small
random chains: the per-sentence objective, the batch's expected-F1 optimum, the
expected number of chunks, and the decoded labels."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

from fstcrf.engine.inference import Potentials
from fstcrf.corpus.schemes import read_chunks, write_chunks
from fstcrf.engine.mbr import (
    ChunkMarginals,
    StreamThreshold,
    candidates,
    chunk_candidates,
    finite_paths,
    labelled_paths,
    mbr_decode,
    writing_scheme,
)
from fstcrf.engine.spans import ChunkEdges, path_chunks, state_labels
from fstcrf.engine.topology import first_order, iob2, kth_order
from fstcrf.errors import InfeasibleError, ScoreError

from strategies import oracle_settings

#: Label sets of the schemes MBR writes: IOB2, IOB1 without B-A (two A chunks cannot
#: touch), BIOES, and IO (no two chunks of a type can touch).
SCHEMES = {
    "iob2": ("O", "B-A", "I-A", "B-B", "I-B"),
    "iob1": ("O", "I-A", "B-B", "I-B"),
    "bioes": ("O", "B-A", "I-A", "E-A", "S-A"),
    "io": ("O", "I-A", "I-B"),
}


@st.composite
def chains(draw, max_sentences: int = 1, max_length: int = 5):
    """(Potentials with random scores on a first- or second-order topology over one
    scheme's labels, the label of each state)."""
    labels = SCHEMES[draw(st.sampled_from(sorted(SCHEMES)))]
    order = draw(st.sampled_from([1, 2])) if len(labels) <= 3 else 1
    topology = first_order(labels) if order == 1 else kth_order(labels, 2, pad="O")
    if order == 2:
        max_length = min(max_length, 4)
    lengths = draw(st.lists(st.integers(1, max_length), min_size=1, max_size=max_sentences))
    seed = draw(st.integers(0, 2**31 - 1))
    scale = draw(st.sampled_from([0.5, 2.0, 4.0]))
    rng = np.random.default_rng(seed)
    pot = Potentials(
        topology,
        rng.normal(0, scale, (sum(lengths), topology.num_states)),
        lengths,
        rng.normal(0, scale, topology.num_edges),
    )
    return pot, state_labels(topology)


def enumerate_sequences(pot: Potentials, b: int, labels) -> list[tuple[float, list[tuple[int, int, str]]]]:
    """(probability, chunks) of every state path of sentence b (brute force)."""
    one = pot.select([b])
    T, S = int(one.lengths[0]), one.topology.num_states
    paths = np.array(list(itertools.product(range(S), repeat=T)))
    scores = one.path_scores(paths)[:, 0]
    finite = np.isfinite(scores)
    probabilities = np.exp(scores[finite] - np.logaddexp.reduce(scores[finite]))
    return [(float(p), path_chunks([labels[s] for s in path])) for p, path in zip(probabilities, paths[finite])]


def span_table(sequences) -> dict[tuple[int, int, str], float]:
    """The exact probability of every span, summed over the sequences that hold it."""
    table: dict[tuple[int, int, str], float] = {}
    for p, chunks in sequences:
        for span in chunks:
            table[span] = table.get(span, 0.0) + p
    return table


def as_spans(entities) -> list[tuple[int, int, str]]:
    return [(entity.first, entity.last, entity.type) for entity in entities]


@pytest.mark.slow
@given(chains(max_sentences=2), st.floats(0.02, 0.9))
@oracle_settings(200)
def test_the_chosen_chunks_maximise_the_per_sentence_objective_over_all_label_sequences(chain, threshold):
    pot, labels = chain
    decoded = mbr_decode(pot, labels, threshold=threshold)
    for b in range(pot.num_sequences):
        sequences = enumerate_sequences(pot, b, labels)
        table = span_table(sequences)
        best = max(sum(table[span] - threshold for span in chunks) for _, chunks in sequences)
        chosen = decoded.chunks[b]
        for entity in chosen:
            assert entity.probability == pytest.approx(table[entity.first, entity.last, entity.type], abs=1e-9)
        assert sum(entity.probability - threshold for entity in chosen) == pytest.approx(best, abs=1e-9)
        scheme = writing_scheme(pot.topology.labels)
        written = write_chunks(as_spans(chosen), int(pot.lengths[b]), scheme)
        assert read_chunks(written) == as_spans(chosen)
        assert write_chunks(read_chunks(written), len(written), scheme) == written  # valid in the scheme
        assert set(written) <= set(pot.topology.labels)
        path = labelled_paths(pot.select([b]), labels, [written])
        assert np.isfinite(pot.select([b]).path_scores(path)[0, 0])  # a path of the lattice
        assert [labels[s] for s in path] == written


@pytest.mark.slow
@given(chains(max_sentences=3), st.floats(0.02, 0.9))
@oracle_settings(100)
def test_at_a_fixed_threshold_each_sentence_alone_decodes_as_in_its_batch_bit_for_bit(chain, threshold):
    pot, labels = chain
    decoded = mbr_decode(pot, labels, threshold=threshold)
    scheme = writing_scheme(pot.topology.labels)
    written = [write_chunks(as_spans(chunks), int(T), scheme) for chunks, T in zip(decoded.chunks, pot.lengths)]
    paths = labelled_paths(pot, labels, written)
    for b in range(pot.num_sequences):
        alone = pot.select([b])
        assert mbr_decode(alone, labels, threshold=threshold).chunks == [decoded.chunks[b]]  # probabilities too
        assert labelled_paths(alone, labels, [written[b]]).tolist() == paths[pot.sentence(b)].tolist()


@pytest.mark.slow
@given(chains(max_sentences=2, max_length=3))
@oracle_settings(150)
def test_the_threshold_search_finds_the_best_expected_f1_of_the_batch(chain):
    pot, labels = chain
    per_sentence = [enumerate_sequences(pot, b, labels) for b in range(pot.num_sequences)]
    tables = [span_table(sequences) for sequences in per_sentence]
    expected_chunks = sum(p * len(chunks) for sequences in per_sentence for p, chunks in sequences)
    options = [{tuple(chunks) for _, chunks in sequences} for sequences in per_sentence]
    best = 0.0
    for choice in itertools.product(*options):
        hits = sum(table[span] for table, chunks in zip(tables, choice) for span in chunks)
        count = sum(len(chunks) for chunks in choice)
        if count + expected_chunks:
            best = max(best, 2 * hits / (count + expected_chunks))
    floor = 1e-6
    assume(best / 2 > floor)  # spans below the floor are never candidates
    decoded = mbr_decode(pot, labels, floor=floor)
    assert decoded.expected_chunks == pytest.approx(expected_chunks, abs=1e-9)
    assert decoded.expected_f1 == pytest.approx(best, abs=1e-9)
    assert decoded.threshold == pytest.approx(best / 2, abs=1e-9)


@given(st.lists(chains(max_sentences=2), min_size=1, max_size=4))
@oracle_settings(100)
def test_a_stream_s_threshold_is_half_the_expected_f1_of_its_chunks_so_far(batches):
    stream = StreamThreshold()
    mass, count, expected = 1.0, 1, 1.0  # one certain chunk counted first
    assert stream.threshold() == 0.5
    for pot, labels in batches:
        decoded = mbr_decode(pot, labels, threshold=stream.threshold())
        stream.add(decoded)
        mass += sum(entity.probability for sentence in decoded.chunks for entity in sentence)
        count += sum(len(sentence) for sentence in decoded.chunks)
        expected += decoded.expected_chunks
        assert stream.threshold() == pytest.approx(mass / (count + expected), abs=1e-12)
        assert 0.0 < stream.threshold() <= 0.5


@pytest.mark.slow
@given(chains(max_sentences=3))
@oracle_settings(40)
def test_a_batch_streamed_again_and_again_ends_at_its_own_best_threshold(chain):
    # each pass decodes at half the expected F1 of the passes before: Dinkelbach's
    # iteration, averaged, so the threshold settles where the batch's search puts it
    pot, labels = chain
    searched = mbr_decode(pot, labels, floor=1e-6)
    assume(searched.expected_chunks > 0.5 and searched.threshold > 0.05)
    stream = StreamThreshold()
    for _ in range(300):
        stream.add(mbr_decode(pot, labels, threshold=stream.threshold()))
    assert stream.threshold() == pytest.approx(searched.threshold, abs=0.01)


def test_a_fixed_threshold_must_lie_strictly_between_0_and_1():
    topology = first_order(SCHEMES["iob2"])
    pot = Potentials(topology, np.zeros((3, topology.num_states)))
    for threshold in (0.0, 1.0, -0.5, 2.0):
        with pytest.raises(ScoreError, match="strictly between 0 and 1"):
            mbr_decode(pot, state_labels(topology), threshold=threshold)


def test_labels_the_lattice_cannot_hold_are_refused():
    topology = iob2(["A", "B"])  # I-A only after B-A or I-A
    pot = Potentials(topology, np.zeros((5, topology.num_states)), [2, 3])
    labels = state_labels(topology)
    path = labelled_paths(pot, labels, [["B-A", "I-A"], ["O", "B-B", "O"]])
    assert [labels[s] for s in path] == ["B-A", "I-A", "O", "B-B", "O"]
    with pytest.raises(InfeasibleError, match="sentence 1: the lattice has no path with the labels O I-A O"):
        labelled_paths(pot, labels, [["B-A", "I-A"], ["O", "I-A", "O"]])
    with pytest.raises(InfeasibleError, match="sentence 0"):
        labelled_paths(pot, labels, [["S-A", "O"], ["O", "O", "O"]])  # no state has label S-A


@oracle_settings(200)
@given(chains(max_sentences=3, max_length=4), st.data())
def test_labelled_paths_is_the_best_path_with_the_labels_by_brute_force(chain, data):
    """Either the best state path whose labels are the wanted ones, or InfeasibleError
    naming the first sentence no finite path has those labels for (a label no state
    has, an edge the topology lacks, a score of -inf)."""
    pot, labels = chain
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1)))
    pot.emissions[rng.random(pot.emissions.shape) < 0.15] = -np.inf  # a grammar's forbidden states
    pot.transitions[rng.random(pot.transitions.shape) < 0.15] = -np.inf
    choices = sorted(set(labels)) + ["S-Z"]  # S-Z: no state has it
    wanted = [data.draw(st.lists(st.sampled_from(choices), min_size=T, max_size=T)) for T in pot.lengths.tolist()]
    best = []
    for b, sentence in enumerate(wanted):
        one = pot.select([b])
        paths = np.array(list(itertools.product(range(one.topology.num_states), repeat=len(sentence))))
        holds = np.array([[labels[s] for s in path] == sentence for path in paths], dtype=bool)
        scores = np.where(holds, one.path_scores(paths)[:, 0], -np.inf)
        best.append((scores.max() if len(scores) else -np.inf, paths[int(np.argmax(scores))]))
    infeasible = [b for b, (score, _) in enumerate(best) if score == -np.inf]
    if infeasible:
        with pytest.raises(InfeasibleError, match=f"sentence {infeasible[0]}:"):
            labelled_paths(pot, labels, wanted)
        return
    path = labelled_paths(pot, labels, wanted)
    assert path.dtype == np.int32
    assert [labels[s] for s in path] == [label for sentence in wanted for label in sentence]
    np.testing.assert_allclose(pot.path_scores(path)[0], [score for score, _ in best])


@oracle_settings(200)
@given(chains(max_sentences=3, max_length=4), st.integers(0, 2**31 - 1), st.booleans())
def test_a_path_is_finite_where_its_score_is(chain, seed, classes):
    """finite_paths, the check that written labels have a path, against path_scores:
    paths the topology forbids (edges, first and last states of second-order chains),
    states a clamp forbids, transitions by token class; a state -1 (a label no state
    has) makes its sentence's path infinite."""
    pot, _ = chain
    rng = np.random.default_rng(seed)
    if classes:
        edges = pot.topology.num_edges
        pot = Potentials(
            pot.topology,
            pot.emissions,
            pot.lengths,
            rng.normal(size=(2, edges)),
            None,
            None,
            rng.integers(0, 2, pot.num_tokens),
        )
    allowed = rng.random(pot.emissions.shape) < 0.8
    allowed[np.arange(pot.num_tokens), rng.integers(0, pot.topology.num_states, pot.num_tokens)] = True
    pot = pot.clamp(allowed)
    for _ in range(10):
        path = rng.integers(0, pot.topology.num_states, pot.num_tokens)
        expected = np.isfinite(pot.path_scores(path)[0])
        assert finite_paths(pot, path).tolist() == expected.tolist()
        unknown = rng.integers(0, pot.num_tokens)  # a label no state has: state -1
        path[unknown] = -1
        expected[np.searchsorted(pot.offsets, unknown, side="right") - 1] = False
        assert finite_paths(pot, path).tolist() == expected.tolist()


@pytest.mark.parametrize("scheme, expected", [("iob2", "iob2"), ("iob1", "iob1"), ("bioes", "bioes"), ("io", "iob1")])
def test_the_writing_scheme_is_read_off_the_labels(scheme, expected):
    assert writing_scheme(SCHEMES[scheme]) == expected


def test_a_confident_chain_decodes_as_viterbi():
    """When every token's label is nearly certain, MBR and Viterbi agree."""
    from fstcrf.engine.inference import viterbi

    labels = SCHEMES["bioes"]
    topology = first_order(labels)
    rng = np.random.default_rng(0)
    emissions = rng.normal(0, 1, (40, topology.num_states))
    emissions[np.arange(40), rng.integers(0, topology.num_states, 40)] += 30.0
    pot = Potentials(topology, emissions, [10, 10, 20])
    decoded = mbr_decode(pot, state_labels(topology))
    best = viterbi(pot).paths
    assert [as_spans(chunks) for chunks in decoded.chunks] == [
        path_chunks([labels[s] for s in best[pot.sentence(b)]]) for b in range(pot.num_sequences)
    ]


@pytest.mark.slow
@given(chains(max_sentences=3), st.floats(0.01, 0.6), st.sampled_from([1.0, 1.0, 400.0]))
@oracle_settings(150)
def test_the_kernel_s_candidates_are_the_marginals_oracle_s_and_brute_force_s(chain, floor, sharpen):
    """csrc/fstcrf_chunks.c's candidates, their probabilities and the expected number of
    chunks against the numpy oracle (ChunkMarginals, candidates) and brute force; scores
    multiplied by 400 leave the linear domain for the sentences longer than a token
    (the log-domain path, in the same batch as the kernel's)."""
    pot, labels = chain
    pot = Potentials(pot.topology, pot.emissions * sharpen, pot.lengths, pot.transitions * sharpen)
    chunks = ChunkEdges.of(pot.topology, labels)
    got, expected_chunks = chunk_candidates(pot, chunks, floor)
    marginals = ChunkMarginals.of(pot, chunks)
    want = candidates(pot, chunks, marginals, floor)
    for name in ("sentence", "first", "last", "kind"):
        assert getattr(got, name).tolist() == getattr(want, name).tolist()
    np.testing.assert_allclose(got.probability, want.probability, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(expected_chunks, marginals.expected_chunks, rtol=1e-9, atol=1e-12)
    brute_expected = 0.0
    for b in range(pot.num_sequences):
        sequences = enumerate_sequences(pot, b, labels)
        brute_expected += sum(p * len(spans) for p, spans in sequences)
        table = span_table(sequences)
        mine = {
            (first, last, chunks.types[kind]): p
            for s, first, last, kind, p in zip(got.sentence, got.first, got.last, got.kind, got.probability)
            if s == b
        }
        for span, p in table.items():
            if p > floor + 1e-9:
                assert span in mine
        for span, p in mine.items():
            assert p == pytest.approx(table[span], rel=1e-7, abs=1e-10)
    assert expected_chunks == pytest.approx(brute_expected, rel=1e-7, abs=1e-10)
