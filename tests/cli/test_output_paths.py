"""Every output path of every command is checked, before any work, against every file
the command reads (issue 62): positional inputs, --train, --dev, --init, --template and
the files it names, --grammar and --joint and the grammars they import, --compat's
transducer, folders read.  A walk over every command's options keeps it so: an option
that takes free text must be declared a path the command reads or writes, or a text
that names no file."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from fstcrf.cli.app import build_parser, main
from fstcrf.cli.options import FILES_OF, check_outputs
from fstcrf.errors import OutputPathError

#: The free-text options that name no file, by dest, with what they hold.
NOT_PATHS = {
    "columns": "column names",
    "target": "a column name",
    "reads": "a column name",
    "column": "a column name",
    "define": "NAME=VALUE grammar parameters",
    "only_types": "chunk types",
    "dask": "a scheduler address or local:N",
    "dask_dashboard": "HOST:PORT",
    "scales": "numbers",
    "separator": "a field separator",
    "title": "a heading",
    "label": "a label",
    "rule": "a grammar rule's name",
    "labels": "labels",
    "languages": "language names",
    "tasks": "task names",
    "constraints": "a column name (or TARGET=COLUMN)",
    "cases": "benchmark case names",
    "tools": "benchmarked tool names",
    "host": "a host name or address",
    "token": "a bearer token",
    "cors_origin": "a web origin",
}

#: Words of an option's metavar that say it names a file, whatever its type.
PATH_WORDS = ("FILE", "FOLDER", "PATH", "DIR", "MODEL", "GRAMMAR", "TEMPLATE", "FST", "PNG")


def _commands(parser: argparse.ArgumentParser, prefix: str = "") -> list[tuple[str, argparse.ArgumentParser]]:
    """(name, parser) of every command, the groups' commands included (draw grammar, ...)."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                nested = _commands(sub, f"{prefix}{name} ")
                found += nested or [(f"{prefix}{name}", sub)]
    return found


def _takes_text(action: argparse.Action) -> bool:
    """Whether the option takes a value that could name a file: free text, or a value
    whose metavar names one (an option of numbers or choices does not)."""
    if action.nargs == 0 or action.choices is not None:
        return False
    free = action.type in (None, str, Path)
    return free or any(word in str(action.metavar or "").upper() for word in PATH_WORDS)


COMMANDS = _commands(build_parser())


@pytest.mark.parametrize(("name", "parser"), COMMANDS, ids=[name for name, _ in COMMANDS])
def test_every_option_that_may_name_a_file_is_declared(name, parser):
    declared = set(parser.get_default("inputs")) | set(parser.get_default("outputs"))
    dests = {action.dest for action in parser._actions}
    assert declared <= dests, f"fstcrf {name} declares paths of options it lacks: {sorted(declared - dests)}"
    undeclared = [
        action.option_strings[-1] if action.option_strings else action.dest
        for action in parser._actions
        if _takes_text(action) and action.dest not in declared | set(NOT_PATHS)
    ]
    assert not undeclared, (
        f"fstcrf {name}: {', '.join(undeclared)} may name a file: declare it in the command's inputs "
        "or outputs (fstcrf.cli.options.add_command), or in NOT_PATHS here if it names none"
    )


def _namespace(parser: argparse.ArgumentParser) -> argparse.Namespace:
    values = {action.dest: action.default for action in parser._actions if action.dest != argparse.SUPPRESS}
    return argparse.Namespace(**values, **parser._defaults)


def _named(name: str, path: Path, folder: Path) -> tuple[str, Path]:
    """The value of input option ``name`` that makes the command read ``path``, and that path."""
    if name == "compat":
        return f"1={path}", path
    if name == "folder":
        return str(folder), folder / "announcement.txt"
    if name == "data":
        return str(folder), folder / "train.txt"
    if name == "call_models":
        return f"chunker={path}", path
    return str(path), path


#: The output options naming a folder whose files are written (see FILES_OF).
FOLDER_OUTPUTS = {"save_corpus"}

CHECKED = [
    (name, parser, output, read)
    for name, parser in COMMANDS
    for output in parser.get_default("outputs")
    for read in parser.get_default("inputs")
    if read != output
]


@pytest.mark.parametrize(
    ("name", "parser", "output", "read"), CHECKED, ids=[f"{c[0]} {c[2]} vs {c[3]}" for c in CHECKED]
)
def test_every_output_is_checked_against_every_input(name, parser, output, read, tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    for file_name in ("announcement.txt", "train.txt", "test.txt"):
        (folder / file_name).write_text("x\n")
    value, path = _named(read, tmp_path / "read.txt", folder)
    path.write_text("x\n")
    args = _namespace(parser)
    many = {a.dest for a in parser._actions if a.nargs in ("+", "*") or isinstance(a, argparse._AppendAction)}
    setattr(args, read, [value] if read in many else value)
    setattr(args, output, str(path.parent) if output in FOLDER_OUTPUTS else str(path))
    with pytest.raises(OutputPathError, match="same file as the input"):
        check_outputs(args)


def test_the_expanded_options_are_declared_somewhere():
    declared = {name for _, parser in COMMANDS for name in parser.get_default("inputs") + parser.get_default("outputs")}
    assert set(FILES_OF) <= declared


# -- the cases of the issue, from the command line ------------------------------------------


@pytest.fixture
def files(tmp_path, demo_chunker):
    """A model, a training file, a grammar importing another, a template naming a
    cluster file, each with its text; ``unchanged()`` checks that none was replaced."""
    texts = {
        "small.txt": "The DT B-NP\ncat NN I-NP\n\n",
        "dev.txt": "A DT B-NP\ndog NN I-NP\n\n",
        "base.fgr": "any_label = [*] ;\n",
        "g.fgr": 'import "base.fgr" as base ;\nstart = base.any_label* ;\n',
        "paths.txt": "01\tThe\t3\n",
        "tpl.txt": f"bias\ncluster(word[0],{tmp_path / 'paths.txt'},1,2)\n",
    }
    for name, text in texts.items():
        (tmp_path / name).write_text(text)

    def unchanged():
        assert {name: (tmp_path / name).read_text() for name in texts} == texts

    return tmp_path, str(demo_chunker), unchanged


@pytest.mark.parametrize(
    "command",
    [
        "compose {m} {m} --train {d}/small.txt -o {d}/small.txt",
        "compose {m} {m} --dev {d}/dev.txt -o {d}/dev.txt",
        "compose {m} {m} --joint {d}/g.fgr -o {d}/g.fgr",
        "compose {m} {m} --joint {d}/g.fgr -o {d}/base.fgr",
        "tag {m} {d}/small.txt --grammar {d}/g.fgr -o {d}/g.fgr",
        "tag {m} {d}/small.txt --grammar {d}/g.fgr -o {d}/base.fgr",
        "train {d}/small.txt --template {d}/tpl.txt -o {d}/tpl.txt",
        "train {d}/small.txt --template {d}/tpl.txt -o {d}/paths.txt",
        "jackknife {d}/small.txt --template {d}/tpl.txt -o {d}/paths.txt",
        "train {d}/small.txt --dask local:1 --checkpoint {d}/small.txt -o {d}/m.model",
    ],
)
def test_an_auxiliary_input_is_never_replaced(command, files, capsys):
    folder, model, unchanged = files
    assert main(command.format(m=model, d=folder).split()) == 2
    assert "is the same file as the input" in capsys.readouterr().err
    unchanged()
