"""``fstcrf bench nonlocal``: label consistency on CoNLL-2003 English and CoNLL-2002 Dutch.

For each language: train (or reuse from the cache folder) the local NER CRF,
estimate Finkel et al.'s consistency penalties from the training documents,
choose the penalty scale and the block size on the development set (eng.testa,
ned.testa) by F1, then on the test set (eng.testb, ned.testb) report

* the local model's Viterbi F1 and the non-local F1 of the block sampler over
  ``seeds`` seeds (mean, standard deviation), McNemar's test of seed 0 against
  the local model, and the gibbs sampler's F1 at ``gibbs_sweeps`` sweeps;
* the whole-process time of ``fstcrf tag`` with and without ``--nonlocal``,
  run side by side as subprocesses (start-up, model loading, reading,
  features, decoding, writing), and their ratio;
* with ``plot``, F1 on the test set against the number of sweeps for both
  samplers (the schedule is the same linear one, stretched over the sweeps).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from fstcrf.corpus.conll import Corpus, read_conll, write_conll
from fstcrf.errors import FstcrfError
from fstcrf.corpus.evaluate import mcnemar, score_labels
from fstcrf.model.chain import ChainCRF
from fstcrf.corpus.schemes import convert

logger = logging.getLogger(__name__)

#: Language -> (folder, train, dev, test, columns, template, converted from IOB1).
CORPORA = {
    "eng": ("conll2003", "eng.train", "eng.testa", "eng.testb", "word,pos,chunk,ner", "ner", True),
    "ned": ("conll2002", "ned.train", "ned.testa", "ned.testb", "word,pos,ner", "ner-pos", False),
}
#: Settings of the local CRF (sigma chosen on eng.testa; the best dev iteration is kept).
LOCAL_SETTINGS = {"sigma": 3.0, "max_iter": 250, "grammar": "iob2"}
SCALES = (0.5, 1.0, 2.0)
BLOCK_SIZES = (0, 4)
CURVE_SWEEPS = {"block": (1, 2, 5, 10, 20, 50), "gibbs": (1, 2, 5, 10)}


@dataclass
class LanguageResult:
    language: str
    local_f1: float
    chosen_scale: float
    chosen_block_size: int
    dev: dict  # "scale,block" -> dev F1, and "local" -> dev F1
    block_f1: list[float]  # per seed, on the test set
    gibbs_f1: float
    gibbs_sweeps: int
    mcnemar_p: float
    local_seconds: float = 0.0  # whole process, fstcrf tag
    nonlocal_seconds: float = 0.0
    curve: dict = field(default_factory=dict)  # sampler -> [(sweeps, F1)]


def _read(folder: Path, file_name: str, columns: str, iob1: bool) -> Corpus:
    corpus = read_conll(folder / file_name, columns)
    if iob1:
        corpus = Corpus(
            corpus.column_names,
            [sentence.with_column("ner", convert(sentence["ner"], "iob2")) for sentence in corpus],
            corpus.path,
            corpus.separator,
            corpus.trailing_docstart_lines,
        )
    return corpus


def _local_model(
    language: str, train: Corpus, dev: Corpus, cache: Path, threads: int, max_iter: int = LOCAL_SETTINGS["max_iter"]
) -> Path:
    """The path of the cached local model, trained first (for ``max_iter`` L-BFGS iterations) if absent;
    its name holds a digest of the settings and of the training and development sentences, so that a
    model trained on other data (the stand-ins of a documentation run) is never taken for it."""
    from fstcrf.document.decode import estimate_consistency

    folder, *_, columns, template, _ = CORPORA[language]
    settings = {**LOCAL_SETTINGS, "max_iter": max_iter}
    digest = hashlib.sha256(json.dumps([language, columns, template, settings, 1]).encode())
    for corpus in (train, dev):
        for name in corpus.column_names:
            digest.update(json.dumps(corpus.column(name)).encode())
    key = digest.hexdigest()[:12]
    path = cache / f"nonlocal-{language}-{key}.model"
    if not path.exists():
        model = ChainCRF(template, threads=threads, **settings)
        model.fit(train, target="ner", dev=dev)
        model.consistency_ = estimate_consistency(train, "ner")
        cache.mkdir(parents=True, exist_ok=True)
        model.save(path)
    return path


def _f1(gold, predicted) -> float:
    return score_labels(gold, predicted).primary


def _decode(model, corpus, scale, block_size, sweeps, seed, sampler="block"):
    from fstcrf.document.decode import decode_documents, model_factors

    labels, _ = decode_documents(
        model, corpus, model_factors(model, ["consistency"], scale), sampler, sweeps, block_size=block_size, seed=seed
    )
    return labels


#: The command a user runs: the installed script, else the same entry point through this Python.
_FSTCRF = (
    [shutil.which("fstcrf")]
    if shutil.which("fstcrf")
    else [sys.executable, "-c", "import sys; from fstcrf.cli import main; sys.exit(main())"]
)


def _whole_process(model_path: Path, test_path: Path, columns: str, options: list[str], output: Path) -> float:
    """Wall seconds of one ``fstcrf tag`` process."""
    command = [
        *_FSTCRF,
        "tag",
        str(model_path),
        str(test_path),
        "--columns",
        columns,
        "-q",
        "-o",
        str(output),
        *options,
    ]
    started = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if completed.returncode != 0:
        raise FstcrfError(f"{' '.join(command)} failed: {completed.stderr.strip()}")
    return seconds


def bench_language(
    language: str,
    data: Path,
    cache: Path,
    seeds: int = 5,
    sweeps: int = 20,
    gibbs_sweeps: int = 10,
    threads: int = 2,
    curve: bool = False,
    repeats: int = 2,
    max_iter: int = LOCAL_SETTINGS["max_iter"],
    curve_sweeps: int = max(CURVE_SWEEPS["block"]),
) -> LanguageResult:
    """The figures of one language (see the module doc)."""
    folder, train_name, dev_name, test_name, columns, _, iob1 = CORPORA[language]
    where = data / folder
    if not (where / train_name).exists():
        raise FstcrfError(f"bench nonlocal needs {where / train_name}: give --data DIR holding {folder}/")
    train, dev, test = (_read(where, name, columns, iob1) for name in (train_name, dev_name, test_name))
    logger.info("%s: the local model (cached in %s)", language, cache)
    model_path = _local_model(language, train, dev, cache, threads, max_iter)
    model = ChainCRF.load(model_path)
    logger.info("%s: choosing the penalty scale and block size on %s", language, dev_name)
    dev_gold, test_gold = dev.column("ner"), test.column("ner")
    dev_scores = {"local": _f1(dev_gold, model.predict(dev))}
    for scale in SCALES:
        for block_size in BLOCK_SIZES:
            dev_scores[f"{scale},{block_size}"] = _f1(dev_gold, _decode(model, dev, scale, block_size, sweeps, 0))
    chosen = max((key for key in dev_scores if key != "local"), key=dev_scores.get)
    scale, block_size = float(chosen.split(",")[0]), int(chosen.split(",")[1])
    logger.info("%s: scale %g, block size %d; decoding %s", language, scale, block_size, test_name)
    local = model.predict(test)
    block_runs = [_decode(model, test, scale, block_size, sweeps, seed) for seed in range(seeds)]
    gibbs = _decode(model, test, scale, block_size, gibbs_sweeps, 0, "gibbs")
    result = LanguageResult(
        language,
        _f1(test_gold, local),
        scale,
        block_size,
        dev_scores,
        [_f1(test_gold, labels) for labels in block_runs],
        _f1(test_gold, gibbs),
        gibbs_sweeps,
        mcnemar(test_gold, local, block_runs[0]).p_value,
    )
    if curve:
        logger.info("%s: F1 against sweeps", language)
        result.curve = {
            sampler: [
                (count, _f1(test_gold, _decode(model, test, scale, block_size, count, 0, sampler)))
                for count in counts
                if count <= curve_sweeps
            ]
            for sampler, counts in CURVE_SWEEPS.items()
        }
    test_iob2 = cache / f"nonlocal-{language}-test.iob2"
    write_conll(test, test_iob2)
    output = cache / f"nonlocal-{language}-tagged.txt"
    options = [
        "--nonlocal",
        "consistency",
        "--sweeps",
        str(sweeps),
        "--consistency-scale",
        str(scale),
        "--block-size",
        str(block_size),
    ]
    logger.info("%s: timing fstcrf tag with and without --nonlocal, whole process", language)
    local_times, nonlocal_times = [], []
    for _ in range(repeats):  # side by side, alternating
        local_times.append(_whole_process(model_path, test_iob2, columns, [], output))
        nonlocal_times.append(_whole_process(model_path, test_iob2, columns, options, output))
    result.local_seconds, result.nonlocal_seconds = min(local_times), min(nonlocal_times)
    return result


def bench_nonlocal(
    data: str | os.PathLike,
    languages=("eng", "ned"),
    cache: str | os.PathLike | None = None,
    seeds: int = 5,
    sweeps: int = 20,
    gibbs_sweeps: int = 10,
    threads: int = 2,
    plot: str | None = None,
    max_iter: int = LOCAL_SETTINGS["max_iter"],
    curve_sweeps: int = max(CURVE_SWEEPS["block"]),
) -> list[LanguageResult]:
    """:func:`bench_language` for each language (local models trained for ``max_iter`` L-BFGS
    iterations); with ``plot``, the F1-against-sweeps plot of English, at the sweep counts
    of :data:`CURVE_SWEEPS` up to ``curve_sweeps``."""
    cache = Path(cache) if cache else Path.home() / ".cache" / "fstcrf"
    results = [
        bench_language(
            language,
            Path(data),
            cache,
            seeds,
            sweeps,
            gibbs_sweeps,
            threads,
            curve=plot is not None and language == "eng",
            max_iter=max_iter,
            curve_sweeps=curve_sweeps,
        )
        for language in languages
    ]
    if plot:
        _plot(results[0], plot)
    return results


def _plot(result: LanguageResult, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 4))
    for sampler, points in result.curve.items():
        axes.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=sampler)
    axes.axhline(result.local_f1, color="grey", linestyle="--", label="local Viterbi")
    axes.set_xscale("log")
    axes.set_xlabel("sweeps (linear annealing from T=1 to 0.05)")
    axes.set_ylabel(f"{result.language} test F1")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def format_nonlocal(results: list[LanguageResult]) -> str:
    lines = []
    for r in results:
        block = np.array(r.block_f1)
        lines += [
            f"== {r.language}: label consistency (scale {r.chosen_scale:g}, block size {r.chosen_block_size}, "
            f"chosen on the dev set)",
            "dev F1: " + ", ".join(f"{key} {value:.2f}" for key, value in r.dev.items()),
            f"local Viterbi F1      {r.local_f1:.2f}",
            f"block sampler F1      {block.mean():.2f} +- {block.std(ddof=1) if len(block) > 1 else 0:.3f} "
            f"over {len(block)} seeds (gain {block.mean() - r.local_f1:+.2f}; McNemar p = {r.mcnemar_p:.3g})",
            f"gibbs sampler F1      {r.gibbs_f1:.2f} ({r.gibbs_sweeps} sweeps, seed 0)",
            f"whole process: fstcrf tag {r.local_seconds:.2f} s, with --nonlocal {r.nonlocal_seconds:.2f} s "
            f"(ratio {r.nonlocal_seconds / r.local_seconds:.2f})",
        ]
        for sampler, points in r.curve.items():
            lines.append(f"{sampler} F1 by sweeps: " + ", ".join(f"{count}: {f1:.2f}" for count, f1 in points))
    return "\n".join(lines)


def nonlocal_json(results: list[LanguageResult]) -> dict:
    return {r.language: asdict(r) for r in results}
