"""Every decoding method under per-sentence constraints (``constraints=``) against
enumeration of the model's label sequences under them (tests/constraint_oracles.py):
ChainCRF (predict, decode, predict_marginals, kbest, sample, span_probabilities,
predict_spans, predict_mbr, decode_mbr, under a grammar too), JointModel per
component (joint, cascade and k-best modes, marginals, spans), TwoStageTagger, and
the checks before any work."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from fstcrf.corpus.conll import Sentence, read_conll
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.document.two_stage import TwoStageTagger
from fstcrf.engine.constraints import Constraints, Span
from fstcrf.engine.tempering import tempered
from fstcrf.errors import (
    ArgumentTypeError,
    CompositionError,
    ConstraintError,
    ConstraintLabelError,
    FstcrfError,
    InfeasibleError,
)
from fstcrf.model import ChainCRF
from fstcrf.model.compose import compose

from constraint_oracles import SentenceOracle, chunks_of, constraint_score


@pytest.fixture(scope="module")
def train():
    return read_conll(DATA_DIR / "demo_train.txt")


@pytest.fixture(scope="module")
def sentences():
    test = read_conll(DATA_DIR / "demo_test.txt")
    return [sentence for sentence in test.sentences if 3 <= len(sentence) <= 4][:3]


@pytest.fixture(scope="module")
def chunker(train):
    return ChainCRF(template="chunking-extended", max_iter=15, threads=1).fit(train, target="chunk")


def corrections(sentences):
    """A constraint of each kind over the chunk labels, sentence by sentence."""
    first, second, third = (len(sentence) for sentence in sentences)
    return [
        Constraints(spans=[Span(0, 1, "NP")], forbidden=[Span(2, first - 1, "VP", weight=1.5)]),
        Constraints(fixed={second - 1: "O"}, forbidden=[Span(0, 1, "NP"), Span(0, 0, "NP")], unbroken=[(1, 2)]),
        Constraints(
            allowed={0: {"B-NP", "B-PP"}}, spans=[Span(1, third - 2, "VP", weight=0.7)], scores={1: {"O": 2.0}}
        ),
    ]


def oracles(model, sentences, constraints):
    return [SentenceOracle(model.potentials([sentence]), given) for sentence, given in zip(sentences, constraints)]


def test_chain_methods_under_constraints_are_enumeration(chunker, sentences):
    constraints = corrections(sentences)
    expected = oracles(chunker, sentences, constraints)
    predicted = chunker.predict(sentences, constraints=constraints)
    assert chunker.decode(chunker.encode(sentences), constraints=constraints) == predicted
    marginals = chunker.predict_marginals(sentences, constraints=constraints)
    ranked, probabilities = chunker.kbest(sentences, 5, constraints=constraints)
    spans = [
        [(f, last, x) for f in range(len(s)) for last in range(f, len(s)) for x in ("NP", "VP")] for s in sentences
    ]
    span_probabilities = chunker.span_probabilities(sentences, spans, constraints=constraints)
    for b, oracle in enumerate(expected):
        labels, _, margin = oracle.best()
        if margin > 1e-9:
            assert tuple(predicted[b]) == labels
        for t, label in itertools.product(range(len(sentences[b])), range(len(chunker.labels_))):
            want = oracle.probability(lambda y, t=t, label=chunker.labels_[label]: y[t] == label)
            assert abs(marginals[b][t, label] - want) < 1e-9
        top = oracle.ranked_scores()[:5]
        np.testing.assert_allclose(probabilities[b, : len(top)], np.exp(np.array(top) - oracle.log_z), atol=1e-12)
        assert len(ranked[b]) == len(top)
        for span, p in zip(spans[b], span_probabilities[b]):
            assert abs(p - oracle.span_probabilities.get(span, 0.0)) < 1e-9
    for entities, oracle in zip(chunker.predict_spans(sentences, constraints=constraints), expected):
        for first, last, kind, p in entities:
            assert abs(p - oracle.span_probabilities.get((first, last, kind), 0.0)) < 1e-9


def test_samples_and_mbr_keep_to_the_constraints(chunker, sentences):
    constraints = corrections(sentences)
    expected = oracles(chunker, sentences, constraints)
    draws, log_p = chunker.sample(sentences, 30, seed=1, constraints=constraints)
    for k, draw in enumerate(draws):
        for b, labels in enumerate(draw):
            table = dict(expected[b].table)
            assert tuple(labels) in table
            assert abs(log_p[k, b] - (table[tuple(labels)] - expected[b].log_z)) < 1e-9
    for decoded in (
        chunker.predict_mbr(sentences, constraints=constraints),
        chunker.decode_mbr(chunker.encode(sentences), constraints=constraints),
        chunker.predict_mbr(sentences, threshold=0.9, constraints=constraints),
    ):
        for labels, given in zip(decoded, constraints):
            assert constraint_score(given, tuple(labels)) > -math.inf


def test_a_fixed_label_mbr_cannot_write_falls_back_to_the_best_labels(chunker, sentences):
    """A token fixed inside a chunk whose every span is less probable than the threshold:
    no set of chunks MBR chooses writes it, so the sentence gets its best labels."""
    sentence = sentences[0]
    constraints = [Constraints(fixed={2: "I-VP"})]
    decoded = chunker.predict_mbr([sentence], threshold=0.999, constraints=constraints)
    assert decoded == chunker.predict([sentence], constraints=constraints)
    assert decoded[0][2] == "I-VP"


def test_constraints_with_a_grammar(chunker, sentences):
    pytest.importorskip("pynini")
    constraints = [Constraints(forbidden=[Span(0, 1, "NP")]), None, None]
    for labels in chunker.predict(sentences, grammar="iob2", constraints=constraints):
        assert all(not (b.startswith("I-") and a[2:] != b[2:]) for a, b in zip(["O"] + labels, labels))
    assert (0, 1, "NP") not in chunks_of(tuple(chunker.predict(sentences, grammar="iob2", constraints=constraints)[0]))


@pytest.mark.parametrize("temperature", [1.0, 2.0, 4.0])
def test_a_weight_is_its_log_odds_bonus_at_any_temperature(chunker, sentences, temperature):
    """Only the model's scores are tempered: a soft span shifts its own log-odds by its
    weight exactly, and every span probability is enumeration's of the tempered scores
    plus the constraints' (a bonus of scores too)."""
    sentence = sentences[0]
    span, weight = (0, 1, "NP"), 1.5
    free = chunker.span_probabilities([sentence], [[span]], temperature=temperature)[0][0]
    held = chunker.span_probabilities(
        [sentence],
        [[span]],
        temperature=temperature,
        constraints=[{"spans": [{"first": 0, "last": 1, "type": "NP", "weight": weight}]}],
    )[0][0]
    assert math.log(held / (1 - held)) - math.log(free / (1 - free)) == pytest.approx(weight, abs=1e-9)
    given = [Constraints(spans=[Span(*span, weight=weight)], scores={2: {"O": 0.8}}, forbidden=[Span(1, 2, "VP")])]
    oracle = SentenceOracle(tempered(chunker.potentials([sentence]), temperature), given[0])
    spans = [(f, last, x) for f in range(len(sentence)) for last in range(f, len(sentence)) for x in ("NP", "VP")]
    found = chunker.span_probabilities([sentence], [spans], temperature=temperature, constraints=given)[0]
    for candidate, p in zip(spans, found):
        assert abs(p - oracle.span_probabilities.get(candidate, 0.0)) < 1e-9
    for first, last, kind, p in chunker.predict_spans([sentence], temperature=temperature, constraints=given)[0]:
        assert abs(p - oracle.span_probabilities.get((first, last, kind), 0.0)) < 1e-9
    mbr = chunker.predict_mbr([sentence], temperature=temperature, constraints=given)
    assert chunker.decode_mbr(chunker.encode([sentence]), temperature=temperature, constraints=given) == mbr


def test_on_infeasible_unconstrained_drops_the_grammar_only(chunker, sentences):
    """A sentence no sequence of the grammar fits is tagged without it, under its own
    constraints, whether or not the other sentences have constraints."""
    pytest.importorskip("pynini")
    from fstcrf.grammar import parse_grammar

    grammar = parse_grammar("start = . . . .* ;", "three_or_more.fgr")
    short = Sentence({name: values[:2] for name, values in sentences[0].columns.items()})
    batch = [short, *sentences]
    others = [None, Constraints(fixed={0: "B-VP"}), None, None]
    tagged = chunker.predict(batch, grammar=grammar, on_infeasible="unconstrained", constraints=others)
    assert tagged[0] == chunker.predict([short])[0]
    assert tagged[1:] == chunker.predict(sentences, grammar=grammar, constraints=others[1:])
    own = [Constraints(fixed={1: "B-VP"}), None, None, None]
    tagged = chunker.predict(batch, grammar=grammar, on_infeasible="unconstrained", constraints=own)
    assert tagged[0] == chunker.predict([short], constraints=own[:1])[0] and tagged[0][1] == "B-VP"
    with pytest.raises(InfeasibleError, match="sentence 0 \\(length 2\\)"):
        chunker.predict(batch, grammar=grammar, constraints=own)
    for grammar_given in (grammar, None):
        with pytest.raises(FstcrfError, match="on_infeasible must be"):
            chunker.predict(sentences, grammar=grammar_given, on_infeasible="bogus", constraints=own[1:])


def test_clashing_constraints_name_the_sentence_and_the_rules(chunker, sentences):
    constraints = [None, Constraints(fixed={0: "B-VP", 2: "O"}, spans=[Span(0, 1, "NP")], scores={1: {"O": 1.0}}), None]
    with pytest.raises(InfeasibleError, match="sentence 1: .*these clash: token 0 fixed to B-VP; span \\(0, 1, NP\\)"):
        chunker.predict(sentences, constraints=constraints)


def test_bad_constraints_are_refused_before_any_work(chunker, sentences, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("features were extracted")

    monkeypatch.setattr(chunker, "encode", refuse)
    for method, extra in (
        (chunker.predict, {}),
        (chunker.predict_marginals, {}),
        (chunker.predict_spans, {}),
        (chunker.predict_mbr, {}),
        (chunker.kbest, {"k": 2}),
        (chunker.sample, {}),
    ):
        with pytest.raises(ConstraintLabelError, match="sentence 2: fixed\\[0\\] names the label 'B-XX'"):
            method(sentences, constraints=[None, None, Constraints(fixed={0: "B-XX"})], **extra)
        with pytest.raises(ConstraintError, match="sentence 0: spans\\[0\\] names token 9"):
            method(sentences, constraints=[Constraints(spans=[Span(1, 9, "NP")]), None, None], **extra)
    with pytest.raises(ArgumentTypeError):
        chunker.predict(sentences, constraints=Constraints())
    with pytest.raises(ConstraintError, match="2 constraints for 3 sentences"):
        chunker.predict(sentences, constraints=[None, None])


@pytest.fixture(scope="module")
def joint(train):
    tagger = ChainCRF(template="pos", max_iter=10, threads=1).fit(train, target="pos")
    reader = ChainCRF(template="chunking-reads-pos", reads="pos", max_iter=10, threads=1).fit(train, target="chunk")
    return compose([tagger, reader])


def joint_table(joint, sentence, constraints):
    """Every (tags, chunks) pair of a sentence with its joint score and the constraints'
    score on each component, -inf ones dropped."""
    tagger, reader = joint.components
    rows = []
    tag_pot = tagger.potentials([sentence])
    for tags in itertools.product(tagger.labels_, repeat=len(sentence)):
        lower = float(tag_pot.score(np.array([tagger.labels_.index(t) for t in tags]))[0])
        lower += constraint_score(constraints.get("pos", Constraints()), tags)
        if lower == -math.inf:
            continue
        chunk_pot = reader.potentials([Sentence({**sentence.columns, "pos": list(tags)})])
        chunk_oracle = SentenceOracle(chunk_pot, constraints.get("chunk"))
        for chunks, score in chunk_oracle.table:
            rows.append((tags, chunks, lower + score))
    return rows


@pytest.mark.slow
def test_joint_decoding_under_component_constraints_is_enumeration(joint):
    test = read_conll(DATA_DIR / "demo_test.txt")
    sentences = [Sentence({name: values[:2] for name, values in s.columns.items()}) for s in test.sentences[:2]]
    per_sentence = [
        {"chunk": Constraints(forbidden=[Span(0, 1, "NP")]), "pos": Constraints(allowed={1: {"NN", "NNS", "VBZ"}})},
        {"chunk": Constraints(fixed={0: "B-NP"}, spans=[Span(1, 1, "VP", weight=2.0)])},
    ]
    constraints = {
        "chunk": [given.get("chunk") for given in per_sentence],
        0: [given.get("pos") for given in per_sentence],
    }
    decoded = joint.predict(sentences, constraints=constraints)
    marginals = joint.predict_marginals(sentences, constraints=constraints)
    spans = [[(0, 0, "NP"), (0, 1, "NP"), (1, 1, "VP")] for _ in sentences]
    probabilities = joint.span_probabilities(sentences, spans, 1, constraints=constraints)
    for b, (sentence, given) in enumerate(zip(sentences, per_sentence)):
        table = joint_table(joint, sentence, given)
        scores = np.array([score for _, _, score in table])
        log_z = np.logaddexp.reduce(scores)
        best = table[int(np.argmax(scores))]
        assert (tuple(decoded[0][b]), tuple(decoded[1][b])) == best[:2]
        chunk_labels = joint.components[1].labels_
        for t, label in itertools.product(range(len(sentence)), range(len(chunk_labels))):
            want = sum(math.exp(s - log_z) for _, chunks, s in table if chunks[t] == chunk_labels[label])
            assert abs(marginals[1][b][t, label] - want) < 1e-9
        for span, p in zip(spans[b], probabilities[b]):
            want = sum(math.exp(s - log_z) for _, chunks, s in table if span in chunks_of(chunks))
            assert abs(p - want) < 1e-9
    for mode in ("cascade", "kbest"):
        for labels, given in zip(joint.predict(sentences, mode=mode, constraints=constraints)[1], per_sentence):
            assert constraint_score(given["chunk"], tuple(labels)) > -math.inf


def test_joint_constraints_name_their_component(joint, sentences):
    with pytest.raises(CompositionError, match="component 'ner'"):
        joint.predict(sentences, constraints={"ner": [None] * 3})
    with pytest.raises(ArgumentTypeError, match="per component"):
        joint.predict(sentences, constraints=[None] * 3)
    with pytest.raises(ConstraintLabelError, match="\\(pos\\)"):
        joint.predict(sentences, constraints={"pos": [Constraints(fixed={0: "B-NP"}), None, None]})
    with pytest.raises(InfeasibleError, match="these clash: token 0 fixed to"):
        joint.predict(sentences, constraints={"pos": [None, Constraints(fixed={0: "DT"}, allowed={0: {"NN"}}), None]})


def test_a_two_stage_tagger_keeps_to_the_constraints_in_both_stages():
    names = [("Anna Berg", "PER"), ("Oslo", "LOC"), ("Acme", "ORG")]
    train = []
    for index in range(24):
        words, kind = names[index % 3][0].split(), names[index % 3][1]
        tags = [f"B-{kind}"] + [f"I-{kind}"] * (len(words) - 1) + ["O"]
        train.append(Sentence({"word": words + ["runs"], "ner": tags}))
    first = ChainCRF(template="bias\nword[0]\nword[-1]\n", max_iter=10, threads=1)
    tagger = TwoStageTagger(first, folds=2, progress=False).fit(train, target="ner")
    test = [Sentence({"word": ["Anna", "Berg", "runs"]}), Sentence({"word": ["Oslo", "runs"]})]
    constraints = [Constraints(spans=[Span(0, 0, "ORG")]), Constraints(fixed={1: "B-LOC"})]
    first_labels, labels = tagger.predict_stages(test, constraints=constraints)
    assert first_labels[0][0] == labels[0][0] == "B-ORG"
    assert first_labels[1][1] == labels[1][1] == "B-LOC"
    assert tagger.predict(test, constraints=constraints) == labels
    assert tagger.predict_spans(test, constraints=constraints)[0][0][:3] == (0, 0, "ORG")
    assert tagger.predict_mbr(test, constraints=constraints)[0][0] == "B-ORG"
    with pytest.raises(InfeasibleError, match="these clash: span \\(0, 1, ORG\\)"):  # the labels have no I-ORG
        tagger.predict(test, constraints=[Constraints(spans=[Span(0, 1, "ORG")]), None])
