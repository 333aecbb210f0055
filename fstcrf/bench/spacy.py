"""The spaCy component "fstcrf" inside ``nlp.pipe``: tokens per second on the CoNLL-2000
test set against the model's own decoding of the same sentences, in one process.

The Docs (one per test sentence, words and the file's part-of-speech tags) are
built before each timing, on a blank English pipeline holding the component alone.
Rows, each the best of ``repeats`` runs:

    model.predict                 the model's best labels (the floor)
    model.predict_spans           its chunks with their exact probabilities
    nlp.pipe, no probabilities    the component ("probabilities": false): spans from
                                  the best labels, read from and written to the Docs
    nlp.pipe                      the component as configured by default: spans and
                                  their probabilities
    nlp(doc) per Doc              the same, one model call per Doc instead of per batch

The model is ``model`` (a chunker or a composed model), else a chunker trained with
``fstcrf train``'s defaults for ``iterations`` L-BFGS iterations on train.txt.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from fstcrf.corpus.conll import read_conll
from fstcrf.extras import require
from fstcrf.features.defaults import default_template
from fstcrf.model.chain import ChainCRF
from fstcrf.model.compose import load_any

#: The rows of :func:`bench_spacy`, in order.
ROWS = (
    "model.predict",
    "model.predict_spans",
    "nlp.pipe, no probabilities",
    "nlp.pipe",
    "nlp(doc) per Doc",
)


def _best_seconds(run: Callable[[object], object], prepare: Callable[[], object], repeats: int) -> float:
    """The least of ``repeats`` timings of ``run(prepare())``, preparation untimed."""
    best = float("inf")
    for _ in range(repeats):
        argument = prepare()
        started = time.perf_counter()
        run(argument)
        best = min(best, time.perf_counter() - started)
    return best


def bench_spacy(
    folder: str | os.PathLike,
    model: str | os.PathLike | None = None,
    threads: int = 2,
    repeats: int = 3,
    iterations: int = 20,
    batch_size: int = 1000,
) -> dict:
    """Time the rows of the module doc on ``folder``/test.txt; JSON-able: per row its
    seconds, tokens per second and ratio to model.predict's time."""
    spacy = require("spacy", "bench spacy")
    from spacy.tokens import Doc

    from fstcrf.spacy.factory import FACTORY  # registers the factory, as the installed entry point does

    folder = Path(folder)
    described = f"a chunker trained for {iterations} iterations" if model is None else str(model)
    test = read_conll(folder / "test.txt", columns="word,pos,chunk").sentences
    tokens = sum(len(sentence) for sentence in test)
    with tempfile.TemporaryDirectory(prefix="fstcrf-bench-spacy-") as scratch:
        if model is None:
            train = read_conll(folder / "train.txt", columns="word,pos,chunk")
            trained = ChainCRF(template=default_template("chunk", train.column_names), max_iter=iterations)
            trained.fit(train, target="chunk")
            model = Path(scratch) / "chunker.model"
            trained.save(model)
        fitted = load_any(model)
        fitted.threads = threads
        pipelines = {}
        for probabilities in (False, True):
            nlp = spacy.blank("en")
            config = {"model": str(model), "threads": threads, "probabilities": probabilities}
            nlp.add_pipe(FACTORY, config=config)
            pipelines[probabilities] = nlp

    def docs(nlp) -> Callable[[], list]:
        return lambda: [Doc(nlp.vocab, words=s["word"], tags=s["pos"]) for s in test]

    seconds = {
        "model.predict": _best_seconds(lambda _: fitted.predict(test), lambda: None, repeats),
        "model.predict_spans": _best_seconds(lambda _: fitted.predict_spans(test), lambda: None, repeats),
        "nlp.pipe, no probabilities": _best_seconds(
            lambda batch: list(pipelines[False].pipe(batch, batch_size=batch_size)), docs(pipelines[False]), repeats
        ),
        "nlp.pipe": _best_seconds(
            lambda batch: list(pipelines[True].pipe(batch, batch_size=batch_size)), docs(pipelines[True]), repeats
        ),
        "nlp(doc) per Doc": _best_seconds(
            lambda batch: [pipelines[True](doc) for doc in batch], docs(pipelines[True]), repeats
        ),
    }
    return {
        "test": str(folder / "test.txt"),
        "sentences": len(test),
        "tokens": tokens,
        "model": described,
        "threads": threads,
        "batch_size": batch_size,
        "repeats": repeats,
        "spacy_version": spacy.__version__,
        "rows": {
            row: {
                "seconds": seconds[row],
                "tokens_per_second": tokens / seconds[row],
                "ratio_to_predict": seconds[row] / seconds["model.predict"],
            }
            for row in ROWS
        },
    }


def format_spacy(result: dict) -> str:
    """A readable table of :func:`bench_spacy`'s result."""
    lines = [
        f'spaCy {result["spacy_version"]} component "fstcrf" on {result["test"]} ({result["sentences"]:,} Docs, '
        f"{result['tokens']:,} tokens); {result['model']}; {result['threads']} threads, nlp.pipe batch_size "
        f"{result['batch_size']}, best of {result['repeats']}",
        f"{'':30}{'seconds':>10}{'tokens/s':>12}{'x predict':>11}",
    ]
    for row in ROWS:
        timing = result["rows"][row]
        lines.append(
            f"{row:30}{timing['seconds']:>10.3f}{timing['tokens_per_second']:>12,.0f}{timing['ratio_to_predict']:>11.2f}"
        )
    return "\n".join(lines)
