"""The ``constraints=`` argument of the decoders is checked even for an empty batch, a
composed model's component may be named once, and errors name the method the caller
called (a two-stage tagger's, a composed model's predict_spans), not the one it calls."""

from __future__ import annotations

import pytest

from fstcrf.corpus.conll import Sentence, read_conll
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.document.two_stage import TwoStageTagger
from fstcrf.engine.constraints import Constraints, Span
from fstcrf.errors import ArgumentTypeError, CompositionError, ConstraintError, InfeasibleError
from fstcrf.model import ChainCRF
from fstcrf.model.compose import JointModel


@pytest.fixture(scope="module")
def chunker(demo_chunker):
    return ChainCRF.load(demo_chunker)


@pytest.fixture(scope="module")
def joint(demo_joint):
    return JointModel.load(demo_joint)


@pytest.fixture(scope="module")
def sentences():
    return read_conll(DATA_DIR / "demo_test.txt").sentences[:3]


@pytest.mark.parametrize(
    "method, extra",
    [
        ("predict", {}),
        ("predict_marginals", {}),
        ("predict_spans", {}),
        ("predict_mbr", {}),
        ("kbest", {"k": 2}),
        ("sample", {}),
        ("span_probabilities", {"spans": []}),
    ],
)
def test_an_empty_batch_still_checks_its_constraints(chunker, method, extra):
    decode = getattr(chunker, method)
    with pytest.raises(ArgumentTypeError, match=f"ChainCRF.{method}: constraints must be a list"):
        decode([], constraints="garbage", **extra)
    with pytest.raises(ConstraintError, match=f"ChainCRF.{method}: 1 constraints for 0 sentences"):
        decode([], constraints=[None], **extra)
    decode([], constraints=[], **extra)  # one per sentence: none


def test_an_empty_encoded_batch_still_checks_its_constraints(chunker):
    with pytest.raises(ArgumentTypeError, match="ChainCRF.decode_mbr: constraints must be a list"):
        chunker.decode_mbr(chunker.encode([]), constraints="garbage")


def test_a_composed_model_s_empty_batch_still_checks_its_constraints(joint):
    with pytest.raises(ArgumentTypeError, match="JointModel.predict: a composed model takes constraints per component"):
        joint.predict([], constraints="garbage")
    with pytest.raises(ConstraintError, match="JointModel.predict"):
        joint.predict([], constraints={"chunk": [None]})
    assert joint.predict([], constraints={"chunk": []}) == [[], []]


def test_a_component_is_named_once(joint, sentences):
    free = [None] * len(sentences)
    for constraints, names in (({"pos": free, 0: free}, "'pos' and 0"), ({1: free, "chunk": free}, "1 and 'chunk'")):
        with pytest.raises(CompositionError, match=f"JointModel.predict: constraints name the component .* {names}"):
            joint.predict(sentences, constraints=constraints)


def clashing(sentences) -> list:
    """The second sentence's token 0 fixed to O while a span begins there: no sequence."""
    return [None, Constraints(fixed={0: "O"}, spans=[Span(0, 0, "NP")]), None]


def past_the_end(sentences) -> list:
    return [Constraints(fixed={len(sentences[0]): "O"}), None, None]


def test_a_composed_model_s_predict_spans_names_itself(joint, sentences):
    for given, error in ((clashing(sentences), InfeasibleError), (past_the_end(sentences), ConstraintError)):
        with pytest.raises(error, match=r"^JointModel.predict_spans \(chunk\): sentence [01]: "):
            joint.predict_spans(sentences, constraints={"chunk": given})


def toy_sentences(count: int) -> list[Sentence]:
    names = [("Anna Berg", "NP"), ("Oslo", "NP"), ("runs", "VP")]
    sentences = []
    for index in range(count):
        words, chunk_type = names[index % len(names)]
        tags = [f"B-{chunk_type}"] + [f"I-{chunk_type}"] * (len(words.split()) - 1)
        sentences.append(Sentence({"word": words.split() + ["."], "ner": tags + ["O"]}))
    return sentences


@pytest.fixture(scope="module")
def two_stage():
    first = ChainCRF(template="bias\nword[0]\n", max_iter=5, threads=1)
    return TwoStageTagger(first, folds=2, progress=False).fit(toy_sentences(12), target="ner")


@pytest.mark.parametrize("method", ["predict", "predict_stages", "predict_spans", "predict_mbr"])
def test_a_two_stage_tagger_s_errors_name_the_method_called(two_stage, method):
    sentences = toy_sentences(3)
    decode = getattr(two_stage, method)
    for given, error, where in (
        (clashing(sentences), InfeasibleError, "sentence 1: its constraints leave no label sequence"),
        (past_the_end(sentences), ConstraintError, "sentence 0: fixed names token 3"),
        ([None], ConstraintError, "1 constraints for 3 sentences"),
    ):
        with pytest.raises(error, match=f"^TwoStageTagger.{method}: {where}") as raised:
            decode(sentences, constraints=given)
        if error is InfeasibleError:
            assert raised.value.sentence == 1 and raised.value.clashing


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"spans": [{"first": 2, "last": 1, "type": "NP"}]}, "spans\\[0\\]: span \\(2, 1\\) ends before it begins"),
        ({"forbidden": [{"first": 0, "last": 1, "type": "NP", "weight": -1}]}, "forbidden\\[0\\]: a weight"),
        ({"fixed": {"-1": "O"}}, "fixed: a token index"),
        ({"fixd": {}}, "unknown kinds of constraint"),
    ],
)
def test_a_malformed_dict_form_names_the_method_and_the_sentence(chunker, joint, sentences, bad, message):
    with pytest.raises(ConstraintError, match=f"^ChainCRF.predict: sentence 2: {message}"):
        chunker.predict(sentences, constraints=[None, None, bad])
    with pytest.raises(ConstraintError, match=f"^JointModel.predict \\(chunk\\): sentence 1: {message}"):
        joint.predict(sentences, constraints={"chunk": [None, bad, None]})


def test_a_composed_model_s_span_probabilities_name_the_component_either_way(joint, sentences):
    spans = [[(0, 1, "NP")] for _ in sentences]
    by_index = joint.span_probabilities(sentences, spans, 1)
    for got in (
        joint.span_probabilities(sentences, spans, "chunk"),
        joint.span_probabilities_by_component(sentences, {"chunk": spans})["chunk"],
    ):
        assert [list(p) for p in got] == [list(p) for p in by_index]
    for component in (5, -1, "ner"):
        with pytest.raises(CompositionError, match="JointModel.span_probabilities: there is no component"):
            joint.span_probabilities(sentences, spans, component)
    for component in (1.0, True, None):
        with pytest.raises(ArgumentTypeError, match="a component is named by its index or the column it predicts"):
            joint.span_probabilities(sentences, spans, component)
    with pytest.raises(CompositionError, match="spans name a component twice"):
        joint.span_probabilities_by_component(sentences, {"chunk": spans, 1: spans})
