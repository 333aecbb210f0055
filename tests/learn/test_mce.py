"""MCE-F training (fstcrf.learn.mce): segments as conlleval reads them, segment boxes, the
objective against brute-force enumeration, its gradient, and the estimator."""

import itertools
import math
from dataclasses import dataclass

import numpy as np
import pytest
import scipy.special
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fstcrf.learn import mce
from fstcrf.features.encoding import EncodedSentences, build_features
from fstcrf.errors import FstcrfError, LabelError
from fstcrf.engine.inference import kbest
from fstcrf.corpus.evaluate import score_chunks
from fstcrf.corpus.labels import chain_topology, gold_states, parse_gold
from fstcrf.model import ChainCRF, load_model
from fstcrf.learn.objective import Scorer, TrainingSet
from oracles import check_finite_differences, enumerate_state_paths
from corpora import TEMPLATE, chunk_corpus, random_corpus, training_set

LABELS = ["B-A", "B-B", "I-A", "I-B", "O"]
SCHEME = mce.Scheme.from_labels(LABELS)


def segment_set(labels: list[str]) -> set[tuple[int, int, int]]:
    """(first, last, type) of the chunks of one sentence, by read_segments."""
    ids = np.array([LABELS.index(label) for label in labels], dtype=np.int64)
    segments = mce.read_segments(ids, np.array([0, len(ids)]), SCHEME)
    return set(zip(segments.first.tolist(), segments.last.tolist(), segments.chunk_type.tolist()))


def iob2_valid(labels) -> bool:
    return all(
        not label.startswith("I-") or (t > 0 and labels[t - 1][2:] == label[2:] and labels[t - 1] != "O")
        for t, label in enumerate(labels)
    )


label_sequences = st.lists(st.sampled_from(LABELS), min_size=1, max_size=9)


@settings(max_examples=300, deadline=None)
@given(label_sequences, label_sequences)
def test_segments_are_the_chunks_conlleval_counts(a, b):
    b = (b * len(a))[: len(a)]
    scores = score_chunks([a], [b])
    assert len(segment_set(a)) == scores.num_gold_chunks
    assert len(segment_set(b)) == scores.num_predicted_chunks
    assert len(segment_set(a) & segment_set(b)) == scores.num_correct_chunks


def test_segments_across_sentences_and_types():
    labels = [["B-A", "I-A", "O"], ["I-B", "I-B", "B-B"], ["O"]]
    ids = np.array([LABELS.index(label) for sentence in labels for label in sentence])
    segments = mce.read_segments(ids, np.array([0, 3, 6, 7]), SCHEME)
    assert segments.sentence.tolist() == [0, 1, 2 - 1] and segments.first.tolist() == [0, 0, 2]
    assert segments.last.tolist() == [1, 1, 2]
    assert [LABELS[i][2:] for i in SCHEME.inside_label[segments.chunk_type]] == ["A", "B", "B"]


@pytest.mark.slow
@pytest.mark.parametrize("length", [1, 2, 3, 4])
def test_a_box_holds_exactly_when_the_segment_is_output(length):
    """Over IOB2-valid sequences, keeping to a segment's box <=> outputting the segment."""
    valid = [list(z) for z in itertools.product(LABELS, repeat=length) if iob2_valid(z)]
    for y in valid:
        ids = np.array([LABELS.index(label) for label in y])
        segments = mce.read_segments(ids, np.array([0, length]), SCHEME)
        span_lengths, allowed = mce.segment_boxes(segments, ids, np.array([0, length]), SCHEME, len(LABELS))
        rows = np.cumsum(span_lengths) - span_lengths
        for k in range(len(segments)):
            box = allowed[rows[k] : rows[k] + span_lengths[k]]
            first = int(segments.first[k])
            key = (first, int(segments.last[k]), int(segments.chunk_type[k]))
            for z in valid:
                keeps = all(box[i, LABELS.index(z[first + i])] for i in range(span_lengths[k]))
                assert keeps == (key in segment_set(z)), (y, z, key)


def test_non_iob2_labels_are_refused():
    with pytest.raises(LabelError, match="E-A"):
        mce.Scheme.from_labels(["B-A", "E-A", "O"])


# -- the objective against enumeration --------------------------------------------------


@dataclass
class SentencePaths:
    """Every feasible state path of one sentence: states int [P, T], scores [P] and the
    chunks (first, last, type) each outputs; ``gold`` int [T] and ``gold_chunks``."""

    states: np.ndarray
    scores: np.ndarray
    chunks: list
    gold: np.ndarray
    gold_chunks: set

    def margin(self, chunk) -> tuple[float, float]:
        """(best score of a path that outputs chunk, best score of one that does not)."""
        inside = max((s for s, c in zip(self.scores, self.chunks) if chunk in c), default=-math.inf)
        outside = max((s for s, c in zip(self.scores, self.chunks) if chunk not in c), default=-math.inf)
        return inside, outside

    def best_incorrect(self) -> int | None:
        """The index of the best path that is not gold (None if every path is gold)."""
        incorrect = [
            i for i in np.argsort(-self.scores, kind="stable") if not np.array_equal(self.states[i], self.gold)
        ]
        return incorrect[0] if incorrect else None


def enumerate_sentence(objective: mce.SegmentFScore, theta: np.ndarray, b: int) -> SentencePaths:
    """The paths of sentence b of the objective's training set, scored with theta."""
    topology = objective.topology
    rows = objective.encoded.token_rows(b, b + 1)
    T = rows.stop - rows.start
    sub = objective.scorer.potentials(objective.encoded, theta, b, b + 1)
    # the allowed paths, in the lexicographic order of S^T (so ties break as they would there)
    states = np.array(sorted(enumerate_state_paths(topology, T)), dtype=np.int64).reshape(-1, T)
    scores = sub.path_scores(states)[:, 0]
    feasible = np.isfinite(scores)

    def chunks(path):
        segments = mce.read_segments(topology.state_label[path], np.array([0, T]), objective.scheme)
        return set(zip(segments.first.tolist(), segments.last.tolist(), segments.chunk_type.tolist()))

    gold = objective.gold_states[rows]
    return SentencePaths(states[feasible], scores[feasible], [chunks(p) for p in states[feasible]], gold, chunks(gold))


def brute_force_objective(objective: mce.SegmentFScore, theta: np.ndarray) -> float:
    """r(theta) from every label path of every sentence."""

    def smooth(d):
        return scipy.special.expit(objective.alpha * d + objective.beta)

    tp = fn = fp = 0.0
    for b in range(objective.num_sequences):
        paths = enumerate_sentence(objective, theta, b)
        for chunk in paths.gold_chunks:
            inside, outside = paths.margin(chunk)
            tp, fn = tp + 1 - smooth(outside - inside), fn + smooth(outside - inside)
        rival = paths.best_incorrect()
        if rival is None:
            continue
        for chunk in paths.chunks[rival] - paths.gold_chunks:
            inside, outside = paths.margin(chunk)
            fp += smooth(inside - outside)
    g2 = objective.gamma**2
    return (g2 * fn + fp) / ((1 + g2) * tp)


def short_corpus(seed: int, sentences: int):
    corpus = random_corpus(seed, sentences)
    corpus.sentences = [s for s in corpus.sentences if len(s) <= 4]
    return corpus


def iob2_training_set(corpus, order: int):
    """The training problem of ``corpus`` (random_corpus's labels) on the model topology
    restricted to IOB2-valid label sequences, where a segment's box holds exactly when
    conlleval reads the chunk.  Every label is in the topology, seen in corpus or not, and
    has a weight for every predicate."""
    from fstcrf.features.extractor import FeatureExtractor
    from fstcrf.features.template import parse_template
    from fstcrf.grammar import compile_grammar, constrain, load_grammar

    extractor = FeatureExtractor(parse_template(TEMPLATE))
    encoded = EncodedSentences.from_corpus(extractor, corpus, fit=True)
    gold = corpus.column("chunk")
    labels = ["B-NP", "B-VP", "I-NP", "I-VP", "O"]
    topology = constrain(chain_topology(order, labels), compile_grammar(load_grammar("iob2"), labels))
    label_ids, _ = parse_gold(topology, gold)
    states = gold_states(topology, label_ids, encoded.offsets)
    features = build_features(
        encoded, states, label_ids, topology, order, "complete", extractor.vocabulary_.get("bias")
    )  # every label scored: no exact ties
    return TrainingSet(Scorer(features, topology, 2), encoded, states)


@pytest.mark.pynini
@pytest.mark.slow
@pytest.mark.parametrize("order,seed", [(2, 2), (2, 3)])
def test_objective_matches_enumeration(order, seed):
    problem = iob2_training_set(short_corpus(seed, 12), order)
    objective = mce.SegmentFScore(problem.scorer, problem.encoded, problem.states)
    theta = np.random.default_rng(seed).normal(0, 1.0, problem.num_weights)
    value, _ = objective.loss_and_gradient(theta)
    assert value == pytest.approx(brute_force_objective(objective, theta), rel=1e-10)


smoothing = st.tuples(
    st.sampled_from([1.0, 0.3, 3.0]), st.sampled_from([0.0, -1.0, 0.5]), st.sampled_from([1.0, 0.5, 2.0])
)  # alpha, beta, gamma


def small_objective(seed: int, smoothing_params=(1.0, 0.0, 1.0), gold=None) -> mce.SegmentFScore:
    """The objective of a few random sentences of at most 4 tokens, order 1, on the IOB2
    topology (where a box holds exactly when the chunk is output); ``gold`` replaces the
    gold states int [N] when given.  Skips (hypothesis assume) a draw without chunks."""
    problem = iob2_training_set(short_corpus(seed, 8), 1)
    states = problem.states if gold is None else gold(problem)
    try:
        return mce.SegmentFScore(problem.scorer, problem.encoded, states, *smoothing_params)
    except LabelError:
        assume(False)


@pytest.mark.pynini
@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**16), st.sampled_from([0.2, 1.0, 3.0]), smoothing)
def test_objective_matches_enumeration_for_any_smoothing(seed, scale, smoothing_params):
    objective = small_objective(seed, smoothing_params)
    theta = np.random.default_rng(seed).normal(0, scale, objective.num_weights)
    try:
        value, _ = objective.loss_and_gradient(theta)
    except FstcrfError as error:  # steep smoothing of large scores: the smoothed TP is 0.0, no F-score
        assume("missed with certainty" not in str(error))
        raise
    # With a steep smoothing (alpha 3) the smoothed true-positive count in the denominator
    # can fall to 1e-7, so both sides lose about eps / tp of relative precision (seed 70
    # differs by 2.6e-10): the tolerance is 1e-8, not the 1e-10 of the unsmoothed test.
    assert value == pytest.approx(brute_force_objective(objective, theta), rel=1e-8)


def viterbi_as_gold(theta_seed: int):
    """gold(problem) for small_objective: the Viterbi states under N(0, 1) weights of seed
    theta_seed, so that the best incorrect output is the second best path."""

    def gold(problem):
        theta = np.random.default_rng(theta_seed).normal(0, 1.0, problem.num_weights)
        pot = problem.scorer.potentials(problem.encoded, theta, 0, problem.num_sequences)
        return kbest(pot, 1).paths[0].astype(np.int64)

    return gold


@pytest.mark.pynini
@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**16), st.booleans())
def test_rival_and_segment_paths_match_enumeration(seed, gold_is_viterbi):
    """The best incorrect output, the candidate false positives read from it, and for
    every segment the best path that outputs it and the best that differs from it there
    (inside/outside scores and paths) against every path of every sentence."""
    objective = small_objective(seed, gold=viterbi_as_gold(seed) if gold_is_viterbi else None)
    theta = np.random.default_rng(seed).normal(0, 1.0, objective.num_weights)
    B = objective.num_sequences
    pot = objective.scorer.potentials(objective.encoded, theta, 0, B)
    rival, has_rival = mce.best_incorrect(pot, objective.gold_states)
    block = objective.block_spans(theta, 0, B)
    segments = block.segments
    for b in range(B):
        paths = enumerate_sentence(objective, theta, b)
        expected = paths.best_incorrect()
        assert has_rival[b] == (expected is not None)
        if expected is None:
            continue
        sentence_pot, rows = pot.select([b]), pot.sentence(b)
        assert not np.array_equal(rival[rows], paths.gold)
        assert sentence_pot.score(rival[rows])[0] == pytest.approx(paths.scores[expected], abs=1e-9)
        if gold_is_viterbi:
            assert sentence_pot.score(paths.gold)[0] == pytest.approx(paths.scores.max(), abs=1e-9)
            assert paths.scores[expected] < paths.scores.max()
        mine = [k for k in range(len(segments)) if segments.sentence[k] == b]
        chunk_of = {k: (int(segments.first[k]), int(segments.last[k]), int(segments.chunk_type[k])) for k in mine}
        assert {chunk_of[k] for k in mine if block.gold[k]} == paths.gold_chunks
        assert {chunk_of[k] for k in mine if not block.gold[k]} == paths.chunks[expected] - paths.gold_chunks
        for k in mine:
            inside, outside = paths.margin(chunk_of[k])
            sign = 1.0 if block.gold[k] else -1.0
            assert block.d[k] == pytest.approx(sign * (outside - inside), abs=1e-9)
            entries = block.span_of_row == k
            inside_path, outside_path = (
                (block.minus_paths, block.plus_paths) if block.gold[k] else (block.plus_paths, block.minus_paths)
            )
            for path, score, outputs in ((inside_path[entries], inside, True), (outside_path[entries], outside, False)):
                if not np.isfinite(score):
                    continue
                labels = objective.topology.state_label[path]
                read = mce.read_segments(labels, np.array([0, len(labels)]), objective.scheme)
                assert (
                    chunk_of[k] in set(zip(read.first.tolist(), read.last.tolist(), read.chunk_type.tolist()))
                ) == outputs
                assert sentence_pot.score(path)[0] == pytest.approx(score, abs=1e-9)


@pytest.mark.slow
@settings(max_examples=8, deadline=None)
@given(st.integers(0, 2**16), st.sampled_from([1, 2]), smoothing)
def test_gradient_matches_finite_differences(seed, order, smoothing_params):
    problem = training_set(random_corpus(seed, 14), order, "supported")
    try:
        objective = mce.SegmentFScore(problem.scorer, problem.encoded, problem.states, *smoothing_params)
    except LabelError:
        assume(False)
    theta = np.random.default_rng(seed).normal(0, 0.7, problem.num_weights)
    # relative to the loss: a steep smoothing (alpha 3) can leave a smoothed TP of 3e-3
    # and a loss of 7e3 (seed 29821), whose differences then carry errors of about 2e-4
    check_finite_differences(
        objective.loss_and_gradient, theta, problem.scorer.features.num_features, seed=seed, step=1e-6, relative=1e-7
    )


def test_threads_do_not_change_the_objective():
    corpus = random_corpus(21, 40)
    one, two = training_set(corpus, 1, "supported", threads=1), training_set(corpus, 1, "supported", threads=3)
    theta = np.random.default_rng(4).normal(size=one.num_weights)
    r1, g1 = mce.SegmentFScore(one.scorer, one.encoded, one.states).loss_and_gradient(theta)
    r2, g2 = mce.SegmentFScore(two.scorer, two.encoded, two.states).loss_and_gradient(theta)
    assert r1 == pytest.approx(r2, rel=1e-12)
    np.testing.assert_allclose(g1, g2, atol=1e-12)


def test_a_corpus_without_chunks_is_refused():
    problem = training_set(random_corpus(1, 5), 1, "supported")
    no_chunks = np.full_like(problem.states, problem.scorer.topology.labels.index("O"))
    with pytest.raises(LabelError, match="chunks"):
        mce.SegmentFScore(problem.scorer, problem.encoded, no_chunks)


# -- the estimator --------------------------------------------------------------------


def test_mce_f_trains_from_the_map_weights_and_records_both_stages():
    train_corpus, dev = random_corpus(31, 80), chunk_corpus(32, 30)
    model = ChainCRF(TEMPLATE, algorithm="mce-f", max_iter=15, mce_iter=8, mce_c=1e3).fit(train_corpus, dev=dev)
    stages = [record["algorithm"] for record in model.history_]
    assert stages[:15] == ["lbfgs"] * 15 and stages[15] == "mce-f"
    mce_records = [record for record in model.history_ if record["algorithm"] == "mce-f"]
    assert mce_records[0]["iteration"] == 0  # the MAP weights, scored on dev
    assert model.best_iteration_ == max(mce_records, key=lambda r: r["dev_score"])["iteration"]
    assert model.score(dev).f1 == pytest.approx(max(r["dev_score"] for r in mce_records), abs=1e-12)


def test_warm_start_continues_from_a_model_and_keeps_its_dictionary(tmp_path):
    corpus = chunk_corpus(41, 40)
    start = ChainCRF(TEMPLATE, order=2, max_iter=10).fit(corpus)
    start.save(tmp_path / "start.model")
    warm = ChainCRF(order=2, algorithm="mce-f", mce_iter=5).fit(corpus, init=load_model(tmp_path / "start.model"))
    assert warm.features_ is not None and np.array_equal(warm.features_.output, start.features_.output)
    assert warm.extractor_.predicate_names_ == start.extractor_.predicate_names_
    assert [r["algorithm"] for r in warm.history_] == ["mce-f"] * len(warm.history_)
    warm.save(tmp_path / "warm.model")
    again = load_model(tmp_path / "warm.model")
    assert (again.mce_c, again.mce_iter) == (1e7, 5)
    assert again.predict(corpus) == warm.predict(corpus)
    resumed = ChainCRF(order=2, max_iter=3).fit(corpus, init=start)  # plain L-BFGS warm start
    assert [r["iteration"] for r in resumed.history_] == [0, 1, 2, 3]
    assert resumed.history_[0]["objective"] < ChainCRF(order=2, max_iter=1).fit(corpus).history_[0]["objective"]


def test_warm_start_errors():
    corpus = chunk_corpus(41, 20)
    start = ChainCRF(TEMPLATE, max_iter=3).fit(corpus)
    with pytest.raises(FstcrfError, match="order 1"):
        ChainCRF(order=2, algorithm="mce-f").fit(corpus, init=start)
    with pytest.raises(FstcrfError, match="perceptron"):
        ChainCRF(algorithm="perceptron").fit(corpus, init=start)
    with pytest.raises(FstcrfError, match="not fitted"):
        ChainCRF(algorithm="mce-f").fit(corpus, init=ChainCRF())
    partial = chunk_corpus(41, 20)
    partial.sentences[0].columns["chunk"][0] = "?"
    with pytest.raises(FstcrfError, match="fully labelled"):
        ChainCRF(TEMPLATE, algorithm="mce-f").fit(partial)
    with pytest.raises(FstcrfError, match="mce_c"):
        ChainCRF(TEMPLATE, algorithm="mce-f", mce_c=0).fit(corpus)
    with pytest.raises(FstcrfError, match="mce_alpha"):
        ChainCRF(TEMPLATE, algorithm="mce-f", mce_alpha=0).fit(corpus)
    with pytest.raises(FstcrfError, match="mce_beta"):
        ChainCRF(TEMPLATE, algorithm="mce-f", mce_beta=float("nan")).fit(corpus)


def test_the_sigmoid_parameters_reach_the_objective_and_the_model_file(tmp_path):
    """The first MCE-F record of a warm start is r(theta) + ||theta||^2 / (2C) of the
    objective with the model's alpha and beta."""
    corpus = chunk_corpus(43, 30)
    start = ChainCRF(TEMPLATE, max_iter=5).fit(corpus)
    tuned = ChainCRF(algorithm="mce-f", mce_iter=1, mce_c=1e3, mce_alpha=0.3, mce_beta=-0.5).fit(corpus, init=start)
    problem = training_set(corpus, 1, "supported")
    r, _ = mce.SegmentFScore(problem.scorer, problem.encoded, problem.states, 0.3, -0.5).loss_and_gradient(
        start.weights_
    )
    assert tuned.history_[0]["objective"] == pytest.approx(r + start.weights_ @ start.weights_ / 2e3, rel=1e-9)
    tuned.save(tmp_path / "tuned.model")
    assert (load_model(tmp_path / "tuned.model").mce_alpha, load_model(tmp_path / "tuned.model").mce_beta) == (
        0.3,
        -0.5,
    )


@pytest.mark.slow
def test_f_score_training_on_conll2000_raises_the_smoothed_training_f(data_file):
    """500 CoNLL-2000 sentences, order 1: from 5 MAP iterations (which leave training
    errors to learn from), 10 MCE-F iterations lower r (the smoothed 1/F - 1 of the
    training chunks) and raise the training F-score."""
    from fstcrf.corpus.conll import Corpus, read_conll

    train_corpus = read_conll(data_file("conll2000/train.txt"))
    small = Corpus(train_corpus.column_names, train_corpus.sentences[:500])
    start = ChainCRF("crfpp", max_iter=5).fit(small)
    tuned = ChainCRF("crfpp", algorithm="mce-f", mce_c=1e7, mce_iter=10).fit(small, init=start)
    objectives = [record["objective"] for record in tuned.history_]
    assert tuned.history_[0]["iteration"] == 0 and objectives[-1] < 0.8 * objectives[0]
    assert tuned.score(small).f1 > start.score(small).f1


def test_gradient_with_transitions_that_read_a_lower_label():
    from corpora import reading_training_set

    problem = reading_training_set(random_corpus(64, 14), 1)
    objective = mce.SegmentFScore(problem.scorer, problem.encoded, problem.states)
    theta = np.random.default_rng(5).normal(0, 0.7, problem.num_weights)
    check_finite_differences(
        objective.loss_and_gradient,
        theta,
        problem.scorer.features.num_features,
        seed=5,
        step=1e-6,
        absolute=1e-7,
        num_coordinates=16,
    )
