"""Entity probabilities of fitted models: against every label sequence of a short
sentence (k-best lists hold them all), consistent with predict, under a grammar,
and ``fstcrf tag --entity-probabilities``."""

from __future__ import annotations

import numpy as np
import pytest

from fstcrf.cli import main
from fstcrf.corpus.conll import Corpus, read_conll
from fstcrf.corpus.schemes import read_chunks
from fstcrf.model import ChainCRF

COLUMNS = ("word", "pos", "chunk")


@pytest.fixture(scope="module")
def chunker(demo_chunker):
    return ChainCRF.load(demo_chunker)


@pytest.fixture(scope="module")
def sentences():
    from conftest import DEMO_TRAIN

    return read_conll(DEMO_TRAIN, COLUMNS)[:40]


def test_every_span_of_a_short_sentence_is_the_sum_over_all_its_label_sequences(chunker, sentences):
    short = [s for s in sentences if len(s) == 3][:2]
    corpus = Corpus(sentences.column_names, short)
    everything = len(chunker.labels_) ** 3
    ranked, probabilities = chunker.kbest(corpus, everything)
    types = sorted({label[2:] for label in chunker.labels_ if label != "O"}) + ["NOT-A-TYPE"]
    spans = [[(i, j, x) for i in range(3) for j in range(i, 3) for x in types] for _ in short]
    got = chunker.span_probabilities(corpus, spans)
    for b in range(len(short)):
        assert probabilities[b].sum() == pytest.approx(1.0)
        expected = dict.fromkeys(spans[b], 0.0)
        for sequence, probability in zip(ranked[b], probabilities[b]):
            for span in read_chunks(sequence):
                expected[span] += probability
        np.testing.assert_allclose(got[b], [expected[span] for span in spans[b]], atol=1e-9)


def test_predicted_spans_are_the_chunks_of_predict(chunker, sentences):
    entities = chunker.predict_spans(sentences)
    for labels, found in zip(chunker.predict(sentences), entities):
        assert [(e.first, e.last, e.type) for e in found] == read_chunks(labels)
        assert all(0.0 < e.probability <= 1.0 for e in found)
    assert chunker.predict_spans([]) == []


@pytest.mark.pynini
def test_under_a_grammar_the_spans_are_those_of_the_constrained_output(chunker, sentences):
    entities = chunker.predict_spans(sentences, grammar="iob2")
    for labels, found in zip(chunker.predict(sentences, grammar="iob2"), entities):
        assert [(e.first, e.last, e.type) for e in found] == read_chunks(labels)


def test_tag_writes_the_probability_of_each_predicted_entity(demo_chunker, tmp_path):
    from conftest import DEMO_TRAIN

    source = tmp_path / "in.txt"
    source.write_text("\n\n".join(DEMO_TRAIN.read_text().split("\n\n")[:15]) + "\n")
    output = tmp_path / "out.txt"
    assert main(["-q", "tag", str(demo_chunker), str(source), "--entity-probabilities", "-o", str(output)]) == 0
    tagged = read_conll(output, (*COLUMNS, "predicted", "probability"))
    model = ChainCRF.load(demo_chunker)
    for sentence, entities in zip(tagged, model.predict_spans(read_conll(source, COLUMNS))):
        cells = list(sentence["probability"])
        for entity in entities:
            assert set(cells[entity.first : entity.last + 1]) == {f"{entity.probability:.4f}"}
            cells[entity.first : entity.last + 1] = ["_"] * (entity.last - entity.first + 1)
        assert set(cells) <= {"_"}


@pytest.mark.parametrize(
    "options, message",
    [
        (["--nbest", "2"], "--nbest and --entity-probabilities are different outputs"),
        (["--nonlocal", "consistency"], "--entity-probabilities are exact under the model's chain"),
    ],
)
def test_tag_refuses_entity_probabilities_with_other_outputs(demo_chunker, tmp_path, capsys, options, message):
    from conftest import DEMO_TRAIN

    status = main(["-q", "tag", str(demo_chunker), str(DEMO_TRAIN), "--entity-probabilities", *options])
    assert status != 0
    assert message in capsys.readouterr().err


def test_tag_refuses_entity_probabilities_of_a_composed_model(demo_joint, capsys):
    from conftest import DEMO_TRAIN

    assert main(["-q", "tag", str(demo_joint), str(DEMO_TRAIN), "--entity-probabilities"]) != 0
    assert "--entity-probabilities applies to single models" in capsys.readouterr().err
