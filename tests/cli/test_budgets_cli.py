"""Budgets reached from the command line (issue 62): label sets and compositions too
large to build end in one line naming the size and the option that raises the limit;
a composition that fits tags without its dense product."""

from needs_pynini import pynini  # noqa: F401  (joint grammars need pynini)

import pytest

from fstcrf.cli import main
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.model.compose import load_joint

TRAIN = str(DATA_DIR / "demo_train.txt")


@pytest.fixture(scope="module")
def taggers(tmp_path_factory):
    """A part-of-speech tagger (14 tags) and a chunker (7 labels) reading its tags,
    3 iterations each on the demo corpus."""
    folder = tmp_path_factory.mktemp("budgets")
    pos, chunk = str(folder / "pos.model"), str(folder / "chunk.model")
    assert main(["-q", "train", TRAIN, "--target", "pos", "--template", "pos", "--max-iter", "3", "-o", pos]) == 0
    reading = ["--reads", "pos", "--template", "chunking-reads-pos", "--max-iter", "3"]
    assert main(["-q", "train", TRAIN, *reading, "-o", chunk]) == 0
    return folder, pos, chunk


def test_two_taggers_and_a_chunker_tag_without_the_dense_product(taggers, capsys):
    folder, pos, chunk = taggers
    joint = str(folder / "h.model")
    assert main(["-q", "compose", pos, pos, chunk, "--joint", "no_overlap", "-o", joint]) == 0
    one_token = folder / "one_token.txt"
    one_token.write_text("The DT B-NP\n\n")
    capsys.readouterr()
    assert main(["-q", "tag", joint, str(one_token)]) == 0
    assert len(capsys.readouterr().out.split()) == 6  # the token's three columns and three labels
    model = load_joint(joint)
    assert model.predict(_sentences(one_token))
    assert "_product" not in vars(model.space)  # 196 x 196 x 49 edges, never built


def _sentences(path):
    from fstcrf.corpus.conll import read_conll

    return read_conll(str(path), ["word", "pos", "chunk"]).sentences


def test_a_non_local_joint_grammar_is_refused_by_the_edge_budget(taggers, capsys):
    folder, pos, chunk = taggers
    grammar = folder / "one_np.fgr"
    grammar.write_text("begin = [*/*/B-NP] ;\nother = [^*/*/B-NP] ;\nstart = other* (begin other*)? ;\n")
    out = str(folder / "two.model")
    command = ["-q", "compose", pos, pos, chunk, "--joint", str(grammar), "--max-edges", "1000000", "-o", out]
    assert main(command) == 2
    err = capsys.readouterr().err
    assert "under the joint constraint" in err and "3,764,768 edges" in err and "--max-edges N" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("upper", "budget", "size"),
    [(["pos", "pos", "pos"], ["--max-states", "1000"], "19,208"), (["pos"] * 5, [], "3,764,768")],
)
def test_many_components_are_refused_before_their_joint_labels_are_listed(taggers, capsys, upper, budget, size):
    folder, pos, chunk = taggers
    models = [pos] * len(upper) + [chunk]
    assert main(["-q", "compose", *models, "--joint", "no_overlap", *budget, "-o", str(folder / "x.model")]) == 2
    err = capsys.readouterr().err
    assert f"the joint labels ({' x '.join(['14'] * len(upper))} x 7)" in err and f"{size} states" in err
    assert "--max-states N" in err


def test_fifty_thousand_distinct_labels_are_refused_before_training(tmp_path, capsys):
    train = tmp_path / "labels.txt"
    train.write_text("".join(f"w{i % 97} NN L{i}\n" + ("\n" if i % 10 == 9 else "") for i in range(50_000)))
    assert main(["-q", "train", str(train), "-o", str(tmp_path / "m.model")]) == 2
    err = capsys.readouterr().err
    assert "first-order topology over 50,000 labels would need about 2,500,000,000 edges" in err
    assert "--max-edges N" in err


def test_joint_entity_probabilities_are_refused_before_tagging_when_the_product_is_too_large(
    demo_joint, tmp_path, capsys, monkeypatch
):
    from fstcrf.model.compose import JointModel

    def refuse(*args, **kwargs):
        raise AssertionError("decoding started before the product was budgeted")

    monkeypatch.setattr(JointModel, "predict", refuse)
    out = tmp_path / "tagged.txt"
    command = ["-q", "tag", str(demo_joint), str(DATA_DIR / "demo_test.txt"), "--entity-probabilities"]
    assert main(command + ["--max-edges", "9000", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "dense cross product of the components (196 x 49 edges)" in err and "9,604 edges" in err
    assert not out.exists()
