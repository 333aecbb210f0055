"""Benchmarks behind ``fstcrf bench``.

Every comparison is measured in one run on the same data, and reported as a
ratio: the machine is shared and noisy, so absolute seconds mean little.
Each timing is the best of ``repeats`` runs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pynini

from fstcrf.engine import inference, lattice, reference
from fstcrf.errors import FstcrfError
from fstcrf.engine.inference import Potentials
from fstcrf.progress import Progress
from fstcrf.engine.topology import Topology, first_order, kth_order


def best_time(function, repeats: int) -> float:
    """Smallest wall-clock seconds of ``repeats`` calls."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return min(times)


def tokens_per_second(function, tokens: int, repeats: int, bar: Progress) -> float:
    """``tokens`` / the smallest seconds of ``repeats`` calls, advancing ``bar`` by
    ``tokens`` after each call."""
    best = float("inf")
    for _ in range(repeats):
        best = min(best, best_time(function, 1))
        bar.update(tokens)
    return tokens / best


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


def _subset(pot: Potentials, num_sentences: int) -> Potentials:
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
    ``repeats``; ratios are of tokens per second."""
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
            prefix = _subset(pot, int(np.clip(reference_seconds * fb / 400 / 24, 2, pot.num_sequences)))
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


@dataclass
class ComposeRow:
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
        probe = _subset(dense, 2)
        rate = probe.num_tokens / best_time(lambda: inference.forward_backward(probe, edge_counts=False), 1)
        sentences = int(np.clip(reference_seconds / repeats * rate / 24, 2, dense.num_sequences))
        cases.append((name, jp, _subset(dense, sentences)))
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


def hide_labels(corpus, target: str, fraction: float, seed: int = 0):
    """A copy of ``corpus`` with ``fraction`` of the tokens' ``target`` labels, drawn at
    random, replaced by the unknown label "?"."""
    from fstcrf.corpus.conll import Corpus
    from fstcrf.corpus.labels import UNKNOWN_LABEL

    rng = np.random.default_rng(seed)
    hidden = rng.permutation(corpus.num_tokens) < round(fraction * corpus.num_tokens)
    sentences, start = [], 0
    for sentence in corpus.sentences:
        mask = hidden[start : start + len(sentence)]
        labels = [UNKNOWN_LABEL if h else label for h, label in zip(mask, sentence.columns[target])]
        sentences.append(sentence.with_column(target, labels))
        start += len(sentence)
    return Corpus(corpus.column_names, sentences)


def sentences_with_budget(corpus, fraction: float, seed: int = 0):
    """A random subset of whole sentences holding ``fraction`` of the tokens (the last
    sentence drawn may overshoot by less than one sentence)."""
    from fstcrf.corpus.conll import Corpus

    order = np.random.default_rng(seed).permutation(len(corpus.sentences))
    lengths = np.array([len(corpus.sentences[i]) for i in order])
    count = int(np.searchsorted(np.cumsum(lengths), fraction * corpus.num_tokens)) + 1
    return Corpus(corpus.column_names, [corpus.sentences[i] for i in sorted(order[:count])])


def bench_partial(
    folder, fraction: float = 0.5, seed: int = 0, max_iter: int = 200, threads: int = 2, progress: bool = True
) -> list[dict]:
    """Partial labels against fewer full sentences on CoNLL-2000 full chunking: a
    first-order chunker (Sha & Pereira features, L-BFGS, sigma 10) trained with
    ``fraction`` of the training tokens' labels hidden, and one trained on whole
    sentences holding the same fraction of the tokens; both scored on test."""
    import time
    from pathlib import Path

    from fstcrf.corpus.conll import read_conll
    from fstcrf.model.chain import ChainCRF

    train = read_conll(Path(folder) / "train.txt")
    test = read_conll(Path(folder) / "test.txt")
    settings = [
        (
            f"{fraction:.0%} of tokens' labels hidden at random (seed {seed})",
            hide_labels(train, "chunk", fraction, seed),
        ),
        (
            f"{1 - fraction:.0%} of tokens as whole sentences (seed {seed})",
            sentences_with_budget(train, 1 - fraction, seed),
        ),
    ]
    rows = []
    with Progress(len(settings), "bench partial", unit="model", enabled=progress) as bar:
        for name, corpus in settings:
            labelled = sum(label != "?" for labels in corpus.column("chunk") for label in labels)
            started = time.perf_counter()
            model = ChainCRF(max_iter=max_iter, threads=threads).fit(corpus)
            seconds = time.perf_counter() - started
            rows.append(
                {
                    "setting": name,
                    "sentences": len(corpus),
                    "tokens": corpus.num_tokens,
                    "labelled": labelled,
                    "f1": model.score(test).f1,
                    "seconds": seconds,
                    "iterations": model.n_iter_,
                }
            )
            bar.update()
    return rows


def format_partial(rows: list[dict]) -> str:
    lines = [
        "| training data | sentences | tokens | labelled tokens | test F1 | L-BFGS iterations | train s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['setting']} | {r['sentences']:,} | {r['tokens']:,} | {r['labelled']:,} | "
            f"{r['f1']:.2f} | {r['iterations']} | {r['seconds']:.0f} |"
        )
    return "\n".join(lines)


def _train_side(which: str, folder: str, iterations: int, threads: int) -> dict:
    """Train and tag with one toolkit; run in a fresh process so that its
    peak resident memory is its own.  Both use the CRF++ chunking template's
    predicates (fstcrf's extractor names them; CRFsuite gets them as
    attributes), first order, L-BFGS, Gaussian prior c2 = 1 / (2 sigma^2)."""
    import resource
    from pathlib import Path

    from fstcrf.corpus.conll import read_conll
    from fstcrf.corpus.evaluate import score_chunks

    train = read_conll(Path(folder) / "train.txt")
    test = read_conll(Path(folder) / "test.txt")
    result: dict = {"toolkit": which}
    if which == "fstcrf":
        from fstcrf.model.chain import ChainCRF

        model = ChainCRF("crfpp", order=1, max_iter=iterations, threads=threads, sigma=0.5**0.5, tol=1e-12).fit(train)
        seconds = [record["seconds"] for record in model.history_]
        predicted = model.predict(test)
        tag_seconds = best_time(lambda: model.predict(test), 3)
        result["features"] = int(len(model.weights_))
    else:
        import tempfile

        import pycrfsuite

        from fstcrf.features.extractor import FeatureExtractor
        from fstcrf.features.template import CRFPP_CHUNKING

        extractor = FeatureExtractor(CRFPP_CHUNKING).fit(train)
        names = extractor.predicate_names_

        def attributes(corpus):
            """Per sentence, per token: the names of the true predicates."""
            matrix = extractor.transform(corpus)
            tokens = [
                [names[j] for j in matrix.indices[matrix.indptr[r] : matrix.indptr[r + 1]]]
                for r in range(matrix.shape[0])
            ]
            ends = np.cumsum([len(sentence) for sentence in corpus])
            return [tokens[end - len(sentence) : end] for sentence, end in zip(corpus, ends)]

        trainer = pycrfsuite.Trainer(verbose=False)
        for xseq, sentence in zip(attributes(train), train):
            trainer.append(xseq, sentence["chunk"])
        trainer.select("lbfgs")
        trainer.set_params({"c1": 0.0, "c2": 1.0, "max_iterations": iterations, "epsilon": 0.0, "delta": 0.0})
        with tempfile.TemporaryDirectory() as scratch:
            path = str(Path(scratch) / "model.crfsuite")
            trainer.train(path)
            seconds = [it["time"] for it in trainer.logparser.iterations]
            tagger = pycrfsuite.Tagger()
            tagger.open(path)
            test_attributes = attributes(test)
            predicted = [tagger.tag(xseq) for xseq in test_attributes]
            tag_seconds = best_time(lambda: [tagger.tag(xseq) for xseq in test_attributes], 3)
        result["features"] = int(trainer.logparser.last_iteration["active_features"])
    result["iterations"] = len(seconds)
    result["seconds_per_iteration"] = float(np.median(seconds))
    result["tag_tokens_per_s"] = test.num_tokens / tag_seconds
    result["f1"] = score_chunks(test.column("chunk"), predicted).f1
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return result


def bench_train(folder, peer: str = "crfsuite", iterations: int = 50, threads: int = 2) -> list[dict]:
    """fstcrf against python-crfsuite on CoNLL-2000, one after the other in one run.

    Both train a first-order chunker with the same predicates for
    ``iterations`` L-BFGS iterations (sigma^2 = 0.5 matches CRFsuite's c2 = 1)
    and tag the test set.  fstcrf's tagging time includes its own feature
    extraction; CRFsuite's does not include building its attribute lists."""
    import multiprocessing

    if peer != "crfsuite":
        raise FstcrfError(f"unknown peer {peer!r} (expected crfsuite)")
    try:
        import pycrfsuite  # noqa: F401
    except ImportError:
        raise FstcrfError("bench train --vs crfsuite needs python-crfsuite: pip install 'fstcrf[bench]'") from None
    context = multiprocessing.get_context("spawn")
    rows = []
    with Progress(2, "bench train", unit="toolkit") as bar:
        for which in ("fstcrf", "crfsuite"):
            with context.Pool(1) as pool:
                rows.append(pool.apply(_train_side, (which, str(folder), iterations, threads)))
            bar.update()
    return rows


def format_train(rows: list[dict]) -> str:
    ours, peer = rows
    lines = [
        "| toolkit | features | L-BFGS iterations | s / iteration (median) | tagging tok/s | test F1 | peak RSS MiB |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['toolkit']} | {r['features']:,} | {r['iterations']} | {r['seconds_per_iteration']:.3f} | "
            f"{r['tag_tokens_per_s']:,.0f} | {r['f1']:.2f} | {r['peak_rss_mib']:,.0f} |"
        )
    lines.append("")
    lines.append(
        f"s / iteration, fstcrf / CRFsuite: {ours['seconds_per_iteration'] / peer['seconds_per_iteration']:.2f}; "
        f"tagging throughput, fstcrf / CRFsuite: {ours['tag_tokens_per_s'] / peer['tag_tokens_per_s']:.2f}"
    )
    return "\n".join(lines)


def bench_grammar(model_path, test_path, repeats: int = 3) -> list[dict]:
    """Decoding time of a trained model under each shipped grammar that fits
    its labels, as a ratio to unconstrained decoding, with the size of the
    constrained state space.  Parameterised grammars get X = the most
    frequent chunk type of the model."""
    from fstcrf.corpus.conll import read_conll
    from fstcrf.errors import GrammarError
    from fstcrf.grammar import constrain, load_grammar, shipped_grammars
    from fstcrf.model.chain import load_model

    model = load_model(model_path)
    test = read_conll(test_path, model.columns_)
    types = [label[2:] for label in model.labels_ if label.startswith("B-")]
    counts = {t: sum(labels.count(f"B-{t}") for labels in test.column(model.target_)) for t in types}
    params = {"X": max(counts, key=counts.get)} if counts else {}
    model.predict(test)
    free = best_time(lambda: model.predict(test), repeats)
    rows = [
        {
            "grammar": "(none)",
            "states": model.topology_.num_states,
            "edges": model.topology_.num_edges,
            "seconds": free,
            "ratio": 1.0,
        }
    ]
    for name in shipped_grammars():
        grammar = load_grammar(name)
        needed = params if name.startswith("at_") else None
        try:
            topology = constrain(model.topology_, grammar, params=needed)
        except GrammarError as error:
            reason = str(error).split(": ", 1)[-1].split(";")[0]  # drop file:line:col and the label list
            rows.append({"grammar": name, "skipped": reason})
            continue
        model.predict(test, grammar=grammar, params=needed, on_infeasible="unconstrained")
        seconds = best_time(
            lambda: model.predict(test, grammar=grammar, params=needed, on_infeasible="unconstrained"), repeats
        )
        label = name + (f" (X={params['X']})" if needed else "")
        rows.append(
            {
                "grammar": label,
                "states": topology.num_states,
                "edges": topology.num_edges,
                "seconds": seconds,
                "ratio": seconds / free,
            }
        )
    return rows


def format_grammar(rows: list[dict]) -> str:
    lines = ["| grammar | states | edges | decode s (test set) | x unconstrained |", "|---|---|---|---|---|"]
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['grammar']} | - | - | - | not applicable: {r['skipped']} |")
        else:
            lines.append(f"| {r['grammar']} | {r['states']} | {r['edges']} | {r['seconds']:.3f} | {r['ratio']:.2f} |")
    return "\n".join(lines)
