"""A model's default decoding (``decoding_``): what fstcrf train records (--default-decode,
else the shipped template's choice on the development sets), what the model file keeps,
and what tag and eval do without --decode."""

from __future__ import annotations

import numpy as np
import pytest

from fstcrf.cli import main
from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.errors import ModelFileError
from fstcrf.features.defaults import TEMPLATE_DECODINGS, template_decoding
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
    assert any(line.split() == ["default", "decoding", "mbr"] for line in capsys.readouterr().out.splitlines())


@pytest.mark.slow
def test_train_records_the_template_s_choice_or_the_option(tmp_path):
    rich, plain = tmp_path / "rich.model", tmp_path / "plain.model"
    common = ["-q", "train", TRAIN, "--max-iter", "3"]
    assert main([*common, "--template", "ner-pos-rich", "-o", str(rich)]) == 0
    assert main([*common, "--template", "ner-pos-rich", "--default-decode", "viterbi", "-o", str(plain)]) == 0
    assert ChainCRF.load(rich).decoding_ == "mbr" and ChainCRF.load(plain).decoding_ == "viterbi"
    assert read_container(rich)[0]["decoding"] == "mbr"


def test_default_decode_mbr_without_chunk_labels_is_refused_before_training(tmp_path, capsys):
    out = tmp_path / "pos.model"
    assert main(["-q", "train", TRAIN, "--target", "pos", "--default-decode", "mbr", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "not chunk labels" in err and "Traceback" not in err and not out.exists()


def test_mbr_by_default_is_what_predict_mbr_gives(mbr_chunker, tmp_path):
    out = tmp_path / "default.txt"
    assert main(["-q", "tag", str(mbr_chunker), TEST, "-o", str(out)]) == 0
    model = ChainCRF.load(mbr_chunker)
    expected = model.predict_mbr(read_conll(TEST, columns="word,pos,chunk"))
    assert tagged(out) == expected
    assert np.mean([a == b for a, b in zip(expected, model.predict(read_conll(TEST, columns="word,pos,chunk")))]) < 1
