"""MCE-F training (fstcrf.mce): segments as conlleval reads them, segment boxes, the
objective against brute-force enumeration, its gradient, and the estimator."""
import itertools
import math

import numpy as np
import pytest
import scipy.special
from hypothesis import given, settings
from hypothesis import strategies as st

from fstcrf import mce
from fstcrf.encoding import EncodedSentences, build_features
from fstcrf.errors import FstcrfError, LabelError
from fstcrf.evaluate import score_chunks
from fstcrf.labels import chain_topology, gold_label_set, gold_states, parse_gold
from fstcrf.model import ChainCRF, load_model
from fstcrf.objective import Scorer, TrainingSet
from oracles import check_finite_differences
from test_model import TEMPLATE, chunk_corpus, random_corpus, training_set

LABELS = ["B-A", "B-B", "I-A", "I-B", "O"]
SCHEME = mce.Scheme.from_labels(LABELS)


def segment_set(labels: list[str]) -> set[tuple[int, int, int]]:
    """(first, last, type) of the chunks of one sentence, by read_segments."""
    ids = np.array([LABELS.index(label) for label in labels], dtype=np.int64)
    segments = mce.read_segments(ids, np.array([0, len(ids)]), SCHEME)
    return set(zip(segments.first.tolist(), segments.last.tolist(), segments.chunk_type.tolist()))


def iob2_valid(labels) -> bool:
    return all(not label.startswith("I-") or (t > 0 and labels[t - 1][2:] == label[2:] and labels[t - 1] != "O")
               for t, label in enumerate(labels))


label_sequences = st.lists(st.sampled_from(LABELS), min_size=1, max_size=9)


@settings(max_examples=300, deadline=None)
@given(label_sequences, label_sequences)
def test_segments_are_the_chunks_conlleval_counts(a, b):
    b = (b * len(a))[:len(a)]
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
            box = allowed[rows[k]:rows[k] + span_lengths[k]]
            first = int(segments.first[k])
            key = (first, int(segments.last[k]), int(segments.chunk_type[k]))
            for z in valid:
                keeps = all(box[i, LABELS.index(z[first + i])] for i in range(span_lengths[k]))
                assert keeps == (key in segment_set(z)), (y, z, key)


def test_non_iob2_labels_are_refused():
    with pytest.raises(LabelError, match="E-A"):
        mce.Scheme.from_labels(["B-A", "E-A", "O"])


# -- the objective against enumeration --------------------------------------------------

def brute_force_objective(problem, objective: mce.SegmentFScore, theta: np.ndarray) -> float:
    """r(theta) from every label path of every sentence."""
    topology = problem.scorer.topology
    labels = topology.labels
    scheme = mce.Scheme.from_labels(labels)
    pot = problem.scorer.potentials(problem.encoded, theta, 0, problem.num_sequences)
    tp = fn = fp = 0.0
    for b in range(problem.num_sequences):
        rows = problem.encoded.token_rows(b, b + 1)
        T = rows.stop - rows.start
        gold = problem.states[rows]
        paths = np.array(list(itertools.product(range(topology.num_states), repeat=T)), dtype=np.int64)
        sub = pot.select([b])
        scores = np.array([sub.score(path)[0] for path in paths])
        feasible = np.isfinite(scores)
        paths, scores = paths[feasible], scores[feasible]

        def chunks(states):
            ids = topology.state_label[states]
            segments = mce.read_segments(ids, np.array([0, T]), scheme)
            return set(zip(segments.first.tolist(), segments.last.tolist(), segments.chunk_type.tolist()))

        path_chunks = [chunks(path) for path in paths]
        gold_chunks = chunks(gold)

        def margin(chunk):
            inside = max((s for s, c in zip(scores, path_chunks) if chunk in c), default=-math.inf)
            outside = max((s for s, c in zip(scores, path_chunks) if chunk not in c), default=-math.inf)
            return inside, outside

        for chunk in gold_chunks:
            inside, outside = margin(chunk)
            miss = scipy.special.expit(outside - inside)
            tp, fn = tp + 1 - miss, fn + miss
        order = np.argsort(-scores, kind="stable")
        rival = next((paths[i] for i in order if not np.array_equal(paths[i], gold)), None)
        if rival is None:
            continue
        for chunk in chunks(rival) - gold_chunks:
            inside, outside = margin(chunk)
            fp += scipy.special.expit(inside - outside)
    return (fn + fp) / (2 * tp)


def short_corpus(seed: int, sentences: int):
    corpus = random_corpus(seed, sentences)
    corpus.sentences = [s for s in corpus.sentences if len(s) <= 4]
    return corpus


def iob2_training_set(corpus, order: int):
    """The training problem of ``corpus`` on the model topology restricted to IOB2-valid
    label sequences, where a segment's box holds exactly when conlleval reads the chunk."""
    from fstcrf.features import FeatureExtractor, parse_template
    from fstcrf.grammar import compile_grammar, constrain, load_grammar
    extractor = FeatureExtractor(parse_template(TEMPLATE))
    encoded = EncodedSentences.from_corpus(extractor, corpus, fit=True)
    gold = corpus.column("chunk")
    labels = gold_label_set(gold)
    topology = constrain(chain_topology(order, labels), compile_grammar(load_grammar("iob2"), labels))
    label_ids, _ = parse_gold(topology, gold)
    states = gold_states(topology, label_ids, encoded.offsets)
    features = build_features(encoded, states, label_ids, topology, order, "supported",
                                  extractor.vocabulary_.get("bias"))
    return TrainingSet(Scorer(features, topology, 2), encoded, states)


@pytest.mark.slow
@pytest.mark.parametrize("order,seed", [(1, 0), (1, 1), (2, 2), (2, 3)])
def test_objective_matches_enumeration(order, seed):
    problem = iob2_training_set(short_corpus(seed, 12), order)
    objective = mce.SegmentFScore(problem.scorer, problem.encoded, problem.states)
    theta = np.random.default_rng(seed).normal(0, 1.0, problem.num_weights)
    value, _ = objective.loss_and_gradient(theta)
    assert value == pytest.approx(brute_force_objective(problem, objective, theta), rel=1e-10)


@pytest.mark.parametrize("order", [1, 2])
def test_gradient_matches_finite_differences(order):
    problem = training_set(random_corpus(7 + order, 14), order, "supported")
    objective = mce.SegmentFScore(problem.scorer, problem.encoded, problem.states)
    rng = np.random.default_rng(order)
    theta = rng.normal(0, 0.7, problem.num_weights)
    check_finite_differences(objective.loss_and_gradient, theta, problem.scorer.features.num_features,
                             seed=order, step=1e-6, absolute=1e-7)


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
    assert mce_records[0]["iteration"] == 0       # the MAP weights, scored on dev
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
    assert (again.mce_c, again.mce_iter) == (1e5, 5)
    assert again.predict(corpus) == warm.predict(corpus)
    resumed = ChainCRF(order=2, max_iter=3).fit(corpus, init=start)      # plain L-BFGS warm start
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


@pytest.mark.slow
def test_f_score_training_on_conll2000_raises_the_smoothed_training_f(data_file):
    """500 CoNLL-2000 sentences, order 1: from 5 MAP iterations (which leave training
    errors to learn from), 10 MCE-F iterations lower r (the smoothed 1/F - 1 of the
    training chunks) and raise the training F-score."""
    from fstcrf.conll import Corpus, read_conll
    train_corpus = read_conll(data_file("conll2000/train.txt"))
    small = Corpus(train_corpus.column_names, train_corpus.sentences[:500])
    start = ChainCRF("crfpp", max_iter=5).fit(small)
    tuned = ChainCRF("crfpp", algorithm="mce-f", mce_c=1e7, mce_iter=10).fit(small, init=start)
    objectives = [record["objective"] for record in tuned.history_]
    assert tuned.history_[0]["iteration"] == 0 and objectives[-1] < 0.8 * objectives[0]
    assert tuned.score(small).f1 > start.score(small).f1


def test_gradient_with_transitions_that_read_a_lower_label():
    from test_model import reading_training_set
    problem = reading_training_set(random_corpus(64, 14), 1)
    objective = mce.SegmentFScore(problem.scorer, problem.encoded, problem.states)
    theta = np.random.default_rng(5).normal(0, 0.7, problem.num_weights)
    check_finite_differences(objective.loss_and_gradient, theta, problem.scorer.features.num_features,
                             seed=5, step=1e-6, absolute=1e-7, num_coordinates=16)
