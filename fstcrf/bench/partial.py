"""``fstcrf bench partial``: partial labels against fewer whole sentences on
CoNLL-2000 chunking."""

from __future__ import annotations

import numpy as np

from fstcrf.progress import Progress


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
    """The rows of :func:`bench_partial` as a Markdown table."""
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
