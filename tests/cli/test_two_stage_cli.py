"""train --consistency's default, the two-stage tagger with consistency penalties, from
the command line: the file it writes against the library trained the same way, tag
and eval (with and without --nonlocal) against the library's pieces with the same
seed, old files, and the options and files that are refused."""

import logging

import numpy as np
import pytest

from fstcrf.cli import main
from fstcrf.cli.common import label_scores
from fstcrf.corpus.conll import read_conll
from fstcrf.document import two_stage
from fstcrf.document.decode import decode_documents, estimate_consistency, model_factors
from fstcrf.document.two_stage import TwoStageTagger, load_two_stage
from fstcrf.model import ChainCRF
from fstcrf.model.file import TWO_STAGE_KIND, read_container, write_container
from fstcrf.model.inspection import info_text

from test_nonlocal_cli import corpus_text, one_line_error

COLUMNS = "word,pos,chunk,ner"
#: Few iterations, so that the stages make mistakes the penalties and the sampler change.
TRAINING = ["--columns", COLUMNS, "--target", "ner", "--template", "ner", "--max-iter", "3", "--threads", "1"]


def _train(folder, name, *options) -> int:
    return main(["-q", "train", str(folder / "train.txt"), *TRAINING, *options, "-o", str(folder / name)])


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("two_stage_cli")
    (folder / "train.txt").write_text(corpus_text(20, 0))
    (folder / "test.txt").write_text(corpus_text(8, 1))
    assert _train(folder, "both.model", "--consistency", "--jackknife-folds", "2") == 0
    return folder


def _tag(folder, tmp_path, *options) -> list[list[str]]:
    output = tmp_path / "tagged.txt"
    assert main(["-q", "tag", str(folder / "both.model"), str(folder / "test.txt"), *options, "-o", str(output)]) == 0
    return read_conll(output, COLUMNS + ",predicted").column("predicted")


def _pieces(tagger, test, scale=None, block_size=4, seed=0) -> list[list[str]]:
    """The library's pieces by hand: the first stage's labels, their majority columns,
    and the second stage annealed under its penalties."""
    extended = tagger.with_majorities(test, tagger.first_.predict(test), "test")
    factors = model_factors(tagger.second_, ["consistency"], scale)
    return decode_documents(tagger.second_, extended, factors, "block", 20, block_size=block_size, seed=seed)[0]


def test_the_default_is_one_two_stage_file_as_the_library_trains_it(files):
    tagger = load_two_stage(files / "both.model")
    train = read_conll(files / "train.txt", COLUMNS)
    assert (tagger.folds, tagger.consistency_scale, tagger.block_size, tagger.target_) == (2, 0.25, 4, "ner")
    assert tagger.second_.consistency_ == estimate_consistency(train, "ner", 0.25)
    assert tagger.first_.consistency_ is None
    again = TwoStageTagger(
        ChainCRF("ner", max_iter=3, threads=1), folds=2, progress=False, consistency_scale=0.25, block_size=4
    ).fit(train, target="ner")
    for stage in ("first_", "second_"):
        np.testing.assert_array_equal(getattr(tagger, stage).weights_, getattr(again, stage).weights_)


@pytest.mark.parametrize(
    "options, scale, block_size", [([], None, 4), (["--consistency-scale", "3", "--block-size", "0"], 3.0, 0)]
)
def test_tag_nonlocal_is_the_second_stage_annealed_over_the_first_stage_majorities(
    files, tmp_path, options, scale, block_size
):
    tagger = load_two_stage(files / "both.model")
    test = read_conll(files / "test.txt", COLUMNS)
    tagged = _tag(files, tmp_path, "--nonlocal", "consistency", "--seed", "5", *options)
    expected = _pieces(tagger, test, scale, block_size, seed=5)
    assert tagged == expected
    assert tagged == tagger.predict_nonlocal(test, seed=5, scale=scale, block_size=block_size)[0]
    # the penalties and the sampler change something, so the comparison can fail
    assert expected != tagger.predict(test)


def test_tag_without_nonlocal_and_eval_use_both_stages(files, tmp_path, capsys):
    tagger = load_two_stage(files / "both.model")
    test = read_conll(files / "test.txt", COLUMNS)
    assert _tag(files, tmp_path) == tagger.predict(test)
    for options, predicted in (([], tagger.predict(test)), (["--nonlocal", "consistency"], _pieces(tagger, test))):
        capsys.readouterr()
        assert main(["-q", "eval", str(files / "both.model"), str(files / "test.txt"), *options]) == 0
        assert capsys.readouterr().out == label_scores(test.column("ner"), predicted).format() + "\n"


def test_a_two_stage_file_of_an_older_fstcrf_still_tags(files, tmp_path):
    header, arrays = read_container(files / "both.model")
    old = {
        key: value
        for key, value in header.items()
        if key not in ("format", "arrays", "consistency_scale", "block_size")
    }
    write_container(tmp_path / "old.model", TWO_STAGE_KIND, old, arrays)
    tagger = load_two_stage(tmp_path / "old.model")
    assert (tagger.consistency_scale, tagger.block_size) == (None, 0)
    test = read_conll(files / "test.txt", COLUMNS)
    output = tmp_path / "old.txt"
    command = ["-q", "tag", str(tmp_path / "old.model"), str(files / "test.txt"), "--nonlocal", "consistency"]
    assert main([*command, "-o", str(output)]) == 0
    # the penalties its second stage carries, at their own scale, over whole sentences
    assert read_conll(output, COLUMNS + ",predicted").column("predicted") == _pieces(tagger, test, block_size=0)


def test_document_method_consistency_keeps_the_single_model_and_two_stage_has_no_penalties(files, capsys):
    assert _train(files, "single.model", "--consistency", "--document-method", "consistency") == 0
    single = ChainCRF.load(files / "single.model")
    assert single.consistency_ == estimate_consistency(read_conll(files / "train.txt", COLUMNS), "ner")
    assert (
        _train(files, "plain-two.model", "--consistency", "--document-method", "two-stage", "--jackknife-folds", "2")
        == 0
    )
    plain = load_two_stage(files / "plain-two.model")
    assert (plain.consistency_scale, plain.block_size, plain.second_.consistency_) == (None, 0, None)
    capsys.readouterr()
    assert main(["eval", str(files / "plain-two.model"), str(files / "test.txt"), "--nonlocal", "consistency"]) != 0
    assert "--document-method both" in one_line_error(capsys)


@pytest.mark.parametrize(
    "options, expected",
    [
        (["--nbest", "2"], "does not take --nbest"),
        (["--marginals", "--entity-probabilities"], "does not take --marginals, --entity-probabilities"),
        (["--sample", "2"], "does not take --sample"),
    ],
)
def test_single_model_outputs_of_a_two_stage_file_are_one_line_errors(files, capsys, options, expected):
    command = ["tag", str(files / "both.model"), str(files / "test.txt"), *options, "-o", str(files / "x.txt")]
    assert main(command) == 2
    assert expected in one_line_error(capsys)
    assert not (files / "x.txt").exists()


@pytest.mark.parametrize(
    "command",
    [
        ["train", "{train}", "--init", "{model}"],
        ["draw", "lattice", "{model}", "{test}", "-o", "{test}.svg"],
    ],
)
def test_commands_that_read_single_models_refuse_a_two_stage_file_naming_its_readers(files, capsys, command):
    paths = {"model": files / "both.model", "test": files / "test.txt", "train": files / "train.txt"}
    argv = [part.format(**paths) for part in command] + (
        ["-o", str(files / "y.model")] if command[0] == "train" else []
    )
    assert main(argv) == 2
    assert "two-stage tagger (from fstcrf train --consistency; fstcrf tag, eval, calibrate, info, dump" in (
        one_line_error(capsys)
    )


def test_dump_and_history_of_a_two_stage_file_show_each_stage(files, capsys):
    tagger = load_two_stage(files / "both.model")
    capsys.readouterr()
    assert main(["dump", str(files / "both.model"), "--top", "3"]) == 0
    out = capsys.readouterr().out
    first, second = out.split("second stage:\n")
    assert first.startswith("first stage:\n")
    assert f"labels ({len(tagger.first_.labels_)})" in first and f"labels ({len(tagger.second_.labels_)})" in second
    assert "token_doc" in second and "token_doc" not in first  # only the second stage reads the majority columns
    plot = files / "history.png"
    assert main(["history", str(files / "both.model"), "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert out.count("iteration  objective") == 2
    assert out.index("first stage:") < out.index("second stage:")
    assert f"kept the weights of iteration {tagger.second_.best_iteration_} of {tagger.second_.n_iter_}" in out
    assert plot.read_bytes().startswith(b"\x89PNG")


def test_bad_training_combinations(files, capsys, caplog):
    assert _train(files, "z.model", "--consistency", "--init", str(files / "single.model")) == 2
    assert "--init warm-starts one model" in one_line_error(capsys)
    with pytest.raises(SystemExit):
        _train(files, "z.model", "--consistency", "--jackknife-folds", "1")
    assert "--jackknife-folds: expected a whole number >= 2, got 1" in capsys.readouterr().err
    assert _train(files, "z.model", "--consistency", "--jackknife-folds", "1000") == 2
    assert "folds must be an integer from 2" in one_line_error(capsys)
    assert not (files / "z.model").exists()
    with caplog.at_level(logging.WARNING):
        assert (
            main(["train", str(files / "train.txt"), *TRAINING, "--jackknife-folds", "3", "-o", str(files / "z.model")])
            == 0
        )
    assert "--jackknife-folds is ignored" in caplog.text


def test_ctrl_c_in_the_jackknife_writes_the_local_model_with_its_penalties(files, monkeypatch, caplog):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(two_stage, "jackknife", interrupted)
    with caplog.at_level(logging.INFO):
        assert (
            main(["train", str(files / "train.txt"), *TRAINING, "--consistency", "-o", str(files / "cut.model")]) == 130
        )
    assert "interrupted before the second stage" in caplog.text
    assert "stage 1 of 3: the first stage" in caplog.text and "stage 2 of 3" in caplog.text
    local = ChainCRF.load(files / "cut.model")
    assert local.consistency_ == estimate_consistency(read_conll(files / "train.txt", COLUMNS), "ner")
    np.testing.assert_array_equal(local.weights_, load_two_stage(files / "both.model").first_.weights_)


def test_info_shows_the_decoding_settings_and_each_stage(files, capsys):
    tagger = load_two_stage(files / "both.model")
    capsys.readouterr()
    assert main(["info", str(files / "both.model")]) == 0
    out = capsys.readouterr().out
    assert "consistency penalties at scale 0.25, blocks of 4" in out
    for name, stage in (("first", tagger.first_), ("second", tagger.second_)):
        indented = "".join(f"  {line}\n" for line in info_text(stage).splitlines())
        assert f"{name} stage\n{indented}" in out


def test_mbr_decoding_and_calibration_of_a_two_stage_file_are_the_second_stage_s(files, tmp_path, capsys):
    tagger = load_two_stage(files / "both.model")
    test = read_conll(files / "test.txt", COLUMNS)
    extended = tagger.with_majorities(test, tagger.first_.predict(test), "test")
    temperature = tagger.second_.fit_temperature(extended)
    assert tagger.fit_temperature(test) == temperature
    capsys.readouterr()
    assert main(["calibrate", str(files / "both.model"), str(files / "test.txt")]) == 0
    assert capsys.readouterr().out.strip() == f"{temperature:.4f}"
    settings = (([], None, 1.0), (["--mbr-temperature", "1.7", "--mbr-threshold", "0.3"], 0.3, 1.7))
    for options, threshold, scale in settings:
        expected = tagger.second_.predict_mbr(extended, threshold, temperature=scale)
        assert tagger.predict_mbr(test, threshold, scale) == expected
        assert _tag(files, tmp_path, "--decode", "mbr", *options) == expected
    assert main(["eval", str(files / "both.model"), str(files / "test.txt"), "--decode", "mbr"]) == 0
    scores = label_scores(test.column("ner"), tagger.predict_mbr(test))
    assert f"{scores.primary:.2f}" in capsys.readouterr().out
