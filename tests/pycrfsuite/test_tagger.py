"""fstcrf.pycrfsuite.Tagger: its answers against enumeration over every label
sequence with the weights ``info()`` shows, its dump, and the errors of
python-crfsuite's Tagger."""

import itertools
import math
import os
import re
import sys
import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fstcrf.corpus.conll import Sentence
from fstcrf.errors import (
    ArgumentTypeError,
    FeatureTypeError,
    LabelTypeError,
    ModelFileError,
    TaggerLabelError,
    TaggerStateError,
)
from fstcrf.features.attributes import attribute_pairs
from fstcrf.model import ChainCRF, load_model
from fstcrf.pycrfsuite import ItemSequence, Tagger, Trainer

from strategies import oracle_settings

LABELS = ["A", "B", "C"]


def trained(tmp_path, transitions: bool = False):
    """A model file of random weighted and string attributes over three labels."""
    rng = np.random.default_rng(3)
    trainer = Trainer(params={"c2": 0.1, "feature.possible_transitions": transitions}, verbose=False)
    for _ in range(40):
        length = int(rng.integers(1, 6))
        xseq = [
            {"p": float(rng.normal()), "q": float(rng.normal()), "w": str(rng.integers(3)), "é": {"x": True}}
            for _ in range(length)
        ]
        trainer.append(xseq, [LABELS[int(rng.integers(3))] for _ in range(length)])
    path = str(tmp_path / "model.fstcrf")
    trainer.train(path)
    return path


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    return trained(tmp_path_factory.mktemp("tagger"))


def enumerated(info, xseq):
    """{labels: probability} over every label sequence of xseq, with the weights of ``info``."""
    labels = list(info.labels)
    emission = [
        {
            label: sum(value * info.state_features.get((name, label), 0.0) for name, value in attribute_pairs(token))
            for label in labels
        }
        for token in xseq
    ]
    scores = {
        path: sum(emission[t][label] for t, label in enumerate(path))
        + sum(info.transitions.get(pair, 0.0) for pair in zip(path, path[1:]))
        for path in itertools.product(labels, repeat=len(xseq))
    }
    top = max(scores.values())
    z = sum(math.exp(score - top) for score in scores.values())
    return {path: math.exp(score - top) / z for path, score in scores.items()}


TOKENS = st.fixed_dictionaries(
    {},
    optional={
        "p": st.floats(-3, 3),
        "q": st.floats(-3, 3),
        "w": st.sampled_from(["0", "1", "2", "9"]),
        "é": st.just({"x": True}),
    },
)


@oracle_settings(60)
@given(st.lists(TOKENS, min_size=1, max_size=4), st.randoms(use_true_random=False))
def test_tag_probability_and_marginal_equal_enumeration(model_path, xseq, random):
    with Tagger().open(model_path) as tagger:
        probabilities = enumerated(tagger.info(), xseq)
        best = tagger.tag(xseq)
        # a best path (ties, as under a feature value of 1e-26, may go either way)
        assert probabilities[tuple(best)] == pytest.approx(max(probabilities.values()), rel=1e-9)
        assert tagger.tag() == best  # the sequence set last
        for path in random.sample(sorted(probabilities), min(4, len(probabilities))):
            assert tagger.probability(list(path)) == pytest.approx(probabilities[path], rel=1e-9, abs=1e-12)
        for position, label in itertools.product(range(len(xseq)), LABELS):
            expected = sum(p for path, p in probabilities.items() if path[position] == label)
            assert tagger.marginal(label, position) == pytest.approx(expected, rel=1e-9, abs=1e-12)
        tagger.set(ItemSequence(xseq))
        assert tagger.tag() == best


def test_the_tagger_agrees_with_the_model_it_opens(model_path, tmp_path):
    model = load_model(model_path)
    rng = np.random.default_rng(9)
    sequences = [
        [{"p": float(rng.normal()), "w": str(rng.integers(4))} for _ in range(int(rng.integers(1, 12)))]
        for _ in range(30)
    ]
    expected = model.predict([Sentence({"attributes": xseq}) for xseq in sequences])
    marginals = model.predict_marginals([Sentence({"attributes": xseq}) for xseq in sequences])
    with open(model_path, "rb") as stream:
        data = stream.read()
    from_file, from_bytes = Tagger(), Tagger()
    from_file.open(model_path)
    from_bytes.open_inmemory(data)
    for tagger in (from_file, from_bytes, Tagger.of_model(model)):
        assert tagger.labels() == list(model.labels_)
        for xseq, labels, table in zip(sequences, expected, marginals):
            assert tagger.tag(xseq) == labels
            for position, row in enumerate(table):
                assert [tagger.marginal(label, position) for label in model.labels_] == pytest.approx(row)


def test_before_a_sequence_is_set_and_for_an_empty_one(model_path):
    with Tagger().open(model_path) as tagger:
        assert tagger.tag() == []
        assert tagger.probability(["A"]) == 0.0
        assert tagger.marginal("A", 0) == 0.0
        assert tagger.tag([]) == []
        assert tagger.tag([{"never-seen": 1.0}]) in (["A"], ["B"], ["C"])


def test_a_closed_tagger_raises_value_and_runtime_errors(model_path, tmp_path):
    tagger = Tagger()
    calls = [
        tagger.labels,
        lambda: tagger.tag([{"p": 1.0}]),
        lambda: tagger.set([{"p": 1.0}]),
        lambda: tagger.probability(["A"]),
        lambda: tagger.marginal("A", 0),
        tagger.info,
        lambda: tagger.dump(str(tmp_path / "dump")),
    ]
    for opened in (False, True):
        if opened:
            with tagger.open(model_path):
                assert set(tagger.labels()) == set(LABELS)
        for call in calls:
            with pytest.raises(TaggerStateError) as raised:
                call()
            assert isinstance(raised.value, ValueError) and isinstance(raised.value, RuntimeError)
    tagger.close()


def test_bad_questions_raise_python_crfsuites_errors(model_path):
    with Tagger().open(model_path) as tagger:
        tagger.set([{"p": 1.0}, {"q": 2.0}])
        with pytest.raises(ValueError, match=r"\|x\| = 2, \|y\| = 1"):
            tagger.probability(["A"])
        with pytest.raises(TaggerLabelError, match="no label 'Z'") as unknown:
            tagger.probability(["A", "Z"])
        assert isinstance(unknown.value, RuntimeError)
        with pytest.raises(RuntimeError, match="no label 'Z'"):
            tagger.marginal("Z", 0)
        with pytest.raises(LabelTypeError):
            tagger.probability([1, 2])
        with pytest.raises(TypeError):
            tagger.marginal(1, 0)
        for position in (2, -1):
            with pytest.raises(ValueError, match="out of range"):
                tagger.marginal("A", position)
        with pytest.raises(ArgumentTypeError, match="position"):
            tagger.marginal("A", "1")
        assert tagger.marginal("A", 1.0) == tagger.marginal("A", 1)
        with pytest.raises(FeatureTypeError, match="token 0"):
            tagger.tag([{"p": None}])
        with pytest.raises(ArgumentTypeError):
            tagger.tag("ab")


def test_a_call_that_raises_leaves_the_sequence_set_before_it(model_path):
    with Tagger().open(model_path) as tagger:
        xseq = [{"p": 1.0}, {"q": 2.0, "w": "1"}]
        tagger.set(xseq)
        expected = (tagger.tag(), tagger.probability(["A", "B"]), tagger.marginal("B", 1))
        for bad in ([{"p": None}], [{"p": 1.0}, None], "ab"):
            for call in (tagger.set, tagger.tag):
                with pytest.raises((FeatureTypeError, ArgumentTypeError)):
                    call(bad)
                assert (tagger.tag(), tagger.probability(["A", "B"]), tagger.marginal("B", 1)) == expected


def test_threads_sharing_a_tagger_each_get_their_own_answers(model_path):
    sequences = [[{"p": 1.0}, {"q": 2.0, "w": "1"}], [{"w": "2"}, {"p": -1.0}]]
    with Tagger().open(model_path) as tagger:
        best = [tagger.tag(xseq) for xseq in sequences]
        answers = set()  # p(best labels of one | the other), every pair: what a thread may read
        for xseq in sequences:
            tagger.set(xseq)
            answers |= {tagger.probability(labels) for labels in best}
        failures: list[str] = []

        def work(which: int) -> None:
            xseq = sequences[which]
            for _ in range(300):
                try:
                    assert tagger.tag(xseq) == best[which]
                    tagger.set(xseq)
                    # another thread may set its sequence in between: the answer for one of them, whole
                    assert tagger.probability(best[which]) in answers
                    assert 0.0 <= tagger.marginal("A", 1) <= 1.0
                except Exception as error:  # noqa: BLE001 (collected: the test reports them)
                    failures.append(f"{type(error).__name__}: {error}")

        previous = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)
        try:
            threads = [threading.Thread(target=work, args=(n % 2,)) for n in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        finally:
            sys.setswitchinterval(previous)
    assert failures == []


def test_only_fstcrf_models_over_token_dicts_open(model_path, tmp_path):
    with pytest.raises(FileNotFoundError):
        Tagger().open(str(tmp_path / "missing"))
    with pytest.raises(IsADirectoryError):
        Tagger().open(str(tmp_path))
    with pytest.raises(ArgumentTypeError):
        Tagger().open(None)
    (tmp_path / "text").write_text("not a model", encoding="utf-8")
    (tmp_path / "crfsuite").write_bytes(b"lCRF" + bytes(100))
    with pytest.raises(ModelFileError):
        Tagger().open(str(tmp_path / "text"))
    with pytest.raises(ModelFileError, match="CRFsuite model"):
        Tagger().open(tmp_path / "crfsuite")
    for data in (b"", b"lCRFabc", b"FSTCRF"):
        with pytest.raises(ValueError):
            Tagger().open_inmemory(data)
    with pytest.raises(TypeError):
        Tagger().open_inmemory("abc")
    columns = ChainCRF(template="word[0]", max_iter=3).fit(
        [Sentence({"word": ["a", "b"], "chunk": ["B-NP", "O"]})], target="chunk"
    )
    columns.save(tmp_path / "columns")
    with pytest.raises(ModelFileError, match="CoNLL columns"):
        Tagger().open(str(tmp_path / "columns"))


def test_dump_is_crfsuites_text_of_info(model_path, tmp_path, capsys):
    with Tagger().open(model_path) as tagger:
        info = tagger.info()
        tagger.dump(str(tmp_path / "dump.txt"))
        text = (tmp_path / "dump.txt").read_text(encoding="utf-8")
        tagger.dump()
        assert capsys.readouterr().out == text
    assert info.header["num_labels"] == "3" and info.header["size"] == str(os.path.getsize(model_path))
    assert set(info.labels) == set(LABELS) and "é:x" in info.attributes
    blocks = dict(re.findall(r"(\w+) = \{\n(.*?)\n\}\n", text, flags=re.S))
    assert blocks.keys() == {"FILEHEADER", "LABELS", "ATTRIBUTES", "TRANSITIONS", "STATE_FEATURES"}
    state = {
        (attribute, label): float(weight)
        for attribute, label, weight in re.findall(r"\(0\) (.+) --> (.+): (\S+)", blocks["STATE_FEATURES"])
    }
    transitions = {
        pair[:2]: float(pair[2]) for pair in re.findall(r"\(1\) (.+) --> (.+): (\S+)", blocks["TRANSITIONS"])
    }
    assert state == pytest.approx(info.state_features, abs=5e-7) and len(state) == len(info.state_features)
    assert transitions == pytest.approx(info.transitions, abs=5e-7)
    assert {name for name, _ in info.state_features} == set(info.attributes)
    assert all(weight != 0 for weight in [*info.state_features.values(), *info.transitions.values()])
