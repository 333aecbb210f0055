"""``fstcrf bench defaults``: the templates ``fstcrf train`` uses by default, chosen by
cross-validation on training data, and what the defaults score on the test sets.

For each task (CoNLL-2000 chunking, CoNLL-2003 English NER converted to IOB2):

1. k-fold cross-validation on the first ``sentences`` training sentences
   (contiguous folds) of each candidate template, with ``fstcrf train``'s
   other defaults and ``max_iter`` L-BFGS iterations: mean chunk F1 over the
   folds.  The test set is never read here.
2. The whole user process with defaults: ``fstcrf train TRAIN --target T -o
   MODEL`` (no --template), ``fstcrf eval MODEL TEST``; the test F1 it prints.

The NER default is no longer the cross-validation's choice: ``--target ner`` takes
the templates with value lists and the sigma chosen on the development sets
(docs/benchmarks.md, "NER defaults"), which step 2 measures; the candidates of
step 1 stay as the record of the single-valued templates at sigma 10.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from fstcrf.bench.harness import fstcrf_command
from fstcrf.corpus.conll import Corpus, read_conll
from fstcrf.features.defaults import default_template
from fstcrf.errors import FstcrfError
from fstcrf.corpus.evaluate import score_labels
from fstcrf.progress import Progress

#: Task -> (corpus folder, train, test, columns, target, labels in IOB1, candidate templates).
TASKS = {
    "chunk": (
        "conll2000",
        "train.txt",
        "test.txt",
        "word,pos,chunk",
        "chunk",
        False,
        ("sha-pereira", "crfpp", "chunking-extended"),
    ),
    "ner": ("conll2003", "eng.train", "eng.testb", "word,pos,chunk,ner", "ner", True, ("ner", "words", "sha-pereira")),
}


@dataclass
class TaskResult:
    task: str
    cv_f1: dict = field(default_factory=dict)  # template -> mean F1 over the folds
    cv_folds: dict = field(default_factory=dict)  # template -> [F1 per fold]
    chosen_by_cv: str = ""
    default: str = ""  # what fstcrf train picks without --template
    default_test_f1: float = 0.0
    train_seconds: float = 0.0


def _cross_validate(train: Corpus, target: str, template: str, folds: int, max_iter: int, threads: int) -> list[float]:
    """Chunk F1 of each fold's held-out sentences (contiguous folds)."""
    from fstcrf.model.chain import ChainCRF

    bounds = np.linspace(0, len(train), folds + 1).astype(int)
    scores = []
    for first, last in zip(bounds[:-1], bounds[1:]):
        rest = train.sentences[:first] + train.sentences[last:]
        held_out = train.sentences[first:last]
        model = ChainCRF(template=template, max_iter=max_iter, threads=threads).fit(rest, target=target)
        scores.append(score_labels([s[target] for s in held_out], model.predict(held_out)).primary)
    return scores


def _run(command: list[str]) -> str:
    completed = subprocess.run(command, capture_output=True, text=True)
    if completed.returncode != 0:
        raise FstcrfError(f"{' '.join(command)} failed: {completed.stderr.strip()[-2000:]}")
    return completed.stdout


def bench_task(
    task: str,
    data: Path,
    work: Path,
    folds: int = 3,
    sentences: int = 4000,
    max_iter: int = 60,
    threads: int = 2,
    progress: bool = True,
    default_max_iter: int | None = None,
) -> TaskResult:
    folder, train_name, test_name, columns, target, iob1, candidates = TASKS[task]
    train_path, test_path = data / folder / train_name, data / folder / test_name
    if iob1:  # as a user would: fstcrf convert --scheme iob2
        for source in (train_path, test_path):
            converted = work / f"{source.name}.iob2"
            _run(
                fstcrf_command(
                    "convert",
                    str(source),
                    "--scheme",
                    "iob2",
                    "--column",
                    target,
                    "--columns",
                    columns,
                    "-o",
                    str(converted),
                    "-q",
                )
            )
        train_path, test_path = work / f"{train_path.name}.iob2", work / f"{test_path.name}.iob2"
    train = read_conll(train_path, columns)
    sample = train[:sentences]
    result = TaskResult(task)
    with Progress(len(candidates), f"{task}: cross-validating templates", unit="templates", enabled=progress) as bar:
        for template in candidates:
            result.cv_folds[template] = _cross_validate(sample, target, template, folds, max_iter, threads)
            result.cv_f1[template] = float(np.mean(result.cv_folds[template]))
            bar.update()
    result.chosen_by_cv = max(result.cv_f1, key=result.cv_f1.get)
    result.default = default_template(target, columns.split(","))
    model = work / f"{task}-default.model"
    started = time.perf_counter()
    options = ["--max-iter", str(default_max_iter)] if default_max_iter else []
    _run(
        fstcrf_command(
            "train", str(train_path), "--columns", columns, "--target", target, *options, "-o", str(model), "-q"
        )
    )
    result.train_seconds = time.perf_counter() - started
    output = _run(fstcrf_command("eval", str(model), str(test_path), "-q"))
    result.default_test_f1 = _printed_f1(output)
    return result


def _printed_f1(report: str) -> float:
    """The overall FB1 of an ``fstcrf eval`` report."""
    for line in report.splitlines():
        if "FB1:" in line and line.lstrip().startswith("accuracy"):
            return float(line.rsplit("FB1:", 1)[1].split()[0])
    raise FstcrfError(f"no overall FB1 in the eval report: {report[:500]}")


def bench_defaults(
    data: str | os.PathLike,
    tasks=("chunk", "ner"),
    folds: int = 3,
    sentences: int = 4000,
    max_iter: int = 60,
    threads: int = 2,
    work: str | os.PathLike | None = None,
    progress: bool = True,
    default_max_iter: int | None = None,
) -> list[TaskResult]:
    """:func:`bench_task` for each task; ``default_max_iter`` caps the L-BFGS iterations of
    the default model (default: fstcrf train's own)."""
    import tempfile

    with tempfile.TemporaryDirectory(dir=work) as folder:
        return [
            bench_task(task, Path(data), Path(folder), folds, sentences, max_iter, threads, progress, default_max_iter)
            for task in tasks
        ]


def format_defaults(results: list[TaskResult]) -> str:
    lines = ["| task | template | CV F1 (mean of folds) | folds |", "|---|---|---|---|"]
    for result in results:
        for template, f1 in result.cv_f1.items():
            marks = " (CV best)" if template == result.chosen_by_cv else ""
            marks += " (default)" if template == result.default else ""
            lines.append(
                f"| {result.task} | {template}{marks} | {f1:.2f} | "
                f"{', '.join(f'{x:.2f}' for x in result.cv_folds[template])} |"
            )
    lines += ["", "| task | default template | test F1 (fstcrf train + eval) | train seconds |", "|---|---|---|---|"]
    lines += [f"| {r.task} | {r.default} | {r.default_test_f1:.2f} | {r.train_seconds:.0f} |" for r in results]
    return "\n".join(lines)


def defaults_json(results: list[TaskResult]) -> str:
    return json.dumps([asdict(result) for result in results])
