"""Does joint training of a composition pay?  CoNLL-2000 part of speech x chunking.

The last ``--dev-sentences`` sentences of train.txt are the dev set; the first
1000, 2000, 4000 and all of the rest are the training sizes.  At each size:

1. a part-of-speech CRF reading words (template ``pos``) and a chunker reading its
   tags at the same token (``chunking-reads-pos``, trained on the gold tags), each
   trained separately (L-BFGS, the iteration kept by dev score), as
   ``docs/composition.md`` trains them;
2. the **cascade** (the tagger's 1-best tags feed the chunker) and **joint
   decoding** of the two separate models;
3. **joint training** of the composition from those models (both gold columns
   observed, the Gaussian prior centred on the separate weights, the iteration kept
   by dev chunk F1), decoded jointly.

Each side is scored on test.txt (conlleval chunk F1 and tag accuracy), with
McNemar's test on the chunk labels of joint training against the cascade, and the
seconds of an L-BFGS iteration of joint training against the sum of the separate
models' (each model's mean over its own iterations)::

    python -m fstcrf.experiments.joint_training --data DIR --json out.json
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from fstcrf.corpus.conll import Sentence, read_conll
from fstcrf.corpus.evaluate import mcnemar, score_labels
from fstcrf.errors import FstcrfError
from fstcrf.model.chain import ChainCRF
from fstcrf.model.compose import JointModel, compose

SIZES = ("1000", "2000", "4000", "all")


@dataclass
class Side:
    """One system on the test set: chunk F1, tag accuracy, chunk-label McNemar p against the cascade."""

    chunk_f1: float
    pos_accuracy: float
    p_vs_cascade: float | None = None


@dataclass
class SizeResult:
    """One training size: the three systems and what training cost."""

    sentences: int
    cascade: Side
    joint_decoding: Side
    joint_training: Side
    joint_iterations: int
    kept_iteration: int
    joint_seconds: float
    joint_seconds_per_iteration: float
    separate_seconds_per_iteration: float
    separate_seconds: float


def mean_iteration_seconds(history: list[dict]) -> float:
    """The mean training seconds of the iterations of a history (iteration 0 aside)."""
    seconds = [record["seconds"] for record in history if record["iteration"] > 0]
    return float(np.mean(seconds)) if seconds else 0.0


def separate_models(train: list[Sentence], dev: list[Sentence], threads: int) -> tuple[ChainCRF, ChainCRF, float]:
    """The tagger and the chunker trained separately, and their training seconds."""
    began = time.perf_counter()
    tagger = ChainCRF(template="pos", max_iter=100, threads=threads).fit(train, target="pos", dev=dev)
    chunker = ChainCRF(template="chunking-reads-pos", reads="pos", max_iter=150, threads=threads).fit(
        train, target="chunk", dev=dev
    )
    return tagger, chunker, time.perf_counter() - began


def score_side(labels: list[list[list[str]]], test: list[Sentence], cascade: list[list[str]] | None = None) -> Side:
    """Chunk F1 and tag accuracy of decoded [tags, chunks]; McNemar against the cascade's chunks."""
    gold_chunks, gold_tags = [s["chunk"] for s in test], [s["pos"] for s in test]
    side = Side(score_labels(gold_chunks, labels[1]).primary, score_labels(gold_tags, labels[0]).primary)
    if cascade is not None:
        side.p_vs_cascade = mcnemar(gold_chunks, labels[1], cascade).p_value
    return side


def run_size(
    train: list[Sentence], dev: list[Sentence], test: list[Sentence], max_iter: int, sigma: float, threads: int
) -> SizeResult:
    """The three systems at one training size."""
    tagger, chunker, separate_seconds = separate_models(train, dev, threads)
    separate = compose([tagger, chunker], threads=threads)
    cascade_labels = separate.predict(test, mode="cascade")
    cascade = score_side(cascade_labels, test)
    decoded = score_side(separate.predict(test), test, cascade_labels[1])
    began = time.perf_counter()
    trained: JointModel = compose([tagger, chunker], threads=threads).fit(train, dev, sigma=sigma, max_iter=max_iter)
    joint_seconds = time.perf_counter() - began
    return SizeResult(
        len(train),
        cascade,
        decoded,
        score_side(trained.predict(test), test, cascade_labels[1]),
        trained.n_iter_,
        trained.best_iteration_,
        joint_seconds,
        mean_iteration_seconds(trained.history_),
        mean_iteration_seconds(tagger.history_) + mean_iteration_seconds(chunker.history_),
        separate_seconds,
    )


def table(results: dict[str, SizeResult]) -> str:
    """The results as a Markdown table."""
    lines = [
        "| training sentences | cascade F1 (tags) | joint decoding F1 (tags) | joint training F1 (tags) "
        "| joint training − cascade | McNemar p | s / iteration: joint, separate sum | joint training s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for result in results.values():
        c, d, j = result.cascade, result.joint_decoding, result.joint_training
        lines.append(
            f"| {result.sentences} | {c.chunk_f1:.2f} ({c.pos_accuracy:.2f}) | {d.chunk_f1:.2f} ({d.pos_accuracy:.2f}) "
            f"| {j.chunk_f1:.2f} ({j.pos_accuracy:.2f}) | {j.chunk_f1 - c.chunk_f1:+.2f} | {j.p_vs_cascade:.2g} "
            f"| {result.joint_seconds_per_iteration:.2f}, {result.separate_seconds_per_iteration:.2f} "
            f"| {result.joint_seconds:.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="folder holding conll2000/train.txt and test.txt")
    parser.add_argument("--sizes", default=",".join(SIZES), help="training sizes (default %(default)s)")
    parser.add_argument("--dev-sentences", type=int, default=936, help="dev sentences (default %(default)s)")
    parser.add_argument("--max-iter", type=int, default=50, help="joint L-BFGS iterations (default %(default)s)")
    parser.add_argument("--sigma", type=float, default=10.0, help="the prior's sigma (default %(default)s)")
    parser.add_argument("--threads", type=int, default=2, help="threads (default %(default)s)")
    parser.add_argument("--test-sentences", type=int, default=None, help="test on the first N (default all)")
    parser.add_argument("--json", default=None, help="write the results here (default: none)")
    args = parser.parse_args(argv)
    folder = Path(args.data) / "conll2000"
    if not (folder / "train.txt").is_file():
        raise FstcrfError(f"{folder}/train.txt not found")
    sentences = read_conll(folder / "train.txt").sentences
    dev, pool = sentences[-args.dev_sentences :], sentences[: -args.dev_sentences]
    test = read_conll(folder / "test.txt").sentences[: args.test_sentences]
    results = {}
    for size in args.sizes.split(","):
        train = pool if size == "all" else pool[: int(size)]
        results[size] = run_size(train, dev, test, args.max_iter, args.sigma, args.threads)
        print(f"{size}: {asdict(results[size])}", file=sys.stderr, flush=True)
    print(table(results))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MiB")
    if args.json:
        Path(args.json).write_text(json.dumps({k: asdict(v) for k, v in results.items()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
