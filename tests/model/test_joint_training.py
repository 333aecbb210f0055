"""Joint (factorial) training of composed models: the objective against brute-force
enumeration of the product space, its gradient against finite differences, for
observed, partially observed and latent lower labels; fit, files and bad input."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fstcrf.corpus.conll import Sentence, read_conll
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.errors import FstcrfError, LabelError
from fstcrf.model import ChainCRF
from fstcrf.model.compose import compose, load_joint
from fstcrf.model.joint_training import JointObjective, fit_joint, observed_labels, with_weights
from strategies import oracle_settings

TRAIN = DATA_DIR / "demo_train.txt"


@pytest.fixture(scope="module")
def train():
    return read_conll(TRAIN)


@pytest.fixture(scope="module")
def joint(train):
    pos = ChainCRF(template="pos", max_iter=10).fit(train, target="pos")
    chunk = ChainCRF(template="chunking-reads-pos", reads="pos", max_iter=10).fit(train, target="chunk")
    return compose([pos, chunk])


@pytest.fixture(scope="module")
def vocabulary(train):
    return sorted({word for sentence in train.sentences for word in sentence["word"]})


def _observation(draw, labels: list[str], gold: str) -> str:
    """A gold-column value: the label, unknown, or a set holding it."""
    kind = draw(st.sampled_from(["label", "unknown", "set"]))
    if kind == "label":
        return gold
    if kind == "unknown":
        return "?"
    others = draw(st.lists(st.sampled_from(labels), min_size=1, max_size=2, unique=True))
    return "|".join(sorted(set(others) | {gold}))


@st.composite
def instances(draw, vocabulary: list[str], joint, max_length: int):
    """(sentences with random words and random observations, theta [D] near the fitted weights)."""
    pos, chunk = joint.components
    sentences = []
    for _ in range(draw(st.integers(1, 2))):
        length = draw(st.integers(1, max_length))
        words = draw(st.lists(st.sampled_from(vocabulary), min_size=length, max_size=length))
        columns = {"word": words}
        lower = draw(st.sampled_from(["observed", "partial", "latent"]))
        if lower != "latent":
            gold = draw(st.lists(st.sampled_from(pos.labels_), min_size=length, max_size=length))
            columns["pos"] = gold if lower == "observed" else [_observation(draw, pos.labels_, g) for g in gold]
        upper = draw(st.lists(st.sampled_from(chunk.labels_), min_size=length, max_size=length))
        columns["chunk"] = [_observation(draw, chunk.labels_, label) for label in upper]
        sentences.append(Sentence(columns))
    seed = draw(st.integers(0, 2**16))
    return sentences, seed


def _objective(joint, sentences, seed: int):
    center = np.concatenate([component.weights_ for component in joint.components])
    objective = JointObjective(joint, sentences, center, threads=2)
    theta = np.random.default_rng(seed).normal(0.0, 0.3, objective.num_weights)
    return objective, theta


def _check_finite_differences(objective, theta, seed: int, rel: float = 1e-5, abs: float = 0.0) -> None:
    """The gradient along a random direction against central differences."""
    _, gradient = objective.loss_and_gradient(theta)
    direction = np.random.default_rng(seed).normal(size=objective.num_weights)
    plus, _ = objective.loss_and_gradient(theta + 1e-5 * direction)
    minus, _ = objective.loss_and_gradient(theta - 1e-5 * direction)
    assert (plus - minus) / 2e-5 == pytest.approx(gradient @ direction, rel=rel, abs=abs)


def _allows(value: str, label: str) -> bool:
    return value == "?" or label in value.split("|")


def _brute_force_loss(joint, sentences, weights) -> float:
    """-sum_b log sum over the label tuples consistent with the observations of p(tuple | x_b),
    every tuple scored by the components' own potentials (the chunker reading the tuple's tags)."""
    model = with_weights(joint, weights)
    pos, chunk = model.components
    loss = 0.0
    for sentence in sentences:
        T = len(sentence)
        pos_pot = pos.potentials([sentence])
        scores, consistent = [], []
        for tags in itertools.product(range(len(pos.labels_)), repeat=T):
            tag_labels = [pos.labels_[i] for i in tags]
            lower_score = float(pos_pot.score(np.array(tags))[0])
            chunk_pot = chunk.potentials([Sentence({**sentence.columns, "pos": tag_labels})])
            lower_ok = "pos" not in sentence.column_names or all(
                _allows(v, label) for v, label in zip(sentence["pos"], tag_labels)
            )
            for chunks in itertools.product(range(len(chunk.labels_)), repeat=T):
                scores.append(lower_score + float(chunk_pot.score(np.array(chunks))[0]))
                consistent.append(
                    lower_ok and all(_allows(v, chunk.labels_[c]) for v, c in zip(sentence["chunk"], chunks))
                )
        scores_array = np.array(scores)
        all_z = np.logaddexp.reduce(scores_array)
        loss += all_z - np.logaddexp.reduce(scores_array[np.array(consistent)])
    return float(loss)


def test_the_objective_is_the_brute_force_likelihood_of_what_is_observed(joint, vocabulary):
    @oracle_settings(max_examples=8)
    @given(instances(vocabulary, joint, max_length=2))
    def check(instance):
        sentences, seed = instance
        objective, theta = _objective(joint, sentences, seed)
        loss, _ = objective.loss_and_gradient(theta)
        expected = _brute_force_loss(joint, sentences, objective.component_weights(theta))
        assert loss == pytest.approx(expected, rel=1e-9, abs=1e-9)

    check()


def test_the_gradient_matches_finite_differences(joint, vocabulary):
    @oracle_settings(max_examples=15)
    @given(instances(vocabulary, joint, max_length=6))
    def check(instance):
        sentences, seed = instance
        objective, theta = _objective(joint, sentences, seed)
        _check_finite_differences(objective, theta, seed + 1, abs=1e-6)

    check()


def test_the_gradient_of_grammar_restricted_components_matches_finite_differences(train):
    """Components decoding on restrictions of their topologies (trained under a grammar):
    the counts are summed back onto the original states and edges."""
    pytest.importorskip("pynini")
    pos = ChainCRF(template="pos", max_iter=5).fit(train, target="pos")
    chunk = ChainCRF(template="chunking-reads-pos", reads="pos", grammar="iob2", max_iter=5).fit(train, target="chunk")
    joint = compose([pos, chunk])
    assert joint.restriction(1) is not None
    sentences = train.sentences[:3]
    sentences = [sentences[0], Sentence({k: v for k, v in sentences[1].columns.items() if k != "pos"}), sentences[2]]
    objective, theta = _objective(joint, sentences, 3)
    _check_finite_differences(objective, theta, 4)


def test_fit_lowers_the_objective_and_keeps_the_dev_best(joint, train):
    sentences = train.sentences[:60]
    before = JointObjective(joint, sentences, np.zeros(sum(len(c.weights_) for c in joint.components)))
    start = np.concatenate([c.weights_ for c in joint.components])
    loss_before, _ = before.loss_and_gradient(start)
    trained, result = fit_joint(joint, sentences, train.sentences[60:90], max_iter=5, prior="zero")
    loss_after, _ = before.loss_and_gradient(np.concatenate([c.weights_ for c in trained.components]))
    penalty = lambda w: 0.5 * float(w @ w) / 100.0  # noqa: E731 - sigma 10
    assert loss_after + penalty(np.concatenate([c.weights_ for c in trained.components])) < loss_before + penalty(start)
    assert result.history[0]["iteration"] == 0 and result.history[0]["dev_score"] is not None
    best = max(result.history, key=lambda record: record["dev_score"])
    assert result.best_iteration == best["iteration"]
    assert joint.components[0].weights_ is not trained.components[0].weights_  # the original is untouched
    np.testing.assert_array_equal(np.concatenate([c.weights_ for c in joint.components]), start)


def test_jointly_trained_models_save_and_decode(joint, train, tmp_path):
    model = compose(list(joint.components)).fit(train.sentences[:40], max_iter=3)
    assert model.n_iter_ == 3 and model.scales == [1.0, 1.0]
    path = tmp_path / "joint.model"
    model.save(path)
    loaded = load_joint(path)
    assert loaded.predict(train.sentences[40:50]) == model.predict(train.sentences[40:50])


def test_latent_lower_labels_with_the_prior_on_the_start_stay_near_it(joint, train):
    latent = [Sentence({k: v for k, v in s.columns.items() if k != "pos"}) for s in train.sentences[:40]]
    assert observed_labels(joint, latent)[0] is None
    trained, _ = fit_joint(joint, latent, max_iter=4, sigma=0.1)
    moved = np.abs(trained.components[0].weights_ - joint.components[0].weights_).max()
    assert 0 < moved < 1.0


def test_bad_training_corpora_are_refused_before_training(joint, train):
    no_upper = [Sentence({"word": s["word"], "pos": s["pos"]}) for s in train.sentences[:5]]
    with pytest.raises(LabelError, match="top component's column chunk"):
        fit_joint(joint, no_upper)
    unknown = [Sentence({**train.sentences[0].columns, "pos": ["XYZ"] * len(train.sentences[0])})]
    with pytest.raises(LabelError, match=r"component 0 \(pos\).*XYZ"):
        fit_joint(joint, unknown)
    with pytest.raises(FstcrfError, match="init must be one of"):
        fit_joint(joint, train.sentences[:5], init="hot")
    with pytest.raises(FstcrfError, match="dev corpus has no chunk column"):
        fit_joint(joint, train.sentences[:5], [Sentence({"word": ["a"], "pos": ["DT"]})])


def _renamed(sentences, kept: str, name: str):
    """Sentences whose chunk column keeps the chunks of type ``kept`` only, renamed ``name``."""
    result = []
    for sentence in sentences:
        labels = [label if label.endswith("-" + kept) else "O" for label in sentence["chunk"]]
        result.append(Sentence({"word": sentence["word"], "pos": sentence["pos"], name: labels}))
    return result


@pytest.mark.parametrize("grammar", ["no_overlap", "nest"])
def test_the_gradient_under_a_joint_grammar_matches_finite_differences(train, grammar):
    """Taggers that read nothing from each other, tied by a per-token (factorised) or a
    non-local (constrained product) joint grammar; the upper column observed, the lower
    one observed or latent."""
    pytest.importorskip("pynini")
    nps, vps = _renamed(train.sentences, "NP", "np"), _renamed(train.sentences, "VP", "vp")
    np_model = ChainCRF(template="bias\nword[0]\npos[0]", max_iter=5).fit(nps, target="np")
    vp_model = ChainCRF(template="bias\nword[0]\npos[1]", max_iter=5).fit(vps, target="vp")
    joint = compose([np_model, vp_model], joint=grammar)
    sentences = [
        Sentence({**a.columns, "vp": b["vp"]})
        if grammar == "no_overlap"
        else Sentence({"word": a["word"], "pos": a["pos"], "vp": b["vp"]})
        for a, b in zip(nps[:4], vps[:4])
    ]
    objective, theta = _objective(joint, sentences, 5)
    _check_finite_differences(objective, theta, 6)
