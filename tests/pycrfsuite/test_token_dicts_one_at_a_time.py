"""One sequence of token dicts or name lists per call (``Tagger.tag``, which hands its
items to the kernel as they are, ``CRF.predict_single``, ``ChainCRF.predict`` of one
sentence) gives the labels and best-path scores of the batch path (potentials of the
whole batch, then Viterbi), bit for bit, whatever the items: dicts with numbers,
lists with repeated and unseen names, tuples, sets."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fstcrf.engine.inference import viterbi
from fstcrf.model.chain import load_model
from fstcrf.model.tagging import tagging_plan
from fstcrf.pycrfsuite import Tagger, Trainer
from fstcrf.pycrfsuite.items import item_list, item_sentence
from fstcrf.sklearn import CRF

from strategies import oracle_settings

LABELS = ["A", "B", "C"]
NAMES = st.sampled_from(["a", "b", "c", "d", "unseen", "w:x"])
DICTS = st.dictionaries(
    st.sampled_from(["p", "q", "w", "n"]),
    st.one_of(st.floats(-3, 3, allow_nan=False), st.sampled_from(["x", "y", "z", "new"]), st.booleans()),
    max_size=4,
)
ITEMS = st.one_of(
    DICTS,
    st.lists(NAMES, max_size=5),
    st.lists(NAMES, max_size=5).map(tuple),
    st.sets(NAMES, max_size=3),
)


def _training():
    rng = np.random.default_rng(5)
    X, y = [], []
    for _ in range(60):
        length = int(rng.integers(1, 7))
        xseq = []
        for _ in range(length):
            if rng.random() < 0.5:
                xseq.append({"p": float(rng.normal()), "w": "xyz"[int(rng.integers(3))], "n": bool(rng.integers(2))})
            else:
                xseq.append(["abcd"[int(k)] for k in rng.integers(4, size=int(rng.integers(1, 4)))])
        X.append(xseq)
        y.append([LABELS[int(k)] for k in rng.integers(3, size=length)])
    return X, y


@pytest.fixture(scope="module")
def crf():
    return CRF(c2=0.1, max_iterations=30, all_possible_transitions=True).fit(*_training())


def _batch_path(model, xseqs):
    """Labels and best scores of the batch path: the batch's potentials, then Viterbi."""
    sentences = [item_sentence(item_list(xseq, "xseq"), "xseq") for xseq in xseqs]
    pot, _ = model.encoded_potentials(model.encode(sentences))
    best = viterbi(pot)
    labels = [
        [model.labels_[pot.topology.state_label[s]] for s in best.paths[first:last].tolist()]
        for first, last in zip(pot.offsets[:-1].tolist(), pot.offsets[1:].tolist())
    ]
    return labels, best.scores, sentences


@oracle_settings(40)
@given(xseqs=st.lists(st.lists(ITEMS, min_size=1, max_size=6), min_size=1, max_size=5))
def test_one_sequence_per_call_gives_the_batch_path_bit_for_bit(crf, xseqs):
    model = crf.crf_
    labels, scores, sentences = _batch_path(model, xseqs)
    tagger = Tagger.of_model(model)
    for b, xseq in enumerate(xseqs):
        assert tagger.tag(xseq) == labels[b]
        assert crf.predict_single(xseq) == labels[b]
        assert model.predict([sentences[b]]) == [labels[b]]
        _, score = tagging_plan(model).paths([sentences[b]])
        assert score.tobytes() == scores[b : b + 1].tobytes()
        _, score = tagging_plan(model).item_paths(item_list(xseq, "xseq"))  # the Tagger's way: no Sentence
        assert score.tobytes() == scores[b : b + 1].tobytes()
        tagger.set(xseq)  # the labels of a sequence set, then tagged, are those too
        assert tagger.tag() == labels[b]
    assert [list(row) for row in crf.predict(xseqs)] == labels


def test_a_trainer_reads_names_as_their_dict_of_counts(tmp_path):
    """A list of names given twice counts twice: the model learns and tags it as the
    dict name -> count."""
    as_lists = [["a", "a", "b"], ("c",), {"d"}]
    as_counts = [{"a": 2.0, "b": 1.0}, {"c": 1.0}, {"d": 1.0}]
    taggers = []
    for number, xseq in enumerate((as_lists, as_counts)):
        trainer = Trainer(params={"c2": 0.1}, verbose=False)
        for _ in range(3):
            trainer.append(xseq, ["A", "B", "A"])
            trainer.append(xseq[::-1], ["B", "A", "B"])
        trainer.train(str(tmp_path / f"model{number}"))
        tagger = Tagger()
        tagger.open(str(tmp_path / f"model{number}"))
        taggers.append(tagger)
    for xseq in (as_lists, as_counts, as_lists[::-1]):
        assert taggers[0].tag(xseq) == taggers[1].tag(xseq)
        assert taggers[0].probability(taggers[0].tag()) == taggers[1].probability(taggers[1].tag())
    assert taggers[0].info().state_features == taggers[1].info().state_features


@pytest.mark.slow
def test_every_conll2000_test_sentence_tagged_alone_gives_the_batch_labels_and_scores(data_file, tmp_path):
    """The python-crfsuite tutorial's dicts and NLTK's name lists of every CoNLL-2000 test
    sentence, one ``Tagger.tag`` per sentence: the batch path's labels and scores."""
    from fstcrf.bench.sklearn import read_sentences, sent2features, sent2labels

    train = read_sentences(data_file("conll2000/train.txt"), 500)
    test = read_sentences(data_file("conll2000/test.txt"))

    def names(sentence):  # NLTK's CRFTagger gives lists of names like these
        return [
            [f"WORD_{word}", f"SUF_{word[-3:]}", *(["CAPITALIZATION"] * word[0].isupper())] for word, *_ in sentence
        ]

    for number, (X, X_test) in enumerate(
        (
            ([sent2features(s) for s in train], [sent2features(s) for s in test]),
            ([names(s) for s in train], [names(s) for s in test]),
        )
    ):
        trainer = Trainer(params={"c2": 0.1, "max_iterations": 10}, verbose=False)
        for xseq, sentence in zip(X, train):
            trainer.append(xseq, sent2labels(sentence))
        trainer.train(str(tmp_path / f"model{number}"))
        tagger = Tagger()
        tagger.open(str(tmp_path / f"model{number}"))
        model = load_model(str(tmp_path / f"model{number}"))
        labels, scores, _ = _batch_path(model, X_test)
        for b, xseq in enumerate(X_test):
            assert tagger.tag(xseq) == labels[b]
            _, score = tagging_plan(model).item_paths(item_list(xseq, "xseq"))
            assert score.tobytes() == scores[b : b + 1].tobytes()
