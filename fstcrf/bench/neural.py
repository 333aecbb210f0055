"""``fstcrf bench torch``: the CRF layer ``fstcrf.torch.CRF`` against pytorch-crf
0.7.2 and torch-struct's ``LinearChainCRF`` on the same inputs, on the CPU.

For each tag count, one batch of ``batch`` sequences of lengths drawn from
[``min_length``, ``max_length``], random float32 emissions and the same
transition, start and end scores for every tool.  Each tool runs in its own
fresh process (``python -m fstcrf.bench.neural SETTINGS``, the keyword arguments of
:func:`run_tool` as JSON) with ``threads`` torch threads, which times

* ``nll``: the negative log-likelihood, forward and backward (gradients of the
  emissions and the transition scores), and
* ``decode``: Viterbi decoding,

each the best of ``repeats`` rounds of up to ``rounds`` calls (fewer when a
call takes long: a round lasts about ``round_seconds`` at most), and reports
its peak resident memory (``ru_maxrss``) after the first call of each and at
the end.  The parent checks that the log-likelihoods agree (1e-4) and the
decoded paths are identical, and prints the ratios.  torch-struct takes edge potentials [B, T-1,
L, L]; building them from the emissions is part of its timed work, as it is
for a user.  Its Viterbi is its ``argmax`` (edge indicators, turned into tags).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time

TOOLS = ("fstcrf", "pytorch-crf", "torch-struct")


def inputs(torch, num_tags: int, batch: int, min_length: int, max_length: int, seed: int):
    """(emissions [B, T, L] float32, tags [B, T], mask [B, T], scores: start [L], end [L],
    transitions [L, L]) drawn from ``seed``; batch-first."""
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.randint(min_length, max_length + 1, (batch,), generator=generator)
    steps = int(lengths.max())
    emissions = torch.randn(batch, steps, num_tags, generator=generator) * 2
    tags = torch.randint(0, num_tags, (batch, steps), generator=generator)
    mask = torch.arange(steps)[None, :] < lengths[:, None]
    scores = {
        "start_transitions": torch.rand(num_tags, generator=generator) * 0.2 - 0.1,
        "end_transitions": torch.rand(num_tags, generator=generator) * 0.2 - 0.1,
        "transitions": torch.randn(num_tags, num_tags, generator=generator),
    }
    return emissions, tags, mask, scores


def layer(torch, tool: str, num_tags: int, scores: dict):
    """A callable pair (nll(emissions, tags, mask) -> llh [B], decode(emissions, mask) ->
    lists of tags) and the parameters to differentiate."""
    if tool in ("fstcrf", "pytorch-crf"):
        if tool == "fstcrf":
            from fstcrf.torch import CRF
        else:
            from torchcrf import CRF
        crf = CRF(num_tags, batch_first=True)
        crf.load_state_dict(scores)
        return (lambda e, t, m: crf(e, t, m, reduction="none")), crf.decode, list(crf.parameters())
    import warnings

    from torch_struct import LinearChainCRF

    warnings.filterwarnings("ignore", message=".*does not define `arg_constraints`")

    start = scores["start_transitions"].clone().requires_grad_(True)
    end = scores["end_transitions"].clone().requires_grad_(True)
    transitions = scores["transitions"].clone().requires_grad_(True)

    def distribution(emissions, mask):
        lengths = mask.sum(1)
        # [B, T-1, next, previous]: the transition and the next emission; the first
        # token's emission and start score ride on edge 0, the end score on each last edge
        edges = emissions[:, 1:, :, None] + transitions.T[None, None]
        first = (emissions[:, 0] + start)[:, None, None, :]
        edges = torch.cat([edges[:, :1] + first, edges[:, 1:]], 1)
        last = torch.nn.functional.one_hot(lengths - 2, edges.shape[1]).to(edges.dtype)
        edges = edges + last[:, :, None, None] * end[None, None, :, None]
        return LinearChainCRF(edges, lengths=lengths)

    def nll(emissions, tags, mask):
        dist = distribution(emissions, mask)
        lengths = mask.sum(1)
        gold = torch.zeros_like(dist.log_potentials)
        rows = torch.arange(len(tags))
        for n in range(gold.shape[1]):
            alive = (n + 1 < lengths).to(gold.dtype)
            gold[rows, n, tags[:, n + 1], tags[:, n]] = alive
        return dist.log_prob(gold)

    def decode(emissions, mask):
        parts = distribution(emissions, mask).argmax  # [B, T-1, next, previous] indicators
        lengths = mask.sum(1).tolist()
        paths = []
        for b, length in enumerate(lengths):
            chosen = parts[b, : length - 1].nonzero()  # rows (n, next, previous), n ascending
            tags = [int(chosen[0, 2])] + [int(x) for x in chosen[:, 1]]
            paths.append(tags)
        return paths

    return nll, decode, [start, end, transitions]


def peak_megabytes() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_tool(
    tool: str,
    num_tags: int,
    batch: int,
    min_length: int,
    max_length: int,
    seed: int,
    rounds: int,
    repeats: int,
    round_seconds: float,
    threads: int,
) -> dict:
    """Time one tool in this process (the child's side)."""
    import torch

    torch.set_num_threads(threads)
    emissions, tags, mask, scores = inputs(torch, num_tags, batch, min_length, max_length, seed)
    nll, decode, parameters = layer(torch, tool, num_tags, scores)
    leaf = emissions.clone().requires_grad_(True)

    def step():
        for parameter in parameters:
            parameter.grad = None
        leaf.grad = None
        (-nll(leaf, tags, mask)).sum().backward()

    timings = {}
    setup_megabytes = 0.0
    for name, call in (("nll", step), ("decode", lambda: decode(emissions, mask))):
        started = time.perf_counter()
        call()  # the first call, untimed, also sets how many calls a round makes: about round_seconds' worth at most
        calls = max(1, min(rounds, math.ceil(round_seconds / (time.perf_counter() - started))))
        setup_megabytes = max(setup_megabytes, peak_megabytes())
        best = float("inf")
        for _ in range(repeats):
            started = time.perf_counter()
            for _ in range(calls):
                call()
            best = min(best, (time.perf_counter() - started) / calls)
        timings[name] = best
    llh = nll(emissions, tags, mask).detach().double().tolist()
    return {
        "tool": tool,
        "tags": num_tags,
        "seconds": timings,
        "llh": llh,
        "paths": decode(emissions, mask),
        "threads": torch.get_num_threads(),
        "peak_megabytes_after_setup": setup_megabytes,
        "peak_megabytes": peak_megabytes(),
    }


def bench_torch(
    tag_counts=(9, 45),
    batch: int = 32,
    min_length: int = 25,
    max_length: int = 50,
    seed: int = 0,
    rounds: int = 20,
    repeats: int = 3,
    tools=TOOLS,
    round_seconds: float = 1.0,
    threads: int = 2,
) -> list[dict]:
    """One row per tag count: each tool's seconds per call and memory, the ratios to
    fstcrf, and the agreement of log-likelihoods and paths with fstcrf's."""
    from fstcrf.bench.harness import compile_bytecode

    compile_bytecode()
    rows = []
    for num_tags in tag_counts:
        results = {}
        for tool in tools:
            settings = {
                "tool": tool,
                "num_tags": num_tags,
                "batch": batch,
                "min_length": min_length,
                "max_length": max_length,
                "seed": seed,
                "rounds": rounds,
                "repeats": repeats,
                "round_seconds": round_seconds,
                "threads": threads,
            }
            command = [sys.executable, "-m", "fstcrf.bench.neural", json.dumps(settings)]
            output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            results[tool] = json.loads(output.strip().splitlines()[-1])
        ours = results["fstcrf"]
        row = {"tags": num_tags, "batch": batch, "lengths": [min_length, max_length], "tools": {}}
        for tool, result in results.items():
            difference = max(abs(a - b) for a, b in zip(result["llh"], ours["llh"]))
            row["tools"][tool] = {
                "nll_seconds": result["seconds"]["nll"],
                "decode_seconds": result["seconds"]["decode"],
                "nll_ratio": result["seconds"]["nll"] / ours["seconds"]["nll"],
                "decode_ratio": result["seconds"]["decode"] / ours["seconds"]["decode"],
                "llh_max_difference": difference,
                "same_paths": result["paths"] == ours["paths"],
                "peak_megabytes": result["peak_megabytes"],
                "peak_megabytes_after_setup": result["peak_megabytes_after_setup"],
                "threads": result["threads"],
            }
        rows.append(row)
    return rows


def format_torch(rows: list[dict]) -> str:
    lines = [
        "| tags | tool | NLL fwd+bwd ms | x fstcrf | decode ms | x fstcrf | max |llh diff| | same paths "
        "| peak RSS MB (after setup) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        for tool, r in row["tools"].items():
            lines.append(
                f"| {row['tags']} | {tool} | {r['nll_seconds'] * 1e3:.2f} | {r['nll_ratio']:.2f} | "
                f"{r['decode_seconds'] * 1e3:.2f} | {r['decode_ratio']:.2f} | {r['llh_max_difference']:.1e} | "
                f"{'yes' if r['same_paths'] else 'NO'} | "
                f"{r['peak_megabytes']:.0f} ({r['peak_megabytes_after_setup']:.0f}) |"
            )
    first = rows[0]
    lines.append(
        f"\nbatch {first['batch']}, lengths {first['lengths'][0]}-{first['lengths'][1]}, float32 emissions, "
        f"{first['tools']['fstcrf']['threads']} torch threads; each tool in its own process; "
        "times are the best of the repeats, per call"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    print(json.dumps(run_tool(**json.loads(sys.argv[1]))))
