"""Bandit learning: every stochastic gradient's exact expectation (by enumerating
all label sequences) is the gradient of its objective (by enumeration and
finite differences), the sampled estimates converge to it, and feedback is
counted and checked."""

import itertools

import numpy as np
import pytest

from fstcrf.learn import bandit, thread_choice
from fstcrf.learn.bandit import SampledGradient, _Running, minibatch_gradient
from fstcrf.learn.settings import BanditSettings
from fstcrf.corpus.conll import Corpus, Sentence
from fstcrf.features.encoding import EncodedSentences, build_features
from fstcrf.corpus.evaluate import score_chunks
from fstcrf.features.extractor import FeatureExtractor
from fstcrf.features.template import parse_template
from fstcrf.learn.feedback import ChunkTables, sentence_chunk_f1, simulated_feedback
from fstcrf.corpus.labels import chain_topology
from fstcrf.learn.objective import Scorer
from hypothesis import given, settings, strategies as st

TEMPLATE = "bias\nword[0]\nword[-1]|word[0]\n"
LABELS = ["B-NP", "I-NP", "O"]


def tiny_corpus(seed: int, lengths=(3, 2)) -> Corpus:
    rng = np.random.default_rng(seed)
    sentences = [
        Sentence(
            {
                "word": [str(w) for w in rng.choice(list("abcd"), size=n)],
                "chunk": [LABELS[i] for i in rng.integers(0, 3, size=n)],
            }
        )
        for n in lengths
    ]
    return Corpus(("word", "chunk"), sentences)


def sampled_gradient(corpus: Corpus, order: int = 1, threads: int = 2) -> SampledGradient:
    extractor = FeatureExtractor(parse_template(TEMPLATE))
    encoded = EncodedSentences.from_corpus(extractor, corpus, fit=True)
    topology = chain_topology(order, LABELS)
    features = build_features(encoded, None, None, topology, order, "complete", extractor.vocabulary_.get("bias"))
    return SampledGradient(Scorer(features, topology, threads), encoded)


def enumeration(gradient: SampledGradient, theta: np.ndarray, sign: float = 1.0):
    """Per sentence: (all state paths [M, T], their probabilities [M]) by brute force
    with Potentials.score (independent of the vectorised code under test)."""
    result = []
    topology = gradient.scorer.topology
    for b in range(gradient.encoded.num_sequences):
        pot = gradient.potentials(theta, b, b + 1, sign)
        paths = np.array(list(itertools.product(range(topology.num_states), repeat=pot.num_tokens)))
        scores = np.array([pot.score(path)[0] for path in paths])
        keep = np.isfinite(scores)
        paths, scores = paths[keep], scores[keep]
        probabilities = np.exp(scores - np.logaddexp.reduce(scores))
        result.append((paths, probabilities))
    return result


def path_gradient(gradient, theta, b, path, coefficient=1.0, sign=1.0):
    """coefficient * grad log p_{sign theta}(path) of sentence b, by the code under test."""
    gradient.add_gradient(
        gradient.posteriors(theta, b, b + 1, sign), np.asarray(path, dtype=np.int32)[None], np.array([[coefficient]])
    )
    return gradient.take(b, b + 1).dense(gradient.scorer.features.num_features)


def gains_of(feedback, b, paths, gradient):
    labels = gradient.scorer.topology.state_label[paths]
    return feedback.gains(np.array([b]), labels)[:, 0]


def objective_value(gradient, theta, feedback, kind, theta0=None):
    """The objective of ``kind`` at theta, by enumeration."""
    total = 0.0
    reference = enumeration(gradient, theta0 if theta0 is not None else theta)
    negated = enumeration(gradient, theta, -1.0) if kind == "pairwise" else None
    for b, (paths, p) in enumerate(enumeration(gradient, theta)):
        g = gains_of(feedback, b, paths, gradient)
        if kind == "expected":
            total += p @ g
        elif kind == "cross-entropy":
            total += g @ np.log(p)
        elif kind == "pairwise":
            rival_paths, q = negated[b]
            h = gains_of(feedback, b, rival_paths, gradient)
            total += p @ (g[:, None] >= h[None, :]).astype(float) @ q
        else:  # pairwise-independent: the rank-transformed gain at theta0
            _, p0 = reference[b]
            rank = np.array([p0 @ (np.sign(gi - g)) for gi in g])
            total += p @ rank
    return total


def exact_expectation(gradient, theta, feedback, kind, baseline_value=0.0):
    """E[s] over the draws (one per sentence; pairs for the pairwise kinds)."""
    expectation = np.zeros(gradient.num_weights)
    negated = enumeration(gradient, theta, -1.0) if kind == "pairwise" else None
    for b, (paths, p) in enumerate(enumeration(gradient, theta)):
        g = gains_of(feedback, b, paths, gradient)
        if kind in ("expected", "cross-entropy"):
            raw = g if kind == "expected" else g / p
            for path, weight, c in zip(paths, p, raw):
                expectation += weight * path_gradient(gradient, theta, b, path, c - baseline_value)
        elif kind == "pairwise":
            rival_paths, q = negated[b]
            h = gains_of(feedback, b, rival_paths, gradient)
            for i, j in itertools.product(range(len(paths)), range(len(rival_paths))):
                c = float(g[i] >= h[j]) - baseline_value
                expectation += (
                    p[i]
                    * q[j]
                    * (
                        path_gradient(gradient, theta, b, paths[i], c)
                        + path_gradient(gradient, theta, b, rival_paths[j], c, -1.0)
                    )
                )
        else:
            for i, j in itertools.product(range(len(paths)), repeat=2):
                c = 0.5 * np.sign(g[i] - g[j])
                expectation += (
                    p[i]
                    * p[j]
                    * (path_gradient(gradient, theta, b, paths[i], c) - path_gradient(gradient, theta, b, paths[j], c))
                )
    return expectation


KINDS = [
    "expected",
    "cross-entropy",
    pytest.param("pairwise", marks=pytest.mark.slow),
    pytest.param("pairwise-independent", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("order", [1, 2])
def test_exact_expectation_is_the_objectives_gradient(kind, order):
    corpus = tiny_corpus(1 + order)
    gradient = sampled_gradient(corpus, order)
    feedback = simulated_feedback(corpus.sentences, "chunk", LABELS, metric="f1")
    rng = np.random.default_rng(order)
    theta = rng.normal(0.0, 0.7, gradient.num_weights)
    expectation = exact_expectation(
        gradient, theta, feedback, kind, baseline_value=0.3 if kind != "pairwise-independent" else 0.0
    )
    step = 1e-5
    for _ in range(4):
        direction = rng.normal(size=gradient.num_weights)
        numeric = (
            objective_value(gradient, theta + step * direction, feedback, kind, theta)
            - objective_value(gradient, theta - step * direction, feedback, kind, theta)
        ) / (2 * step)
        assert expectation @ direction == pytest.approx(numeric, rel=1e-5, abs=1e-7)


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind,baseline",
    [
        ("expected", "none"),
        ("expected", "mean"),
        ("expected", "loo"),
        ("cross-entropy", "none"),
        ("pairwise", "mean"),
        ("pairwise-independent", "none"),
    ],
)
def test_sampled_gradients_converge_to_the_exact_expectation(kind, baseline):
    corpus = tiny_corpus(7, lengths=(3,))
    gradient = sampled_gradient(corpus)
    feedback = simulated_feedback(corpus.sentences, "chunk", LABELS, metric="accuracy")
    theta = np.random.default_rng(3).normal(0.0, 0.5, gradient.num_weights)
    draws = 2 if baseline == "loo" else 1
    settings_ = BanditSettings(objective=kind, draws=draws, baseline=baseline)
    exact = exact_expectation(gradient, theta, feedback, kind, baseline_value=0.25 if baseline == "mean" else 0.0)
    runs = 3000
    calls_before = feedback.calls
    estimates = np.empty((runs, gradient.num_weights))
    for seed in range(runs):
        estimates[seed] = minibatch_gradient(
            gradient,
            feedback,
            settings_,
            theta,
            0,
            1,
            np.array([0]),
            seed,
            _Running(baseline_sum=0.25, baseline_count=1),
        ).dense(gradient.scorer.features.num_features)
    mean = estimates.mean(axis=0)
    error = estimates.std(axis=0) / np.sqrt(runs)
    # within 5 standard errors everywhere, and the direction is right
    assert np.all(np.abs(mean - exact) <= 5 * error + 1e-9)
    assert mean @ exact > 0
    assert feedback.calls - calls_before == runs * draws * (2 if kind.startswith("pairwise") else 1)


@pytest.mark.parametrize("inline_tokens", [0, 4096])
@pytest.mark.parametrize("shared", [True, False])
def test_results_do_not_depend_on_the_threads(inline_tokens, shared, monkeypatch):
    # pieces on the pool even for these small minibatches, or on the partner thread;
    # the thread choice measuring every few minibatches and choosing to share out or not
    monkeypatch.setattr(bandit, "_INLINE_TOKENS", inline_tokens)
    monkeypatch.setattr(thread_choice, "FIRST_GAP", 2)
    monkeypatch.setattr(thread_choice, "LONGEST_GAP", 2)
    monkeypatch.setattr(thread_choice, "verdict", lambda ratios, now, last=False: shared)
    corpus = tiny_corpus(4, lengths=(3, 4, 2, 5, 1, 3))
    feedback_settings = dict(metric="f1")
    weights = []
    for threads in (1, 2):
        gradient = sampled_gradient(corpus, threads=threads)
        feedback = simulated_feedback(corpus.sentences, "chunk", LABELS, **feedback_settings)
        result = bandit.learn(
            gradient, feedback, BanditSettings(batch_size=4, max_iter=3, seed=5, draws=2), np.arange(len(corpus))
        )
        weights.append(result.weights)
    assert np.array_equal(weights[0], weights[1])


IOB = ["B-NP", "I-NP", "O", "B-VP", "I-VP"]
BIOES = IOB + ["E-NP", "S-NP", "S-VP"]


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from([IOB, BIOES]).flatmap(
        lambda labels: st.tuples(
            st.just(labels),
            st.lists(
                st.tuples(st.lists(st.sampled_from(labels), min_size=1, max_size=6), st.integers(0, 2**32 - 1)),
                min_size=1,
                max_size=4,
            ),
        )
    )
)
@pytest.mark.slow
def test_sentence_chunk_f1_is_score_chunks(example):
    labels, cases = example
    tables = ChunkTables(labels)
    gold, predicted = [], []
    for sentence, seed in cases:
        gold.append(sentence)
        rng = np.random.default_rng(seed)
        predicted.append([labels[i] for i in rng.integers(0, len(labels), size=len(sentence))])
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in gold])])
    ids = {label: i for i, label in enumerate(labels)}
    f1 = sentence_chunk_f1(
        tables, np.array([ids[x] for s in gold for x in s]), np.array([ids[x] for s in predicted for x in s]), offsets
    )
    for value, gold_sentence, predicted_sentence in zip(f1, gold, predicted):
        scores = score_chunks([gold_sentence], [predicted_sentence])
        empty = scores.num_gold_chunks == 0 and scores.num_predicted_chunks == 0
        assert value == pytest.approx(1.0 if empty else scores.f1 / 100)


# -- the estimator -------------------------------------------------------------

from fstcrf.errors import FeedbackError, FstcrfError  # noqa: E402
from fstcrf.model import ChainCRF  # noqa: E402
from corpora import TEMPLATE as CHUNK_TEMPLATE, chunk_corpus  # noqa: E402

BANDIT = dict(algorithm="bandit", max_iter=10, learning_rate=0.1, batch_size=8, draws=4, baseline="loo", step="adagrad")


def test_chaincrf_learns_from_bandit_feedback_alone():
    train_corpus, test_corpus = chunk_corpus(1, 200), chunk_corpus(2, 40)
    records = []
    model = ChainCRF(CHUNK_TEMPLATE, **BANDIT).fit(train_corpus, callback=records.append)
    assert model.score(test_corpus).f1 > 95
    assert [r["feedback_calls"] for r in records] == [800 * (i + 1) for i in range(10)]
    assert records[-1]["mean_gain"] > records[0]["mean_gain"]


def test_the_learner_never_reads_the_gold_column():
    def run(blank_gold: bool) -> np.ndarray:
        corpus = chunk_corpus(3, 40)
        feedback = simulated_feedback(corpus.sentences, "chunk", sorted({x for s in corpus.column("chunk") for x in s}))
        if blank_gold:  # after the feedback copied the gold labels
            for sentence in corpus.sentences:
                sentence.columns["chunk"] = ["O"] * len(sentence)
        return ChainCRF(CHUNK_TEMPLATE, feedback=feedback, **BANDIT).fit(corpus).weights_

    assert np.array_equal(run(False), run(True))


@pytest.mark.parametrize(
    "answer,message",
    [(float("nan"), "finite"), (1.5, r"\[0, 1\]"), ("good", "str"), (ValueError("boom"), "raised ValueError: boom")],
)
def test_bad_feedback_stops_training_naming_the_sentence_and_keeps_the_model(answer, message):
    corpus = chunk_corpus(4, 30)
    calls = []

    def feedback(sentence, labels):
        calls.append(1)
        if len(calls) <= 240:  # two good epochs first
            return 1.0 if labels == sentence["chunk"] else 0.0
        if isinstance(answer, Exception):
            raise answer
        return answer

    model = ChainCRF(CHUNK_TEMPLATE, feedback=feedback, **BANDIT)
    with pytest.raises(FeedbackError, match=f"{message}.*training sentence \\d+|training sentence \\d+.*{message}"):
        model.fit(corpus)
    assert model.n_iter_ == 2 and len(model.history_) == 2 and model.predict(corpus)


def test_bandit_options_are_checked():
    corpus = chunk_corpus(5, 10)
    for options, message in [
        (dict(objective="best"), "objective"),
        (dict(baseline="loo", draws=1), "draws >= 2"),
        (dict(features="supported"), "never sees gold"),
        (dict(clip=1.0), "clip"),
        (dict(step="rmsprop"), "step"),
        (dict(feedback="bleu"), "feedback metric"),
    ]:
        with pytest.raises(FstcrfError, match=message):
            ChainCRF(CHUNK_TEMPLATE, **{**BANDIT, **options}).fit(corpus)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_vectorised_path_scores_equal_the_reference_scores(seed):
    from fstcrf import Potentials, topology

    rng = np.random.default_rng(seed)
    topo = topology.iob2(["NP", "VP"])
    lengths = rng.integers(1, 6, size=3)
    pot = Potentials(
        topo, rng.normal(size=(int(lengths.sum()), topo.num_states)), lengths, rng.normal(size=topo.num_edges)
    )
    paths = rng.integers(0, topo.num_states, size=(4, pot.num_tokens))  # some forbidden
    expected = np.array([pot.score(path) for path in paths])  # [K, B]
    scores = pot.path_scores(paths)
    finite = np.isfinite(expected)
    assert np.array_equal(np.isfinite(scores), finite) and np.all(np.isneginf(scores[~finite]))
    assert np.allclose(scores[finite], expected[finite])


# -- the command line ----------------------------------------------------------


def test_command_line_bandit_training_sampling_and_logged_learning(tmp_path, capsys):
    import json
    from fstcrf.cli import main
    from fstcrf.corpus.synthetic import DATA_DIR

    train, test = str(DATA_DIR / "demo_train.txt"), str(DATA_DIR / "demo_test.txt")
    model, log, filled, learnt = (str(tmp_path / name) for name in ("b.model", "log.jsonl", "filled.jsonl", "l.model"))
    assert main(["-q", "train", train, "--algorithm", "bandit", "--epochs", "2", "--draws", "2", "-o", model]) == 0
    assert main(["-q", "tag", model, test, "--sample", "2", "--with-probability", "-o", log, "--seed", "3"]) == 0
    records = [json.loads(line) for line in open(log)]
    assert len(records) == 2 * sum(1 for _ in open(test).read().strip().split("\n\n"))
    assert all(
        0 < r["probability"] <= 1 and r["reward"] is None and len(r["labels"]) == len(r["columns"]["word"])
        for r in records
    )
    with open(filled, "w") as stream:
        for record in records:
            stream.write(json.dumps({**record, "reward": float(record["labels"].count("O") > 0)}) + "\n")
    assert (
        main(
            ["-q", "train", "--algorithm", "bandit", "--log", filled, "--init", model, "--max-iter", "3", "-o", learnt]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["-q", "tag", model, test, "--sample", "3"]) == 0
    first_line = capsys.readouterr().out.splitlines()[0].split()
    assert len(first_line) == 3 + 3  # word, pos, chunk and three drawn labels


@pytest.mark.parametrize(
    "argv,message",
    [
        (["train", "--log", "x.jsonl", "-o", "m"], "--log needs --algorithm bandit"),
        (["train", "-o", "m", "--algorithm", "bandit"], "give a training file"),
        (["train", "t.txt", "--log", "x.jsonl", "-o", "m", "--algorithm", "bandit"], "not both"),
    ],
)
def test_command_line_bandit_misuse_is_one_line(tmp_path, capsys, monkeypatch, argv, message):
    from fstcrf.cli import main
    from fstcrf.corpus.synthetic import DATA_DIR

    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.txt").write_text((DATA_DIR / "demo_train.txt").read_text())
    (tmp_path / "x.jsonl").write_text('{"columns": {"word": ["a"]}, "labels": ["O"], "reward": 1, "probability": 1}\n')
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize("rule", ["constant", "adagrad", "adam"])
def test_steps_equal_their_formulas(rule):
    from fstcrf.learn.bandit import _Steps

    corpus = tiny_corpus(6, lengths=(3, 2, 4, 1, 3))
    stepped, twin = sampled_gradient(corpus, threads=1), sampled_gradient(corpus, threads=1)
    F, D, rate = stepped.scorer.features.num_features, stepped.num_weights, 0.01
    steps = _Steps(rule, rate, F, D)
    rng = np.random.default_rng(5)
    theta = rng.normal(size=D)
    expected = theta.copy()
    squares, moments = np.zeros(D), np.zeros(D)
    for count in range(1, 6):
        first = int(rng.integers(0, 4))
        coefficients = rng.normal(size=(2, 5 - first))
        for gradient in (stepped, twin):  # the same gradient in both, from the same weights
            paths, posteriors = gradient.draw(expected, first, 5, 2, count)
            gradient.add_gradient(posteriors, paths, coefficients)
        sparse = twin.take(first, 5)
        stepped.step(first, 5, steps, theta)
        at = np.concatenate([sparse.indices, F + np.arange(len(sparse.transitions))])
        g = np.concatenate([sparse.values, sparse.transitions])
        if rule == "constant":
            expected[at] += rate * g
        elif rule == "adagrad":
            squares[at] += g * g
            expected[at] += rate * g / (np.sqrt(squares[at]) + 1e-8)
        else:  # lazy Adam, bias-corrected by the step count
            moments[at] = 0.9 * moments[at] + 0.1 * g
            squares[at] = 0.999 * squares[at] + 0.001 * g * g
            corrected = rate * np.sqrt(1 - 0.999**count) / (1 - 0.9**count)
            expected[at] += corrected * moments[at] / (np.sqrt(squares[at]) + 1e-8)
        np.testing.assert_allclose(theta, expected, rtol=1e-12, atol=1e-15)
        theta[:] = expected  # both sides draw from the same weights next time
