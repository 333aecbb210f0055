"""sklearn-crfsuite's CoNLL-2002 Spanish NER tutorial run with sklearn_crfsuite
and with fstcrf.sklearn on the same features.

Each tool runs in its own fresh process (``python -m fstcrf.bench.sklearn
fit TOOL ...``), which reads esp.train and esp.testb, builds the tutorial's
token dicts, fits ``CRF(algorithm="lbfgs", c1=0.1, c2=0.1,
max_iterations=100, all_possible_transitions=True)`` and tags esp.testb; its
peak resident memory comes from ``os.wait4``.  The parent scores both
taggings: the tutorial's metric (token F1 over the labels other than O,
scikit-learn's f1_score with average="weighted") and conlleval's chunk F1.
With ``search``, each tool also runs the tutorial's RandomizedSearchCV over
c1 and c2 (3 folds, ``search_iter`` candidates, n_jobs=2) on esp.train.

This module imports only the standard library at the top, so that the
sklearn_crfsuite process loads nothing of fstcrf.  fstcrf's modules are
compiled to bytecode first (:func:`fstcrf.bench.harness.compile_bytecode`),
as a pip install leaves them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOOLS = ("sklearn-crfsuite", "fstcrf")
#: The tutorial's estimator settings.
TUTORIAL_SETTINGS = {
    "algorithm": "lbfgs",
    "c1": 0.1,
    "c2": 0.1,
    "max_iterations": 100,
    "all_possible_transitions": True,
}
TRAIN_FILE, TEST_FILE = "conll2002/esp.train", "conll2002/esp.testb"


# ---------------------------------------------------------------------------
# The tutorial's features (both processes)


def read_sentences(path: str | os.PathLike, limit: int | None = None) -> list[list[tuple[str, ...]]]:
    """The sentences of a CoNLL-2002 file, each a list of (word, pos, label) triples."""
    sentences, current = [], []
    with open(path, encoding="utf-8") as stream:
        for line in stream:
            fields = line.split()
            if fields:
                current.append(tuple(fields))
            elif current:
                sentences.append(current)
                current = []
    if current:
        sentences.append(current)
    return sentences[:limit]


def _word_features(word: str, pos: str, prefix: str) -> dict:
    return {
        prefix + "word.lower()": word.lower(),
        prefix + "word.istitle()": word.istitle(),
        prefix + "word.isupper()": word.isupper(),
        prefix + "postag": pos,
        prefix + "postag[:2]": pos[:2],
    }


def word2features(sentence: list[tuple[str, ...]], i: int) -> dict:
    """The tutorial's features of token i: a bias, the word lower-cased, its last
    three and two characters, whether it is upper-case, title-case or digits,
    the POS tag and its first two characters; the same word and POS facts of
    the neighbours at -1 and +1 (prefixed "-1:" and "+1:"), else BOS / EOS."""
    word, pos = sentence[i][0], sentence[i][1]
    features = {
        "bias": 1.0,
        "word.lower()": word.lower(),
        "word[-3:]": word[-3:],
        "word[-2:]": word[-2:],
        "word.isupper()": word.isupper(),
        "word.istitle()": word.istitle(),
        "word.isdigit()": word.isdigit(),
        "postag": pos,
        "postag[:2]": pos[:2],
    }
    if i > 0:
        features.update(_word_features(sentence[i - 1][0], sentence[i - 1][1], "-1:"))
    else:
        features["BOS"] = True
    if i < len(sentence) - 1:
        features.update(_word_features(sentence[i + 1][0], sentence[i + 1][1], "+1:"))
    else:
        features["EOS"] = True
    return features


def sent2features(sentence: list[tuple[str, ...]]) -> list[dict]:
    """The feature dicts [T] of a sentence."""
    return [word2features(sentence, i) for i in range(len(sentence))]


def sent2labels(sentence: list[tuple[str, ...]]) -> list[str]:
    """The labels [T] of a sentence (its last field)."""
    return [token[-1] for token in sentence]


# ---------------------------------------------------------------------------
# One tool in its own process


def _estimator(tool: str, **settings):
    if tool == "fstcrf":
        from fstcrf.sklearn import CRF
    else:
        from sklearn_crfsuite import CRF
    return CRF(**settings)


def _fit_child(tool: str, train_path: str, test_path: str, output: str, limit: int | None) -> None:
    """Fit and tag in this process; write timings and the predicted labels to ``output``."""
    started = time.perf_counter()
    train, test = read_sentences(train_path, limit), read_sentences(test_path, limit)
    X_train, y_train = [sent2features(s) for s in train], [sent2labels(s) for s in train]
    X_test = [sent2features(s) for s in test]
    features = time.perf_counter() - started
    crf = _estimator(tool, **TUTORIAL_SETTINGS)
    started = time.perf_counter()
    crf.fit(X_train, y_train)
    fit = time.perf_counter() - started
    started = time.perf_counter()
    predicted = [list(labels) for labels in crf.predict(X_test)]
    predict = time.perf_counter() - started
    Path(output).write_text(
        json.dumps(
            {
                "features_seconds": features,
                "fit_seconds": fit,
                "predict_seconds": predict,
                "labels": list(crf.classes_),
                "predicted": predicted,
            }
        ),
        encoding="utf-8",
    )


def _search_child(tool: str, train_path: str, output: str, limit: int | None, iterations: int) -> None:
    """The tutorial's RandomizedSearchCV over c1 and c2 on the training file."""
    import scipy.stats
    from sklearn.metrics import make_scorer
    from sklearn.model_selection import RandomizedSearchCV

    if tool == "fstcrf":
        from fstcrf.sklearn.metrics import flat_f1_score
    else:
        from sklearn_crfsuite.metrics import flat_f1_score
    train = read_sentences(train_path, limit)
    X, y = [sent2features(s) for s in train], [sent2labels(s) for s in train]
    labels = sorted({label for labels in y for label in labels} - {"O"})
    settings = {name: value for name, value in TUTORIAL_SETTINGS.items() if name not in ("c1", "c2")}
    search = RandomizedSearchCV(
        _estimator(tool, **settings),
        {"c1": scipy.stats.expon(scale=0.5), "c2": scipy.stats.expon(scale=0.05)},
        cv=3,
        n_iter=iterations,
        n_jobs=2,
        random_state=0,
        scoring=make_scorer(flat_f1_score, average="weighted", labels=labels),
    )
    started = time.perf_counter()
    search.fit(X, y)
    Path(output).write_text(
        json.dumps(
            {
                "search_seconds": time.perf_counter() - started,
                "best_params": {k: float(v) for k, v in search.best_params_.items()},
                "best_score": float(search.best_score_),
                "candidates": len(search.cv_results_["params"]),
            }
        ),
        encoding="utf-8",
    )


def _run_child(arguments: list[str]) -> tuple[dict, float, float]:
    """(the child's JSON output, its wall seconds, its peak resident memory in MB)."""
    with tempfile.TemporaryDirectory(prefix="fstcrf-bench-sklearn-") as scratch:
        output = os.path.join(scratch, "out.json")
        started = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-m", "fstcrf.bench.sklearn", *arguments, output])
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        if child.returncode != 0:
            raise RuntimeError(
                f"the benchmark process {' '.join(arguments[:2])} failed with exit code {child.returncode}"
            )
        result = json.loads(Path(output).read_text(encoding="utf-8"))
    return result, wall, usage.ru_maxrss / 1024


# ---------------------------------------------------------------------------
# The benchmark


def _scores(gold: list[list[str]], predicted: list[list[str]], labels: list[str]) -> dict:
    from sklearn.metrics import f1_score

    from fstcrf.corpus.evaluate import score_chunks

    flat_gold = [label for sentence in gold for label in sentence]
    flat_predicted = [label for sentence in predicted for label in sentence]
    entity_labels = sorted(set(labels) - {"O"})
    return {
        "flat_f1_without_o": 100
        * float(f1_score(flat_gold, flat_predicted, average="weighted", labels=entity_labels, zero_division=0)),
        "conlleval_f1": float(score_chunks(gold, predicted).f1),
    }


def bench_sklearn(
    data_dir: str | os.PathLike, search: bool = False, limit: int | None = None, search_iter: int = 10
) -> dict:
    """Run the tutorial with both tools (see the module doc) on ``data_dir``'s
    conll2002 esp.train and esp.testb (their first ``limit`` sentences, if
    given).  Returns per tool: features_seconds, fit_seconds, predict_seconds,
    peak_rss_mb, flat_f1_without_o and conlleval_f1 (percent); "ratios":
    fstcrf / sklearn-crfsuite of the times and memory; "differences": fstcrf
    minus sklearn-crfsuite of the F1s; with ``search``, per tool the search's
    completion, seconds, best parameters and best cross-validated score."""
    data_dir = Path(data_dir)
    train_path, test_path = data_dir / TRAIN_FILE, data_dir / TEST_FILE
    for path in (train_path, test_path):
        if not path.is_file():
            from fstcrf.errors import FstcrfError

            raise FstcrfError(
                f"{path} is missing; bench sklearn needs the CoNLL-2002 Spanish files in DATA/{Path(TRAIN_FILE).parent}"
            )
    gold = [sent2labels(s) for s in read_sentences(test_path, limit)]
    limit_arguments = [str(limit if limit is not None else 0)]
    from fstcrf.bench.harness import compile_bytecode

    result: dict = {
        "train": str(train_path),
        "test": str(test_path),
        "limit": limit,
        "settings": TUTORIAL_SETTINGS,
        "tools": {},
        "bytecode_compiled": compile_bytecode(),
    }
    for tool in TOOLS:
        child, wall, rss = _run_child(["fit", tool, str(train_path), str(test_path), *limit_arguments])
        result["tools"][tool] = {
            "features_seconds": child["features_seconds"],
            "fit_seconds": child["fit_seconds"],
            "predict_seconds": child["predict_seconds"],
            "process_seconds": wall,
            "peak_rss_mb": rss,
            **_scores(gold, child["predicted"], child["labels"]),
        }
    ours, theirs = result["tools"]["fstcrf"], result["tools"]["sklearn-crfsuite"]
    result["ratios"] = {
        name: ours[name] / theirs[name]
        for name in ("fit_seconds", "predict_seconds", "features_seconds", "process_seconds", "peak_rss_mb")
    }
    result["differences"] = {name: ours[name] - theirs[name] for name in ("flat_f1_without_o", "conlleval_f1")}
    if search:
        result["search"] = {}
        for tool in TOOLS:
            try:
                child, wall, rss = _run_child(["search", tool, str(train_path), *limit_arguments, str(search_iter)])
                result["search"][tool] = {"completed": True, "peak_rss_mb": rss, **child}
            except RuntimeError as error:
                result["search"][tool] = {"completed": False, "error": str(error)}
    return result


def format_sklearn(result: dict) -> str:
    """A readable table of :func:`bench_sklearn`'s result."""
    lines = [
        f"sklearn-crfsuite tutorial (CoNLL-2002 Spanish NER): {result['train']} -> {result['test']}"
        + (f", first {result['limit']} sentences" if result["limit"] else ""),
        f"settings: {', '.join(f'{k}={v}' for k, v in result['settings'].items())}",
        f"{'':24}{'sklearn-crfsuite':>18}{'fstcrf':>12}{'ratio / diff':>14}",
    ]
    rows = [
        ("features_seconds", "features (s)", "ratio"),
        ("fit_seconds", "fit (s)", "ratio"),
        ("predict_seconds", "predict (s)", "ratio"),
        ("process_seconds", "whole process (s)", "ratio"),
        ("peak_rss_mb", "peak RSS (MB)", "ratio"),
        ("flat_f1_without_o", "flat F1 without O", "diff"),
        ("conlleval_f1", "conlleval F1", "diff"),
    ]
    tools = result["tools"]
    for key, name, kind in rows:
        change = result["ratios"][key] if kind == "ratio" else result["differences"][key]
        lines.append(
            f"{name:24}{tools['sklearn-crfsuite'][key]:>18.2f}{tools['fstcrf'][key]:>12.2f}"
            f"{change:>14.{3 if kind == 'ratio' else 2}f}"
        )
    for tool, search in result.get("search", {}).items():
        if search["completed"]:
            best = ", ".join(f"{k}={v:.4f}" for k, v in sorted(search["best_params"].items()))
            lines.append(
                f"search {tool}: completed, {search['candidates']} candidates x 3 folds in "
                f"{search['search_seconds']:.0f} s, best {best}, CV flat F1 {100 * search['best_score']:.2f}"
            )
        else:
            lines.append(f"search {tool}: FAILED ({search['error']})")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """The child processes: ``fit TOOL TRAIN TEST LIMIT OUTPUT`` and
    ``search TOOL TRAIN LIMIT ITERATIONS OUTPUT`` (LIMIT 0: every sentence)."""
    if argv[0] == "fit":
        _, tool, train_path, test_path, limit, output = argv
        _fit_child(tool, train_path, test_path, output, int(limit) or None)
    elif argv[0] == "search":
        _, tool, train_path, limit, iterations, output = argv
        _search_child(tool, train_path, output, int(limit) or None, int(iterations))
    else:
        raise SystemExit(f"unknown benchmark process {argv[0]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
