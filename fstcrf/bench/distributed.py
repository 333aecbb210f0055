"""``fstcrf bench distributed``: seconds per L-BFGS iteration in one process and on
LocalClusters of 1 and 2 single-threaded worker processes, on CoNLL-2000 and on
copies of it concatenated into one file (written to a temporary folder, removed
after); the speed-up of 2 workers over 1, the bytes sent per iteration, and the
time per iteration that is not gradient work (all measured in one run)."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from fstcrf.errors import FstcrfError


def _concatenated(source: Path, copies: int, folder: str) -> Path:
    """A file holding ``copies`` copies of ``source`` one after another."""
    target = Path(folder) / f"train-x{copies}.txt"
    data = source.read_bytes()
    if not data.endswith(b"\n\n"):
        data = data.rstrip(b"\n") + b"\n\n"
    with open(target, "wb") as stream:
        for _ in range(copies):
            stream.write(data)
    return target


def _row(setting: str, model, seconds: float, tokens: int, traffic=None, workers: int = 1) -> dict:
    """The figures of one fitted model (``seconds``: the whole fit; ``traffic`` and
    ``workers``: of a distributed fit, one shard per worker)."""
    iterations = model.n_iter_
    training = model.history_[-1]["elapsed"]
    row = {
        "setting": setting,
        "tokens": tokens,
        "weights": len(model.weights_),
        "iterations": iterations,
        "seconds_per_iteration": training / iterations,
        "setup_seconds": seconds - training,
        "objective": model.history_[-1]["objective"],
    }
    if traffic is not None:
        row.update(
            {
                "evaluations_per_iteration": traffic.evaluations / iterations,
                "gradient_seconds_per_iteration": traffic.gradient_seconds / iterations,
                "gradient_cpu_seconds_per_iteration": traffic.gradient_cpu_seconds / iterations,
                "other_seconds_per_iteration": training / iterations - traffic.gradient_seconds / iterations,
                "bytes_per_iteration": (traffic.bytes_sent + traffic.bytes_received) / iterations,
                "gradient_seconds_per_shard_token": traffic.gradient_seconds / traffic.evaluations / (tokens / workers),
                "retried": traffic.retried,
            }
        )
    return row


def bench_distributed(
    folder: str | os.PathLike, copies: int = 20, iterations: int = 5, workers: tuple[int, ...] = (1, 2)
) -> list[dict]:
    """One row per (corpus, setting): in one process with 1 and 2 threads, then on a
    LocalCluster of each number of ``workers`` (one shard and one thread each)."""
    from fstcrf.corpus.conll import read_conll
    from fstcrf.distributed.cluster import connect
    from fstcrf.distributed.fit import fit_on_dask
    from fstcrf.model.chain import ChainCRF

    source = Path(folder) / "train.txt"
    if not source.exists():
        raise FstcrfError(f"bench distributed needs CoNLL-2000's train.txt in {folder}")
    scratch = tempfile.mkdtemp(prefix="fstcrf-bench-distributed-")
    rows = []
    try:
        corpora = [("CoNLL-2000", source)]
        if copies > 1:
            corpora.append((f"CoNLL-2000 x{copies}", _concatenated(source, copies, scratch)))
        for name, path in corpora:
            corpus = read_conll(path)
            tokens = corpus.num_tokens
            for threads in (1, 2):
                started = time.perf_counter()
                model = ChainCRF(max_iter=iterations, threads=threads).fit(corpus)
                rows.append(
                    {
                        "corpus": name,
                        **_row(f"in-process, {threads} thread(s)", model, time.perf_counter() - started, tokens),
                    }
                )
            del corpus
            for count in workers:
                with connect(f"local:{count}") as client:
                    started = time.perf_counter()
                    model = fit_on_dask(ChainCRF(max_iter=iterations, threads=1), path, client)
                    rows.append(
                        {
                            "corpus": name,
                            **_row(
                                f"LocalCluster, {count} worker(s)",
                                model,
                                time.perf_counter() - started,
                                tokens,
                                model.traffic_,
                                count,
                            ),
                        }
                    )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return rows


def speedups(rows: list[dict], measure: str = "seconds_per_iteration") -> dict[str, float]:
    """Per corpus: ``measure`` on 1 worker / on 2 workers."""
    result = {}
    for corpus in dict.fromkeys(row["corpus"] for row in rows):
        by = {row["setting"]: row for row in rows if row["corpus"] == corpus}
        one, two = by.get("LocalCluster, 1 worker(s)"), by.get("LocalCluster, 2 worker(s)")
        if one and two:
            result[corpus] = one[measure] / two[measure]
    return result


def cpu_speedups(rows: list[dict]) -> dict[str, float]:
    """Per corpus: the speed-up of 2 workers over 1 when each has a core of its own, from
    the same run: (the gradient's CPU seconds + the other seconds) per iteration on 1
    worker over (the busiest shard's CPU seconds + the other seconds) on 2."""
    for row in rows:
        if "gradient_cpu_seconds_per_iteration" in row:
            row["cpu_bound_seconds_per_iteration"] = (
                row["gradient_cpu_seconds_per_iteration"] + row["other_seconds_per_iteration"]
            )
    return speedups(rows, "cpu_bound_seconds_per_iteration")


def format_distributed(rows: list[dict], load: tuple[tuple[float, ...], tuple[float, ...]]) -> str:
    """The table, the speed-ups and the load averages (1, 5, 15 min) before and after."""
    lines = [
        "| corpus | setting | tokens | s / iteration | gradient s / it. | gradient CPU s / it. | "
        "other s / it. | MB sent / it. | setup s | objective |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        other = (
            f"{r['gradient_seconds_per_iteration']:.3f} | {r['gradient_cpu_seconds_per_iteration']:.3f} | "
            f"{r['other_seconds_per_iteration']:.3f} | {r['bytes_per_iteration'] / 1e6:.1f}"
            if "bytes_per_iteration" in r
            else "- | - | - | -"
        )
        lines.append(
            f"| {r['corpus']} | {r['setting']} | {r['tokens']:,} | {r['seconds_per_iteration']:.3f} | "
            f"{other} | {r['setup_seconds']:.1f} | {r['objective']:.10g} |"
        )
    lines.append("")
    for corpus, ratio in speedups(rows).items():
        lines.append(
            f"speed-up of 2 workers over 1 on {corpus}: {ratio:.2f}x (wall clock); "
            f"{cpu_speedups(rows)[corpus]:.2f}x from CPU seconds (each worker on a core of its own)"
        )
    lines.append(
        "load average (1, 5, 15 min) before: "
        + " ".join(f"{x:.2f}" for x in load[0])
        + "; after: "
        + " ".join(f"{x:.2f}" for x in load[1])
    )
    return "\n".join(lines)


def distributed_json(rows: list[dict], load: tuple[tuple[float, ...], tuple[float, ...]]) -> dict:
    return {
        "rows": rows,
        "speedups": speedups(rows),
        "cpu_speedups": cpu_speedups(rows),
        "load_average_before": list(load[0]),
        "load_average_after": list(load[1]),
    }
