"""Entity probabilities of fitted models: against every label sequence of a short
sentence (k-best lists hold them all), consistent with predict, under a grammar,
and ``fstcrf tag --entity-probabilities``."""

from __future__ import annotations

import numpy as np
import pytest

from fstcrf.cli import main
from fstcrf.corpus.conll import Corpus, Sentence, read_conll
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


def test_joint_span_probabilities_are_the_sums_over_every_joint_label_sequence(chunker, sentences):
    """Two chunkers under the shipped nest grammar (the product decoder): every span of
    each component against all joint label sequences of a two-token sentence."""
    pytest.importorskip("pynini")
    from fstcrf.engine.joint import joint_forward_backward, joint_kbest
    from fstcrf.model.compose import compose

    joint = compose([chunker, chunker], joint="nest")
    assert joint.space.decoder.startswith("product")
    first = sentences[0]
    short = Corpus(sentences.column_names, [Sentence({name: first[name][:2] for name in COLUMNS})])
    jp = joint.potentials(short)
    log_z, _ = joint_forward_backward(jp)
    best = joint_kbest(jp, jp.space.num_states**2)
    types = sorted({label[2:] for label in chunker.labels_ if label != "O"})
    spans = [(i, j, x) for i in range(2) for j in range(i, 2) for x in types]
    for k in range(2):
        expected = dict.fromkeys(spans, 0.0)
        total = 0.0
        for score, states in zip(best.scores[0, : best.found[0]], best.paths[: best.found[0]]):
            probability = float(np.exp(score - log_z[0]))
            total += probability
            labels = [
                chunker.labels_[chunker.topology_.state_label[s]] for s in jp.space.component_states(states)[:, k]
            ]
            for span in read_chunks(labels):
                expected[span] += probability
        assert total == pytest.approx(1.0)
        [got] = joint.span_probabilities(short, [spans], k)
        np.testing.assert_allclose(got, [expected[span] for span in spans], atol=1e-9)


def test_tag_writes_a_column_per_chunking_component_of_a_composed_model(demo_joint, tmp_path):
    from conftest import DEMO_TRAIN
    from fstcrf.model.compose import load_joint

    source = tmp_path / "in.txt"
    source.write_text("\n\n".join(DEMO_TRAIN.read_text().split("\n\n")[:10]) + "\n")
    output = tmp_path / "out.txt"
    assert main(["-q", "tag", str(demo_joint), str(source), "--entity-probabilities", "-o", str(output)]) == 0
    joint = load_joint(demo_joint)
    assert joint.chunk_components() == [1]
    tagged = read_conll(output, (*COLUMNS, "pos_predicted", "chunk_predicted", "probability"))
    entities = joint.predict_spans(read_conll(source, COLUMNS))
    assert entities[0] is None
    for sentence, found in zip(tagged, entities[1]):
        assert read_chunks(sentence["chunk_predicted"]) == [e[:3] for e in found]
        for entity in found:
            assert sentence["probability"][entity.first] == f"{entity.probability:.4f}"


def test_the_fitted_temperature_maximises_the_held_out_likelihood(chunker, sentences):
    from fstcrf.corpus.labels import label_states
    from fstcrf.engine.inference import log_partition
    from fstcrf.engine.tempering import tempered

    best = chunker.fit_temperature(sentences)
    pot = chunker.span_potentials(sentences.sentences)
    index = {label: i for i, label in enumerate(pot.topology.labels)}
    gold = label_states(pot.topology, np.array([index[y] for s in sentences for y in s["chunk"]]), pot.offsets)

    def nll(temperature):
        scaled = tempered(pot, temperature)
        return float(log_partition(scaled).sum() - scaled.path_scores(gold).sum())

    assert nll(best) <= min(nll(best * 0.95), nll(best * 1.05)) + 1e-6
    sharp = chunker.predict_spans(sentences, temperature=0.5)
    flat = chunker.predict_spans(sentences, temperature=2.0)
    assert [[e[:3] for e in s] for s in sharp] == [[e[:3] for e in s] for s in flat]
    assert all(a.probability >= b.probability - 1e-12 for x, y in zip(sharp, flat) for a, b in zip(x, y))


def test_a_pooled_temperature_maximises_the_summed_likelihood_of_its_lattices(chunker, sentences):
    from fstcrf.corpus.labels import label_states
    from fstcrf.engine.inference import log_partition
    from fstcrf.engine.tempering import likelihood_temperature, tempered

    lattices = []
    for part in (sentences[:15], sentences[15:]):
        pot = chunker.span_potentials(part.sentences)
        index = {label: i for i, label in enumerate(pot.topology.labels)}
        gold = label_states(pot.topology, np.array([index[y] for s in part for y in s["chunk"]]), pot.offsets)
        lattices.append((pot, gold))

    def nll(temperature):
        return sum(
            float(log_partition(tempered(pot, temperature)).sum() - tempered(pot, temperature).path_scores(gold).sum())
            for pot, gold in lattices
        )

    alone = [likelihood_temperature([lattice]) for lattice in lattices]
    pooled = likelihood_temperature(lattices)
    assert nll(pooled) <= min(nll(pooled * 0.95), nll(pooled * 1.05)) + 1e-6
    assert min(alone) - 1e-6 <= pooled <= max(alone) + 1e-6
    assert likelihood_temperature(lattices[:1]) == alone[0]


@pytest.mark.parametrize("temperature", [0, -1.0, float("nan"), float("inf"), 1e-308, 1e7, 10**400, -(10**400)])
def test_a_temperature_outside_the_range_is_refused(chunker, sentences, temperature):
    from fstcrf.errors import ScoreError

    with pytest.raises(ScoreError, match=r"temperature must be a number from 1e-06 to 1e\+06"):
        chunker.predict_spans(sentences, temperature=temperature)


def test_fit_temperature_refuses_labels_the_model_lacks(chunker, sentences):
    from fstcrf.errors import LabelError

    with pytest.raises(LabelError, match="column .pos. holds labels the model lacks: "):
        chunker.fit_temperature(sentences, target="pos")


def test_calibrate_prints_the_temperature_that_tag_takes(demo_chunker, tmp_path, capsys):
    from conftest import DEMO_TRAIN

    assert main(["-q", "calibrate", str(demo_chunker), str(DEMO_TRAIN)]) == 0
    temperature = float(capsys.readouterr().out)
    fitted = ChainCRF.load(demo_chunker).fit_temperature(read_conll(DEMO_TRAIN, COLUMNS))
    assert temperature == pytest.approx(fitted, abs=1e-4)
    source = tmp_path / "in.txt"
    source.write_text(DEMO_TRAIN.read_text().split("\n\n")[0] + "\n")
    columns = []
    for value in ("1", str(temperature)):
        output = tmp_path / f"out{value}.txt"
        options = ["--entity-probabilities", "--temperature", value]
        assert main(["-q", "tag", str(demo_chunker), str(source), *options, "-o", str(output)]) == 0
        columns.append([line.split()[-2:] for line in output.read_text().splitlines() if line])
    assert [label for label, _ in columns[0]] == [label for label, _ in columns[1]]
    assert columns[0] != columns[1]


@pytest.mark.parametrize("value", ["0", "-2", "nan", "warm"])
def test_tag_refuses_a_temperature_that_is_not_positive(demo_chunker, capsys, value):
    from conftest import DEMO_TRAIN

    with pytest.raises(SystemExit):
        main(["-q", "tag", str(demo_chunker), str(DEMO_TRAIN), "--entity-probabilities", "--temperature", value])
    assert "--temperature" in capsys.readouterr().err


def test_calibrate_refuses_a_file_without_the_gold_column(demo_chunker, tmp_path, capsys):
    source = tmp_path / "words.txt"
    source.write_text("the DT\ndog NN\n")
    assert main(["-q", "calibrate", str(demo_chunker), str(source), "--columns", "word,pos"]) != 0
    assert "chunk" in capsys.readouterr().err
