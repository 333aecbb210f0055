"""fstcrf.sklearn.JointCRF: CRFs over token dicts composed, checked by enumeration."""

import itertools
import math
import pickle

import numpy as np
import pytest
from sklearn.base import clone

from fstcrf.features.attributes import FeatureValueError, attribute_pairs
from fstcrf.errors import ArgumentTypeError, CompositionError, FstcrfError, LabelError, ShapeError
from fstcrf.sklearn import CRF, JointCRF

#: Words by part of speech; a tagger sees the word, a chunker reads the tag.
WORDS = {"D": ["the", "a", "that"], "N": ["dog", "cat", "that"], "V": ["runs", "sees", "that"], "J": ["big", "red"]}


def tagged_corpus(count: int, seed: int):
    """Token dicts, tags and chunks: 'that' is ambiguous, the chunks follow the tags."""
    rng = np.random.default_rng(seed)
    X, tags, chunks = [], [], []
    for _ in range(count):
        sequence = [str(t) for t in rng.choice(list(WORDS), size=int(rng.integers(1, 6)))]
        words = [str(rng.choice(WORDS[tag])) for tag in sequence]
        X.append([{"w": word, "len": len(word) / 4.0} for word in words])
        tags.append(sequence)
        chunk, previous = [], None
        for tag in sequence:
            chunk.append("B-VP" if tag == "V" else "I-NP" if previous in ("D", "J") and tag != "D" else "B-NP")
            previous = tag
        chunks.append(chunk)
    return X, tags, chunks


@pytest.fixture(scope="module")
def corpus():
    return tagged_corpus(60, 0)


@pytest.fixture(scope="module")
def joint(corpus):
    X, tags, chunks = corpus
    crfs = [CRF(c2=0.05, max_iterations=40), CRF(reads="pos", c2=0.05, max_iterations=40)]
    return JointCRF(crfs).fit(X, [tags, chunks])


def _crf_scores(crf: CRF, xseq: list, lower: list | None) -> dict:
    """{labelling: score} of every labelling of xseq, from the learned weights alone
    (state_features_, transition_features_, lower_transition_features_)."""
    state, transition = crf.state_features_, crf.transition_features_
    by_lower = crf.lower_transition_features_
    tokens = xseq if lower is None else [{**token, crf.reads: label} for token, label in zip(xseq, lower)]
    emission = [
        {
            label: sum(value * state.get((name, label), 0.0) for name, value in attribute_pairs(token))
            for label in crf.classes_
        }
        for token in tokens
    ]
    scores = {}
    for path in itertools.product(crf.classes_, repeat=len(xseq)):
        score = sum(emission[t][label] for t, label in enumerate(path))
        for t in range(1, len(path)):
            score += transition.get((path[t - 1], path[t]), 0.0)
            if lower is not None:
                score += by_lower.get((lower[t], path[t - 1], path[t]), 0.0)
        scores[path] = score
    return scores


def _joint_by_enumeration(joint: JointCRF, xseq: list) -> tuple[tuple, list, list]:
    """The best (tags, chunks) pair and the marginals of each CRF's labels [T][label]."""
    tagger, chunker = joint.crfs_
    totals = {}
    for tags, tag_score in _crf_scores(tagger, xseq, None).items():
        for chunks, chunk_score in _crf_scores(chunker, xseq, list(tags)).items():
            totals[tags, chunks] = tag_score + chunk_score
    top = max(totals.values())
    weights = {pair: math.exp(score - top) for pair, score in totals.items()}
    z = sum(weights.values())
    marginals = [
        [
            {label: sum(w for pair, w in weights.items() if pair[level][t] == label) / z for label in crf.classes_}
            for t in range(len(xseq))
        ]
        for level, crf in enumerate(joint.crfs_)
    ]
    return max(totals, key=totals.get), marginals[0], marginals[1]


def test_joint_prediction_and_marginals_match_enumeration(joint):
    X, _, _ = tagged_corpus(12, 1)
    short = [xseq for xseq in X if len(xseq) <= 3][:6]
    assert short
    tags, chunks = joint.predict(short)
    tag_marginals, chunk_marginals = joint.predict_marginals(short)
    for number, xseq in enumerate(short):
        best, expected_tags, expected_chunks = _joint_by_enumeration(joint, xseq)
        assert (tuple(tags[number]), tuple(chunks[number])) == best
        for got, expected in zip(tag_marginals[number] + chunk_marginals[number], expected_tags + expected_chunks):
            assert set(got) == set(expected)
            for label in expected:
                assert got[label] == pytest.approx(expected[label], abs=1e-9)


def test_the_reading_crf_learns_the_lower_labels_as_an_attribute(joint, corpus):
    tagger, chunker = joint.crfs_
    assert chunker.crf_.reads == "pos" and chunker.crf_.lower_labels_ == sorted(WORDS)
    assert any(name == "pos:V" for name in chunker.attributes_)
    assert tagger.lower_transition_features_ == {}
    assert all(lower in WORDS for lower, _, _ in chunker.lower_transition_features_)
    X, tags, chunks = corpus
    # given the tags in the dicts the chunker is a cascade's upper stage, and the tags matter
    with_tags = [[{**token, "pos": tag} for token, tag in zip(xseq, sequence)] for xseq, sequence in zip(X, tags)]
    with_nouns = [[{**token, "pos": "N"} for token in xseq] for xseq in X]
    assert chunker.score(with_tags, chunks) > chunker.score(with_nouns, chunks) + 0.2


def test_joint_decoding_beats_or_ties_the_cascade_on_score(joint):
    X, _, _ = tagged_corpus(40, 2)
    short = [xseq for xseq in X if len(xseq) <= 3]
    joint_tags, joint_chunks = joint.predict(short)
    cascade_tags, cascade_chunks = clone(joint).set_params(mode="cascade").fit(*_training(joint)).predict(short)
    tagger, chunker = joint.crfs_
    assert [list(t) for t in cascade_tags] == [list(t) for t in tagger.predict(short)]
    piped = [[{**token, "pos": tag} for token, tag in zip(xseq, tags)] for xseq, tags in zip(short, cascade_tags)]
    assert [list(c) for c in cascade_chunks] == [list(c) for c in chunker.predict(piped)]
    for xseq, tags, chunks, c_tags, c_chunks in zip(short, joint_tags, joint_chunks, cascade_tags, cascade_chunks):

        def total(t, c):
            return _crf_scores(tagger, xseq, None)[tuple(t)] + _crf_scores(chunker, xseq, list(t))[tuple(c)]

        assert total(tags, chunks) >= total(c_tags, c_chunks) - 1e-9


def _training(joint):
    X, tags, chunks = tagged_corpus(60, 0)
    return X, [tags, chunks]


def test_keys_the_crfs_read_are_ignored_in_the_input(joint):
    X, tags, _ = tagged_corpus(10, 3)
    wrong = [[{**token, "pos": "J"} for token in xseq] for xseq in X]
    for plain, misleading in zip(joint.predict(X), joint.predict(wrong)):
        assert [list(s) for s in plain] == [list(s) for s in misleading]
    assert joint.predict_single(X[0]) == [list(labels[0]) for labels in joint.predict(X[:1])]
    assert [list(s) for s in joint.predict([[], X[0]])[1]] == [[], list(joint.predict(X[:1])[1][0])]


def test_fitted_crfs_compose_without_fit_and_fit_leaves_them_alone(corpus, joint):
    X, tags, chunks = corpus
    tagger = CRF(c2=0.05, max_iterations=40).fit(X, tags)
    with_tags = [[{**token, "pos": tag} for token, tag in zip(xseq, sequence)] for xseq, sequence in zip(X, tags)]
    chunker = CRF(reads="pos", c2=0.05, max_iterations=40).fit(with_tags, chunks)
    prefit = JointCRF([tagger, chunker])
    for mine, theirs in zip(prefit.predict(X), joint.predict(X)):
        assert [list(s) for s in mine] == [list(s) for s in theirs]
    unfitted = [CRF(max_iterations=5), CRF(reads="pos", max_iterations=5)]
    JointCRF(unfitted).fit(X, [tags, chunks])
    assert all(crf.classes_ is None for crf in unfitted)


def test_pickle_clone_and_params(joint):
    X, _, _ = tagged_corpus(8, 4)
    again = pickle.loads(pickle.dumps(joint))
    for mine, theirs in zip(again.predict(X), joint.predict(X)):
        assert [list(s) for s in mine] == [list(s) for s in theirs]
    params = clone(joint).get_params()
    assert set(params) == {"crfs", "compatibility", "scales", "mode", "k", "threads", "folds"}
    assert params["crfs"][1].reads == "pos"


def test_a_reading_crf_round_trips_through_its_model_file(tmp_path, corpus):
    X, tags, chunks = corpus
    with_tags = [[{**token, "pos": tag} for token, tag in zip(xseq, sequence)] for xseq, sequence in zip(X, tags)]
    path = tmp_path / "chunker.model"
    chunker = CRF(reads="pos", max_iterations=10, model_filename=str(path)).fit(with_tags, chunks)
    loaded = CRF(model_filename=str(path))
    assert loaded.crf_.reads == "pos" if loaded.classes_ else False
    assert [list(s) for s in loaded.predict(with_tags)] == [list(s) for s in chunker.predict(with_tags)]
    tagger = CRF(max_iterations=10).fit(X, tags)
    joint = JointCRF([tagger, loaded])
    assert len(joint.predict(X[:3])) == 2


def test_bad_chains_and_inputs_are_clear_errors(corpus, joint):
    X, tags, chunks = corpus
    with pytest.raises(ArgumentTypeError, match="two or more"):
        JointCRF([CRF()]).fit(X, [tags])
    with pytest.raises(ArgumentTypeError, match="two or more"):
        JointCRF("crf").predict(X)
    with pytest.raises(FstcrfError, match="mode must be"):
        JointCRF(joint.crfs_, mode="best").predict(X)
    with pytest.raises(ShapeError, match="one list of label sequences per CRF"):
        JointCRF([CRF(), CRF(reads="pos")]).fit(X, [tags])
    with pytest.raises(FstcrfError, match="not fitted"):
        JointCRF([CRF(), CRF(reads="pos")]).predict(X)
    tagger = joint.crfs_[0]
    with pytest.raises(CompositionError, match="reads no lower labels"):
        JointCRF([tagger, CRF(max_iterations=5).fit(X, chunks)]).predict(X)
    with pytest.raises(CompositionError, match="lowest CRF reads"):
        JointCRF([joint.crfs_[1], tagger]).predict(X)
    with pytest.raises(FstcrfError, match="all_possible_transitions"):
        CRF(reads="pos", all_possible_transitions=False).fit(X, chunks)
    with pytest.raises(FstcrfError, match="reads must be"):
        CRF(reads="label").fit(X, chunks)
    # a reading CRF needs the lower label in every token dict, in fit and in predict
    with pytest.raises(LabelError, match=r"X, sentence 0, token 0: the key 'pos' holds nothing"):
        CRF(reads="pos").fit(X, chunks)
    with pytest.raises(LabelError, match=r"sentence 1, token 0: the key 'pos' holds None"):
        joint.crfs_[1].predict([[{**X[0][0], "pos": "D"}], [{"w": "a", "pos": None}]])
    # the lower labels live in their own column, not in the token dicts
    from fstcrf.features.attributes import AttributeExtractor
    from fstcrf.corpus.conll import Sentence

    with pytest.raises(FeatureValueError, match="sentence 0, token 0: the token dict holds the key 'pos'"):
        AttributeExtractor(reads="pos").fit([Sentence({"attributes": [{"pos": "D"}], "pos": ["D"]})])


def test_folds_train_the_reader_on_held_out_lower_predictions(corpus, monkeypatch):
    X, tags, chunks = corpus
    X, tags, chunks = X[:30], tags[:30], chunks[:30]
    seen = []
    original = CRF.fit

    def recording_fit(self, X_fit, y_fit, *args, **kwargs):
        seen.append((self.reads, X_fit, y_fit))
        return original(self, X_fit, y_fit, *args, **kwargs)

    monkeypatch.setattr(CRF, "fit", recording_fit)
    joint = JointCRF([CRF(max_iterations=15), CRF(reads="pos", max_iterations=15)], folds=3).fit(X, [tags, chunks])
    calls = list(seen)
    # the tagger, three taggers on two thirds each, then the chunker
    assert [reads for reads, _, _ in calls] == [None, None, None, None, "pos"]
    assert [len(X_fit) for _, X_fit, _ in calls[:4]] == [30, 20, 20, 20]
    expected = []
    for k, (_, X_fit, y_fit) in enumerate(calls[1:4]):
        part = X[10 * k : 10 * k + 10]
        assert X_fit == X[: 10 * k] + X[10 * k + 10 :]
        expected += [list(t) for t in CRF(max_iterations=15).fit(X_fit, y_fit).predict(part)]
    read = [[token["pos"] for token in xseq] for xseq in calls[-1][1]]
    assert read == expected and read != tags
    assert len(joint.predict(X[:2])) == 2
    with pytest.raises(FstcrfError, match="folds must be"):
        JointCRF([CRF(), CRF(reads="pos")], folds=1).fit(X, [tags, chunks])
