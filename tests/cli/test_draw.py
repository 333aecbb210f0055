"""fstcrf draw end to end: the grammar, topology and lattice pictures written as the
library draws them (dot text, SVG, PNG), deterministic; a wrong suffix, a missing
Graphviz, a sentence the file lacks, a composed model's topology and a picture over
the size limit refused with typed errors before anything is written; help that loads
nothing heavy and states every default."""

import argparse
import shutil

import pytest

from fstcrf.cli import build_parser, main
from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.model.compose import load_any
from fstcrf.pictures.lattice import chain_lattice, joint_lattices, lattice_dot
from fstcrf.pictures.automata import topology_dot
from test_startup import REPORT_HEAVY, run_child

TEST = str(DATA_DIR / "demo_test.txt")


def needs_dot():
    if shutil.which("dot") is None:
        from needs import program_or_skip

        program_or_skip("dot", "graphviz")


@pytest.mark.pynini
def test_draw_grammar_writes_the_librarys_dot_text(tmp_path, capsys, demo_chunker):
    from fstcrf.grammar import load_grammar
    from fstcrf.pictures.automata import grammar_dot

    output = tmp_path / "grammar.dot"
    assert (
        main(["draw", "grammar", "at_most_one", "--labels", "O,B-NP,I-NP", "--define", "X=NP", "-o", str(output)]) == 0
    )
    expected = grammar_dot(load_grammar("at_most_one"), ["O", "B-NP", "I-NP"], params={"X": "NP"})
    assert output.read_text(encoding="utf-8") == expected
    capsys.readouterr()
    assert main(["draw", "grammar", "iob2", "--model", str(demo_chunker), "-o", "-"]) == 0
    assert capsys.readouterr().out == grammar_dot(load_grammar("iob2"), load_any(demo_chunker).labels_)


@pytest.mark.pynini
def test_draw_grammar_over_a_composed_models_joint_labels(tmp_path, demo_joint):
    from fstcrf.grammar import load_grammar
    from fstcrf.pictures.automata import grammar_dot

    output = tmp_path / "joint.dot"
    assert main(["draw", "grammar", "no_overlap", "--model", str(demo_joint), "-o", str(output)]) == 0
    labels = load_any(demo_joint).space.labels
    assert output.read_text(encoding="utf-8") == grammar_dot(load_grammar("no_overlap"), labels)
    assert "/" in labels[0]


def test_draw_topology_and_lattice_write_the_librarys_dot_text(tmp_path, demo_order2_chunker, demo_joint):
    topology = tmp_path / "topology.gv"
    assert main(["draw", "topology", str(demo_order2_chunker), "--max-states", "100", "-o", str(topology)]) == 0
    model = load_any(demo_order2_chunker)
    expected = topology_dot(model.scorer().decoding_topology(), "order2.model", 100)
    assert topology.read_text(encoding="utf-8") == expected

    lattice = tmp_path / "lattice.dot"
    assert main(["draw", "lattice", str(demo_order2_chunker), TEST, "--sentence", "4", "-o", str(lattice)]) == 0
    sentence = read_conll(TEST)[4]
    title = "demo_test.txt, sentence 4, under order2.model"
    assert lattice.read_text(encoding="utf-8") == lattice_dot([chain_lattice(model, sentence)], title)

    assert main(["draw", "lattice", str(demo_joint), TEST, "--threshold", "0.2", "-o", str(lattice)]) == 0
    title = "demo_test.txt, sentence 0, under joint.model"
    joint = load_any(demo_joint)
    assert lattice.read_text(encoding="utf-8") == lattice_dot(joint_lattices(joint, read_conll(TEST)[0]), title, 0.2)


def test_images_are_drawn_by_graphviz_the_same_each_time(tmp_path, demo_chunker):
    needs_dot()
    for suffix, magic in ((".svg", b"<?xml"), (".png", b"\x89PNG\r\n\x1a\n")):
        first, second = tmp_path / f"a{suffix}", tmp_path / f"b{suffix}"
        for output in (first, second):
            assert main(["-q", "draw", "lattice", str(demo_chunker), TEST, "--sentence", "2", "-o", str(output)]) == 0
        assert first.read_bytes().startswith(magic)
        assert first.read_bytes() == second.read_bytes()
    assert "<svg" in (tmp_path / "a.svg").read_text(encoding="utf-8")


def refused(capsys, words: list[str]) -> str:
    """The error message of a command that must fail with status 2."""
    capsys.readouterr()
    assert main(words) == 2
    error = capsys.readouterr().err
    assert error.startswith("fstcrf: error: ") and "Traceback" not in error
    return error


def test_refusals_name_the_problem_and_write_nothing(tmp_path, capsys, demo_chunker, demo_order2_chunker, demo_joint):
    output = tmp_path / "picture.jpg"
    error = refused(capsys, ["draw", "topology", str(demo_chunker), "-o", str(output)])
    assert "picture.jpg: a picture's name ends in .dot, .gv, .svg or .png" in error and "got .jpg" in error
    error = refused(capsys, ["draw", "lattice", str(demo_chunker), TEST, "--sentence", "200", "-o", "x.dot"])
    assert "--sentence 200: " in error and "has 200 sentences, numbered from 0 to 199" in error
    words = ["draw", "topology", str(demo_order2_chunker), "--max-states", "10", "-o", str(tmp_path / "t.dot")]
    error = refused(capsys, words)
    states = load_any(demo_order2_chunker).topology_.num_states
    assert f"has {states} states, more than the 10" in error and f"--max-states {states}" in error
    error = refused(capsys, ["draw", "topology", str(demo_joint), "-o", str(tmp_path / "t.dot")])
    assert "composed model of 2 components (pos, chunk)" in error
    lattice = ["draw", "lattice", str(demo_chunker), TEST, "--threshold", "0", "--max-states", "10"]
    error = refused(capsys, [*lattice, "-o", str(tmp_path / "l.dot")])
    assert "more than the 10 a picture may have" in error and "--max-states" in error
    assert list(tmp_path.iterdir()) == []


def test_without_graphviz_images_are_refused_and_dot_text_still_written(tmp_path, capsys, monkeypatch, demo_chunker):
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    error = refused(capsys, ["draw", "topology", str(demo_chunker), "-o", str(tmp_path / "t.svg")])
    assert "Graphviz's dot program, which is not installed" in error and "apt-get install graphviz" in error
    assert main(["draw", "topology", str(demo_chunker), "-o", str(tmp_path / "t.dot")]) == 0
    assert (tmp_path / "t.dot").read_text(encoding="utf-8").startswith('digraph "automaton" {')
    assert sorted(path.name for path in tmp_path.iterdir()) == ["t.dot"]


def nested_parsers() -> dict[str, argparse.ArgumentParser]:
    """Every parser of a command below another (fstcrf draw grammar, ...), by its words."""
    found = {}

    def walk(parser: argparse.ArgumentParser, words: tuple[str, ...]):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found[" ".join((*words, name))] = sub
                    walk(sub, (*words, name))

    walk(build_parser(), ())
    return {words: parser for words, parser in found.items() if " " in words}


def test_every_drawing_option_states_its_default_and_help_loads_nothing_heavy():
    parsers = nested_parsers()
    assert set(parsers) == {"draw grammar", "draw topology", "draw lattice"}
    missing = [
        f"fstcrf {words} {'/'.join(action.option_strings)}"
        for words, parser in parsers.items()
        for action in parser._actions
        if action.option_strings
        and not isinstance(action, argparse._HelpAction)
        and not action.required
        and "default" not in (action.help or "")
    ]
    assert missing == []
    code = (
        f"""
import contextlib, io
from fstcrf.cli import main
for words in {[words.split() + ["--help"] for words in parsers]!r}:
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            main(words)
        except SystemExit as stopped:
            assert stopped.code == 0, words
"""
        + REPORT_HEAVY
    )
    assert run_child(code) == []


def test_draw_grammar_without_pynini_names_the_extra(tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pynini", None)  # import pynini now fails
    error = refused(capsys, ["draw", "grammar", "iob2", "--labels", "O,B-NP,I-NP", "-o", str(tmp_path / "g.dot")])
    assert "needs pynini, which is not installed: pip install 'fstcrf[grammars]'" in error
    error = refused(capsys, ["draw", "grammar", "iob2", "--labels", "O,,B-NP", "-o", str(tmp_path / "g.dot")])
    assert "invalid label '': labels are non-empty strings without whitespace" in error
    assert list(tmp_path.iterdir()) == []
