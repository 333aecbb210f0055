"""python-crfsuite's and NLTK's CRFTagger workflows on CoNLL-2000 chunking, each
run with python-crfsuite and with fstcrf.pycrfsuite.

- "python-crfsuite": the python-crfsuite tutorial's workflow.  Token dicts of
  the tutorial's features (:func:`fstcrf.bench.sklearn.sent2features`: the word
  lower-cased, its suffixes and shape, the POS tag, the same of the neighbours),
  ``Trainer(verbose=False)`` with the tutorial's ``{"c1": 1.0, "c2": 1e-3,
  "max_iterations": 50, "feature.possible_transitions": True}``, ``append``
  per sentence and ``train(MODEL)``; then ``Tagger().open(MODEL)`` and
  ``tag(xseq)`` per test sentence.
- "nltk": ``nltk.tag.CRFTagger()`` with its own features (word, suffixes,
  capitalisation, digits, punctuation) and its default training options
  (L-BFGS until CRFsuite's stopping tests end it), trained on (word, chunk tag)
  pairs, then ``tag_sents`` on the test words.  fstcrf's process calls
  :func:`fstcrf.pycrfsuite.install_as_pycrfsuite` before importing nltk, so
  NLTK runs unchanged.

Each (workflow, tool) runs in a fresh process (``python -m
fstcrf.bench.pycrfsuite run WORKFLOW TOOL ...``) that reads train.txt and
test.txt and reports the seconds of the features and ``append`` calls (the
tutorial; NLTK's train() does both), of training and of tagging, and the
labels; the parent scores them with conlleval's chunk F1
(:func:`fstcrf.corpus.evaluate.score_chunks`) and gives fstcrf / python-crfsuite
ratios of the times measured in the same run.

This module imports only the standard library at the top, so that the
python-crfsuite processes load nothing of fstcrf but the tutorial's feature
functions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORKFLOWS = ("python-crfsuite", "nltk")
TOOLS = ("python-crfsuite", "fstcrf")
#: The python-crfsuite tutorial's training parameters.
TUTORIAL_PARAMS = {"c1": 1.0, "c2": 1e-3, "max_iterations": 50, "feature.possible_transitions": True}
#: The seconds each process reports.
PHASES = ("append_seconds", "train_seconds", "tag_seconds")


def _pycrfsuite(tool: str):
    """The pycrfsuite module of ``tool``."""
    if tool == "fstcrf":
        import fstcrf.pycrfsuite as pycrfsuite
    else:
        import pycrfsuite
    return pycrfsuite


def _tutorial(tool: str, train: list, test: list, model: str, iterations: int | None) -> dict:
    """The python-crfsuite tutorial's workflow (see the module doc)."""
    from fstcrf.bench.sklearn import sent2features, sent2labels

    pycrfsuite = _pycrfsuite(tool)
    started = time.perf_counter()
    trainer = pycrfsuite.Trainer(verbose=False)
    trainer.set_params({**TUTORIAL_PARAMS, **({"max_iterations": iterations} if iterations else {})})
    for sentence in train:
        trainer.append(sent2features(sentence), sent2labels(sentence))
    appended = time.perf_counter()
    trainer.train(model)
    trained = time.perf_counter()
    tagger = pycrfsuite.Tagger()
    tagger.open(model)
    predicted = [tagger.tag(sent2features(sentence)) for sentence in test]
    tagged = time.perf_counter()
    return {
        "append_seconds": appended - started,
        "train_seconds": trained - appended,
        "tag_seconds": tagged - trained,
        "iterations": len(trainer.logparser.iterations),
        "predicted": predicted,
    }


def _nltk(tool: str, train: list, test: list, model: str, iterations: int | None) -> dict:
    """NLTK's CRFTagger workflow (see the module doc)."""
    if tool == "fstcrf":
        from fstcrf.pycrfsuite import install_as_pycrfsuite

        install_as_pycrfsuite()
    import nltk
    from nltk.tag import CRFTagger

    nltk.data.path.insert(0, os.path.dirname(model))  # NLTK writes models inside its data folders only
    tagger = CRFTagger(training_opt={"max_iterations": iterations} if iterations else None)
    started = time.perf_counter()
    tagger.train([[(token[0], token[-1]) for token in sentence] for sentence in train], model)
    trained = time.perf_counter()
    tagged = tagger.tag_sents([[token[0] for token in sentence] for sentence in test])
    done = time.perf_counter()
    return {
        "append_seconds": None,
        "train_seconds": trained - started,
        "tag_seconds": done - trained,
        "iterations": None,
        "predicted": [[tag for _, tag in sentence] for sentence in tagged],
        "tagger": type(tagger._tagger).__module__,
    }


def _run(workflow: str, tool: str, train_path: str, test_path: str, iterations: int, limit: int, output: str) -> None:
    """One workflow with one tool, in this process; writes its result to ``output``."""
    from fstcrf.bench.sklearn import read_sentences

    train, test = read_sentences(train_path, limit or None), read_sentences(test_path, limit or None)
    run = _tutorial if workflow == "python-crfsuite" else _nltk
    with tempfile.TemporaryDirectory(prefix="fstcrf-bench-pycrfsuite-") as scratch:
        result = run(tool, train, test, os.path.join(scratch, "model"), iterations or None)
    Path(output).write_text(json.dumps(result), encoding="utf-8")


def _child(arguments: list[str]) -> dict:
    """The JSON result of a fresh ``python -m fstcrf.bench.pycrfsuite run ...`` process."""
    with tempfile.TemporaryDirectory(prefix="fstcrf-bench-pycrfsuite-") as scratch:
        output = os.path.join(scratch, "out.json")
        child = subprocess.run([sys.executable, "-m", "fstcrf.bench.pycrfsuite", "run", *arguments, output])
        if child.returncode != 0:
            raise RuntimeError(
                f"the benchmark process {' '.join(arguments[:2])} failed with exit code {child.returncode}"
            )
        return json.loads(Path(output).read_text(encoding="utf-8"))


def bench_pycrfsuite(folder: str | os.PathLike, iterations: int | None = None, limit: int | None = None) -> dict:
    """Run both workflows with both tools (see the module doc) on CoNLL-2000's
    train.txt and test.txt in ``folder`` (their first ``limit`` sentences, if given);
    ``iterations`` overrides each workflow's L-BFGS iterations.  Returns, per
    workflow: per tool its seconds (PHASES, the append seconds None for NLTK, whose
    train() reads the data), L-BFGS iterations (tutorial), conlleval F1 and the
    module of NLTK's tagger; "ratios": fstcrf / python-crfsuite of each time;
    "f1_difference": fstcrf minus python-crfsuite."""
    from fstcrf.bench.harness import compile_bytecode
    from fstcrf.bench.sklearn import read_sentences, sent2labels
    from fstcrf.corpus.evaluate import score_chunks

    train_path, test_path = Path(folder) / "train.txt", Path(folder) / "test.txt"
    gold = [sent2labels(sentence) for sentence in read_sentences(test_path, limit)]
    result: dict = {
        "train": str(train_path),
        "test": str(test_path),
        "limit": limit,
        "iterations": iterations,
        "bytecode_compiled": compile_bytecode(),
        "workflows": {},
    }
    for workflow in WORKFLOWS:
        tools = {}
        for tool in TOOLS:
            child = _child([workflow, tool, str(train_path), str(test_path), str(iterations or 0), str(limit or 0)])
            tools[tool] = {
                **{phase: child[phase] for phase in PHASES},
                "iterations": child["iterations"],
                "f1": score_chunks(gold, child["predicted"]).f1,
                **({"tagger": child["tagger"]} if "tagger" in child else {}),
            }
        ours, theirs = tools["fstcrf"], tools["python-crfsuite"]
        result["workflows"][workflow] = {
            "tools": tools,
            "ratios": {phase: ours[phase] / theirs[phase] for phase in PHASES if theirs[phase]},
            "f1_difference": ours["f1"] - theirs["f1"],
        }
    return result


def format_pycrfsuite(result: dict) -> str:
    """A readable table of :func:`bench_pycrfsuite`'s result."""
    lines = [
        f"python-crfsuite and NLTK CRFTagger workflows, CoNLL-2000 chunking: {result['train']} -> {result['test']}"
        + (f", first {result['limit']} sentences" if result["limit"] else ""),
        f"{'':40}{'python-crfsuite':>17}{'fstcrf':>10}{'ratio / diff':>14}",
    ]
    names = {"append_seconds": "features + append (s)", "train_seconds": "train (s)", "tag_seconds": "tag (s)"}
    for workflow, measured in result["workflows"].items():
        tools = measured["tools"]
        for phase, ratio in measured["ratios"].items():
            lines.append(
                f"{workflow + ' ' + names[phase]:40}{tools['python-crfsuite'][phase]:>17.2f}"
                f"{tools['fstcrf'][phase]:>10.2f}{ratio:>14.3f}"
            )
        lines.append(
            f"{workflow + ' conlleval F1':40}{tools['python-crfsuite']['f1']:>17.2f}{tools['fstcrf']['f1']:>10.2f}"
            f"{measured['f1_difference']:>14.2f}"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """The child process: ``run WORKFLOW TOOL TRAIN TEST ITERATIONS LIMIT OUTPUT``
    (ITERATIONS 0: the workflow's own; LIMIT 0: every sentence)."""
    if argv[0] != "run":
        raise SystemExit(f"unknown benchmark process {argv[0]!r}")
    _, workflow, tool, train_path, test_path, iterations, limit, output = argv
    _run(workflow, tool, train_path, test_path, int(iterations), int(limit), output)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
