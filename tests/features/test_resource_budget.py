"""The files a template names (gazetteer, cluster, embedding) are capped in bytes before
they are read (issue 62), and their error messages quote at most a line's first 100
characters."""

from __future__ import annotations

import os
import time

import pytest

from fstcrf.cli import main
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.engine import budget
from fstcrf.errors import BudgetError, ResourceFileError
from fstcrf.features.resources import load_resource
from fstcrf.files import read_utf8

TRAIN = str(DATA_DIR / "demo_train.txt")
ITEMS = {
    "gazetteer": "gazetteer(word[0],{})",
    "cluster": "cluster(word[0],{},2,4)",
    "embedding": "embedding(word[0],{})",
}


@pytest.mark.parametrize("kind", sorted(ITEMS))
def test_a_two_gigabyte_file_is_refused_before_it_is_read(kind, tmp_path, capsys):
    resource = tmp_path / "huge.txt"
    with open(resource, "wb") as stream:
        stream.truncate(2 * 2**30)  # sparse: no disk is used
    template = tmp_path / "template.txt"
    template.write_text(f"bias\n{ITEMS[kind].format(resource)}\n")
    started = time.perf_counter()
    assert main(["-q", "train", TRAIN, "--template", str(template), "-o", str(tmp_path / "m.model")]) == 2
    assert time.perf_counter() - started < 10.0  # the demo corpus is read and coded first
    err = capsys.readouterr().err
    assert f"template.txt:2: the {kind} file" in err and "holds 2,147,483,648 bytes" in err
    assert "--max-resource-bytes N" in err and len(err) < 600
    assert not (tmp_path / "m.model").exists()


def test_the_cap_is_exact_and_raised_by_the_option(tmp_path, capsys):
    paths = tmp_path / "paths"
    paths.write_text("01\tthe\t3\n11\tcat\t2\n")
    size = os.path.getsize(paths)
    with budget.limits(max_resource_bytes=size):
        assert load_resource("cluster", str(paths), "t.txt:2").content.paths == {"the": "01", "cat": "11"}
    with budget.limits(max_resource_bytes=size - 1), pytest.raises(BudgetError, match=f"holds {size} bytes"):
        load_resource("cluster", str(paths), "t.txt:2")
    template = tmp_path / "template.txt"
    template.write_text(f"bias\ncluster(word[0],{paths},1,2)\n")
    command = ["-q", "train", TRAIN, "--template", str(template), "--max-iter", "2", "-o", str(tmp_path / "m.model")]
    assert main(command + ["--max-resource-bytes", str(size - 1)]) == 2
    assert "--max-resource-bytes N" in capsys.readouterr().err
    assert main(command + ["--max-resource-bytes", str(size)]) == 0


def test_a_file_that_grows_past_the_cap_while_read_is_refused(tmp_path):
    text = tmp_path / "text.txt"
    text.write_text("x" * 11)
    assert read_utf8(text, ResourceFileError, max_bytes=11) == "x" * 11
    with pytest.raises(ResourceFileError, match="more than 10 bytes"):
        read_utf8(text, ResourceFileError, max_bytes=10)


@pytest.mark.parametrize(
    ("kind", "line", "length"),
    [
        ("gazetteer", "LOC\t\t" + "w" * 5000, "5,005"),
        ("cluster", "0" * 5000, "5,000"),
        ("embedding", "w" * 5000 + " 1 2", "5,000"),
    ],
)
def test_errors_quote_a_line_s_first_100_characters(kind, line, length, tmp_path):
    resource = tmp_path / "resource.txt"
    resource.write_text(("only 1 2 3\n" if kind == "embedding" else "") + line + "\n")
    with pytest.raises(ResourceFileError) as raised:
        load_resource(kind, str(resource), "t.txt:2")
    message = str(raised.value)
    assert len(message) < 300 and f"'{line[:100]}'... ({length} characters)".replace("\t", "\\t") in message, message
