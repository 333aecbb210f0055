"""A model's default decoding (``decoding_``) and MBR temperature (``mbr_temperature_``):
what fstcrf train records (--default-decode and --default-mbr-temperature, else the shipped
template's choices on the development sets) and calibrate --output fits, what the model
file keeps, and what tag and eval do without --decode and --mbr-temperature."""

from __future__ import annotations

import numpy as np
import pytest

from fstcrf.cli import main
from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.errors import ModelFileError
from fstcrf.features.defaults import (
    MBR_TEMPERATURE_RANGE,
    TEMPLATE_DECODINGS,
    TEMPLATE_MBR_TEMPERATURES,
    template_decoding,
    template_mbr_temperature,
)
from fstcrf.model import ChainCRF
from fstcrf.model.fitting import DECODINGS
from fstcrf.model.file import MODEL_KIND, read_container, write_container

TRAIN = str(DATA_DIR / "demo_train.txt")
TEST = str(DATA_DIR / "demo_test.txt")


@pytest.fixture
def mbr_chunker(demo_chunker, tmp_path):
    """The demo chunker with MBR as its default decoding."""
    model = ChainCRF.load(demo_chunker)
    model.decoding_ = "mbr"
    path = tmp_path / "mbr.model"
    model.save(path)
    return path


def tagged(path) -> list[list[str]]:
    return read_conll(path, columns="word,pos,chunk,predicted").column("predicted")


def test_the_rich_ner_templates_default_to_mbr_and_others_to_viterbi():
    assert template_decoding("ner-rich") == template_decoding("ner-pos-rich") == "mbr"
    assert {template_decoding(name) for name in ("chunking-extended", "pos", "words-rich", "ner")} == {"viterbi"}
    assert set(TEMPLATE_DECODINGS.values()) <= set(DECODINGS)


def test_fit_leaves_viterbi_and_the_file_keeps_the_default(demo_chunker, mbr_chunker):
    assert ChainCRF.load(demo_chunker).decoding_ == "viterbi"
    assert ChainCRF.load(mbr_chunker).decoding_ == "mbr"


def _rewrite_header(source, target, change) -> None:
    header, arrays = read_container(source)
    header = {key: item for key, item in header.items() if key not in ("arrays", "format")}
    change(header)
    write_container(target, MODEL_KIND, header, arrays)


def test_a_file_written_before_models_named_their_decoding_decodes_with_viterbi(mbr_chunker, tmp_path):
    older = tmp_path / "older.model"
    _rewrite_header(mbr_chunker, older, lambda header: header.pop("decoding"))
    assert ChainCRF.load(older).decoding_ == "viterbi"


def test_an_unknown_decoding_in_a_file_is_refused(mbr_chunker, tmp_path):
    bad = tmp_path / "bad.model"
    _rewrite_header(mbr_chunker, bad, lambda header: header.update(decoding="beam"))
    with pytest.raises(ModelFileError, match="decoding 'beam'"):
        ChainCRF.load(bad)


def test_tag_and_eval_without_decode_use_the_model_s_default(mbr_chunker, tmp_path, capsys):
    default, mbr, viterbi = (tmp_path / f"{name}.txt" for name in ("default", "mbr", "viterbi"))
    assert main(["-q", "tag", str(mbr_chunker), TEST, "-o", str(default)]) == 0
    assert main(["-q", "tag", str(mbr_chunker), TEST, "--decode", "mbr", "-o", str(mbr)]) == 0
    assert main(["-q", "tag", str(mbr_chunker), TEST, "--decode", "viterbi", "-o", str(viterbi)]) == 0
    assert default.read_bytes() == mbr.read_bytes() != viterbi.read_bytes()
    capsys.readouterr()
    outputs = []
    for options in ([], ["--decode", "mbr"]):
        assert main(["-q", "eval", str(mbr_chunker), TEST, *options]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize("options", [["--nbest", "2"], ["--sample", "2"]])
def test_outputs_mbr_does_not_make_fall_back_to_viterbi_without_decode(mbr_chunker, tmp_path, options, capsys):
    assert main(["-q", "tag", str(mbr_chunker), TEST, *options, "-o", str(tmp_path / "out.txt")]) == 0
    assert "error" not in capsys.readouterr().err


def test_info_shows_the_default_decoding(mbr_chunker, capsys):
    assert main(["info", str(mbr_chunker)]) == 0
    lines = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert ["default", "decoding", "mbr"] in lines and ["MBR", "temperature", "1"] in lines


@pytest.mark.slow
def test_train_records_the_template_s_choice_or_the_option(tmp_path):
    rich, plain = tmp_path / "rich.model", tmp_path / "plain.model"
    common = ["-q", "train", TRAIN, "--max-iter", "3"]
    assert main([*common, "--template", "ner-pos-rich", "-o", str(rich)]) == 0
    assert main([*common, "--template", "ner-pos-rich", "--default-decode", "viterbi", "-o", str(plain)]) == 0
    assert ChainCRF.load(rich).decoding_ == "mbr" and ChainCRF.load(plain).decoding_ == "viterbi"
    assert read_container(rich)[0]["decoding"] == "mbr"
    assert ChainCRF.load(rich).mbr_temperature_ == ChainCRF.load(plain).mbr_temperature_ == 1.06
    warm = tmp_path / "warm.model"
    assert main([*common, "--template", "ner-pos-rich", "--default-mbr-temperature", "2", "-o", str(warm)]) == 0
    assert ChainCRF.load(warm).mbr_temperature_ == 2.0
    chunker = tmp_path / "chunker.model"
    assert main([*common, "-o", str(chunker)]) == 0
    assert ChainCRF.load(chunker).mbr_temperature_ == 1.0


@pytest.mark.parametrize(
    "option", [["--default-decode", "mbr"], ["--default-mbr-temperature", "1.5"]], ids=["decode", "temperature"]
)
def test_mbr_defaults_without_chunk_labels_are_refused_before_training(tmp_path, capsys, option):
    out = tmp_path / "pos.model"
    assert main(["-q", "train", TRAIN, "--target", "pos", *option, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "not chunk labels" in err and option[0] in err and "Traceback" not in err and not out.exists()


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "100"])
def test_a_default_mbr_temperature_out_of_range_is_refused(tmp_path, capsys, value):
    out = tmp_path / "x.model"
    with pytest.raises(SystemExit) as stopped:
        main(["-q", "train", TRAIN, "--default-mbr-temperature", value, "-o", str(out)])
    assert stopped.value.code == 2
    assert "--default-mbr-temperature" in capsys.readouterr().err and not out.exists()


def test_the_rich_ner_templates_temper_mbr_by_their_dev_choice():
    assert (template_mbr_temperature("ner-rich"), template_mbr_temperature("ner-pos-rich")) == (1.19, 1.06)
    assert {template_mbr_temperature(name) for name in ("chunking-extended", "words-rich", "ner")} == {1.0}
    low, high = MBR_TEMPERATURE_RANGE
    assert all(low <= value <= high for value in TEMPLATE_MBR_TEMPERATURES.values())
    assert set(TEMPLATE_MBR_TEMPERATURES) <= set(TEMPLATE_DECODINGS)


@pytest.fixture
def warm_chunker(mbr_chunker, tmp_path):
    """The MBR chunker with default temperature 3."""
    model = ChainCRF.load(mbr_chunker)
    model.mbr_temperature_ = 3.0
    path = tmp_path / "warm.model"
    model.save(path)
    return path


def test_the_file_keeps_the_temperature_and_older_files_read_as_one(demo_chunker, warm_chunker, tmp_path):
    assert ChainCRF.load(demo_chunker).mbr_temperature_ == 1.0
    assert ChainCRF.load(warm_chunker).mbr_temperature_ == 3.0
    older = tmp_path / "older.model"
    _rewrite_header(warm_chunker, older, lambda header: header.pop("mbr_temperature"))
    assert ChainCRF.load(older).mbr_temperature_ == 1.0


@pytest.mark.parametrize("value", [0, -2.0, 1e9, "2", True, None, float("nan")])
def test_a_bad_temperature_in_a_file_is_refused(warm_chunker, tmp_path, value):
    bad = tmp_path / "bad.model"
    _rewrite_header(warm_chunker, bad, lambda header: header.update(mbr_temperature=value))
    with pytest.raises(ModelFileError, match="MBR temperature"):
        ChainCRF.load(bad)


def test_mbr_without_a_temperature_uses_the_model_s(warm_chunker, tmp_path):
    default, given, untempered = (tmp_path / f"{name}.txt" for name in ("default", "given", "one"))
    assert main(["-q", "tag", str(warm_chunker), TEST, "-o", str(default)]) == 0
    assert main(["-q", "tag", str(warm_chunker), TEST, "--mbr-temperature", "3", "-o", str(given)]) == 0
    assert main(["-q", "tag", str(warm_chunker), TEST, "--mbr-temperature", "1", "-o", str(untempered)]) == 0
    assert default.read_bytes() == given.read_bytes() != untempered.read_bytes()
    model = ChainCRF.load(warm_chunker)
    corpus = read_conll(TEST, columns="word,pos,chunk")
    assert tagged(default) == model.predict_mbr(corpus) == model.predict_mbr(corpus, temperature=3.0)
    assert model.predict_mbr(corpus) != model.predict_mbr(corpus, temperature=1.0)


def test_calibrate_output_records_the_fitted_temperature(mbr_chunker, tmp_path, capsys):
    out = tmp_path / "calibrated.model"
    assert main(["-q", "calibrate", str(mbr_chunker), TEST, "-o", str(out)]) == 0
    printed = float(capsys.readouterr().out)
    calibrated = ChainCRF.load(out)
    assert calibrated.mbr_temperature_ == pytest.approx(printed, abs=5e-5)
    assert calibrated.mbr_temperature_ == ChainCRF.load(mbr_chunker).fit_temperature(read_conll(TEST))
    assert calibrated.decoding_ == "mbr" and np.array_equal(calibrated.weights_, ChainCRF.load(mbr_chunker).weights_)


def test_calibrate_output_never_replaces_its_input(mbr_chunker, capsys):
    before = mbr_chunker.read_bytes()
    assert main(["-q", "calibrate", str(mbr_chunker), TEST, "-o", str(mbr_chunker)]) == 2
    assert "Traceback" not in capsys.readouterr().err and mbr_chunker.read_bytes() == before


def test_mbr_by_default_is_what_predict_mbr_gives(mbr_chunker, tmp_path):
    out = tmp_path / "default.txt"
    assert main(["-q", "tag", str(mbr_chunker), TEST, "-o", str(out)]) == 0
    model = ChainCRF.load(mbr_chunker)
    expected = model.predict_mbr(read_conll(TEST, columns="word,pos,chunk"))
    assert tagged(out) == expected
    assert np.mean([a == b for a, b in zip(expected, model.predict(read_conll(TEST, columns="word,pos,chunk")))]) < 1
