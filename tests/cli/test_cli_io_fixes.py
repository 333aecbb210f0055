"""Output paths and standard output: standard output appended to an input, a loop of
symbolic links and an empty path are refused before any work; a reader that stops
during one long write ends the command with 141; a plot is written in the format its
suffix names."""

import os
import shutil
import subprocess
import sys

import pytest

from fstcrf.cli import main
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.errors import OutputPathError
from fstcrf.files import check_output_path

TEST = str(DATA_DIR / "demo_test.txt")
FSTCRF = [sys.executable, "-m", "fstcrf.cli", "-q"]


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "data.txt"
    shutil.copy(TEST, path)
    return path


@pytest.mark.parametrize(
    "command",
    [["tag", "{model}", "{data}"], ["convert", "{data}", "--scheme", "bioes", "-o", "-"], ["tag", "{model}", "-"]],
    ids=["tag", "convert", "tag standard input"],
)
def test_standard_output_appended_to_an_input_is_refused(command, demo_chunker, data):
    before = data.read_bytes()
    argv = [word.format(model=demo_chunker, data=data) for word in command]
    with open(data, "ab") as appended, open(data, "rb") as standard_input:
        result = subprocess.run(
            FSTCRF + argv, stdin=standard_input, stdout=appended, stderr=subprocess.PIPE, timeout=120
        )
    assert result.returncode == 2
    shown = "-" if argv[-1] == "-" and argv[0] == "tag" else str(data)
    assert result.stderr.decode() == f"fstcrf: error: standard output: is the same file as the input {shown}; " + (
        "writing it would destroy the input\n"
    )
    assert data.read_bytes() == before


def test_standard_output_in_another_regular_file_is_written(demo_chunker, data, tmp_path):
    output = tmp_path / "out.txt"
    with open(output, "ab") as appended:
        result = subprocess.run(FSTCRF + ["tag", str(demo_chunker), str(data)], stdout=appended, timeout=120)
    assert result.returncode == 0 and output.read_text().count("\n\n") == data.read_text().count("\n\n")


@pytest.mark.parametrize("links", [[("a", "b"), ("b", "a")], [("a", "a")]], ids=["two links", "a link to itself"])
def test_a_loop_of_symbolic_links_is_refused(links, tmp_path, capsys):
    for name, target in links:
        (tmp_path / name).symlink_to(target)
    output = tmp_path / "a"
    with pytest.raises(OutputPathError, match="too many levels of symbolic links"):
        check_output_path(output)
    assert main(["-q", "convert", TEST, "--scheme", "bioes", "-o", str(output)]) == 2
    assert f"{output}: too many levels of symbolic links" in _one_line_error(capsys)
    assert output.is_symlink() and sorted(os.listdir(tmp_path)) == sorted(name for name, _ in links)


def test_an_empty_output_path_is_refused(capsys):
    assert main(["-q", "convert", TEST, "--scheme", "bioes", "-o", ""]) == 2
    assert _one_line_error(capsys) == "fstcrf: error: the output path is empty; give the name of a file to write\n"


@pytest.mark.parametrize(
    "command", [["convert", "{big}", "--scheme", "bioes", "-o", "-"], ["dump", "{model}", "--top", "100000"]]
)
def test_a_reader_that_stops_during_a_long_write_ends_the_command_with_141(command, demo_chunker, tmp_path):
    """An unbuffered standard output (PYTHONUNBUFFERED) writes a part of a write of
    megabytes when its reader goes away in the middle, and says so by the count only."""
    big = tmp_path / "big.txt"
    big.write_text(open(TEST).read() * 60)
    argv = [word.format(model=demo_chunker, big=big) for word in command]
    process = subprocess.Popen(
        FSTCRF + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=os.environ | {"PYTHONUNBUFFERED": "1"}
    )
    assert process.stdout.readline()
    process.stdout.close()
    stderr = process.stderr.read()
    assert process.wait(timeout=120) == 141
    assert b"Traceback" not in stderr and b"Exception ignored" not in stderr


@pytest.mark.parametrize(
    "suffix, start", [(".png", b"\x89PNG"), (".pdf", b"%PDF"), (".svg", b"<?xml"), (".SVG", b"<?xml")]
)
def test_a_plot_is_written_in_the_format_its_suffix_names(suffix, start, demo_chunker, tmp_path):
    plot = tmp_path / f"history{suffix}"
    assert main(["-q", "history", str(demo_chunker), "--plot", str(plot)]) == 0
    assert plot.read_bytes().startswith(start)


@pytest.mark.parametrize("name", ["history.jpg", "history"])
def test_a_plot_suffix_that_names_no_format_is_refused_before_any_work(name, demo_chunker, tmp_path, capsys):
    plot = tmp_path / name
    assert main(["-q", "history", str(demo_chunker), "--plot", str(plot)]) == 2
    err = _one_line_error(capsys)
    assert f"{plot}: a plot's name ends in .png, .pdf or .svg, which chooses its format" in err
    assert capsys.readouterr().out == "" and not plot.exists()
