"""fstcrf tag --constraints COLUMN (a partly annotated file completed around its labels)
and --tag-dictionary (train --tag-dictionary N): every decoder keeps to them, and
bad columns, labels and combinations are one-line errors."""

from __future__ import annotations

import pytest

from fstcrf.cli import main
from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.engine.spans import path_chunks
from fstcrf.model import ChainCRF

TRAIN = str(DATA_DIR / "demo_train.txt")
TEST = str(DATA_DIR / "demo_test.txt")


@pytest.fixture(scope="module")
def partial_file(tmp_path_factory):
    """The demo test file with its chunk column partly annotated: every third token keeps
    its label, every fifth allows B-NP or B-VP, the rest are "?"."""
    corpus = read_conll(TEST)
    lines, number = [], 0
    for sentence in corpus.sentences[:40]:
        for word, pos, chunk in zip(sentence["word"], sentence["pos"], sentence["chunk"]):
            number += 1
            value = chunk if number % 3 == 0 else "B-NP|B-VP" if number % 5 == 0 else "?"
            lines.append(f"{word} {pos} {value}")
        lines.append("")
    path = tmp_path_factory.mktemp("constraints") / "partial.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def kept(given: str, predicted: str) -> bool:
    return given == "?" or predicted in given.split("|")


def test_every_decoder_completes_the_file_around_its_labels(demo_chunker, partial_file, tmp_path):
    free = tmp_path / "free.txt"
    assert main(["-q", "tag", str(demo_chunker), str(partial_file), "-o", str(free)]) == 0
    changed = 0
    for extra, layout in (
        ([], "word,pos,given,label"),
        (["--decode", "mbr"], "word,pos,given,label"),
        (["--marginals", "--entity-probabilities"], "word,pos,given,label,marginal,entity"),
        (["--nbest", "2"], "word,pos,given,label,second,p1,p2"),
        (["--sample", "2"], "word,pos,given,label,second"),
    ):
        out = tmp_path / "tagged.txt"
        arguments = ["-q", "tag", str(demo_chunker), str(partial_file), "--constraints", "chunk", "-o", str(out)]
        assert main(arguments + extra) == 0
        tagged = read_conll(out, columns=layout)
        for sentence in tagged.sentences:
            for column in ("label", "second") if "second" in layout else ("label",):
                assert all(kept(g, p) for g, p in zip(sentence["given"], sentence[column])), extra
        if "marginal" in layout:
            for sentence in tagged.sentences:
                for given, marginal in zip(sentence["given"], sentence["marginal"]):
                    assert "|" in given or given == "?" or float(marginal) == pytest.approx(1.0)
        changed += read_conll(free, columns="word,pos,given,label").column("label") != tagged.column("label")
    assert changed  # the constraints changed the output


def test_a_composed_model_takes_constraints_per_component(demo_joint, partial_file, tmp_path):
    out = tmp_path / "joint.txt"
    assert main(["-q", "tag", str(demo_joint), str(partial_file), "--constraints", "chunk=chunk", "-o", str(out)]) == 0
    tagged = read_conll(out, columns="word,pos,given,tags,chunks")
    for sentence in tagged.sentences:
        assert all(kept(g, p) for g, p in zip(sentence["given"], sentence["chunks"]))


def test_an_empty_constraints_column_of_a_composed_model_is_an_error(demo_joint, partial_file, capsys):
    assert main(["-q", "tag", str(demo_joint), str(partial_file), "--constraints", ""]) == 2
    assert "the input has no column ''" in capsys.readouterr().err


def test_on_infeasible_unconstrained_holds_with_constraints(demo_chunker, tmp_path):
    """A sentence the grammar cannot fit is tagged without it, still under its constraints."""
    pytest.importorskip("pynini")
    grammar = tmp_path / "three.fgr"
    grammar.write_text("start = . . . .* ;\n")
    short = tmp_path / "short.txt"
    short.write_text("He PRP ?\nruns VBZ B-VP\n\nthe DT ?\nbig JJ ?\ndog NN ?\n")
    out = tmp_path / "tagged.txt"
    arguments = ["-q", "tag", str(demo_chunker), str(short), "--grammar", str(grammar), "--constraints", "chunk"]
    assert main([*arguments, "--on-infeasible", "unconstrained", "-o", str(out)]) == 0
    assert read_conll(out, columns="word,pos,given,label").sentences[0]["label"][1] == "B-VP"


def test_bad_constraint_columns_are_one_line_errors(demo_chunker, partial_file, tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("He PRP B-NP\nruns VBZ B-XP\n\nShe PRP B-NP|\n")
    for arguments, message in (
        ([str(partial_file), "--constraints", "ner"], "the input has no column 'ner'"),
        ([str(partial_file), "--constraints", ""], "the input has no column ''"),
        ([str(partial_file), "--constraints", "pos"], ":1: --constraints pos: the label 'DT' is not among the model's"),
        ([str(bad), "--constraints", "chunk"], ":2: --constraints chunk: the label 'B-XP' is not among"),
        ([str(partial_file), "--constraints", "chunk", "--nonlocal", "consistency"], "--nonlocal"),
        ([str(partial_file), "--tag-dictionary"], "stores no tag dictionary"),
    ):
        assert main(["-q", "tag", str(demo_chunker), *arguments]) == 2
        error = capsys.readouterr().err
        assert message in error and error.count("\n") == 1 and "Traceback" not in error
    bad.write_text("She PRP B-NP|\n")
    assert main(["-q", "tag", str(demo_chunker), str(bad), "--constraints", "chunk"]) == 2
    error = capsys.readouterr().err
    assert ":1: --constraints" in error and "empty member" in error


def test_a_tag_dictionary_keeps_frequent_words_to_their_training_tags(tmp_path):
    model = tmp_path / "pos.model"
    assert (
        main(["-q", "train", TRAIN, "--target", "pos", "--max-iter", "3", "--tag-dictionary", "2", "-o", str(model)])
        == 0
    )
    assert model.exists()
    dictionary = ChainCRF.load(model).tag_dictionary_
    train = read_conll(TRAIN)
    counts: dict = {}
    for sentence in train.sentences:
        for word, tag in zip(sentence["word"], sentence["pos"]):
            counts.setdefault(word, []).append(tag)
    assert dictionary.column == "word" and dictionary.min_count == 2
    assert dictionary.words == {word: frozenset(tags) for word, tags in counts.items() if len(tags) >= 2}
    out = tmp_path / "tagged.txt"
    assert main(["-q", "tag", str(model), TEST, "--tag-dictionary", "-o", str(out)]) == 0
    for sentence in read_conll(out, columns="word,pos,chunk,tag").sentences:
        for word, tag in zip(sentence["word"], sentence["tag"]):
            assert word not in dictionary.words or tag in dictionary.words[word]


def test_tag_dictionary_training_needs_one_model_from_a_file(tmp_path, capsys):
    out = str(tmp_path / "m.model")
    arguments = ["-q", "train", TRAIN, "--tag-dictionary", "2", "-o", out]
    assert main([*arguments, "--consistency", "--document-method", "two-stage"]) == 2
    assert "--tag-dictionary applies to one model" in capsys.readouterr().err


def test_the_chunks_of_a_partly_annotated_file_hold_its_spans(demo_chunker, tmp_path):
    """A chunk written whole in the column (B-NP I-NP then a label that does not continue
    it) is a chunk of the output."""
    corpus = read_conll(TEST)
    sentence = corpus.sentences[0]
    gold = path_chunks(sentence["chunk"])
    first, last, _ = gold[0]
    given = ["?"] * len(sentence)
    given[first : last + 2] = sentence["chunk"][first : last + 2]
    path = tmp_path / "one.txt"
    path.write_text("".join(f"{w} {p} {g}\n" for w, p, g in zip(sentence["word"], sentence["pos"], given)))
    out = tmp_path / "out.txt"
    assert main(["-q", "tag", str(demo_chunker), str(path), "--constraints", "chunk", "-o", str(out)]) == 0
    assert gold[0] in path_chunks(read_conll(out, columns="word,pos,given,label").column("label")[0])
