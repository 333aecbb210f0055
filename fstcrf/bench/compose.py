"""``fstcrf bench compose``: factorised joint inference against the dense cross
product on random scores, and a composed model on a real test set (decoding in
each mode, the joint decoding's phases, the joint Viterbi kernel alone)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fstcrf.bench.harness import best_time, tokens_per_second
from fstcrf.bench.kernel import random_potentials, subset
from fstcrf.engine import inference
from fstcrf.engine.topology import first_order
from fstcrf.progress import Progress


@dataclass
class ComposeRow:
    """One joint space's tokens per second, factorised against the dense cross product."""

    name: str
    joint_states: int
    factorised_fb_tokens_per_s: float
    dense_fb_tokens_per_s: float
    factorised_viterbi_tokens_per_s: float
    factorised_viterbi_2threads_tokens_per_s: float
    dense_viterbi_tokens_per_s: float
    factorised_edge_counts_tokens_per_s: float


def _random_chain(sizes: tuple[int, ...], tokens: int, seed: int):
    """JointPotentials over first-order components of ``sizes`` states, each reading
    the one below (emissions [N, S_{k-1}, S_k], transitions [S_{k-1}, E_k]),
    scores drawn at random."""
    from fstcrf.engine import joint

    rng = np.random.default_rng(seed)
    components = [first_order([f"c{k}.{i:02d}" for i in range(S)]) for k, S in enumerate(sizes)]
    space = joint.JointSpace(components)
    lengths = random_potentials(components[0], tokens, seed).lengths
    N = int(lengths.sum())
    emissions = [rng.normal(scale=2.0, size=(N, sizes[0]))]
    emissions += [rng.normal(scale=2.0, size=(N, lower, S)) for lower, S in zip(sizes, sizes[1:])]
    transitions = [rng.normal(size=space.transition_shape(k)) for k in range(len(sizes))]
    return joint.JointPotentials(space, joint.joint_emissions(space, emissions), lengths, transitions)


#: The joint spaces `fstcrf bench compose` measures: (name, states of each component).
COMPOSE_CASES = (("45 x 23 (POS x chunk)", (45, 23)), ("23 x 9 x 5 (3 components)", (23, 9, 5)))


def bench_compose(
    tokens: int = 20_000, repeats: int = 3, reference_seconds: float = 3.0, seed: int = 0, progress: bool = True
) -> list[ComposeRow]:
    """Factorised joint inference against the dense cross-product kernel.

    For each case of COMPOSE_CASES, random scores over ``tokens`` tokens; the
    dense kernel (1 thread, like the factorised passes unless stated) runs on a
    prefix of the sentences sized to take about ``reference_seconds`` in all
    over its ``repeats`` runs.  Every figure is the best of ``repeats`` runs.
    The progress bar counts the tokens decoded."""
    from fstcrf.engine import joint

    cases = []
    for name, sizes in COMPOSE_CASES:
        jp = _random_chain(sizes, tokens, seed)
        dense = jp.to_product()
        # the dense prefix is sized from a two-sentence probe
        probe = subset(dense, 2)
        rate = probe.num_tokens / best_time(lambda: inference.forward_backward(probe, edge_counts=False), 1)
        sentences = int(np.clip(reference_seconds / repeats * rate / 24, 2, dense.num_sequences))
        cases.append((name, jp, subset(dense, sentences)))
    total = sum(repeats * (4 * jp.num_tokens + 2 * prefix.num_tokens) for _, jp, prefix in cases)
    rows = []
    with Progress(total, "bench compose", unit="tok", enabled=progress) as bar:
        for name, jp, prefix in cases:
            N, n = jp.num_tokens, prefix.num_tokens
            fb = tokens_per_second(lambda: joint.joint_forward_backward(jp), N, repeats, bar)
            counts = tokens_per_second(lambda: joint.joint_posteriors(jp, marginals=False), N, repeats, bar)
            vit = tokens_per_second(lambda: joint.joint_viterbi(jp), N, repeats, bar)
            vit2 = tokens_per_second(lambda: joint.joint_viterbi(jp, threads=2), N, repeats, bar)
            dense_fb = tokens_per_second(lambda: inference.forward_backward(prefix, edge_counts=False), n, repeats, bar)
            dense_vit = tokens_per_second(lambda: inference.viterbi(prefix), n, repeats, bar)
            rows.append(
                ComposeRow(f"{name}, random scores", jp.space.num_states, fb, dense_fb, vit, vit2, dense_vit, counts)
            )
    return rows


def format_compose(rows: list[ComposeRow]) -> str:
    """The rows of :func:`bench_compose` as a Markdown table."""
    lines = [
        "| joint space | P | factorised fwd-bwd tok/s | dense fwd-bwd tok/s | speed-up | "
        "factorised Viterbi tok/s | same, 2 threads | dense Viterbi tok/s | speed-up | "
        "factorised log Z + edge counts tok/s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.name} | {r.joint_states} | {r.factorised_fb_tokens_per_s:,.0f} | "
            f"{r.dense_fb_tokens_per_s:,.0f} | {r.factorised_fb_tokens_per_s / r.dense_fb_tokens_per_s:.1f}x | "
            f"{r.factorised_viterbi_tokens_per_s:,.0f} | {r.factorised_viterbi_2threads_tokens_per_s:,.0f} | "
            f"{r.dense_viterbi_tokens_per_s:,.0f} | "
            f"{r.factorised_viterbi_tokens_per_s / r.dense_viterbi_tokens_per_s:.1f}x | "
            f"{r.factorised_edge_counts_tokens_per_s:,.0f} |"
        )
    return "\n".join(lines)


def bench_compose_model(joint_path, test_path, repeats: int = 3, k: int = 5, progress: bool = True) -> dict:
    """A composed model on a real test set, in one run: end-to-end decoding (features,
    scores, search, labels; the model's threads) in each mode, as seconds and as a
    ratio to the cascade; the joint decoding's phases on one thread; and the joint
    Viterbi kernel alone on precomputed scores (1 and 2 threads)."""
    from fstcrf.model.compose import load_joint
    from fstcrf.corpus.conll import read_conll
    from fstcrf.engine.joint import joint_viterbi

    model = load_joint(joint_path)
    test = read_conll(test_path, model.components[0].columns_, allow_missing=model.targets)
    sentences = test.sentences
    N = test.num_tokens
    modes = ("cascade", "kbest", "joint")
    with Progress(N * (len(modes) * repeats + 4), "bench compose (model)", unit="tok", enabled=progress) as bar:
        seconds = {
            mode: N / tokens_per_second(lambda: model.predict(sentences, mode=mode, k=k), N, repeats, bar)
            for mode in modes
        }
        phases = model.joint_phases(sentences)
        bar.update(N)
        jp = model.potentials(sentences)
        bar.update(N)
        kernel = [tokens_per_second(lambda: joint_viterbi(jp, threads=threads), N, 1, bar) for threads in (1, 2)]
    return {
        "model": str(joint_path),
        "test": str(test_path),
        "tokens": N,
        "joint_states": model.space.num_states,
        "k": k,
        "threads": model.threads,
        "kernel_tokens_per_s": kernel[0],
        "kernel_2threads_tokens_per_s": kernel[1],
        "seconds": seconds,
        "joint_phases": phases,
    }


def format_compose_model(result: dict) -> str:
    """The result of :func:`bench_compose_model` as text: seconds and ratios per mode, then the phases."""
    N, seconds, phases = result["tokens"], result["seconds"], result["joint_phases"]
    lines = [
        f"{result['model']} on {result['test']}: {N:,} tokens, {result['joint_states']:,} joint states",
        "",
        f"| decoding (end to end, {result['threads']} threads) | seconds | tok/s | x cascade time |",
        "|---|---|---|---|",
    ]
    for mode, label in (
        ("cascade", "cascade (1-best)"),
        ("kbest", f"cascade, {result['k']}-best lists"),
        ("joint", "joint (exact)"),
    ):
        lines.append(
            f"| {label} | {seconds[mode]:.2f} | {N / seconds[mode]:,.0f} | {seconds[mode] / seconds['cascade']:.2f} |"
        )
    total = sum(phases.values())
    lines += ["", "| joint decoding, phase (1 thread) | seconds | share |", "|---|---|---|"]
    lines += [f"| {name} | {value:.2f} | {value / total:.0%} |" for name, value in phases.items()]
    lines += [
        f"| total | {total:.2f} | 100% |",
        "",
        f"joint Viterbi kernel (scores precomputed): {result['kernel_tokens_per_s']:,.0f} tok/s on 1 thread, "
        f"{result['kernel_2threads_tokens_per_s']:,.0f} tok/s on 2",
    ]
    return "\n".join(lines)
