"""Bad input to the command line: every case ends in a one-line error or a
warning, never a traceback, a lost file or a silently wrong result.  One test
(or one parameter) per reported case; add new cases here."""

import errno
import logging
import os
import re
import shutil
import signal
import stat
import subprocess
import sys

import numpy as np
import pytest

from fstcrf.cli import main
from fstcrf.corpus.conll import read_conll
from fstcrf.files import check_output_path, write_atomically, written_in_place
from fstcrf.errors import OutputPathError
from fstcrf.corpus.synthetic import DATA_DIR

TRAIN = str(DATA_DIR / "demo_train.txt")
TEST = str(DATA_DIR / "demo_test.txt")
FSTCRF = [sys.executable, "-m", "fstcrf.cli"]


@pytest.fixture
def model_path(demo_chunker):
    return str(demo_chunker)


@pytest.fixture
def no_training(monkeypatch):
    """Fail the test if training starts (an output path must be refused before)."""
    from fstcrf.model import ChainCRF

    def refuse(*args, **kwargs):
        raise AssertionError("training started before the output path was checked")

    monkeypatch.setattr(ChainCRF, "fit", refuse)


def _error(capsys) -> str:
    """The standard error of the last command, which must be one line."""
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


# -- output paths --------------------------------------------------------------


@pytest.mark.parametrize(
    "case", ["missing folder", "folder", "training file", "link to training file", "inside a file"]
)
def test_train_refuses_an_output_path_before_training(case, tmp_path, capsys, no_training):
    train = tmp_path / "train.txt"
    shutil.copy(TRAIN, train)
    before = train.read_bytes()
    (tmp_path / "link.txt").symlink_to(train)
    output, expected = {
        "missing folder": (tmp_path / "nowhere" / "m.model", "does not exist"),
        "folder": (tmp_path, "is a folder"),
        "training file": (train, "same file as the input"),
        "link to training file": (tmp_path / "link.txt", "same file as the input"),
        "inside a file": (train / "m.model", "is not a folder"),
    }[case]
    assert main(["-q", "train", str(train), "-o", str(output)]) == 2
    assert expected in _error(capsys)
    assert train.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.txt", "train.txt"]


def test_tag_refuses_to_replace_its_input(model_path, tmp_path, capsys):
    data = tmp_path / "x.txt"
    shutil.copy(TEST, data)
    assert main(["-q", "tag", model_path, str(data), "-o", str(data)]) == 2
    assert "same file as the input" in _error(capsys)
    assert data.read_bytes() == open(TEST, "rb").read()
    assert main(["-q", "tag", model_path, str(data), "-o", model_path]) == 2
    assert "same file as the input" in _error(capsys)


def test_an_output_in_a_read_only_folder_is_refused(tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("running as a user who may write anywhere (root)")
        with pytest.raises(OutputPathError, match="cannot create files"):
            check_output_path(folder / "m.model")
    finally:
        folder.chmod(0o700)


def test_a_symlink_is_followed_and_kept(tmp_path, capsys):
    target, link = tmp_path / "target.txt", tmp_path / "link.txt"
    target.write_text("old contents\n")
    target.chmod(0o640)
    link.symlink_to(target.name)
    assert main(["-q", "convert", TEST, "-o", str(link), "--scheme", "bioes"]) == 0
    assert link.is_symlink() and os.readlink(link) == "target.txt"
    assert read_conll(target).num_tokens == read_conll(TEST).num_tokens
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.txt", "target.txt"]


def test_a_fifo_is_written_to_not_replaced(model_path, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    try:
        assert main(["-q", "tag", model_path, TEST, "-o", str(fifo)]) == 0
        received, _ = reader.communicate(timeout=30)
    finally:
        reader.kill()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert len(received.decode().strip().split("\n\n")) == len(read_conll(TEST))


def test_writing_into_a_folder_is_refused_before_a_temporary_file_is_made(tmp_path):
    (tmp_path / "sub").mkdir()
    with pytest.raises(OutputPathError, match="is a folder"):
        write_atomically(tmp_path / "sub", lambda stream: stream.write(b"x"))
    with pytest.raises(OutputPathError, match="does not exist"):
        write_atomically(tmp_path / "missing" / "m", lambda stream: stream.write(b"x"))
    assert os.listdir(tmp_path) == ["sub"] and os.listdir(tmp_path / "sub") == []


def test_devices_are_written_in_place_and_regular_files_replaced(tmp_path):
    regular = tmp_path / "file"
    regular.write_text("x")
    assert written_in_place(os.devnull) and written_in_place("-")
    assert not written_in_place(regular) and not written_in_place(tmp_path / "new")
    assert not written_in_place(tmp_path)


def test_output_written_to_the_null_device_leaves_the_device(model_path, capsys):
    assert written_in_place(os.devnull)  # guard: the device is opened, never renamed over
    assert main(["-q", "tag", model_path, TEST, "-o", os.devnull]) == 0
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_dash_is_standard_output(model_path, capsys):
    assert main(["-q", "tag", model_path, TEST, "-o", "-"]) == 0
    out = capsys.readouterr().out
    assert len(out.strip().split("\n\n")) == len(read_conll(TEST))
    assert not os.path.exists("-")


def test_a_failed_write_keeps_the_old_file_and_names_it(tmp_path):
    path = tmp_path / "model"
    path.write_bytes(b"old")

    def write(stream):
        stream.write(b"partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError) as caught:
        write_atomically(path, write)
    assert caught.value.filename == str(path) and caught.value.errno == errno.ENOSPC
    assert path.read_bytes() == b"old" and os.listdir(tmp_path) == ["model"]


@pytest.mark.parametrize("command", [["eval", "{model}", TEST], ["convert", TEST, "--scheme", "bioes", "-o", "-"]])
def test_a_full_disk_on_standard_output_is_one_line(model_path, command):
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            FSTCRF + ["-q"] + [word.format(model=model_path) for word in command],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert result.returncode != 0
    assert result.stderr.strip() == "fstcrf: error: standard output: No space left on device"


def test_a_file_written_to_a_full_device_is_one_line():
    assert written_in_place("/dev/full")  # guard: the device is opened, never renamed over
    result = subprocess.run(
        FSTCRF + ["-q", "convert", TEST, "--scheme", "bioes", "-o", "/dev/full"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert result.stderr.strip() == "fstcrf: error: /dev/full: No space left on device"
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


@pytest.mark.slow
def test_sigterm_during_training_keeps_the_best_model(tmp_path):
    output = tmp_path / "m.model"
    process = subprocess.Popen(
        FSTCRF + ["train", TRAIN, "--algorithm", "perceptron", "--max-iter", "100000", "-o", str(output)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for line in process.stderr:
            if "iteration 2:" in line:
                break
        process.send_signal(signal.SIGTERM)
        rest = process.stderr.read()
        assert process.wait(timeout=60) == 0
    finally:
        process.kill()
    assert "interrupted; kept the weights" in rest and "Traceback" not in rest
    from fstcrf.model import load_model

    assert load_model(output).interrupted_


# -- numeric options -------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["bench", "kernel", "--tokens", "0"],
        ["bench", "partial", "--fraction", "1.5"],
        ["bench", "partial", "--fraction", "nan"],
        ["bench", "kernel", "--repeats", "-1"],
        ["bench", "kernel", "--seed", "-3"],
        ["train", TRAIN, "-o", "m", "--sigma", "inf"],
        ["train", TRAIN, "-o", "m", "--sigma", "1e-300"],
        ["train", TRAIN, "-o", "m", "--sigma", "1e300"],
        ["train", TRAIN, "-o", "m", "--max-iter", "0"],
        ["train", TRAIN, "-o", "m", "--threads", "0"],
        ["train", TRAIN, "-o", "m", "--min-count", "0"],
        ["train", TRAIN, "-o", "m", "--mce-c", "-1"],
        ["train", TRAIN, "-o", "m", "--mce-iter", "1.5"],
        ["jackknife", TRAIN, "-o", "m", "--folds", "1"],
        ["tag", "m", TEST, "--k", "0"],
        ["eval", "m", TEST, "--threads", "0"],
        ["demo", "--max-iter", "0"],
    ],
)
def test_numeric_options_are_checked_when_parsed(argv, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert re.search(f"argument {argv[-2]}(/--[a-z-]+)?: expected", err) and "Traceback" not in err


def test_benchmark_lattices_need_a_token():
    from fstcrf.bench.kernel import random_potentials
    from fstcrf.errors import FstcrfError
    from fstcrf.engine.topology import first_order

    with pytest.raises(FstcrfError, match="at least 1 token"):
        random_potentials(first_order(["a", "b"]), 0, seed=0)
    assert random_potentials(first_order(["a", "b"]), 1, seed=0).num_tokens == 1


# -- warnings and errors instead of silently wrong results ----------------------------


def test_a_file_whose_columns_do_not_fit_the_model_is_flagged(model_path, tmp_path, caplog):
    word_chunk = tmp_path / "word_chunk.txt"
    word_chunk.write_text(
        "".join("".join(f"{w} {c}\n" for w, c in zip(s["word"], s["chunk"])) + "\n" for s in read_conll(TEST))
    )
    word_pos = tmp_path / "word_pos.txt"
    word_pos.write_text(
        "".join("".join(f"{w} {p}\n" for w, p in zip(s["word"], s["pos"])) + "\n" for s in read_conll(TEST))
    )
    with caplog.at_level(logging.WARNING, logger="fstcrf"):
        assert main(["-q", "tag", model_path, str(word_pos), "-o", str(tmp_path / "a")]) == 0
        assert not caplog.records
        assert main(["-q", "tag", model_path, str(word_chunk), "-o", str(tmp_path / "b")]) == 0
    [warning] = caplog.records
    assert "read as word,pos" in warning.message and "(word,pos,chunk)" in warning.message


def test_only_types_that_do_not_occur_are_flagged(model_path, tmp_path, caplog):
    tagged = tmp_path / "tagged.txt"
    assert main(["-q", "tag", model_path, TEST, "-o", str(tagged)]) == 0
    with caplog.at_level(logging.WARNING, logger="fstcrf"):
        assert main(["-q", "eval", "--pred", str(tagged), "--only-types", "FOO,NP"]) == 0
    [warning] = caplog.records
    assert "FOO does not occur" in warning.message and "ADVP, NP, PP, VP" in warning.message


def test_demo_with_a_missing_data_folder_is_an_error(tmp_path, capsys):
    assert main(["-q", "demo", "--data", str(tmp_path / "nonexistent")]) == 2
    assert f"--data {tmp_path / 'nonexistent'}: found no CoNLL-2000" in _error(capsys)


def test_empty_files(model_path, tmp_path, capsys, caplog):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with caplog.at_level(logging.WARNING, logger="fstcrf"):
        assert main(["-q", "tag", model_path, str(empty), "-o", str(tmp_path / "out")]) == 0
    assert [r.message for r in caplog.records] == [f"no sentences in {empty}"]
    assert main(["-q", "eval", model_path, str(empty)]) == 2
    assert f"no sentences in {empty}: nothing to score" in capsys.readouterr().err


def test_eval_of_a_tagger_without_chunks_reports_accuracy(tmp_path, capsys):
    model = tmp_path / "pos.model"
    assert (
        main(["-q", "train", TRAIN, "--target", "pos", "--template", "pos", "--max-iter", "3", "-o", str(model)]) == 0
    )
    capsys.readouterr()
    assert main(["-q", "eval", str(model), TEST]) == 0
    report = capsys.readouterr().out
    assert report.startswith("processed") and "; accuracy:" in report.splitlines()[0] and "phrases" not in report


@pytest.mark.parametrize(
    "option, warning",
    [
        (["--mode", "cascade"], "--mode is ignored"),
        (["--k", "3"], "--k is ignored"),
        (["--define", "X=NP"], "--define X=NP is ignored"),
        (["--on-infeasible", "unconstrained"], "--on-infeasible is ignored"),
    ],
)
def test_options_a_single_model_does_not_use_are_flagged(model_path, option, warning, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="fstcrf"):
        assert main(["tag", model_path, TEST, "-o", str(tmp_path / "out")] + option) == 0
    assert [warning in r.message for r in caplog.records] == [True]


def test_quiet_after_the_command(model_path, tmp_path, capsys):
    assert main(["tag", model_path, TEST, "-q", "-o", str(tmp_path / "out")]) == 0
    assert main(["--quiet", "history", model_path]) == 0
    assert main(["history", "--quiet", model_path]) == 0
    from fstcrf.cli import build_parser

    assert build_parser().parse_args(["history", "-q", "m"]).quiet
    assert build_parser().parse_args(["-q", "history", "m"]).quiet
    assert not build_parser().parse_args(["history", "m"]).quiet


def test_history_heads_the_dev_column_by_its_metric(model_path, tmp_path, capsys):
    from fstcrf.model import load_model

    model = load_model(model_path)
    model.history_ = [
        dict(record, dev_score=90.0 + record["iteration"], dev_metric="accuracy") for record in model.history_
    ]
    path = tmp_path / "dev.model"
    model.save(path)
    capsys.readouterr()
    assert main(["history", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("dev-accuracy") and lines[1].endswith("91.00")
    model.history_ = [dict(record, dev_f1=80.0) for record in load_model(model_path).history_]
    model.save(path)
    assert main(["history", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("dev-F1") and lines[1].endswith("80.00")


def test_budget_options_apply_to_the_command_only(model_path, capsys):
    from fstcrf.engine import budget

    before = budget.current("max_states")
    assert (
        main(["-q", "tag", model_path, TEST, "--grammar", "at_most_one", "--define", "X=NP", "--max-states", "3"]) == 2
    )
    assert "--max-states" in _error(capsys)
    assert budget.current("max_states") == before
    assert main(["-q", "tag", model_path, TEST, "--max-work", "1", "--max-states", "100"]) == 0


def test_eval_warns_when_the_model_and_the_file_use_different_schemes(tmp_path, caplog):
    bioes_train, model = tmp_path / "train.bioes.txt", tmp_path / "bioes.model"
    assert main(["-q", "convert", TRAIN, "--scheme", "bioes", "-o", str(bioes_train)]) == 0
    assert main(["-q", "train", str(bioes_train), "--max-iter", "3", "-o", str(model)]) == 0
    with caplog.at_level(logging.WARNING, logger="fstcrf"):
        assert main(["-q", "eval", str(model), TEST]) == 0
    [warning] = caplog.records
    assert warning.message.startswith(f"{TEST}: the model's labels are BIOES but the file's gold labels are IOB")


def test_eval_of_a_composed_model_scores_each_component_by_its_own_measure(tmp_path, capsys, caplog):
    pos, chunk, joint = (str(tmp_path / name) for name in ("p.model", "c.model", "j.model"))
    assert main(["-q", "train", TRAIN, "--target", "pos", "--template", "pos", "--max-iter", "2", "-o", pos]) == 0
    assert (
        main(
            ["-q", "train", TRAIN, "--reads", "pos", "--template", "chunking-reads-pos", "--max-iter", "2", "-o", chunk]
        )
        == 0
    )
    assert main(["-q", "compose", pos, chunk, "-o", joint]) == 0
    capsys.readouterr()
    with caplog.at_level(logging.WARNING, logger="fstcrf"):
        assert main(["-q", "eval", joint, TEST, "--only-types", "NP"]) == 0
    assert not caplog.records
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "== pos (joint decoding)" and lines[1].startswith("processed 1985 tokens; accuracy:")
    chunk_report = lines[lines.index("== chunk (joint decoding)") + 1 :]
    assert "phrases" in chunk_report[0] and chunk_report[2].strip().startswith("NP:") and len(chunk_report) == 4


def test_demo_refuses_to_mix_the_model_into_its_report(capsys):
    assert main(["demo", "-o", "-"]) == 2
    assert "give -o a file" in capsys.readouterr().err


def test_demo_saves_its_corpus_without_training(tmp_path, capsys):
    from fstcrf.corpus.synthetic import DATA_DIR

    assert main(["demo", "--save-corpus", str(tmp_path)]) == 0
    assert (tmp_path / "train.txt").read_bytes() == (DATA_DIR / "demo_train.txt").read_bytes()
    assert (tmp_path / "test.txt").read_bytes() == (DATA_DIR / "demo_test.txt").read_bytes()
    assert "training" not in capsys.readouterr().out
    assert main(["demo", "--save-corpus", str(tmp_path / "missing")]) == 2
    assert "does not exist" in _error(capsys) and not (tmp_path / "missing").exists()


def test_partial_labels_in_an_eval_gold_column_name_file_and_line(tmp_path, capsys):
    tagged = tmp_path / "tagged.txt"
    tagged.write_text("a X B-NP B-NP\nb Y B-NP|I-NP I-NP\n\n")
    assert main(["eval", "--pred", str(tagged)]) == 2
    assert f"{tagged}:2: gold labels must be single labels" in capsys.readouterr().err
    model = tmp_path / "m.model"
    assert main(["-q", "train", TRAIN, "-o", str(model), "--max-iter", "3"]) == 0
    test = tmp_path / "test.txt"
    test.write_text("The DT B-NP\ndog NN ?\n\n")
    assert main(["eval", str(model), str(test)]) == 2
    assert f"{test}:2: gold labels must be single labels" in capsys.readouterr().err


# -- template budgets ----------------------------------------------------------


@pytest.mark.parametrize(
    "template, message",
    [
        ("word[+99999999999]\n", "beyond the limit of 1,000,000 tokens"),
        ("word[-" + "9" * 5000 + "]\n", "beyond the limit of 1,000,000 tokens"),
        ("|".join(f"word[{k}]" for k in range(-20, 20)) + "\n", "40 items joined"),
        ("".join(f"suffix{1 + k % 9}(word[{k // 9}])\n" for k in range(10_001)), "more than 10,000 predicate"),
    ],
    ids=["offset", "offset past int64", "40 items", "10,001 templates"],
)
def test_a_template_beyond_its_limits_is_refused_before_training(template, message, tmp_path, capsys, no_training):
    path = tmp_path / "t.txt"
    path.write_text(template)
    assert main(["train", TRAIN, "--template", str(path), "-o", str(tmp_path / "m.model")]) == 2
    assert message in _error(capsys) and not (tmp_path / "m.model").exists()


def test_a_model_whose_template_has_a_huge_offset_is_refused_at_load(model_path, tmp_path, capsys):
    from fstcrf.model.file import MODEL_KIND, read_container, write_container

    header, arrays = read_container(model_path)
    header = dict(header, extractor=dict(header["extractor"], template="word[+99999999999]\n"))
    arrays = {name: np.array(array) for name, array in arrays.items()}
    hostile = tmp_path / "hostile.model"
    write_container(hostile, MODEL_KIND, {key: value for key, value in header.items() if key != "arrays"}, arrays)
    assert main(["tag", str(hostile), TEST, "-o", str(tmp_path / "out.txt")]) == 2
    assert "word[+99999999999]" in _error(capsys) and not (tmp_path / "out.txt").exists()


def test_an_offset_past_every_sentence_costs_what_a_short_one_does():
    import tracemalloc
    from fstcrf.features.extractor import FeatureExtractor
    from fstcrf.features.template import MAX_OFFSET

    corpus = read_conll(TRAIN)
    longest = max(len(sentence) for sentence in corpus)
    tracemalloc.start()
    try:
        names = FeatureExtractor(f"word[+{MAX_OFFSET}]\nword[-{MAX_OFFSET}]").fit(corpus).predicate_names_
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    steps = {
        (MAX_OFFSET + position - len(sentence) + 1, MAX_OFFSET - position)
        for sentence in corpus
        for position in range(len(sentence))
    }
    assert set(names) == (
        {f"word[+{MAX_OFFSET}]=__EOS+{after}__" for after, _ in steps}
        | {f"word[-{MAX_OFFSET}]=__BOS-{before}__" for _, before in steps}
    )
    assert len(names) <= 2 * longest and peak < 20e6, peak


def test_an_error_repeating_a_huge_line_is_cut(tmp_path, capsys):
    wide = tmp_path / "wide.txt"
    wide.write_text(" ".join(["x"] * 100_000) + "\n\n")
    assert main(["-q", "convert", str(wide), "--scheme", "bioes", "-o", str(tmp_path / "out.txt")]) == 2
    err = _error(capsys)
    assert "wide.txt" in err and " characters cut) ... " in err and len(err) < 2100


def test_training_on_a_file_without_sentences_says_so(tmp_path, capsys):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    for path in (str(empty), os.devnull):
        assert main(["-q", "train", path, "-o", str(tmp_path / "m.model")]) == 2
        assert f"{path}: no sentences to train on" in _error(capsys)


def test_jackknife_names_the_file_that_lacks_the_target_column(tmp_path, capsys):
    assert main(["-q", "jackknife", TRAIN, "--target", "nosuch", "-o", str(tmp_path / "j.txt")]) == 2
    assert f"{TRAIN}: no column 'nosuch'" in _error(capsys)


def test_a_value_that_is_no_number_is_named_by_its_input_line(tmp_path, capsys):
    template = tmp_path / "value.txt"
    template.write_text("bias\nvalue(word[0])\n")
    data = tmp_path / "numbers.txt"
    data.write_text("1.5 B-NP\n2 I-NP\n\n3 B-NP\nfour I-NP\n")
    arguments = ["-q", "train", str(data), "--columns", "word,chunk", "--template", str(template), "--max-iter", "1"]
    assert main([*arguments, "-o", str(tmp_path / "m.model")]) == 2
    assert "input line 5, sentence 2, token 2: value(word[0]) reads 'four'" in _error(capsys)


def test_a_mistyped_option_names_the_command_and_the_option_meant(capsys):
    for arguments, expected in (
        (
            ["train", "x.txt", "-o", "x.model", "--max-iters", "10"],
            "fstcrf train: error: unrecognized arguments: --max-iters 10 (did you mean --max-iter?)",
        ),
        (
            ["tag", "m.model", "in.txt", "--modes=joint"],
            "fstcrf tag: error: unrecognized arguments: --modes=joint (did you mean --mode?)",
        ),
    ):
        with pytest.raises(SystemExit) as raised:  # argparse's usage error, as for any bad option
            main(arguments)
        assert raised.value.code == 2 and expected in capsys.readouterr().err


def test_the_version_and_python_dash_m_fstcrf():
    import subprocess
    import sys

    import fstcrf

    for module in ("fstcrf", "fstcrf.cli"):
        command = [sys.executable, "-m", module, "--version"]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0 and result.stdout.strip() == f"fstcrf {fstcrf.__version__}"


def test_a_mistyped_template_name_lists_the_shipped_ones(tmp_path, capsys):
    output = tmp_path / "x.model"
    assert (
        main(["-q", "train", str(DATA_DIR / "demo_train.txt"), "--template", "chunking_extended", "-o", str(output)])
        == 2
    )
    err = capsys.readouterr().err
    assert "no template file 'chunking_extended' and no shipped template of that name" in err
    assert "chunking-extended" in err and not output.exists()


@pytest.mark.pynini
def test_a_grammar_parameter_defined_twice_is_refused(model_path, capsys):
    arguments = ["--grammar", "at_most_one", "--define", "X=NP", "--define", "X=VP"]
    assert main(["-q", "tag", model_path, TEST, *arguments]) == 2
    assert "--define X=VP: X is already defined (--define X=NP)" in capsys.readouterr().err


def test_eval_of_a_file_never_tagged_warns_that_its_last_columns_share_no_label(tmp_path, caplog, capsys):
    untagged = tmp_path / "untagged.txt"
    untagged.write_text("He PRP B-NP\nran VBD B-VP\n\nShe PRP B-NP\n\n")
    with caplog.at_level(logging.WARNING, logger="fstcrf"):
        assert main(["-q", "eval", "--pred", str(untagged)]) == 0
    [warning] = caplog.records
    assert "untagged.txt" in warning.getMessage() and "share none" in warning.getMessage()
    caplog.clear()
    tagged = tmp_path / "tagged.txt"
    tagged.write_text("He PRP B-NP B-NP\nran VBD B-VP I-NP\n\n")
    with caplog.at_level(logging.WARNING, logger="fstcrf"):
        assert main(["-q", "eval", "--pred", str(tagged)]) == 0
    assert not caplog.records
