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

from doc_blocks import (
    DocsFormatError,
    check_ci_step,
    check_pip,
    fstcrf_commands,
    read_blocks,
    refused_commands,
    with_ci_options,
)
from fstcrf.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: The modules a page may need, all of them installed by CI's main leg.
EXTRA_MODULES = ("pynini", "torch", "spacy", "sklearn", "sklearn_crfsuite", "pycrfsuite", "dask", "matplotlib", "yaml")
#: The programs the pages run (CI's .ci/run installs them): the pictures', GNU time in benchmarks.md.
PROGRAMS = ("dot", "chromium", "/usr/bin/time")


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
    page.write_text(
        "<!-- docs-page: record: run at a past commit -->\n\n```sh\nfstcrf info m\n```\n\n<!-- docs: run -->\n"
        "<!-- docs: fails: no such file -->\n```sh\nfstcrf info m\n```\n\nA `# CI:` comment adds options.\n\n"
        "```sh\nfstcrf train a.txt --max-iter 200 -o m  # CI: --max-iter 3\n```\n"
    )
    blocks = read_blocks(page)
    assert [(b.action, b.fails) for b in blocks] == [("record", ""), ("run", "no such file"), ("record", "")]
    assert with_ci_options(blocks[2].text) == "fstcrf train a.txt --max-iter 200 -o m --max-iter 3\n"
    for wrong in (
        "```\nx\n```\n",
        "<!-- docs: not-run -->\n```sh\nls\n```\n",
        "```python\nx\n",
        "<!-- docs: fails: x -->\n```python\nx = 1\n```\n",
        "```sh\nfstcrf train a.txt -o m  # CI: --max-iter 3\n```\n",  # the prose never says so
        "`# CI:`\n```sh\nfstcrf train a.txt -o m; ls  # CI: --max-iter 3\n```\n",  # two commands
        "<!-- docs-page: record: r -->\n<!-- docs-page: parse-only: p -->\n",
    ):
        page.write_text(wrong)
        with pytest.raises(DocsFormatError):
            read_blocks(page)


def test_a_ci_step_block_must_be_run_by_its_script(tmp_path):
    page = tmp_path / "page.md"
    block = "<!-- docs: ci-step: .ci/wheel-check -->\n```sh\n{}\n```\n"
    page.write_text(block.format("pip install build   # the builder\npython -m build"))
    (step,) = read_blocks(page)
    assert (step.action, step.reason) == ("ci-step", ".ci/wheel-check") and check_ci_step(step) == ""
    page.write_text(block.format("python -m build --sdist\npython -m pip install twine"))
    assert check_ci_step(read_blocks(page)[0]).splitlines() == [
        ".ci/wheel-check does not run: python3 -m build --sdist",
        ".ci/wheel-check does not run: python3 -m pip install twine",
    ]
    for wrong in (
        "<!-- docs: ci-step: .ci/no-such-script -->\n```sh\nls\n```\n",
        "<!-- docs: ci-step -->\n```sh\nls\n```\n",
        "<!-- docs: ci-step: .ci/run -->\n```python\nx = 1\n```\n",
    ):
        page.write_text(wrong)
        with pytest.raises(DocsFormatError):
            read_blocks(page)


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_ci_steps_are_run_by_their_scripts(page):
    steps = [block for block in read_blocks(page) if block.action == "ci-step"]
    missing = [f"{block.where}: {error}" for block in steps if (error := check_ci_step(block))]
    assert not missing, "\n".join(missing)


def test_a_python_ci_comment_gives_keywords_to_the_call():
    line = "results = run(data, splits=10, seed=0)   # CI: splits=1, max_iter=3\n"
    assert with_ci_options(line, "", "python") == "results = run(data, seed=0, splits=1, max_iter=3)\n"
    for wrong in ("x = 1   # CI: a=1\n", "run(a)   # CI: 2\n", "run(a); run(b)   # CI: a=1\n", "run(   # CI: a=1\n"):
        with pytest.raises(DocsFormatError):
            with_ci_options(wrong, "", "python")


def _run_page(page: Path, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "tests" / "doc_blocks.py"), str(page), *options],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))},
    )


def test_a_page_runs_in_order_in_one_folder_and_stops_at_the_first_failure(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- docs-setup\nprintf 'a b\\n' > words.txt\n-->\n\n```sh\nwc -w words.txt > count.txt\n```\n\n"
        "```python\ncount = int(open('count.txt').read().split()[0])\n```\n\n```python\nassert count == 2\n```\n\n"
        "<!-- docs: parse-only: a command that would fail -->\n```sh\nfalse\n```\n\n"
        "```sh\ntest -f words.txt && exit 3\n```\n\n```sh\ntouch never.txt\n```\n"
    )
    done = _run_page(page, "--folder", str(tmp_path / "run"))
    assert done.returncode == 1 and "page.md:22 (sh), run" in done.stderr and "exit status 3" in done.stderr
    assert (tmp_path / "run" / "count.txt").exists() and not (tmp_path / "run" / "never.txt").exists()
    failing = "<!-- docs: fails: {} -->\n```sh\necho one; false; echo two\n```\n\n```sh\necho after\n```\n"
    page.write_text(failing.format("one"))  # fails at its first failure, as it should, and the page goes on
    done = _run_page(page)
    assert done.returncode == 0 and "one\n" in done.stdout and "two" not in done.stdout and "after" in done.stdout
    page.write_text(failing.format("two"))
    assert "without 'two' in its output" in _run_page(page).stderr
    page.write_text("<!-- docs: fails: one -->\n```sh\necho one\n```\n")
    assert "succeeded, but the page says it fails" in _run_page(page).stderr
    page.write_text("Here `# CI:` adds options.\n\n```sh\necho shown  # CI: in-ci\n```\n")
    assert "shown in-ci" in _run_page(page).stdout
    page.write_text(
        "Here `# CI:` sets keywords.\n\n```sh\nexport WHERE=$PWD/data\n```\n\n"
        "```python\nimport os\nfound = dict(seen=1, data=os.environ['WHERE'][-5:])   # CI: seen=2\nprint(found)\n```\n"
    )
    assert "{'data': '/data', 'seen': 2}" in _run_page(page).stdout  # the shell's exports reach Python blocks
    page.write_text("```sh\nsleep 30\n```\n".replace("```sh", "<!-- docs: timeout: 1 -->\n```sh"))
    assert "took longer than 1 s" in _run_page(page).stderr


def test_pictures_must_be_what_the_page_makes(tmp_path):
    page, committed = tmp_path / "page.md", tmp_path / "pictures" / "a.svg"
    committed.parent.mkdir()
    committed.write_text("old")
    page.write_text(
        "<!-- docs-page: pictures: pictures/ -->\n\n```sh\nprintf new > a.svg\n```\n\n![a](pictures/a.svg)\n"
    )
    stale = _run_page(page)
    assert stale.returncode == 1 and "a.svg: not what the page's blocks make now" in stale.stderr
    assert _run_page(page, "--update-pictures").returncode == 0 and committed.read_text() == "new"
    assert _run_page(page).returncode == 0


def test_pip_lines_are_checked_not_run():
    assert check_pip(["install", "fstcrf[grammars]"]) == 0 and check_pip(["install", "-e", ".[dev]"]) == 0
    assert check_pip(["install", "fstcrf[grammar]"]) == 1  # no such extra
    assert check_pip(["install", "pytest"]) == 0 and check_pip(["install", "a-package-that-is-not-installed"]) == 1
    assert check_pip(["uninstall", "fstcrf"]) == 1


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
    budget = sum(block.allowed_seconds for block in read_blocks(page) if block.action == "run") + 60
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "doc_blocks.py"), str(page), "--folder", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=budget,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))},
    )
    assert done.returncode == 0, done.stderr[-6000:]
