"""Transfer with the NER labels latent: joint training of the seminar composition.

Sutton & McCallum's (2005) transfer task as :mod:`fstcrf.experiments.transfer` runs
it (the word-only CoNLL-2003 NER CRF below a seminar CRF that reads its labels, 10
seeded random 50/50 splits of the announcements), with a third system beside the
cascade and joint decoding: the composition **trained jointly** on each split's
training announcements, whose NER labels are never observed (latent, marginalised:
log sum_y p(y, z | x) over the NER labels y of the seminar labels z).  Training
starts from the NER model and the seminar model trained on the NER 1-best (the
cascade's reader), with the Gaussian prior centred on them, so the NER model is
pulled towards the newswire weights it learnt and moves only where the seminar
labels pay for it.

The prior's sigma and the number of L-BFGS iterations are chosen on the dev side of
the first split (:func:`~fstcrf.experiments.transfer.dev_side`: a quarter of its
training announcements held out), by the mean F1 of speaker and location, and then
used on every split::

    python -m fstcrf.experiments.latent_transfer --data DIR --json out.json   # DIR holds conll2003/, seminars/
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from fstcrf.corpus.conll import Sentence
from fstcrf.experiments.transfer import (
    SCORE_FIELDS,
    Document,
    PairedTest,
    column,
    decode_joint,
    dev_side,
    flatten_documents,
    ner_model,
    paired_tests,
    pick_documents,
    random_splits,
    scores,
    seminar_documents,
    train_reader,
    with_ner,
)
from fstcrf.model.chain import ChainCRF
from fstcrf.model.compose import compose

#: The prior sigmas tried on the first split's dev side.
SIGMAS = (1.0, 3.0, 10.0, 30.0)
#: The L-BFGS iterations of the dev runs (each iteration's dev score is recorded).
DEV_ITERATIONS = 30
#: The fields whose mean F1 chooses the settings (the two the cascade leaves room on).
CHOOSING_FIELDS = ("speaker", "location")


@dataclass
class SplitScores:
    """F1 [system][field] of one split (systems: cascade, joint decoding, joint training)."""

    name: str
    f1: dict[str, dict[str, float]]
    training_seconds: float


def without_ner(documents: list[Document]) -> list[Sentence]:
    """The sentences of ``documents`` without their ``ner`` column (the NER labels latent)."""
    return [
        Sentence({name: values for name, values in sentence.columns.items() if name != "ner"})
        for sentence in flatten_documents(documents)
    ]


@dataclass
class FieldScore:
    """A dev score as L-BFGS's selection reads it: ``primary`` (percent) and its name."""

    primary: float
    metric: str = "speaker/location F1"


def choose_settings(ner: ChainCRF, documents: list[Document], split, threads: int) -> tuple[float, int, dict]:
    """(sigma, iterations): the pair whose jointly trained model scores the best mean
    speaker and location F1 on the dev side of ``split``, and every pair's dev F1."""
    side = dev_side(split)
    train, dev = pick_documents(documents, side.train), pick_documents(documents, side.test)
    reader = train_reader(ner, train, threads=threads)
    words, gold = column(dev, "word"), column(dev, "field")

    def dev_score(candidate) -> FieldScore:
        fields = scores(words, gold, decode_joint(candidate, dev, "joint").fields)
        return FieldScore(float(np.mean([fields[name] for name in CHOOSING_FIELDS])))

    dev_f1: dict[str, float] = {}
    for sigma in SIGMAS:
        joint = compose([ner, reader], threads=threads)
        joint.fit(without_ner(train), sigma=sigma, max_iter=DEV_ITERATIONS, dev_score=dev_score)
        for record in joint.history_:
            dev_f1[f"{sigma} {record['iteration']}"] = record["dev_score"]
        print(f"dev: sigma {sigma}: kept iteration {joint.best_iteration_}", file=sys.stderr, flush=True)
    best = max(dev_f1, key=lambda key: dev_f1[key])
    sigma, iterations = best.split()
    return float(sigma), int(iterations), dev_f1


def run_split(ner: ChainCRF, documents: list[Document], split, sigma: float, iterations: int, threads: int):
    """Cascade, joint decoding and joint training on one split."""
    train, test = pick_documents(documents, split.train), pick_documents(documents, split.test)
    reader = train_reader(ner, train, threads=threads)
    separate = compose([ner, reader], threads=threads)
    words, gold = column(test, "word"), column(test, "field")
    f1 = {mode: scores(words, gold, decode_joint(separate, test, mode).fields) for mode in ("cascade", "joint")}
    began = time.perf_counter()
    trained = compose([ner, reader], threads=threads).fit(without_ner(train), sigma=sigma, max_iter=iterations)
    seconds = time.perf_counter() - began
    f1["joint training"] = scores(words, gold, decode_joint(trained, test, "joint").fields)
    return SplitScores(split.name, f1, seconds)


def table(results: list[SplitScores], tests: dict[str, PairedTest]) -> str:
    """Mean F1 per system and field, and joint training − cascade with its paired t-test."""
    systems = ("cascade", "joint", "joint training")
    lines = ["| F1 | " + " | ".join(systems) + " | joint training − cascade (t-test p, wins/losses) |"]
    lines.append("|---|" + "---:|" * len(systems) + "---|")
    for name in SCORE_FIELDS:
        means = [np.mean([result.f1[system][name] for result in results]) for system in systems]
        test = tests[name]
        lines.append(
            f"| {name} | "
            + " | ".join(f"{mean:.1f}" for mean in means)
            + f" | {test.mean_difference:+.1f} (p {test.t_p:.2g}, {test.wins}/{test.losses}) |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="folder holding conll2003/ and seminars/")
    parser.add_argument("--splits", type=int, default=10, help="random splits (default %(default)s)")
    parser.add_argument("--threads", type=int, default=2, help="threads (default %(default)s)")
    parser.add_argument("--sigma", type=float, default=None, help="skip the dev choice: this sigma (default: chosen)")
    parser.add_argument("--iterations", type=int, default=None, help="with --sigma: the iterations (default: chosen)")
    parser.add_argument("--json", default=None, help="write the results here (default: none)")
    args = parser.parse_args(argv)
    data = Path(args.data)
    ner = ner_model(data / "conll2003", threads=args.threads).model
    documents, _ = seminar_documents(data / "seminars")
    documents = with_ner(documents, ner)
    splits = random_splits(len(documents), args.splits)
    dev_f1: dict = {}
    if args.sigma is None:
        sigma, iterations, dev_f1 = choose_settings(ner, documents, splits[0], args.threads)
    else:
        sigma, iterations = args.sigma, args.iterations or DEV_ITERATIONS
    print(f"sigma {sigma}, {iterations} iterations", file=sys.stderr, flush=True)
    results = []
    for split in splits:
        results.append(run_split(ner, documents, split, sigma, iterations, args.threads))
        print(f"{split.name}: {results[-1].f1}", file=sys.stderr, flush=True)
    tests = paired_tests(results, "joint training", "cascade")  # type: ignore[arg-type]
    print(table(results, tests))
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "sigma": sigma,
                    "iterations": iterations,
                    "dev_f1": dev_f1,
                    "splits": [asdict(result) for result in results],
                    "tests": {name: asdict(test) for name, test in tests.items()},
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
