"""The code blocks of the Markdown documentation, read and run as CI runs them.

Every fenced block of README.md and docs/ names its language, and the language says
what becomes of it (docs/development.md, "Code blocks in the documentation"):

    python   executed; the Python blocks of a page share one namespace, in order
    sh       run by bash (-e -o pipefail), in the page's folder, under a timeout; a
             page's shell blocks run in one shell, as typed into one terminal
    fgr      parsed as a grammar (fstcrf.grammar.parse_grammar)
    yaml     parsed (yaml.safe_load)
    text     never run: output, file contents, a synopsis

An HTML comment on the line before a block changes that, with a reason:

    <!-- docs: not-run: needs a GPU -->
    <!-- docs: parse-only: trains on the whole of CoNLL-2003, 8 minutes -->
    <!-- docs: record: the command of a run at a past commit -->
    <!-- docs: fails: is the same file as the input -->
    <!-- docs: timeout: 600 -->
    <!-- docs: ci-step: .ci/run -->

parse-only checks a Python block's syntax and every fstcrf command line of a shell
block against the command-line parser; record does the same for the commands of a
past run, which CI cannot repeat.  ci-step says that a CI script runs the
block's commands itself (the whole test suite, the wheel's build): each command
line of the block must be one the script runs, its words in order among those of
a line of the script (``python`` and ``pip`` spelled ``python3`` and ``python3 -m
pip``), or the check fails.  fails runs a shell block, in a subshell, and
requires it to fail with that text in its output.  ``<!-- docs-page: parse-only:
REASON -->`` (or not-run, record) anywhere in a page makes that the page's default;
``<!-- docs: run -->`` before a block restores running.  A shell command line
ending in a comment ``# CI: OPTIONS`` runs with OPTIONS added at its end (a
smaller size: ``--max-iter 3``), and a Python line of one call ending in ``# CI:
NAME=VALUE, ...`` runs with those keyword arguments given to the call (replacing
its own of the same names); the page must say so in its prose, naming ``# CI:``.
``<!-- docs-setup ... -->`` holds shell commands run at that point of the page,
unseen by readers: the stand-in files a page's examples name.  What the page's shell
exports is in the environment of the Python blocks after it.
``<!-- docs-page: pictures: FOLDER/ -->`` says that every image the page shows from
FOLDER is made by its blocks: a file of the same name in the page's folder after the
run, whose bytes must be those committed (``--update-pictures`` copies them there).

Each page runs in a folder of its own (a fresh temporary one by default), with
``fstcrf``, ``python`` and ``pip`` on PATH standing for ``python -m fstcrf.cli``, this
interpreter and a pip that checks ``install`` lines instead of installing
(``fstcrf[EXTRA]`` and ``.[EXTRA]`` must name extras of pyproject.toml, any other
requirement must be installed already).

    python tests/doc_blocks.py PAGE.md [--folder DIR] [--update-pictures]   # run one page
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
import types
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data"

#: What each language of a fence does by default.
LANGUAGES = {"python": "run", "sh": "run", "fgr": "run", "yaml": "run", "text": "text"}
#: Seconds a block may take unless a ``timeout`` marker says otherwise.
DEFAULT_TIMEOUT = 120
#: How much longer every block may take in a sanitizer run (.ci/sanitizers preloads its runtimes).
SANITIZER_SLOWDOWN = 5 if os.environ.get("LD_PRELOAD") else 1
#: The programs pages run that hang with a sanitizer's runtime preloaded: run without it.
UNINSTRUMENTED = ("curl", "chromium", "wrk", "dot")
#: The markers that need a reason, and what they make of a block.
REASONED = ("not-run", "parse-only", "record")
#: The actions whose blocks are checked (syntax, command lines) instead of run.
CHECKED = ("parse-only", "record")
#: The marker naming the CI script (from the repository's root) that runs a block's commands.
CI_STEP = "ci-step"

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,})(?P<info>[^`\n]*)$")
_MARKER = re.compile(r"^\s*<!--\s*docs:\s*(?P<body>.*?)\s*-->\s*$")
_PAGE_MARKER = re.compile(r"^\s*<!--\s*docs-page:\s*(?P<body>.*?)\s*-->\s*$", re.M)
_IMAGE = re.compile(r"!\[[^\]]*\]\((?P<path>[^)\s]+)\)")
_SETUP = re.compile(r"^<!--\s*docs-setup\s*$")
#: A shell command line whose trailing comment gives the options CI adds to it.
_CI_OPTIONS = re.compile(r"^(?P<code>[^#]*?)\s+#\s*CI:\s*(?P<options>[^#]*?)\s*$")


class DocsFormatError(ValueError):
    """A page whose blocks or markers break the convention; the message names the line."""


@dataclass
class Block:
    """One fenced block, or a hidden setup (language "setup"), of a page."""

    page: Path
    line: int  # of the opening fence (1-based)
    language: str
    text: str
    action: str = "run"  # run, parse-only, record, not-run, text
    reason: str = ""
    timeout: float = DEFAULT_TIMEOUT
    fails: str = ""  # a run shell block that must fail, with this in its output

    @property
    def allowed_seconds(self) -> float:
        """How long the block may run: its timeout, longer under a sanitizer's runtime."""
        return self.timeout * SANITIZER_SLOWDOWN

    @property
    def too_long(self) -> str:
        """What a block that ran out of time is told."""
        slower = f" ({self.allowed_seconds:g} s under a sanitizer's runtime)" if SANITIZER_SLOWDOWN > 1 else ""
        return f"took longer than {self.timeout:g} s{slower}"

    @property
    def where(self) -> str:
        return f"{self.page.name}:{self.line} ({self.language})"


@dataclass
class Outcome:
    """What running a page did: the blocks by action, and the first failure."""

    counts: dict = field(default_factory=dict)
    failure: str = ""


def _marker(body: str, where: str) -> tuple[str, str]:
    """(key, value) of a marker's body "key" or "key: value"."""
    key, _, value = body.partition(":")
    key, value = key.strip(), value.strip()
    if key in REASONED and not value:
        raise DocsFormatError(f"{where}: '{key}' needs a reason: <!-- docs: {key}: WHY -->")
    if key == CI_STEP and not (ROOT / value).is_file():
        raise DocsFormatError(f"{where}: '{key}' names a CI script of the repository: <!-- docs: {key}: .ci/run -->")
    if key == "fails" and not value:
        raise DocsFormatError(f"{where}: 'fails' needs the text of the failure: <!-- docs: fails: MESSAGE -->")
    if key == "timeout":
        try:
            float(value)
        except ValueError:
            raise DocsFormatError(f"{where}: timeout needs seconds, got {value!r}") from None
    elif key not in (*REASONED, CI_STEP, "run", "fails"):
        raise DocsFormatError(
            f"{where}: unknown marker {key!r} (not-run, parse-only, record, ci-step, run, fails, timeout)"
        )
    return key, value


def _page_markers(page: Path, text: str) -> dict[str, str]:
    """The page's docs-page markers: not-run, parse-only or record with its reason, pictures with its folder."""
    found: dict[str, str] = {}
    for marker in _PAGE_MARKER.finditer(text):
        key, _, value = marker["body"].partition(":")
        key, value = key.strip(), value.strip()
        if key not in (*REASONED, "pictures") or not value:
            raise DocsFormatError(
                f"{page.name}: a docs-page marker is 'not-run: WHY', 'parse-only: WHY', 'record: WHY' "
                "or 'pictures: FOLDER/'"
            )
        found[key] = value
    if sum(key in found for key in REASONED) > 1:
        raise DocsFormatError(f"{page.name}: a page has one default: not-run, parse-only or record")
    return found


def page_pictures(page: Path) -> list[tuple[Path, str]]:
    """(committed file, name its blocks make it under) of each image the page shows from the
    folder its ``pictures`` marker names."""
    text = page.read_text(encoding="utf-8")
    folder = _page_markers(page, text).get("pictures")
    if folder is None:
        return []
    prefix = folder.rstrip("/") + "/"
    return [
        (page.parent / image["path"], image["path"][len(prefix) :])
        for image in _IMAGE.finditer(text)
        if image["path"].startswith(prefix)
    ]


def read_blocks(page: Path) -> list[Block]:
    """The page's blocks in order, each with what CI does with it."""
    text = page.read_text(encoding="utf-8")
    page_default, page_reason = "run", ""
    for key, value in _page_markers(page, text).items():
        if key in REASONED:
            page_default, page_reason = key, value
    lines = text.splitlines()
    blocks: list[Block] = []
    markers: list[tuple[str, str]] = []
    number, prose, ci_options = 0, "", False
    while number < len(lines):
        line = lines[number]
        if _SETUP.match(line):
            end = next((i for i in range(number + 1, len(lines)) if lines[i].strip() == "-->"), None)
            if end is None:
                raise DocsFormatError(f"{page.name}:{number + 1}: docs-setup without a closing '-->' line")
            blocks.append(Block(page, number + 1, "setup", "\n".join(lines[number + 1 : end]) + "\n"))
            number, markers = end + 1, []
            continue
        marker = _MARKER.match(line)
        if marker:
            markers.append(_marker(marker["body"], f"{page.name}:{number + 1}"))
            number += 1
            continue
        fence = _FENCE.match(line)
        if not fence:
            if line.strip():
                markers = []
            prose += line + "\n"
            number += 1
            continue
        indent, ticks = fence["indent"], fence["fence"]
        closing = re.compile(rf"^[ \t]*{ticks}\s*$")
        end = next((i for i in range(number + 1, len(lines)) if closing.match(lines[i])), None)
        if end is None:
            raise DocsFormatError(f"{page.name}:{number + 1}: a code block that is never closed")
        language = fence["info"].strip().split(" ")[0] if fence["info"].strip() else ""
        where = f"{page.name}:{number + 1}"
        if language not in LANGUAGES:
            raise DocsFormatError(
                f"{where}: a block in {language or 'no language'}; say what it is: "
                f"{', '.join(LANGUAGES)} (```text for output, file contents and synopses)"
            )
        body = textwrap.dedent("\n".join(lines[number + 1 : end]) + "\n") if indent else None
        block = Block(page, number + 1, language, body or "\n".join(lines[number + 1 : end]) + "\n")
        block.action = LANGUAGES[language]
        if block.action == "run":
            block.action, block.reason = page_default, page_reason
        for key, value in markers:
            if block.action == "text":
                raise DocsFormatError(f"{where}: a text block is never run; drop the marker")
            if key == "timeout":
                block.timeout = float(value)
            elif key == "run":
                block.action, block.reason = "run", ""
            elif key == "fails":
                if language != "sh":
                    raise DocsFormatError(f"{where}: only a shell block can be marked to fail")
                block.fails = value
            elif key == CI_STEP and language != "sh":
                raise DocsFormatError(f"{where}: only a shell block can be a step of a CI script")
            else:
                block.action, block.reason = key, value
        if block.language in ("sh", "python") and with_ci_options(block.text, where, language) != block.text:
            ci_options = True
        blocks.append(block)
        number, markers = end + 1, []
    if markers:
        raise DocsFormatError(f"{page.name}: a docs marker at the end of the page, before no block")
    if ci_options and "`# CI:" not in prose:
        raise DocsFormatError(f"{page.name}: commands with '# CI:' options, but the page's prose never says so")
    return blocks


def with_ci_options(text: str, where: str = "", language: str = "sh") -> str:
    """A shell or Python block as CI runs it: each shell command line ending in ``#
    CI: OPTIONS`` with OPTIONS added at its end (one simple command per such line);
    each Python line ending in ``# CI: NAME=VALUE, ...`` with those keyword arguments
    given to its call (one statement, its outermost call)."""
    lines = []
    for line in text.splitlines():
        ci = _CI_OPTIONS.match(line)
        if ci is None:
            lines.append(line)
        elif language == "python":
            lines.append(_with_keywords(ci["code"], ci["options"], f"{where}: {line}"))
        elif re.search(r"[;&|]", ci["code"]) or not ci["options"]:
            raise DocsFormatError(f"{where}: a '# CI:' comment ends one simple command and names options: {line}")
        else:
            lines.append(f"{ci['code']} {ci['options']}")
    return "\n".join(lines) + "\n"


def _with_keywords(code: str, keywords: str, where: str) -> str:
    """The Python statement ``code`` with the keyword arguments ``keywords`` ("a=1, b=2")
    given to its outermost call, replacing its own of the same names."""
    try:
        statement = ast.parse(code.strip())
        given = ast.parse(f"f({keywords})", mode="eval").body
    except SyntaxError:
        statement = given = None
    calls = [node for node in ast.walk(statement) if isinstance(node, ast.Call)] if statement else []
    if not calls or len(statement.body) != 1 or not isinstance(given, ast.Call) or given.args or not given.keywords:
        raise DocsFormatError(f"{where}: a Python '# CI:' comment ends one statement with a call and names keywords")
    names = {keyword.arg for keyword in given.keywords}
    calls[0].keywords = [keyword for keyword in calls[0].keywords if keyword.arg not in names] + given.keywords
    return code[: len(code) - len(code.lstrip())] + ast.unparse(statement)


def shell_commands(script: str, lenient: bool = False) -> list[list[str]]:
    """The words of each command of a shell script (continued lines joined, comments
    dropped, commands split at ; && || |, variables left as they are); ``lenient``
    leaves out a line that does not split (a heredoc's text) instead of raising
    ValueError."""
    commands = []
    for line in script.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        try:
            words = [*lexer, ";"]
        except ValueError:
            if lenient:
                continue
            raise
        command: list[str] = []
        for word in words:
            if word.strip(";&|"):
                command.append(word)
            elif command:
                commands.append(command)
                command = []
    return commands


def fstcrf_commands(block: str) -> list[list[str]]:
    """The arguments of each fstcrf command of a shell block (:func:`shell_commands`)."""
    return [command[1:] for command in shell_commands(block) if command[0] == "fstcrf"]


def refused_commands(block: str) -> list[str]:
    """Each fstcrf command line of a shell block that the command-line parser refuses, with its message."""
    import contextlib
    import io

    from fstcrf.cli import build_parser

    refused = []
    for words in fstcrf_commands(block):
        errors = io.StringIO()
        try:
            with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
                build_parser().parse_args(words)
        except SystemExit as stopped:
            if stopped.code != 0:
                message = (errors.getvalue().strip().splitlines() or ["refused"])[-1]
                refused.append(f"fstcrf {shlex.join(words)}: {message}")
    return refused


def _shims(folder: Path) -> Path:
    """A folder of commands for PATH: fstcrf, python, python3 and the checking pip."""
    folder.mkdir(parents=True, exist_ok=True)
    python = shlex.quote(sys.executable)
    scripts = {
        "fstcrf": f'#!/bin/sh\nexec {python} -m fstcrf.cli "$@"\n',
        "python": f'#!/bin/sh\nexec {python} "$@"\n',
        "python3": f'#!/bin/sh\nexec {python} "$@"\n',
        "pip": f'#!/bin/sh\nexec {python} {shlex.quote(str(Path(__file__).resolve()))} --check-pip "$@"\n',
    }
    if os.environ.get("LD_PRELOAD"):  # a sanitizer run: see UNINSTRUMENTED
        for program in UNINSTRUMENTED:
            found = shutil.which(program)
            if found:
                scripts[program] = f'#!/bin/sh\nunset LD_PRELOAD\nexec {shlex.quote(found)} "$@"\n'
    for name, script in scripts.items():
        path = folder / name
        path.write_text(script)
        path.chmod(0o755)
    return folder


def check_pip(arguments: list[str]) -> int:
    """Stand in for ``pip``: check an ``install`` line without installing anything."""
    import importlib.metadata

    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    if not arguments or arguments[0] != "install":
        print(f"docs run 'pip install' lines only, not: pip {shlex.join(arguments)}", file=sys.stderr)
        return 1
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    problems = []
    for requirement in (word for word in arguments[1:] if not word.startswith("-")):
        named = re.fullmatch(r"(?P<name>[A-Za-z0-9_.\-]+)(\[(?P<extras>[^\]]*)\])?(?P<rest>.*)", requirement)
        if named is None:
            problems.append(f"cannot read the requirement {requirement!r}")
        elif named["name"] in ("fstcrf", "."):
            unknown = {extra.strip() for extra in (named["extras"] or "").split(",") if extra.strip()} - extras
            problems += [f"{requirement}: no extra {extra!r} in pyproject.toml" for extra in sorted(unknown)]
        else:
            try:
                importlib.metadata.distribution(named["name"])
            except importlib.metadata.PackageNotFoundError:
                problems.append(f"{requirement}: not installed here, so the example cannot be checked")
    for problem in problems:
        print(f"pip (docs check): {problem}", file=sys.stderr)
    return 1 if problems else 0


def environment(shims: Path) -> dict[str, str]:
    """The environment of a page's shell blocks."""
    env = dict(os.environ)
    env["PATH"] = f"{shims}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    env.setdefault("FSTCRF_DATA", str(DEFAULT_DATA))
    env["MPLBACKEND"] = "Agg"
    # the many short processes of the examples compile their imports once, into a cache of their own
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "fstcrf-docs-pycache")
    return env


#: The line with which the shell reports the status of a block marked to fail.
_STATUS = "__docs_status__"


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def _run_python(block: Block, namespace: dict) -> str:
    code = compile(with_ci_options(block.text, block.where, "python"), f"{block.page.name}:{block.line}", "exec")
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, block.allowed_seconds)
    try:
        exec(code, namespace)
    except _Timeout:
        return block.too_long
    except BaseException:  # noqa: BLE001 - any failure of the example is reported
        return traceback.format_exc(limit=-6)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return ""


class PageShell:
    """One bash for a page's shell blocks, as a reader's terminal: variables, the
    working folder and what runs in the background carry from block to block, and
    are stopped when the page ends (or a block fails or runs out of time).  bash runs
    with -e -o pipefail in a session of its own; each block is a script it sources
    with its input from /dev/null, its output going to a file (a server left running
    must not hold a pipe the runner waits on)."""

    def __init__(self, folder: Path, env: dict):
        self.scripts = Path(tempfile.mkdtemp(prefix="fstcrf-docs-shell-"))
        self.output = self.scripts / "output"
        with open(self.output, "w"):
            pass
        self.process = subprocess.Popen(
            ["bash", "--noprofile", "--norc", "-e", "-o", "pipefail"],
            cwd=folder,
            env=env,
            stdin=subprocess.PIPE,
            stdout=open(self.output, "a"),
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.read = open(self.output, encoding="utf-8", errors="replace")
        self.exported = self.scripts / "environment"
        self.times = self.scripts / "times"
        self.blocks = 0

    def cpu_seconds(self) -> float:
        """The CPU seconds of the shell and what it has run, after its last block (bash's ``times``)."""
        if not self.times.exists():
            return 0.0
        fields = re.findall(r"(\d+)m([\d.]+)s", self.times.read_text())
        return sum(60 * int(minutes) + float(seconds) for minutes, seconds in fields)

    def environment(self) -> dict[str, str]:
        """The shell's exported variables after its last block."""
        pairs = self.exported.read_bytes().decode("utf-8", "replace").split("\0")
        return dict(pair.split("=", 1) for pair in pairs if "=" in pair)

    def run(self, block: Block) -> str:
        """Run one block (with its ``# CI:`` options); an error message (its status or
        timeout, and the end of its output), or "".  A block marked ``fails`` runs in a
        subshell and must fail, with its text in the output."""
        self.blocks += 1
        script = self.scripts / f"block{self.blocks}.sh"
        script.write_text(with_ci_options(block.text, block.where), encoding="utf-8")
        source = f"source {shlex.quote(str(script))} < /dev/null"
        if block.fails:  # in the background, so that -e still stops the subshell at its first failure
            source = (
                f"( {source} ) & wait $! && __docs_status=0 || __docs_status=$?; "
                f"printf '\\n{_STATUS} %s' $__docs_status"
            )
        done = f"__docs_block_{self.blocks}_done__"
        assert self.process.stdin is not None
        try:
            exported = f"env -0 > {shlex.quote(str(self.exported))}; times > {shlex.quote(str(self.times))}"
            self.process.stdin.write(f"{source}\n{exported}\nprintf '\\n%s\\n' {done}\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            return "the page's shell has ended"
        deadline = time.monotonic() + block.allowed_seconds
        text = ""
        while done not in text:
            text += self.read.read()
            if done in text:
                break
            if self.process.poll() is not None:
                text += self.read.read()
                return f"exit status {self.process.returncode}\n{text[-6000:]}"
            if time.monotonic() > deadline:
                self.close()
                return f"{block.too_long}\n{text[-6000:]}"
            time.sleep(0.02)
        output = text[: text.index(done)].rstrip("\n")
        if block.fails:
            output, _, status = output.rpartition(f"\n{_STATUS} ")
            if status == "0":
                return f"succeeded, but the page says it fails with {block.fails!r}\n{output[-6000:]}"
            if block.fails not in output:
                return f"failed (status {status}) without {block.fails!r} in its output\n{output[-6000:]}"
        sys.stdout.write(output + "\n")
        return ""

    def close(self) -> None:
        """Stop the shell and everything it started."""
        _stop_group(self.process.pid)
        self.process.wait()
        self.read.close()
        shutil.rmtree(self.scripts, ignore_errors=True)


def _stop_group(group: int) -> None:
    try:
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _check(block: Block) -> str:
    """Parse a block that is not run: its syntax, or its fstcrf command lines (as shown and as CI would run them)."""
    if block.language == "python":
        try:
            compile(block.text, block.where, "exec")
        except SyntaxError as error:
            return f"syntax error: {error}"
        return ""
    if block.language not in ("sh", "setup"):
        return ""
    shown, in_ci = refused_commands(block.text), refused_commands(with_ci_options(block.text, block.where))
    return "\n".join(dict.fromkeys(shown + in_ci))


def _command_words(script: str) -> list[list[str]]:
    """The words of each command of a shell script (:func:`shell_commands`, lenient),
    ``python`` and ``pip`` spelled ``python3`` and ``python3 -m pip``."""
    spelled = {"python": ["python3"], "pip": ["python3", "-m", "pip"]}
    return [[*spelled.get(words[0], words[:1]), *words[1:]] for words in shell_commands(script, lenient=True)]


def _runs(script_line: list[str], command: list[str]) -> bool:
    """Whether a line of a CI script runs ``command``: the same program, and its words in order among the line's."""
    if not command or script_line[0] != command[0]:
        return False
    rest = iter(script_line)
    return all(word in rest for word in command)


def check_ci_step(block: Block) -> str:
    """The command lines of a ``ci-step`` block that its CI script does not run, or ""."""
    script = _command_words((ROOT / block.reason).read_text(encoding="utf-8"))
    missing = [
        " ".join(command) for command in _command_words(block.text) if not any(_runs(line, command) for line in script)
    ]
    return "".join(f"{block.reason} does not run: {command}\n" for command in missing)


def run_block(block: Block, namespace: dict, shell: PageShell) -> str:
    """Do with one block what its action says, in the page's folder; an error message, or ""."""
    if block.action in CHECKED:
        return _check(block)
    if block.action == CI_STEP:
        return check_ci_step(block)
    if block.action != "run":
        return ""
    if block.language == "python":
        return _run_python(block, namespace)
    if block.language in ("sh", "setup"):
        return shell.run(block)
    if block.language == "fgr":
        from fstcrf.grammar import parse_grammar

        try:
            parse_grammar(block.text)
        except ValueError as error:
            return str(error)
        return ""
    import yaml

    try:
        yaml.safe_load(block.text)
    except yaml.YAMLError as error:
        return str(error)
    return ""


def _cpu_seconds() -> float:
    """The CPU seconds of this process and of the children it has waited for."""
    import resource

    return sum(
        usage.ru_utime + usage.ru_stime
        for usage in (resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN))
    )


def run_page(page: Path, folder: Path, verbose: bool = True) -> Outcome:
    """Run a page's blocks in order in ``folder``; stop at the first failure."""
    blocks = read_blocks(page)
    shims = Path(tempfile.mkdtemp(prefix="fstcrf-docs-bin-"))
    env = environment(_shims(shims))
    main = types.ModuleType("__main__")  # classes the examples define pickle by reference
    saved_main, saved_cwd, saved_env = sys.modules["__main__"], os.getcwd(), dict(os.environ)
    sys.modules["__main__"] = main
    os.chdir(folder)
    os.environ.clear()
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    outcome = Outcome()
    shell = PageShell(folder, env)
    try:
        for block in blocks:
            started, cpu = time.perf_counter(), _cpu_seconds() + shell.cpu_seconds()
            error = run_block(block, main.__dict__, shell)
            if block.language in ("sh", "setup") and block.action == "run" and not error:
                os.environ.clear()  # what the shell exported is the Python blocks' environment too
                os.environ.update(shell.environment())
            seconds, cpu = time.perf_counter() - started, _cpu_seconds() + shell.cpu_seconds() - cpu
            if block.language != "setup":
                outcome.counts[block.action] = outcome.counts.get(block.action, 0) + 1
            if verbose:
                note = f" ({block.reason})" if block.reason else ""
                print(
                    f"docs: {block.where}: {block.action}{note}, {seconds:.1f} s, CPU {cpu:.1f} s",
                    file=sys.stderr,
                    flush=True,
                )
            if error:
                outcome.failure = f"{block.where}, {block.action}:\n{block.text}\n{error}"
                break
    finally:
        shell.close()
        shutil.rmtree(shims, ignore_errors=True)
        sys.path.remove(str(ROOT))
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)
        sys.modules["__main__"] = saved_main
    return outcome


def stale_pictures(page: Path, folder: Path, update: bool = False) -> list[str]:
    """The page's pictures that its run in ``folder`` did not make as committed (with
    ``update``: copied over the committed ones instead, and none reported)."""
    stale = []
    for committed, name in page_pictures(page):
        made = folder / name
        if not made.is_file():
            stale.append(f"{committed.name}: the page shows it, but its blocks made no {name}")
        elif update:
            shutil.copyfile(made, committed)
        elif not committed.is_file() or committed.read_bytes() != made.read_bytes():
            stale.append(f"{committed}: not what the page's blocks make now")
    return stale


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--check-pip"]:
        return check_pip(argv[1:])
    parser = argparse.ArgumentParser(description="Run the code blocks of a Markdown page as CI does.")
    parser.add_argument("page", type=Path)
    parser.add_argument("--folder", type=Path, default=None, help="run in this folder (default: a temporary one)")
    parser.add_argument(
        "--update-pictures", action="store_true", help="copy the pictures the page makes over the committed ones"
    )
    args = parser.parse_args(argv)
    page = args.page.resolve()
    with tempfile.TemporaryDirectory(prefix="fstcrf-docs-") as scratch:
        folder = (args.folder or Path(scratch)).resolve()
        folder.mkdir(parents=True, exist_ok=True)
        outcome = run_page(page, folder)
        stale = [] if outcome.failure else stale_pictures(page, folder, args.update_pictures)
    counts = ", ".join(f"{count} {action}" for action, count in sorted(outcome.counts.items()))
    print(f"docs: {args.page}: {counts or 'no blocks'}", file=sys.stderr)
    if outcome.failure:
        print(f"docs: FAILED at {outcome.failure}", file=sys.stderr)
        return 1
    if stale:
        print(f"docs: stale pictures (python tests/doc_blocks.py {args.page} --update-pictures):", file=sys.stderr)
        print("\n".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
