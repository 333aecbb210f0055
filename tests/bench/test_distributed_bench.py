"""bench distributed runs end to end on a small corpus (no timing is asserted)."""

import json
import shutil
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("distributed")

DEMO = Path(__file__).resolve().parents[2] / "fstcrf" / "data" / "demo_train.txt"


@pytest.mark.slow
def test_bench_distributed_rows_are_complete_and_agree(tmp_path, monkeypatch):
    from fstcrf.bench.distributed import bench_distributed, cpu_speedups, distributed_json, format_distributed

    scratch = tmp_path / "scratch"  # the temporary folder, private to this test
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    shutil.copy(DEMO, tmp_path / "train.txt")
    rows = bench_distributed(tmp_path, copies=2, iterations=2)
    assert [(row["corpus"], row["setting"]) for row in rows] == [
        (corpus, setting)
        for corpus in ("CoNLL-2000", "CoNLL-2000 x2")
        for setting in (
            "in-process, 1 thread(s)",
            "in-process, 2 thread(s)",
            "LocalCluster, 1 worker(s)",
            "LocalCluster, 2 worker(s)",
        )
    ]
    for corpus in ("CoNLL-2000", "CoNLL-2000 x2"):
        objectives = [row["objective"] for row in rows if row["corpus"] == corpus]
        assert max(objectives) - min(objectives) <= 1e-9 * abs(objectives[0])
    two = rows[-1]
    assert two["tokens"] == 2 * rows[0]["tokens"] and two["retried"] == 0
    assert two["bytes_per_iteration"] == 2 * rows[-2]["bytes_per_iteration"]
    assert set(cpu_speedups(rows)) == {"CoNLL-2000", "CoNLL-2000 x2"}
    json.dumps(distributed_json(rows, ((1.0, 1.0, 1.0), (1.0, 1.0, 1.0))))
    assert "speed-up of 2 workers over 1 on CoNLL-2000 x2" in format_distributed(rows, ((0, 0, 0), (0, 0, 0)))
    assert not list(scratch.glob("fstcrf-bench-distributed-*/train-x2.txt"))  # the copy is removed
