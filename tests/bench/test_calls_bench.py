"""bench calls: both sides of each case timed over the same sentences, the ratio theirs."""

import json
import shutil

import pytest

from fstcrf.bench.calls import Case, first_pass, format_calls, measure
from fstcrf.cli import main
from fstcrf.corpus.synthetic import DATA_DIR


def test_bench_calls_times_each_case_both_ways(demo_chunker, demo_joint, tmp_path, capsys):
    folder = tmp_path / "conll2000"
    folder.mkdir()
    shutil.copy(DATA_DIR / "demo_train.txt", folder / "train.txt")
    shutil.copy(DATA_DIR / "demo_test.txt", folder / "test.txt")
    models = f"chunker={demo_chunker},grammar={demo_chunker},composed={demo_joint}"
    command = ["-q", "bench", "calls", "--data", str(folder), "--models", models, "--sentences", "12"]
    assert main([*command, "--repeats", "2", "--cases", "chunker,joint,cascade,logits", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert list(result["cases"]) == ["chunker", "joint", "cascade", "logits"]
    for name, case in result["cases"].items():
        seconds = case["seconds"]
        assert case["items"] == 12 and seconds["batch total"] > 0 and seconds["one total"] > 0
        assert case["ratio"] == pytest.approx(seconds["one total"] / seconds["batch total"])
    assert set(result["cases"]["chunker"]["seconds"]) == {
        f"{side} {phase}" for side in ("batch", "one") for phase in ("total", "features", "decode")
    }
    assert main([*command, "--cases", "chunker", "--repeats", "1"]) == 0
    assert "chunker" in capsys.readouterr().out


def test_bench_calls_refuses_an_unknown_kind_of_model(tmp_path, capsys):
    assert main(["-q", "bench", "calls", "--data", str(tmp_path), "--models", "tagger=x.model"]) != 0
    assert "KIND=MODEL" in capsys.readouterr().err


def test_a_case_s_unseen_items_are_timed_once_after_its_structures_are_made():
    calls = []
    case = Case(
        "words",
        ["a b", "c"],
        3,
        lambda batch: [calls.append(("batch", item)) for item in batch],
        lambda item: calls.append(("one", item)),
        unseen=["d e f", "g"],
        unseen_tokens=4,
        unseen_name="2 new texts",
    )
    unseen = first_pass(case)
    assert calls == [("one", "a b"), ("one", "d e f"), ("one", "g")]  # the warm-up, then each once
    assert unseen["items"] == 2 and unseen["tokens"] == 4 and unseen["seconds"] > 0
    result = {"sentences": 2, "repeats": 1, "load": [(0.0, 0.0, 0.0)], "cases": {"words": measure(case, 1)}}
    result["cases"]["words"]["unseen"] = unseen
    assert "text never met (2 new texts), once:" in format_calls(result)
