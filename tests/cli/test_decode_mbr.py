"""fstcrf tag and eval --decode mbr (F1-optimal decoding) on the demo chunker: the labels
are the model's MBR decoding, valid IOB2, scored by eval; the options it excludes are
refused in one line."""

from __future__ import annotations

import logging

import pytest

from fstcrf.cli import main
from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.evaluate import score_labels
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.engine.spans import path_chunks
from fstcrf.model import ChainCRF

TEST = str(DATA_DIR / "demo_test.txt")


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


def iob2_valid(labels: list[str]) -> bool:
    """True if every I-X follows B-X or I-X."""
    return all(
        not label.startswith("I-") or (previous != "O" and previous[2:] == label[2:])
        for previous, label in zip(["O"] + labels, labels)
    )


def tagged_labels(path) -> list[list[str]]:
    return read_conll(path, columns="word,pos,chunk,predicted").column("predicted")


@pytest.mark.parametrize("threshold", [None, "0.3"])
def test_tag_writes_the_models_mbr_labels(demo_chunker, tmp_path, threshold):
    out = tmp_path / "mbr.txt"
    extra = [] if threshold is None else ["--mbr-threshold", threshold]
    assert main(["-q", "tag", str(demo_chunker), TEST, "--decode", "mbr", *extra, "-o", str(out)]) == 0
    model = ChainCRF.load(demo_chunker)
    corpus = read_conll(TEST, columns="word,pos,chunk")
    expected = model.predict_mbr(corpus, None if threshold is None else float(threshold))
    written = tagged_labels(out)
    assert written == expected  # the demo test file is one batch
    assert all(iob2_valid(labels) for labels in written)
    viterbi = model.predict(corpus)
    assert written != viterbi or threshold is None  # a low threshold adds chunks Viterbi leaves out


@pytest.mark.parametrize("temperature", [1.0, 1.8])
def test_decoding_encoded_sentences_gives_predict_mbr_s_labels(demo_chunker, temperature):
    model = ChainCRF.load(demo_chunker)
    sentences = read_conll(TEST, columns="word,pos,chunk").sentences
    for threshold in (None, 0.3):
        expected = model.predict_mbr(sentences, threshold, temperature=temperature)
        assert model.decode_mbr(model.encode(sentences), threshold, temperature) == expected
    assert model.decode_mbr(model.encode([])) == []


def test_tag_in_batches_chooses_each_batch_s_threshold(demo_chunker, tmp_path, monkeypatch):
    from fstcrf.cli import tag

    monkeypatch.setattr(tag, "TAG_BATCH_TOKENS", 200)  # several batches: features beside decoding
    out = tmp_path / "mbr.txt"
    command = ["-q", "tag", str(demo_chunker), TEST, "--decode", "mbr", "--mbr-temperature", "3", "-o", str(out)]
    assert main(command) == 0
    model = ChainCRF.load(demo_chunker)
    sentences = read_conll(TEST, columns="word,pos,chunk").sentences
    expected, batch, tokens = [], [], 0
    for sentence in sentences:  # the reader's batches: cut once they hold 200 tokens
        batch.append(sentence)
        tokens += len(sentence)
        if tokens >= 200:
            expected += model.predict_mbr(batch, temperature=3.0)
            batch, tokens = [], 0
    expected += model.predict_mbr(batch, temperature=3.0) if batch else []
    assert tagged_labels(out) == expected
    assert expected != model.predict_mbr(sentences, temperature=3.0)  # the thresholds differ by batch


def test_eval_scores_the_mbr_labels(demo_chunker, capsys):
    assert main(["-q", "eval", str(demo_chunker), TEST, "--decode", "mbr"]) == 0
    out = capsys.readouterr().out
    model = ChainCRF.load(demo_chunker)
    corpus = read_conll(TEST, columns="word,pos,chunk")
    scores = score_labels(corpus.column("chunk"), model.predict_mbr(corpus))
    assert f"FB1: {scores.primary:6.2f}" in out


def test_entity_probabilities_are_those_of_the_chosen_chunks(demo_chunker, tmp_path):
    out = tmp_path / "mbr.txt"
    command = ["-q", "tag", str(demo_chunker), TEST, "--decode", "mbr", "--entity-probabilities", "-o", str(out)]
    assert main(command) == 0
    tagged = read_conll(out, columns="word,pos,chunk,predicted,probability")
    model = ChainCRF.load(demo_chunker)
    spans = [path_chunks(labels) for labels in tagged.column("predicted")]
    probabilities = model.span_probabilities(tagged, spans)
    for sentence, sentence_spans, values in zip(tagged.sentences, spans, probabilities):
        for (first, _, _), value in zip(sentence_spans, values):
            assert float(sentence["probability"][first]) == pytest.approx(value, abs=5e-5)


def test_mbr_options_without_decode_mbr_warn(demo_chunker, tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        command = ["tag", str(demo_chunker), TEST, "--mbr-threshold", "0.4", "--mbr-temperature", "2"]
        assert main([*command, "-o", str(tmp_path / "out.txt")]) == 0
    assert "--mbr-threshold is ignored" in caplog.text
    assert "--mbr-temperature is ignored" in caplog.text


@pytest.mark.parametrize(
    "options, message",
    [
        (["--nbest", "3"], "--nbest and --sample are other outputs"),
        (["--sample", "2"], "--nbest and --sample are other outputs"),
        (["--nonlocal", "consistency"], "--decode mbr and --nonlocal are different decoders"),
        (["--dask", "local:1"], "it does not take --decode mbr"),
    ],
)
def test_tag_refuses_outputs_mbr_does_not_make(demo_chunker, tmp_path, capsys, options, message):
    command = ["tag", str(demo_chunker), TEST, "--decode", "mbr", *options, "-o", str(tmp_path / "out.txt")]
    assert main(command) != 0
    assert message in one_line_error(capsys)


def test_a_composed_model_is_refused(demo_joint, capsys):
    assert main(["eval", str(demo_joint), TEST, "--decode", "mbr"]) != 0
    assert "--decode mbr applies to single models" in one_line_error(capsys)


def test_a_model_without_chunk_labels_is_refused(demo_pos_tagger, capsys):
    assert main(["eval", str(demo_pos_tagger), TEST, "--decode", "mbr"]) != 0
    assert "span probabilities need chunk labels" in one_line_error(capsys)


@pytest.mark.parametrize("threshold", ["0", "1", "1.5", "x"])
def test_a_threshold_outside_0_1_is_a_usage_error(demo_chunker, capsys, threshold):
    with pytest.raises(SystemExit):
        main(["eval", str(demo_chunker), TEST, "--decode", "mbr", "--mbr-threshold", threshold])
    assert "--mbr-threshold" in capsys.readouterr().err


@pytest.mark.pynini
def test_under_the_iob2_grammar_the_labels_are_valid_iob2(demo_chunker, tmp_path):
    out = tmp_path / "mbr.txt"
    assert main(["-q", "tag", str(demo_chunker), TEST, "--decode", "mbr", "--grammar", "iob2", "-o", str(out)]) == 0
    model = ChainCRF.load(demo_chunker)
    corpus = read_conll(TEST, columns="word,pos,chunk")
    assert tagged_labels(out) == model.predict_mbr(corpus, grammar="iob2")
    assert all(iob2_valid(labels) for labels in tagged_labels(out))


@pytest.mark.pynini
def test_chunks_a_grammar_forbids_are_refused_in_one_line(demo_chunker, tmp_path, capsys):
    """The chunks are chosen among all non-overlapping sets; at_most_one allows one NP."""
    command = ["tag", str(demo_chunker), TEST, "--decode", "mbr", "--grammar", "at_most_one", "--define", "X=NP"]
    assert main([*command, "-o", str(tmp_path / "out.txt")]) != 0
    assert "the lattice has no path with the labels" in one_line_error(capsys)


@pytest.mark.pynini
def test_a_model_trained_under_a_grammar_decodes_under_it(tmp_path):
    model = tmp_path / "iob2.model"
    train = str(DATA_DIR / "demo_train.txt")
    assert main(["-q", "train", train, "--grammar", "iob2", "--max-iter", "3", "-o", str(model)]) == 0
    out = tmp_path / "mbr.txt"
    assert main(["-q", "tag", str(model), TEST, "--decode", "mbr", "--mbr-threshold", "0.2", "-o", str(out)]) == 0
    assert all(iob2_valid(labels) for labels in tagged_labels(out))
