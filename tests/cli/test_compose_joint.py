"""``fstcrf compose --joint``: independent taggers tied by a joint grammar, from the
command line to ``tag`` and ``info``."""

from needs_pynini import pynini  # noqa: F401  (skips the module without pynini)

import logging

import pytest

from fstcrf import cli
from fstcrf.corpus.synthetic import DATA_DIR

TRAIN = DATA_DIR / "demo_train.txt"
TEST = DATA_DIR / "demo_test.txt"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """An NP chunker and a VP chunker trained apart (each type's other chunks are O)."""
    folder = tmp_path_factory.mktemp("joint")
    template = folder / "template.txt"
    template.write_text("bias\nword[0]\npos[0]\n")
    paths = []
    for kind in ("NP", "VP"):
        path = str(folder / f"{kind}.model")
        command = ["-q", "train", str(TRAIN), "--only-types", kind, "--template", str(template)]
        assert cli.main(command + ["--max-iter", "8", "-o", path]) == 0
        paths.append(path)
    return folder, paths


def test_compose_joint_tag_and_info(models, capsys, caplog):
    folder, (np_path, vp_path) = models
    joint_path = str(folder / "joint.model")
    with caplog.at_level(logging.INFO, logger="fstcrf"):
        assert cli.main(["compose", np_path, vp_path, "--joint", "no_overlap", "-o", joint_path]) == 0
    assert "joint grammar no_overlap; decoder: factorised" in caplog.text
    capsys.readouterr()
    assert cli.main(["-q", "tag", joint_path, str(TEST)]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert rows and all(row[-2] == "O" or row[-1] == "O" for row in rows)  # no token in both chunks
    assert cli.main(["-q", "info", joint_path]) == 0
    out = capsys.readouterr().out
    assert "joint grammar: no_overlap" in out and "decoder: factorised" in out
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="fstcrf"):
        assert cli.main(["compose", np_path, vp_path, "--joint", "nest", "-o", joint_path]) == 0
    assert "decoder: product, " in caplog.text
    assert cli.main(["-q", "tag", joint_path, str(TEST)]) == 0


def test_compose_joint_errors(models, capsys, tmp_path):
    folder, (np_path, vp_path) = models
    out = str(tmp_path / "bad.model")
    assert cli.main(["-q", "compose", np_path, vp_path, "-o", out]) == 2
    assert "--joint" in capsys.readouterr().err
    grammar = tmp_path / "typo.fgr"
    grammar.write_text('start = ("O/O" | "B-NP/B-XP")* ;\n')
    assert cli.main(["-q", "compose", np_path, vp_path, "--joint", str(grammar), "-o", out]) == 2
    assert "model 1 (chunk) has no label B-XP" in capsys.readouterr().err
    assert cli.main(["-q", "compose", np_path, vp_path, "--joint", "no_such_grammar", "-o", out]) == 2


def test_a_joint_model_of_components_trained_on_more_columns_reads_them_all(models, tmp_path, capsys):
    """A chunker of word,pos,chunk files composed with an entity tagger of word,pos,chunk,ner
    files: the joint model's files have the four columns, of which chunk and ner may be
    missing (before, only the first component's three were read)."""
    folder, (np_path, _) = models
    lines = [line for line in TEST.read_text().splitlines()[:200]]
    four = tmp_path / "four.txt"
    four.write_text("\n".join(f"{line} {line.split()[2]}" if line.strip() else "" for line in lines) + "\n")
    ner_path = str(tmp_path / "ner.model")
    template = folder / "template.txt"
    train = ["-q", "train", str(four), "--columns", "word,pos,chunk,ner", "--target", "ner"]
    assert cli.main(train + ["--template", str(template), "--max-iter", "3", "-o", ner_path]) == 0
    joint_path = str(tmp_path / "chunk-ner.model")
    assert cli.main(["-q", "compose", np_path, ner_path, "--joint", "no_overlap", "-o", joint_path]) == 0
    three = tmp_path / "three.txt"
    three.write_text("\n".join(" ".join(line.split()[:2]) for line in lines) + "\n")
    for given, fields in ((three, 4), (four, 6)):
        capsys.readouterr()
        assert cli.main(["-q", "tag", joint_path, str(given)]) == 0
        rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.strip()]
        assert rows and {len(row) for row in rows} == {fields}
    assert cli.main(["-q", "eval", joint_path, str(four)]) == 0
