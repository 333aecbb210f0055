"""The BiLSTM-CRF experiment on a slice of CoNLL-2003: every head trains, is scored,
and the head under the IOB2 scheme never outputs an invalid sequence."""

from tests.needs_torch import torch  # noqa: F401,I001

import json

from fstcrf.experiments.bilstm_crf import HEADS, casing, is_valid_iob2, main, normalise


def test_iob2_validity():
    assert is_valid_iob2(["O", "B-PER", "I-PER", "O", "B-LOC"])
    assert not is_valid_iob2(["O", "I-PER"])
    assert not is_valid_iob2(["B-PER", "I-LOC"])
    assert is_valid_iob2([])


def test_word_normalisation_and_casing():
    assert normalise("Paris1996") == "paris0000"
    assert [casing(w) for w in ("paris", "Paris", "EU", "1996", "F16", "McDonald", ",")] == [
        1,
        2,
        3,
        5,
        6,
        4,
        0,
    ]


def test_every_head_trains_on_a_slice(data_dir, tmp_path):
    out = tmp_path / "results.json"
    arguments = ["--data", str(data_dir / "conll2003"), "--limit", "150", "--epochs", "2", "--out", str(out)]
    arguments += ["--threads", "1"]  # torch's, one per pytest worker
    assert main([*arguments, "--head", *HEADS]) == 0
    results = {r["head"]: r for r in json.loads(out.read_text())}
    assert set(results) == set(HEADS)
    for result in results.values():
        assert 0 <= result["test"]["f1"] <= 100 and result["best_epoch"] in (1, 2)
        assert result["training_seconds"] > 0
    assert results["crf-iob2"]["test"]["invalid_sequences"] == 0
    assert results["crf-iob2"]["dev"]["invalid_sequences"] == 0
