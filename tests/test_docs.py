"""The documentation's examples work: every code block of README.md and docs/ says what it
is, and runs in CI as its language and markers say (tests/doc_blocks.py,
docs/development.md "Code blocks in the documentation"); every fstcrf command line of a
shell block parses, and every command-line option says what it does."""

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from doc_blocks import DocsFormatError, fstcrf_commands, read_blocks, refused_commands
from fstcrf.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: The modules a page may need, all of them installed by CI's main leg.
EXTRA_MODULES = ("pynini", "torch", "spacy", "sklearn", "sklearn_crfsuite", "pycrfsuite", "dask", "matplotlib", "yaml")
#: The programs the pictures' page runs (CI's .ci/run installs them).
PROGRAMS = ("dot", "chromium")


def _page_id(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_blocks_say_what_they_are(page):
    read_blocks(page)  # raises DocsFormatError naming the line


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_shell_examples_parse(page):
    blocks = [b for b in read_blocks(page) if b.language in ("sh", "setup") and b.action != "not-run"]
    refused = [f"{block.where}: {line}" for block in blocks for line in refused_commands(block.text)]
    assert not refused, "\n".join(refused)


def test_the_block_reader_follows_the_convention(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- docs-setup\ntouch a.txt\n-->\n\n```sh\nls\n```\n\n<!-- docs: not-run: needs a GPU -->\n"
        "```python\nimport torch\n```\n\n<!-- docs: timeout: 5 -->\n```python\nx = 1\n```\n\n"
        "- a list\n\n  ```sh\n  fstcrf info m\n  ```\n\n```text\noutput\n```\n"
    )
    blocks = read_blocks(page)
    assert [(b.language, b.action) for b in blocks] == [
        ("setup", "run"),
        ("sh", "run"),
        ("python", "not-run"),
        ("python", "run"),
        ("sh", "run"),
        ("text", "text"),
    ]
    assert blocks[2].reason == "needs a GPU" and blocks[3].timeout == 5 and blocks[4].text == "fstcrf info m\n"
    for wrong in ("```\nx\n```\n", "<!-- docs: not-run -->\n```sh\nls\n```\n", "```python\nx\n"):
        page.write_text(wrong)
        with pytest.raises(DocsFormatError):
            read_blocks(page)


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


def _needs_every_extra():
    """Pages use every extra, Graphviz and Chromium: skip where one is missing, except in
    CI's main leg."""
    import importlib.util
    import shutil

    from needs import extras_required

    missing = [name for name in EXTRA_MODULES if importlib.util.find_spec(name) is None]
    missing += [program for program in PROGRAMS if shutil.which(program) is None]
    if missing and not extras_required():
        pytest.skip(f"the documentation's examples need every extra; missing here: {', '.join(missing)}")


@pytest.mark.slow
@pytest.mark.parametrize(
    "page", [page for page in PAGES if any(b.action == "run" for b in read_blocks(page))], ids=_page_id
)
def test_page_examples_run(page, tmp_path, request):
    """The page's blocks in order in a fresh folder, in a process of its own (examples
    change the working directory, sys.modules and the environment)."""
    _needs_every_extra()
    if "FSTCRF_DATA" in page.read_text(encoding="utf-8"):
        request.getfixturevalue("data_dir")  # the corpora: a skip where they are missing, a failure under CI
    budget = sum(block.timeout for block in read_blocks(page) if block.action == "run") + 60
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "doc_blocks.py"), str(page), "--folder", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=budget,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))},
    )
    assert done.returncode == 0, done.stderr[-6000:]
