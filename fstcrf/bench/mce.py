"""``fstcrf bench mce``: MAP against MCE-F (Suzuki et al. 2006) on CoNLL-2000 chunking and
CoNLL-2003 English NER, in the paper's setting as far as it is known (docs/mce.md).

For each task:

1. Dev stage.  MAP (L-BFGS on the penalised log-likelihood) on the training part for each
   of the task's sigmas, keeping the one with the best dev F1, then MCE-F from its weights
   for each C of ``mce_cs``, scoring the dev set after every iteration.  The (C, iteration)
   with the best dev F1 is chosen; iteration 0 is the MAP model itself.  Chunking's dev set
   is the last ``dev_sentences`` sentences of train.txt; NER's is eng.testa (the training
   part is then all of eng.train, and MAP keeps its best iteration on eng.testa).
2. Test.  Chunking: MAP on all of train.txt, then the chosen C for the chosen number of
   MCE-F iterations.  NER: the dev-stage models.  Chunk F1 of both on the test set, and
   McNemar's test on their token labels.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from fstcrf.corpus.conll import Corpus, read_conll
from fstcrf.progress import Progress

#: Task -> (folder, train, dev (None: the tail of train), test, columns, target, IOB1 labels,
#: template, MAP sigmas tried on dev, MAP iterations).
TASKS = {
    "chunking": (
        "conll2000",
        "train.txt",
        None,
        "test.txt",
        "word,pos,chunk",
        "chunk",
        False,
        "chunking-extended",
        (1.0, 10.0),
        200,
    ),
    "ner": ("conll2003", "eng.train", "eng.testa", "eng.testb", "word,pos,chunk,ner", "ner", True, "ner", (3.0,), 150),
}
MCE_CS = (1e6, 1e7)


@dataclass
class TaskResult:
    task: str
    map: float = 0.0  # test F1
    map_sigma: float = 0.0  # chosen on dev
    mce_f: float = 0.0
    mce_c: float = 0.0  # chosen on dev
    mce_iterations: int = 0  # chosen on dev (0: the MAP model)
    dev_map: float = 0.0
    dev_curves: dict = field(default_factory=dict)  # str(C) -> [(iteration, objective, dev F1)]
    mcnemar_p: float = 1.0
    tokens_only_map_right: int = 0
    tokens_only_mce_right: int = 0


def _read(path: Path, columns: str, target: str, iob1: bool) -> Corpus:
    """The corpus at path; IOB1 labels of column target rewritten as IOB2 (fstcrf convert)."""
    corpus = read_conll(path, columns)
    if iob1:
        from fstcrf.corpus.schemes import convert

        for sentence in corpus.sentences:
            sentence.columns[target] = convert(sentence.columns[target], "iob2")
    return corpus


def bench_task(
    task: str,
    data: Path,
    map_iter: int | None = None,
    mce_iter: int = 30,
    mce_cs=MCE_CS,
    dev_sentences: int = 936,
    threads: int = 2,
    progress: bool = True,
) -> TaskResult:
    from fstcrf.corpus.evaluate import mcnemar, score_labels
    from fstcrf.model.chain import ChainCRF

    folder, train_name, dev_name, test_name, columns, target, iob1, template, sigmas, default_iter = TASKS[task]
    map_iter = default_iter if map_iter is None else map_iter
    train = _read(data / folder / train_name, columns, target, iob1)
    test = _read(data / folder / test_name, columns, target, iob1)
    if dev_name is None:
        dev_sentences = min(dev_sentences, len(train) // 5)  # a small corpus keeps most for training
        fit_part = Corpus(train.column_names, train.sentences[:-dev_sentences])
        dev = Corpus(train.column_names, train.sentences[-dev_sentences:])
    else:
        fit_part, dev = train, _read(data / folder / dev_name, columns, target, iob1)
    result = TaskResult(task)

    def map_model(corpus, sigma, dev_set=None):
        return ChainCRF(template, sigma=sigma, max_iter=map_iter, threads=threads).fit(
            corpus, target=target, dev=dev_set
        )

    def mce_model(corpus, start, c, iterations, dev_set=None):
        return ChainCRF(template, algorithm="mce-f", mce_c=c, mce_iter=iterations, threads=threads).fit(
            corpus, target=target, dev=dev_set, init=start
        )

    with Progress(len(sigmas) + len(mce_cs) + 2, f"{task}: MAP and MCE-F", unit="runs", enabled=progress) as bar:
        dev_starts = {}
        for sigma in sigmas:  # NER's dev set is not training data: MAP keeps its best iteration on it
            dev_starts[sigma] = map_model(fit_part, sigma, None if dev_name is None else dev)
            bar.update()
        result.map_sigma = max(sigmas, key=lambda sigma: (dev_starts[sigma].score(dev).f1, -sigmas.index(sigma)))
        dev_start = dev_starts[result.map_sigma]
        best, tuned_models = (-1.0, 0.0, 0), {}
        for c in mce_cs:
            tuned = tuned_models[c] = mce_model(fit_part, dev_start, c, mce_iter, dev)
            curve = [(r["iteration"], r["objective"], r["dev_score"]) for r in tuned.history_]
            result.dev_curves[f"{c:g}"] = curve
            result.dev_map = curve[0][2]
            iteration, _, score = max(curve, key=lambda point: (point[2], -point[0]))
            best = max(best, (score, c, iteration), key=lambda b: (b[0], -b[2]))
            bar.update()
        _, result.mce_c, result.mce_iterations = best
        if dev_name is None:
            start = map_model(train, result.map_sigma)
            bar.update()
            final = mce_model(train, start, result.mce_c, result.mce_iterations) if result.mce_iterations > 0 else start
        else:  # the dev set is not training data: the dev-stage models are final
            start = dev_start
            final = tuned_models[result.mce_c] if result.mce_iterations > 0 else start
            bar.update()
        bar.update()
    gold = test.column(target)
    predicted_map, predicted_mce = start.predict(test), final.predict(test)
    result.map, result.mce_f = score_labels(gold, predicted_map).f1, score_labels(gold, predicted_mce).f1
    test_result = mcnemar(gold, predicted_map, predicted_mce)
    result.mcnemar_p = float(test_result.p_value)
    result.tokens_only_map_right, result.tokens_only_mce_right = int(test_result.n01), int(test_result.n10)
    return result


def bench_mce(data, tasks=("chunking", "ner"), **options) -> list[TaskResult]:
    return [bench_task(task, Path(data), **options) for task in tasks]


def mce_json(results: list[TaskResult]) -> str:
    """{"chunking": {"map": F1, "mce_f": F1, ...}, "ner": {...}}."""
    return json.dumps(
        {result.task: {key: value for key, value in asdict(result).items() if key != "task"} for result in results}
    )


def format_mce(results: list[TaskResult]) -> str:
    lines = [
        "| task | MAP test F1 (sigma) | MCE-F test F1 | C, iterations (dev) | dev F1 MAP -> MCE-F | McNemar p |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        dev_mce = max(point[2] for curve in r.dev_curves.values() for point in curve)
        lines.append(
            f"| {r.task} | {r.map:.2f} ({r.map_sigma:g}) | {r.mce_f:.2f} | {r.mce_c:g}, {r.mce_iterations} | "
            f"{r.dev_map:.2f} -> {dev_mce:.2f} | {r.mcnemar_p:.3g} |"
        )
    return "\n".join(lines)
