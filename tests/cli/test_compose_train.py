"""fstcrf compose A.model B.model --train TRAIN [--dev DEV] -o joint.model: joint training
from the command line, its log, Ctrl-C keeping the best, and the refusals."""

from __future__ import annotations

import logging

import pytest

from fstcrf.cli import main
from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.evaluate import score_labels
from fstcrf.model.compose import compose, load_joint
from fstcrf.model.chain import load_model

from conftest import DEMO_TRAIN


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("separate")
    pos, chunk = folder / "pos.model", folder / "chunk.model"
    assert (
        main(
            ["-q", "train", str(DEMO_TRAIN), "--target", "pos", "--template", "pos", "--max-iter", "5", "-o", str(pos)]
        )
        == 0
    )
    reads = ["--reads", "pos", "--template", "chunking-reads-pos", "--max-iter", "5"]
    assert main(["-q", "train", str(DEMO_TRAIN), *reads, "-o", str(chunk)]) == 0
    return pos, chunk


def _split(tmp_path):
    blocks = DEMO_TRAIN.read_text().strip().split("\n\n")
    train, dev = tmp_path / "train.txt", tmp_path / "dev.txt"
    train.write_text("\n\n".join(blocks[:80]) + "\n")
    dev.write_text("\n\n".join(blocks[80:120]) + "\n")
    return train, dev


def test_compose_train_fits_every_model_and_keeps_the_dev_best(models, tmp_path, caplog):
    train, dev = _split(tmp_path)
    output = tmp_path / "joint.model"
    with caplog.at_level(logging.INFO, logger="fstcrf"):
        code = main(
            [
                "compose",
                *map(str, models),
                "--train",
                str(train),
                "--dev",
                str(dev),
                "--max-iter",
                "4",
                "-o",
                str(output),
            ]
        )
    assert code == 0
    text = caplog.text
    assert "joint training of pos + chunk on 80 sentences" in text
    assert "joint iteration 4" in text and "kept the weights of joint iteration" in text
    trained = load_joint(output)
    separate = compose([load_model(path) for path in models])
    assert any((a.weights_ != b.weights_).any() for a, b in zip(trained.components, separate.components)), (
        "joint training left the weights as they were"
    )
    gold = read_conll(dev)
    f1 = score_labels(gold.column("chunk"), trained.predict(gold)[1]).primary
    assert f1 >= score_labels(gold.column("chunk"), separate.predict(gold)[1]).primary - 1e-9


def test_compose_train_with_a_latent_lower_column(models, tmp_path):
    """A training file without the part-of-speech column: the tags are marginalised."""
    train, _ = _split(tmp_path)
    words_chunks = tmp_path / "latent.txt"
    lines = [" ".join(line.split()[::2]) if line.strip() else "" for line in train.read_text().splitlines()]
    words_chunks.write_text("\n".join(lines) + "\n")
    output = tmp_path / "joint.model"
    code = main(
        [
            "-q",
            "compose",
            *map(str, models),
            "--train",
            str(words_chunks),
            "--columns",
            "word,chunk",
            "--max-iter",
            "2",
            "-o",
            str(output),
        ]
    )
    assert code == 0 and output.is_file()


def test_compose_train_refuses_bad_training_files_before_training(models, tmp_path, capsys):
    train, _ = _split(tmp_path)
    unknown = tmp_path / "unknown.txt"
    unknown.write_text("The XYZ B-NP\ncat NN I-NP\n")
    output = tmp_path / "joint.model"
    assert main(["compose", *map(str, models), "--train", str(unknown), "-o", str(output)]) != 0
    assert "component 0 (pos)" in capsys.readouterr().err and not output.exists()
    no_upper = tmp_path / "no_upper.txt"
    no_upper.write_text("The DT\ncat NN\n")
    assert (
        main(["compose", *map(str, models), "--train", str(no_upper), "--columns", "word,pos", "-o", str(output)]) != 0
    )
    assert "top component's column chunk" in capsys.readouterr().err
    words_only = tmp_path / "words.txt"
    words_only.write_text("The B-NP\ncat I-NP\n")
    assert (
        main(["compose", *map(str, models), "--train", str(words_only), "--columns", "chunk,word", "-o", str(output)])
        != 0
    )
    assert not output.exists()


def test_ctrl_c_keeps_the_best_iteration_so_far(models, tmp_path, monkeypatch, caplog):
    from fstcrf.model import joint_training

    train, dev = _split(tmp_path)
    calls = {"count": 0}
    original = joint_training.JointObjective.loss_and_gradient

    def interrupted(self, theta):
        calls["count"] += 1
        if calls["count"] == 4:
            raise KeyboardInterrupt
        return original(self, theta)

    monkeypatch.setattr(joint_training.JointObjective, "loss_and_gradient", interrupted)
    output = tmp_path / "joint.model"
    with caplog.at_level(logging.INFO, logger="fstcrf"):
        code = main(["compose", *map(str, models), "--train", str(train), "--dev", str(dev), "-o", str(output)])
    assert code == 0 and output.is_file()
    assert "interrupted; kept the weights of joint iteration" in caplog.text


def test_compose_train_in_single_precision_reaches_the_learner(models, tmp_path, monkeypatch):
    """--lbfgs-precision single gives joint training's L-BFGS a float32 history, which
    ends near the double run's objective."""
    from fstcrf.model import joint_training

    train, _ = _split(tmp_path)
    objectives = {}
    lbfgs = joint_training.lbfgs

    def recording(*args, **kwargs):
        result = lbfgs(*args, **kwargs)
        objectives[kwargs["history"]] = result.history[-1]["objective"]
        return result

    monkeypatch.setattr(joint_training, "lbfgs", recording)
    for precision in ("double", "single"):
        output = tmp_path / f"{precision}.model"
        command = ["-q", "compose", *map(str, models), "--train", str(train), "--max-iter", "6"]
        assert main([*command, "--lbfgs-precision", precision, "-o", str(output)]) == 0
        assert output.is_file()
    assert set(objectives) == {"double", "single"}
    assert objectives["single"] == pytest.approx(objectives["double"], rel=1e-3)
