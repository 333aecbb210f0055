"""fstcrf bench torch on a tiny batch: every tool runs on the threads asked for, agrees with
fstcrf, and is reported."""

from tests.needs_torch import torch  # noqa: F401,I001

import pytest

from fstcrf.bench.neural import TOOLS, bench_torch, format_torch
from fstcrf.extras import available


@pytest.mark.skipif(
    not (available("torchcrf") and available("torch_struct")),
    reason="needs pytorch-crf and torch-struct: pip install 'fstcrf[bench-torch]'",
)
def test_bench_torch_runs_every_tool_and_they_agree():
    rows = bench_torch(tag_counts=(3,), batch=4, min_length=2, max_length=6, rounds=1, repeats=1, threads=1)
    (row,) = rows
    assert set(row["tools"]) == set(TOOLS)
    for tool, result in row["tools"].items():
        assert result["threads"] == 1, tool
        assert result["llh_max_difference"] < 1e-4, tool
        assert result["same_paths"], tool
        assert result["nll_seconds"] > 0 and result["decode_seconds"] > 0
        assert result["peak_megabytes"] >= result["peak_megabytes_after_setup"] > 0
    assert row["tools"]["fstcrf"]["nll_ratio"] == 1.0
    table = format_torch(rows)
    assert "| 3 | pytorch-crf |" in table and "| 3 | torch-struct |" in table
