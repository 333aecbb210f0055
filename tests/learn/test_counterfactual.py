"""Learning from logged feedback: the log format and its errors, the importance-
weighted objectives' gradients (finite differences), and learning that improves
on the logging model."""

import json

import numpy as np
import pytest

from fstcrf.learn.bandit import SampledGradient
from fstcrf.corpus.conll import Sentence
from fstcrf.learn.settings import WEIGHTINGS
from fstcrf.learn.counterfactual import (
    FeedbackLog,
    LoggedObjective,
    read_feedback_log,
    shown_states,
    write_feedback_records,
)
from fstcrf.errors import FstcrfError, LabelError
from fstcrf.learn.feedback import ChunkTables, sentence_chunk_f1
from fstcrf.engine.inference import sample
from fstcrf.model import ChainCRF
from oracles import check_finite_differences
from corpora import TEMPLATE, chunk_corpus


def logged(model: ChainCRF, corpus, seed: int = 0) -> FeedbackLog:
    """One draw per sentence from ``model``, its probability, and chunk-F1 rewards."""
    pot = model.potentials(corpus)
    paths = sample(pot, 1, seed)[0]
    states = model.topology_.state_label[paths]
    labels = [[model.labels_[i] for i in states[pot.sentence(b)]] for b in range(len(corpus))]
    from fstcrf.engine.inference import log_partition

    log_p = pot.score(paths) - log_partition(pot)
    ids = {label: i for i, label in enumerate(model.labels_)}
    gold = np.array([ids[x] for s in corpus.column("chunk") for x in s])
    rewards = sentence_chunk_f1(ChunkTables(model.labels_), gold, states, pot.offsets)
    inputs = [Sentence({"word": s["word"], "pos": s["pos"]}) for s in corpus]
    return FeedbackLog(inputs, labels, rewards, np.exp(log_p))


def test_log_round_trip(tmp_path):
    sentence = Sentence({"word": ["the", "dog"], "pos": ["DT", "NN"]})
    path = tmp_path / "log.jsonl"
    with open(path, "w") as stream:
        write_feedback_records(stream, sentence, ["word", "pos"], [["B-NP", "I-NP"], ["O", "B-NP"]], [0.5, 0.25])
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert records[1] == {
        "columns": {"word": ["the", "dog"], "pos": ["DT", "NN"]},
        "labels": ["O", "B-NP"],
        "reward": None,
        "probability": 0.25,
    }
    with pytest.raises(FstcrfError, match="log.jsonl:1: the reward is null"):
        read_feedback_log(path)
    for record, reward in zip(records, [1.0, 0.0]):
        record["reward"] = reward
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    log = read_feedback_log(path)
    assert log.labels == [["B-NP", "I-NP"], ["O", "B-NP"]] and list(log.rewards) == [1.0, 0.0]
    assert list(log.probabilities) == [0.5, 0.25] and log.where(1) == f"{path}:2"


@pytest.mark.parametrize(
    "change,message",
    [
        ({"probability": 0.0}, r"probability must lie in \(0, 1\]"),
        ({"probability": 1.5}, "probability"),
        ({"reward": 2}, r"reward must lie in \[0, 1\]"),
        ({"reward": "good"}, "finite number"),
        ({"labels": ["O"]}, "one per token"),
        ({"columns": {"word": []}}, "at least one token"),
    ],
)
def test_bad_records_name_file_and_line(tmp_path, change, message):
    good = {"columns": {"word": ["a", "b"]}, "labels": ["O", "O"], "reward": 1.0, "probability": 0.5}
    path = tmp_path / "log.jsonl"
    path.write_text(json.dumps(good) + "\n\n" + json.dumps({**good, **change}) + "\n")
    with pytest.raises(FstcrfError, match=f"log.jsonl:3: .*{message}"):
        read_feedback_log(path)
    path.write_text("{not json\n")
    with pytest.raises(FstcrfError, match="log.jsonl:1: not a JSON record"):
        read_feedback_log(path)


def test_unknown_labels_name_the_record():
    corpus = chunk_corpus(1, 20)
    model = ChainCRF(TEMPLATE, max_iter=3).fit(corpus)
    log = logged(model, corpus)
    log.labels[4] = ["B-XX"] * len(log.labels[4])
    log.line_numbers, log.path = list(range(10, 30)), "log.jsonl"
    with pytest.raises(LabelError, match="log.jsonl:14: label 'B-XX'"):
        model.fit_log(log, init=model)


@pytest.mark.parametrize("weighting", WEIGHTINGS)
def test_gradients_match_finite_differences(weighting):
    corpus = chunk_corpus(2, 12)
    model = ChainCRF(TEMPLATE, max_iter=3).fit(corpus)
    log = logged(model, corpus)
    encoded = model.encode(log.sentences)
    scorer = model.scorer()
    problem = LoggedObjective(
        SampledGradient(scorer, encoded),
        shown_states(model.topology_, log, encoded.offsets),
        log.rewards,
        log.probabilities,
        weighting,
        max_ratio=1.5,
    )
    theta = model.weights_ + np.random.default_rng(0).normal(0, 0.05, len(model.weights_))
    check_finite_differences(problem.loss_and_gradient, theta, scorer.features.num_features, seed=1, relative=1e-5)


def test_learning_from_a_log_improves_on_the_logging_model():
    train, test = chunk_corpus(3, 300), chunk_corpus(4, 100)
    logging_model = ChainCRF(TEMPLATE, max_iter=2).fit(train[:60])
    log = logged(logging_model, train, seed=2)
    before = logging_model.score(test).f1
    learnt = ChainCRF(TEMPLATE, max_iter=30, sigma=3.0).fit_log(log, init=logging_model)
    assert learnt.score(test).f1 > before + 5
    assert learnt.history_[0]["algorithm"] == "log-self-normalised"


@pytest.mark.slow
def test_model_samples_follow_the_model_distribution():
    import itertools
    from scipy.stats import chisquare

    corpus = chunk_corpus(5, 30)
    model = ChainCRF(TEMPLATE, max_iter=2).fit(corpus)
    sentence = Sentence({name: values[:3] for name, values in corpus.sentences[0].columns.items()})
    pot = model.potentials([sentence])
    paths = np.array(list(itertools.product(range(model.topology_.num_states), repeat=3)))
    scores = np.array([pot.score(path)[0] for path in paths])
    exact = np.exp(scores - np.logaddexp.reduce(scores))  # by enumeration
    draws = 20000
    labels, log_p = model.sample([sentence], draws, seed=3)
    index = {tuple(model.labels_[model.topology_.state_label[s]] for s in path): i for i, path in enumerate(paths)}
    drawn = np.array([index[tuple(draw[0])] for draw in labels])
    assert np.allclose(np.exp(log_p[:, 0]), exact[drawn])  # the reported probabilities
    counts = np.bincount(drawn, minlength=len(paths))
    big = exact * draws >= 5  # chi-square cells, the rest lumped
    observed = np.append(counts[big], counts[~big].sum())
    expected = np.append(exact[big], exact[~big].sum()) * draws
    assert chisquare(observed, expected).pvalue > 1e-3
