"""``fstcrf bench spacy`` end to end on the demo corpus laid out as CoNLL-2000 (no timing
is asserted)."""

from needs_spacy import spacy  # noqa: F401  (skips the module without spaCy)

import json
import math
import shutil

import pytest

from fstcrf.bench.spacy import ROWS
from fstcrf.cli import main
from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.synthetic import DATA_DIR


@pytest.mark.slow
def test_bench_spacy_rows(tmp_path, capsys):
    folder = tmp_path / "conll2000"
    folder.mkdir()
    shutil.copy(DATA_DIR / "demo_train.txt", folder / "train.txt")
    shutil.copy(DATA_DIR / "demo_test.txt", folder / "test.txt")
    command = ["-q", "bench", "spacy", "--data", str(tmp_path), "--repeats", "1", "--iterations", "3"]
    assert main(command + ["--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    test = read_conll(folder / "test.txt")
    assert (result["sentences"], result["tokens"]) == (len(test), test.num_tokens)
    assert list(result["rows"]) == list(ROWS)
    assert result["rows"]["model.predict"]["ratio_to_predict"] == 1.0
    for row in result["rows"].values():
        assert math.isfinite(row["tokens_per_second"]) and row["tokens_per_second"] > 0
        assert row["tokens_per_second"] * row["seconds"] == pytest.approx(test.num_tokens)
    assert result["model"] == "a chunker trained for 3 iterations"
