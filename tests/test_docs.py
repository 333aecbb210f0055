"""The documentation's examples work: the ```python blocks of README.md,
docs/tutorial.md and docs/logits.md run, every fstcrf command line of a ```sh block in README.md
and docs/ parses, and every command-line option says what it does."""

import argparse
import os
import re
import shlex
from pathlib import Path

import pytest

from fstcrf.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def code_blocks(path: Path, language: str) -> list[str]:
    """The text of each ```language block of a Markdown file, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```", path.read_text(encoding="utf-8"), flags=re.M | re.S)


def fstcrf_commands(block: str) -> list[list[str]]:
    """The arguments of each fstcrf command of a shell block (continued lines
    joined, comments dropped, commands split at ; && || |, variables left as
    they are)."""
    commands = []
    for line in block.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        command: list[str] = []
        for word in [*lexer, ";"]:
            if word.strip(";&|"):
                command.append(word)
                continue
            if command and command[0] == "fstcrf":
                commands.append(command[1:])
            command = []
    return commands


def run_blocks(path: Path) -> dict:
    """Run a document's Python blocks in order in one namespace (later blocks use
    the names of earlier ones); the namespace at the end."""
    namespace: dict = {"__name__": "__doc_example__"}
    blocks = code_blocks(path, "python")
    assert blocks, f"{path} has no python block"
    for number, block in enumerate(blocks, start=1):
        exec(compile(block, f"{path.name} python block {number}", "exec"), namespace)
    return namespace


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.name)
def test_shell_examples_parse(document, capsys):
    commands = [words for block in code_blocks(document, "sh") for words in fstcrf_commands(block)]
    refused = []
    for words in commands:
        try:
            build_parser().parse_args(words)
        except SystemExit as stopped:
            if stopped.code != 0:
                refused.append(f"fstcrf {shlex.join(words)}: {capsys.readouterr().err.strip().splitlines()[-1]}")
    assert not refused, "\n".join(refused)


def test_the_shell_example_reader_finds_continued_commands():
    block = (
        "# a comment\nfstcrf train a.txt \\\n    --max-iter 3 -o m  # trailing\npip install x\n"
        "fstcrf tag m a.txt -o b.txt; fstcrf eval m a.txt | head && fstcrf history m\n"
    )
    assert fstcrf_commands(block) == [
        ["train", "a.txt", "--max-iter", "3", "-o", "m"],
        ["tag", "m", "a.txt", "-o", "b.txt"],
        ["eval", "m", "a.txt"],
        ["history", "m"],
    ]


def test_every_option_says_what_it_does_and_its_default():
    parser = build_parser()
    commands = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    missing = []
    for name, command in commands.choices.items():
        command.format_help()  # every %(default)s expands
        for action in command._actions:
            label = f"fstcrf {name} {'/'.join(action.option_strings) or action.dest}"
            if isinstance(action, argparse._HelpAction):
                continue
            if not action.help:
                missing.append(f"{label}: no help")
            elif action.option_strings and not action.required and "default" not in action.help:
                missing.append(f"{label}: the help does not give the default")
    assert not missing, "\n".join(missing)
    assert "last two columns" in commands.choices["compare"].format_help()


@pytest.mark.pynini
def test_readme_python_runs(tmp_path, monkeypatch):
    from fstcrf.extras import available, install_hint

    if not available("torch") and os.environ.get("CI") != "true":
        pytest.skip(f"the README's PyTorch example needs torch: {install_hint('torch')}")
    monkeypatch.chdir(tmp_path)
    namespace = run_blocks(ROOT / "README.md")
    assert (tmp_path / "sentence.fst").is_file() and namespace["draws"].shape == (1000, 7)
    assert namespace["probabilities"].shape == (2, 6, 5) and len(namespace["decoded"]) == 2


@pytest.fixture
def tutorial_folder(tmp_path, monkeypatch, data_file):
    """A folder with the files the tutorial's Python reads, cut from CoNLL-2000
    ($FSTCRF_DATA) to keep the run short: train.txt (its first 100 sentences),
    test.txt (the first 40 of test.txt) and partially_labelled.txt (train.txt
    with a third of the chunk labels hidden)."""
    from fstcrf.bench.partial import hide_labels
    from fstcrf.corpus.conll import read_conll, write_conll

    train = read_conll(data_file("conll2000/train.txt"))[:100]
    write_conll(train, tmp_path / "train.txt")
    write_conll(read_conll(data_file("conll2000/test.txt"))[:40], tmp_path / "test.txt")
    write_conll(hide_labels(train, "chunk", 1 / 3), tmp_path / "partially_labelled.txt")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.pynini
@pytest.mark.slow
def test_tutorial_python_runs(tutorial_folder):
    """The tutorial's code as written (100 L-BFGS iterations, second order),
    on a 100-sentence cut of CoNLL-2000 instead of the full corpus."""
    namespace = run_blocks(ROOT / "docs" / "tutorial.md")
    assert (tutorial_folder / "chunker.model").is_file()
    assert len(namespace["chunks"]) == len(namespace["test"])


def test_logits_python_runs():
    """docs/logits.md's examples, Hugging Face outputs built by hand: no download, no pynini."""
    namespace = run_blocks(ROOT / "docs" / "logits.md")
    assert namespace["decoder"].scale_ > 0 and len(namespace["tagged"]) == 2
    assert len(namespace["words"].entities[0]) == 2 and len(namespace["tokens"].entities[0]) == 2


@pytest.mark.slow
def test_spacy_python_runs(tmp_path, monkeypatch):
    """docs/spacy.md's examples on the demo corpus (its spaCy tagger trained for two epochs)."""
    from needs import import_or_skip
    from fstcrf.extras import install_hint

    import_or_skip("spacy", f"docs/spacy.md needs spaCy: {install_hint('spacy')}")
    import fstcrf.spacy.factory  # noqa: F401  (registers "fstcrf" where fstcrf is installed without its entry points)

    monkeypatch.chdir(tmp_path)
    namespace = run_blocks(ROOT / "docs" / "spacy.md")
    assert len(namespace["chunked"].spans["chunks"]) == len(namespace["scores"]) > 0
    assert (tmp_path / "pipeline" / "fstcrf" / "model.fstcrf").is_file()
    assert all(token.tag_ for token in namespace["doc"]) and namespace["doc"].spans["chunks"]
