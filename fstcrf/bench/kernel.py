"""``fstcrf bench kernel``: forward-backward and Viterbi throughput of the C kernel
against numpy and pynini, on random scores; the random lattices the other
benchmarks of the engine use."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fstcrf.bench.harness import best_time
from fstcrf.engine import inference, lattice, reference
from fstcrf.errors import FstcrfError
from fstcrf.engine.inference import Potentials
from fstcrf.progress import Progress
from fstcrf.engine.topology import Topology, first_order, kth_order
from fstcrf.extras import require


def random_potentials(topology: Topology, num_tokens: int, seed: int, mean_length: int = 24) -> Potentials:
    """Random scores over sentences of CoNLL-like lengths (mean ``mean_length``),
    ``num_tokens`` >= 1 tokens in all."""
    if num_tokens < 1:
        raise FstcrfError(f"a benchmark needs at least 1 token, got {num_tokens}")
    rng = np.random.default_rng(seed)
    lengths = []
    while sum(lengths) < num_tokens:
        lengths.append(int(np.clip(rng.poisson(mean_length), 1, 4 * mean_length)))
    lengths[-1] -= sum(lengths) - num_tokens
    if lengths[-1] <= 0:
        lengths.pop()
    total = sum(lengths)
    return Potentials(
        topology, rng.normal(scale=2.0, size=(total, topology.num_states)), lengths, rng.normal(size=topology.num_edges)
    )


def as_dense(pot: Potentials, forbidden_score: float = -1e30) -> Potentials:
    """The same lattice over a complete transition set, forbidden pairs scored
    ``forbidden_score`` (so exp() of them is exactly 0)."""
    topo = pot.topology
    S = topo.num_states
    dense = Topology(
        topo.labels,
        topo.state_label,
        np.repeat(np.arange(S), S),
        np.tile(np.arange(S), S),
        topo.start,
        topo.final,
        topo.state_names,
        name=topo.name + "-as-dense",
    )
    transitions = np.full(S * S, forbidden_score)
    transitions[topo.edge_dst.astype(np.int64) * S + topo.edge_src] = pot.transitions  # dst-major ids
    return Potentials(
        dense,
        pot.emissions,
        pot.lengths,
        transitions,
        np.where(topo.start, pot.start, 0.0),
        np.where(topo.final, pot.final, 0.0),
    )


@dataclass
class KernelRow:
    """One lattice's tokens per second in the kernel, and its ratios to numpy, pynini and the dense lattice."""

    name: str
    states: int
    edges: int
    fb_tokens_per_s: float
    viterbi_tokens_per_s: float
    fb_2threads_tokens_per_s: float
    numpy_fb_ratio: float
    numpy_viterbi_ratio: float
    pynini_ratio: float
    dense_ratio: float | None


def subset(pot: Potentials, num_sentences: int) -> Potentials:
    """The first ``num_sentences`` sentences of ``pot``, with its transition, start and final scores."""
    rows = slice(0, int(pot.offsets[num_sentences]))
    return Potentials(
        pot.topology,
        pot.emissions[rows],
        pot.lengths[:num_sentences],
        pot.transitions,
        np.where(pot.topology.start, pot.start, 0.0),
        np.where(pot.topology.final, pot.final, 0.0),
    )


def bench_kernel(
    tokens: int = 100_000, repeats: int = 3, reference_seconds: float = 1.0, seed: int = 0, progress: bool = True
) -> list[KernelRow]:
    """Forward-backward and Viterbi throughput of the C kernel against numpy and pynini.

    The kernel runs on the whole batch (its intended use); numpy and pynini,
    which work one sentence at a time, run on a prefix of the same sentences
    sized to take about ``reference_seconds``.  Every timing is the best of
    ``repeats``; ratios are of tokens per second.  Needs pynini (the extra ``grammars``)."""
    pynini = require("pynini", "bench kernel (it times pynini's shortestdistance)")
    tags23 = [f"t{i:02d}" for i in range(23)]
    cases = [(f"dense S={S}", first_order([f"y{i}" for i in range(S)])) for S in (3, 9, 23, 45)]
    cases.append(("second order 23 tags (529 states, sparse)", kth_order(tags23, 2, pad=tags23[0])))
    rows = []
    with Progress(len(cases), "bench kernel", unit="case", enabled=progress) as bar:
        for name, topo in cases:
            pot = random_potentials(topo, tokens if topo.num_states <= 45 else max(tokens // 4, 1), seed)
            n = pot.num_tokens
            fb = n / best_time(lambda: inference.forward_backward(pot), repeats)
            fb2 = n / best_time(lambda: inference.forward_backward(pot, threads=2), repeats)
            vit = n / best_time(lambda: inference.viterbi(pot), repeats)
            forward = n / best_time(lambda: inference.log_partition(pot), repeats)
            prefix = subset(pot, int(np.clip(reference_seconds * fb / 400 / 24, 2, pot.num_sequences)))
            sentences = range(prefix.num_sequences)
            np_fb = prefix.num_tokens / best_time(
                lambda: [reference.forward_backward(prefix, b) for b in sentences], repeats
            )
            np_vit = prefix.num_tokens / best_time(lambda: [reference.viterbi(prefix, b) for b in sentences], repeats)
            fsts = [lattice.to_fst(prefix, b, arc_type="log") for b in sentences]
            py_sd = prefix.num_tokens / best_time(lambda: [pynini.shortestdistance(f) for f in fsts], repeats)
            dense_ratio = None
            if topo.density() < 0.5:
                dense = as_dense(pot)
                dense_ratio = fb / (n / best_time(lambda: inference.forward_backward(dense), 1))
            rows.append(
                KernelRow(
                    name,
                    topo.num_states,
                    topo.num_edges,
                    fb,
                    vit,
                    fb2,
                    fb / np_fb,
                    vit / np_vit,
                    forward / py_sd,
                    dense_ratio,
                )
            )
            bar.update()
    return rows


def format_kernel(rows: list[KernelRow]) -> str:
    """The rows of :func:`bench_kernel` as a Markdown table."""
    lines = [
        "| lattice | S | E | fwd-bwd tok/s | Viterbi tok/s | fwd-bwd tok/s, 2 threads | "
        "x numpy fwd-bwd | x numpy Viterbi | forward x pynini shortestdistance | sparse vs dense fwd-bwd |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        dense = f"{r.dense_ratio:.1f}x" if r.dense_ratio is not None else "-"
        lines.append(
            f"| {r.name} | {r.states} | {r.edges} | {r.fb_tokens_per_s:,.0f} | "
            f"{r.viterbi_tokens_per_s:,.0f} | {r.fb_2threads_tokens_per_s:,.0f} | "
            f"{r.numpy_fb_ratio:.0f}x | {r.numpy_viterbi_ratio:.0f}x | {r.pynini_ratio:.0f}x | {dense} |"
        )
    return "\n".join(lines)
