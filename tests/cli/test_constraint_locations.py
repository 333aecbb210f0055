"""Errors of ``fstcrf tag --constraints`` and of ``fstcrf train`` on partial labels name
FILE:LINE: an infeasible sentence by its first line, whatever batch it was tagged in; a
malformed or unknown cell by its own line and file; a component named twice, or one
the model lacks, is refused."""

from __future__ import annotations

import re

import pytest

import fstcrf.cli.tag as tag_command
from fstcrf.cli import main
from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.labels import token_location
from fstcrf.corpus.synthetic import DATA_DIR

TRAIN = DATA_DIR / "demo_train.txt"


@pytest.fixture(scope="module")
def iob2_chunker(tmp_path_factory):
    """A chunker trained under the iob2 grammar: I-NP never follows O."""
    path = tmp_path_factory.mktemp("iob2") / "iob2.model"
    assert main(["-q", "train", str(TRAIN), "--grammar", "iob2", "--max-iter", "2", "-o", str(path)]) == 0
    return path


def one_token_sentences(count: int, clash: int | None = None) -> str:
    """``count`` one-token sentences, free but sentence ``clash``, fixed to I-NP (which
    the iob2 grammar never begins a sentence with); sentence s is on line 2s + 1."""
    return "".join(f"light NN {'I-NP' if s == clash else '?'}\n\n" for s in range(count))


def error_line(capsys) -> str:
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "Traceback" not in error, error
    return error


@pytest.mark.pynini
@pytest.mark.parametrize("extra", [[], ["--nbest", "2"], ["--decode", "mbr"], ["--marginals"], ["--sample", "2"]])
def test_an_infeasible_sentence_is_named_by_its_file_and_first_line(iob2_chunker, tmp_path, monkeypatch, capsys, extra):
    monkeypatch.setattr(tag_command, "TAG_BATCH_TOKENS", 5)  # the clash is in a later batch than the first
    free, clashing = tmp_path / "free.txt", tmp_path / "clashing.txt"
    free.write_text(one_token_sentences(8))
    clashing.write_text(one_token_sentences(30, clash=22))
    inputs = [str(clashing)] if "--sample" in extra else [str(free), str(clashing)]
    arguments = ["-q", "tag", str(iob2_chunker), *inputs, "--constraints", "chunk", "-o", str(tmp_path / "o.txt")]
    assert main(arguments + extra) == 2
    error = error_line(capsys)
    assert f"error: {clashing}:45: " in error  # sentence 22's line
    # the clash is with the training grammar, which the message names as the model file keeps it
    assert "no label sequence under the training grammar iob2; these clash with it: token 0 fixed to I-NP" in error
    assert not re.search(r"sentence \d", error)  # no index within a batch


@pytest.mark.pynini
def test_a_clash_with_the_tag_grammar_names_the_grammar(demo_chunker, tmp_path, capsys):
    clashing = tmp_path / "clashing.txt"
    clashing.write_text(one_token_sentences(3, clash=1))
    arguments = ["-q", "tag", str(demo_chunker), str(clashing), "--constraints", "chunk", "-o", str(tmp_path / "o.txt")]
    assert main(arguments) == 0  # the first-order model alone may begin with I-NP
    assert main([*arguments, "--grammar", "iob2"]) == 2
    error = error_line(capsys)
    assert f"error: {clashing}:3: its constraints leave no label sequence under the grammar " in error
    assert "iob2.fgr; these clash with it: token 0 fixed to I-NP" in error


@pytest.mark.pynini
def test_sentences_a_tag_grammar_cannot_fit_are_named_by_file_and_line(demo_chunker, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tag_command, "TAG_BATCH_TOKENS", 9)  # the short sentences are in a later batch
    grammar = tmp_path / "three.fgr"
    grammar.write_text("start = . . . .* ;\n")  # three labels or more
    words = tmp_path / "words.txt"
    lengths = [3, 4, 3, 1, 2, 5, 3]  # sentences 3 and 4 are too short: lines 14 and 16
    words.write_text(
        "".join("".join(f"light NN {'B-NP' if t == 0 else 'I-NP'}\n" for t in range(n)) + "\n" for n in lengths)
    )
    arguments = ["-q", "tag", str(demo_chunker), str(words), "--grammar", str(grammar), "-o", str(tmp_path / "o.txt")]
    assert main(arguments) == 2
    error = error_line(capsys)
    assert (
        f"error: {words}:14 (1 tokens): grammar {grammar} accepts no label sequence of this sentence's length" in error
    )
    assert f"(also the sentences at {words}:16 (2 tokens))" in error
    assert not re.search(r"sentence \d", error)  # no index within a batch
    assert main([*arguments, "--on-infeasible", "unconstrained"]) == 0


@pytest.mark.pynini
def test_eval_names_a_sentence_its_grammar_cannot_fit_by_file_and_line_past_its_first_chunk(
    demo_chunker, tmp_path, capsys
):
    grammar = tmp_path / "three.fgr"
    grammar.write_text("start = . . . .* ;\n")  # three labels or more
    test = tmp_path / "test.txt"
    lengths = [3] * 2001 + [2] + [3] * 3  # eval decodes 2,000 sentences a call: the short one is in the second
    test.write_text(
        "".join("".join(f"light NN {'B-NP' if t == 0 else 'I-NP'}\n" for t in range(n)) + "\n" for n in lengths)
    )
    arguments = ["-q", "eval", str(demo_chunker), str(test), "--grammar", str(grammar)]
    assert main(arguments) == 2
    error = error_line(capsys)
    assert f"error: {test}:{4 * 2001 + 1} (2 tokens): grammar {grammar} accepts no label sequence" in error
    assert not re.search(r"sentence \d", error)


@pytest.mark.pynini
def test_a_batch_of_more_than_two_thousand_sentences_is_one_call(iob2_chunker, tmp_path, capsys):
    clashing = tmp_path / "clashing.txt"
    clashing.write_text(one_token_sentences(2100, clash=2050))
    arguments = ["-q", "tag", str(iob2_chunker), str(clashing), "--constraints", "chunk", "--marginals"]
    assert main([*arguments, "-o", str(tmp_path / "o.txt")]) == 2
    assert f"error: {clashing}:4101: " in error_line(capsys)


@pytest.mark.parametrize(
    "cell, message",
    [
        ("B-FOO", "the label 'B-FOO' is not among the model's"),
        ("B-NP|", "label set 'B-NP|' has an empty member"),
    ],
)
def test_a_bad_cell_is_named_by_its_file_and_line(demo_chunker, tmp_path, capsys, cell, message):
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    good.write_text("He PRP ?\nruns VBZ ?\n")
    bad.write_text(f"He PRP ?\nruns VBZ B-VP\n. . {cell}\n\nShe PRP ?\n")
    arguments = ["-q", "tag", str(demo_chunker), str(good), str(bad), "--constraints", "chunk"]
    assert main([*arguments, "-o", str(tmp_path / "o.txt")]) == 2
    error = error_line(capsys)
    assert f"error: {bad}:3: --constraints chunk: {message}" in error


def test_a_token_outside_a_file_is_located_on_standard_input():
    corpus = read_conll(TRAIN)
    assert token_location(corpus, 1, 2) == f"{TRAIN}:{corpus.sentences[1].line_numbers[2]}"
    corpus.path = None
    assert token_location(corpus, 0) == "standard input:1"


@pytest.mark.parametrize(
    "given, message",
    [
        ("chunk,chunk", "the component chunk is named twice"),
        ("chunk,chunk=chunk", "the component chunk is named twice"),
        ("1=chunk", "has no component predicting '1'; name one of pos, chunk (TARGET=COLUMN"),
        ("ner=chunk", "has no component predicting 'ner'; name one of pos, chunk (TARGET=COLUMN"),
    ],
)
def test_a_component_named_twice_or_not_by_its_column_is_refused(demo_joint, tmp_path, capsys, given, message):
    partial = tmp_path / "partial.txt"
    partial.write_text("He PRP ?\nruns VBZ B-VP\n")
    arguments = ["-q", "tag", str(demo_joint), str(partial), "--constraints", given]
    assert main([*arguments, "-o", str(tmp_path / "o.txt")]) == 2
    assert f"--constraints {given}: " in (error := error_line(capsys)) and message in error


@pytest.mark.parametrize(
    "command, cell, init, message",
    [
        ("train", "B-NP|", False, "label set 'B-NP|' has an empty member or '?'"),
        ("train", "B-NP|?", False, "label set 'B-NP|?' has an empty member or '?'"),
        ("jackknife", "|B-NP", False, "label set '|B-NP' has an empty member or '?'"),
        ("train", "B-ZZ", True, "unknown label 'B-ZZ'; the model knows"),
        ("train", "B-NP|B-ZZ", True, "unknown label 'B-ZZ'; the model knows"),
    ],
)
def test_training_on_a_bad_cell_names_its_file_and_line(demo_chunker, tmp_path, capsys, command, cell, init, message):
    lines = TRAIN.read_text().splitlines()
    lines[4] = lines[4].rsplit(" ", 1)[0] + f" {cell}"  # line 5
    train = tmp_path / "partial.txt"
    train.write_text("\n".join(lines[:200]) + "\n")
    arguments = ["-q", command, str(train), "--max-iter", "1", "-o", str(tmp_path / "out")]
    assert main(arguments + (["--init", str(demo_chunker)] if init else [])) == 2
    assert f"error: {train}:5: {message}" in error_line(capsys)
