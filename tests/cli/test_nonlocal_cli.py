"""Non-local decoding from the command line: train --consistency --document-method
consistency (a single model with penalties), tag and eval --nonlocal consistency,
and the errors and warnings around them (the two-stage default: test_two_stage_cli.py)."""

import logging

import pytest

from fstcrf.cli import main
from fstcrf.corpus.conll import read_conll
from fstcrf.document import documents
from fstcrf.document.documents import document_spans
from fstcrf.model import ChainCRF

NAMES = [("Tanjug", "ORG"), ("Smith", "PER"), ("Paris", "LOC"), ("Reuters", "ORG"), ("Jones", "PER")]
VERBS = ["said", "reported", "met", "visited", "left"]


def corpus_text(num_documents: int, seed: int) -> str:
    """Documents (with -DOCSTART-) whose sentences mention a few names in word, pos, chunk, ner columns."""
    import random

    rng = random.Random(seed)
    lines = []
    for _ in range(num_documents):
        lines += ["-DOCSTART- -X- O O", ""]
        cast = rng.sample(NAMES, 2)
        for _ in range(rng.randint(2, 4)):
            name, entity_type = rng.choice(cast)
            words = [
                (name, "NNP", "I-NP", f"B-{entity_type}"),
                (rng.choice(VERBS), "VBD", "I-VP", "O"),
                ("the", "DT", "I-NP", "O"),
                ("news", "NN", "I-NP", "O"),
                (".", ".", "O", "O"),
            ]
            if rng.random() < 0.5:
                words = words[2:4] + [(name, "NNP", "I-NP", f"B-{entity_type}")] + words[1:2] + words[4:]
            lines += [" ".join(token) for token in words] + [""]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("nonlocal")
    (folder / "train.txt").write_text(corpus_text(30, 0))
    (folder / "test.txt").write_text(corpus_text(8, 1))
    model = folder / "ner.model"
    assert (
        main(
            [
                "-q",
                "train",
                str(folder / "train.txt"),
                "--columns",
                "word,pos,chunk,ner",
                "--target",
                "ner",
                "--template",
                "ner",
                "--max-iter",
                "15",
                "--consistency",
                "--document-method",
                "consistency",
                "-o",
                str(model),
            ]
        )
        == 0
    )
    plain = folder / "plain.model"
    assert (
        main(
            [
                "-q",
                "train",
                str(folder / "train.txt"),
                "--columns",
                "word,pos,chunk,ner",
                "--target",
                "ner",
                "--template",
                "ner",
                "--max-iter",
                "15",
                "-o",
                str(plain),
            ]
        )
        == 0
    )
    return folder, model, plain


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


def test_train_consistency_stores_penalties_estimated_from_the_documents(files, capsys):
    folder, model, plain = files
    loaded = ChainCRF.load(model)
    assert loaded.consistency_ is not None
    assert set(loaded.consistency_.types) == {"LOC", "ORG", "PER"}
    assert ChainCRF.load(plain).consistency_ is None
    assert main(["info", str(model)]) == 0
    assert "penalties for LOC, ORG, PER" in capsys.readouterr().out


@pytest.mark.parametrize("sampler", ["block", "gibbs"])
def test_tag_nonlocal_writes_one_label_per_token_and_is_reproducible(files, sampler, tmp_path):
    folder, model, _ = files
    outputs = []
    for name in ("a.txt", "b.txt"):
        assert (
            main(
                [
                    "-q",
                    "tag",
                    str(model),
                    str(folder / "test.txt"),
                    "--nonlocal",
                    "consistency",
                    "--sampler",
                    sampler,
                    "--sweeps",
                    "4",
                    "--seed",
                    "3",
                    "-o",
                    str(tmp_path / name),
                ]
            )
            == 0
        )
        outputs.append((tmp_path / name).read_text())
    assert outputs[0] == outputs[1]
    tagged = read_conll(tmp_path / "a.txt", "word,pos,chunk,ner,predicted")
    gold = read_conll(folder / "test.txt", "word,pos,chunk,ner")
    assert [len(s) for s in tagged] == [len(s) for s in gold]
    assert sum(s.document_start for s in tagged) == 8


def test_eval_nonlocal_prints_scores(files, capsys):
    folder, model, _ = files
    assert main(["eval", str(model), str(folder / "test.txt"), "--nonlocal", "consistency", "--sweeps", "3"]) == 0
    out = capsys.readouterr().out
    assert "FB1" in out


def test_nonlocal_without_stored_penalties_is_one_line_error(files, capsys):
    folder, _, plain = files
    assert main(["eval", str(plain), str(folder / "test.txt"), "--nonlocal", "consistency"]) != 0
    assert "train it with --consistency" in one_line_error(capsys)


@pytest.mark.pynini
def test_nonlocal_with_a_grammar_is_refused(files, capsys):
    folder, model, _ = files
    assert (
        main(
            [
                "tag",
                str(model),
                str(folder / "test.txt"),
                "--nonlocal",
                "consistency",
                "--grammar",
                "iob2",
                "-o",
                str(folder / "out.txt"),
            ]
        )
        != 0
    )
    assert "--grammar cannot be combined" in one_line_error(capsys)


def test_gibbs_on_a_second_order_model_names_the_block_sampler(files, capsys, tmp_path):
    folder, _, _ = files
    model = tmp_path / "order2.model"
    assert (
        main(
            [
                "-q",
                "train",
                str(folder / "train.txt"),
                "--columns",
                "word,pos,chunk,ner",
                "--target",
                "ner",
                "--template",
                "ner",
                "--order",
                "2",
                "--max-iter",
                "3",
                "--consistency",
                "--document-method",
                "consistency",
                "-o",
                str(model),
            ]
        )
        == 0
    )
    assert main(["eval", str(model), str(folder / "test.txt"), "--nonlocal", "consistency", "--sampler", "gibbs"]) != 0
    assert "use the block sampler" in one_line_error(capsys)
    assert main(["-q", "eval", str(model), str(folder / "test.txt"), "--nonlocal", "consistency", "--sweeps", "2"]) == 0


def test_sampler_options_without_nonlocal_warn(files, caplog):
    folder, model, _ = files
    with caplog.at_level(logging.WARNING):
        assert main(["tag", str(model), str(folder / "test.txt"), "--sweeps", "7", "-o", str(folder / "o.txt")]) == 0
    assert "--sweeps is ignored" in caplog.text


def test_consistency_with_a_feedback_log_is_refused(files, capsys, tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text("")
    assert (
        main(["train", "--algorithm", "bandit", "--log", str(log), "--consistency", "-o", str(tmp_path / "m.model")])
        != 0
    )
    assert "feedback log" in one_line_error(capsys)


def test_a_file_without_markers_is_one_document_and_a_large_one_warns(files, monkeypatch, caplog):
    folder, _, _ = files
    corpus = read_conll(folder / "test.txt", "word,pos,chunk,ner")
    unmarked = [s.__class__(s.columns) for s in corpus]
    assert len(document_spans(corpus.sentences)) == 8
    monkeypatch.setattr(documents, "LARGE_DOCUMENT_TOKENS", 10)
    with caplog.at_level(logging.WARNING):
        assert document_spans(unmarked, "big.txt") == [(0, len(unmarked))]
    assert "big.txt has no -DOCSTART- lines" in caplog.text


def test_bench_nonlocal_refuses_unknown_languages_and_missing_data(tmp_path, capsys):
    assert main(["bench", "nonlocal", "--data", str(tmp_path), "--languages", "deu"]) != 0
    assert "--languages takes eng, ned" in one_line_error(capsys)
    assert main(["bench", "nonlocal", "--data", str(tmp_path)]) != 0
    assert "has no conll2003, conll2002 folder" in one_line_error(capsys)
