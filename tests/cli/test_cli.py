"""The command line end to end, on the synthetic corpus the package ships."""

import subprocess
import sys

import pytest

from fstcrf.cli import main
from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.synthetic import DATA_DIR

TRAIN = str(DATA_DIR / "demo_train.txt")
TEST = str(DATA_DIR / "demo_test.txt")


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "chunker.model"
    assert main(["-q", "train", TRAIN, "-o", str(path), "--max-iter", "25"]) == 0
    return path


def test_tag_appends_one_column_and_eval_agrees(model_path, tmp_path, capsys):
    tagged = tmp_path / "tagged.txt"
    assert main(["-q", "tag", str(model_path), TEST, "-o", str(tagged)]) == 0
    original, output = read_conll(TEST), read_conll(tagged, columns="word,pos,chunk,predicted")
    assert [s["word"] for s in output] == [s["word"] for s in original]
    assert [s["chunk"] for s in output] == [s["chunk"] for s in original]
    capsys.readouterr()
    assert main(["-q", "eval", "--pred", str(tagged)]) == 0
    from_file = capsys.readouterr().out
    assert main(["-q", "eval", str(model_path), TEST]) == 0
    from_model = capsys.readouterr().out
    assert from_file == from_model
    accuracy_line = from_file.splitlines()[1]
    f1 = float(accuracy_line.rsplit("FB1:", 1)[1])
    assert f1 > 90.0


def test_tag_input_without_gold_column(model_path, tmp_path):
    words_only = tmp_path / "raw.txt"
    words_only.write_text(
        "".join("".join(f"{w} {p}\n" for w, p in zip(s["word"], s["pos"])) + "\n" for s in read_conll(TEST))
    )
    out = tmp_path / "out.txt"
    assert main(["-q", "tag", str(model_path), str(words_only), "-o", str(out)]) == 0
    tagged = read_conll(out, columns="word,pos,predicted")
    assert tagged.num_tokens == read_conll(TEST).num_tokens


def test_compare_runs_mcnemar(model_path, tmp_path, capsys):
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    weak = tmp_path / "weak.model"
    assert main(["-q", "train", TRAIN, "-o", str(weak), "--max-iter", "2"]) == 0
    assert main(["-q", "tag", str(model_path), TEST, "-o", str(first)]) == 0
    assert main(["-q", "tag", str(weak), TEST, "-o", str(second)]) == 0
    capsys.readouterr()
    assert main(["compare", str(first), str(second)]) == 0
    report = capsys.readouterr().out
    assert "McNemar" in report and "p = " in report


def test_only_types_maps_other_chunks_to_outside(tmp_path, capsys):
    path = tmp_path / "np.model"
    assert main(["-q", "train", TRAIN, "-o", str(path), "--max-iter", "5", "--only-types", "NP"]) == 0
    from fstcrf.model import load_model

    assert set(load_model(path).labels_) == {"O", "B-NP", "I-NP"}


def test_malformed_input_names_file_and_line(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("the DT B-NP\ndog NN\n\n")
    assert main(["-q", "train", str(bad), "-o", str(tmp_path / "m")]) == 2
    assert f"{bad}:2:" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def test_corrupt_model_is_a_clear_error(tmp_path, capsys):
    fake = tmp_path / "fake.model"
    fake.write_bytes(b"not a model at all")
    assert main(["-q", "tag", str(fake), TEST]) == 2
    assert "not an fstcrf model" in capsys.readouterr().err


def test_console_script_runs_in_a_fresh_process():
    result = subprocess.run([sys.executable, "-m", "fstcrf.cli", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "train" in result.stdout


@pytest.mark.slow
def test_a_reader_that_stops_early_ends_the_command_quietly(model_path):
    """``fstcrf tag MODEL INPUT | head``: no traceback, the shell's exit status for SIGPIPE.
    The reading end is closed before the command writes, so every write fails."""
    command = [sys.executable, "-m", "fstcrf.cli", "-q", "tag", str(model_path), TEST]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait() == 141
    assert "Traceback" not in stderr and "Exception ignored" not in stderr


def test_history_lists_every_iteration(model_path, capsys):
    capsys.readouterr()
    assert main(["-q", "history", str(model_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("iteration")
    assert len(lines) == 1 + 25 + 1 and lines[-1].startswith("kept the weights of iteration")


@pytest.mark.pynini
def test_tag_under_a_parameterised_grammar(model_path, tmp_path):
    out = tmp_path / "one_np.txt"
    assert (
        main(["-q", "tag", str(model_path), TEST, "--grammar", "at_most_one", "--define", "X=NP", "-o", str(out)]) == 0
    )
    tagged = read_conll(out, columns="word,pos,chunk,predicted")
    assert all(sentence["predicted"].count("B-NP") <= 1 for sentence in tagged)
    assert any(sentence["chunk"].count("B-NP") > 1 for sentence in tagged)
    assert main(["-q", "tag", str(model_path), TEST, "--grammar", "at_most_one", "--define", "X"]) == 2
