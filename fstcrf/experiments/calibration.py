"""How well calibrated are exact entity probabilities?  CoNLL-2003 English NER.

The model is what ``fstcrf train --target ner`` trains on eng.train (IOB2, the
default template and settings; the iteration kept by eng.testa F1).  Each
entity it predicts on eng.testb gets its exact probability (``predict_spans``)
and, as the usual stand-in, the mean of its tokens' label marginals.  Both are
binned (10 equal-width bins); the expected calibration error is the mean over
entities of |bin accuracy - bin confidence|, weighted by bin size, where an
entity is correct when eng.testb has the same span and type.  A third measure
divides every score by one temperature fitted on eng.testa by maximum likelihood
of its gold label sequences (temperature scaling; the Viterbi output is
unchanged)::

    python -m fstcrf.experiments.calibration --data DIR --plot docs/entity_calibration.png --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from fstcrf.corpus.schemes import read_chunks
from fstcrf.errors import FstcrfError
from fstcrf.experiments.transfer import read_conll2003
from fstcrf.features.defaults import default_template, template_sigma
from fstcrf.learn.settings import DEFAULT_SIGMA
from fstcrf.model.chain import ChainCRF

BINS = 10
COLUMNS = ("word", "pos", "chunk", "ner")


@dataclass
class Reliability:
    """One confidence measure: per bin, the entity count, mean confidence and accuracy; its ECE."""

    counts: list[int] = field(default_factory=list)
    confidence: list[float] = field(default_factory=list)
    accuracy: list[float] = field(default_factory=list)
    ece: float = 0.0


def reliability(confidences: np.ndarray, correct: np.ndarray, bins: int = BINS) -> Reliability:
    """Equal-width bins over [0, 1] (a confidence of 1 falls in the last bin)."""
    which = np.minimum((confidences * bins).astype(int), bins - 1)
    result = Reliability()
    for b in range(bins):
        members = which == b
        count = int(members.sum())
        result.counts.append(count)
        result.confidence.append(float(confidences[members].mean()) if count else float("nan"))
        result.accuracy.append(float(correct[members].mean()) if count else float("nan"))
        if count:
            result.ece += count / len(confidences) * abs(result.accuracy[-1] - result.confidence[-1])
    return result


@dataclass
class CalibrationResult:
    entities: int
    correct: int
    test_f1: float
    exact: Reliability
    mean_marginal: Reliability
    temperature: float
    tempered: Reliability
    predict_seconds: float
    predict_spans_seconds: float
    train_seconds: float


def measure(train, dev, test, threads: int = 2, max_iter: int | None = None) -> CalibrationResult:
    """Train the default NER model and measure both confidences on ``test``."""
    settings = {} if max_iter is None else {"max_iter": max_iter}
    template = default_template("ner", list(COLUMNS))
    model = ChainCRF(template=template, sigma=template_sigma(template, DEFAULT_SIGMA), threads=threads, **settings)
    started = time.perf_counter()
    model.fit(train, "ner", dev=dev)
    train_seconds = time.perf_counter() - started
    started = time.perf_counter()
    predicted = model.predict(test)
    predict_seconds = time.perf_counter() - started
    started = time.perf_counter()
    entities = model.predict_spans(test)
    spans_seconds = time.perf_counter() - started
    marginals = model.predict_marginals(test)
    index = {label: i for i, label in enumerate(model.labels_)}
    exact, mean_marginal, correct = [], [], []
    for sentence, labels, found, table in zip(test, predicted, entities, marginals):
        gold = set(read_chunks(sentence["ner"]))
        for entity in found:
            exact.append(entity.probability)
            tokens = range(entity.first, entity.last + 1)
            mean_marginal.append(float(np.mean([table[t, index[labels[t]]] for t in tokens])))
            correct.append((entity.first, entity.last, entity.type) in gold)
    temperature = model.fit_temperature(dev)
    tempered_probabilities = [
        entity.probability for found in model.predict_spans(test, temperature=temperature) for entity in found
    ]
    hits = np.array(correct, dtype=bool)
    gold_count = sum(len(read_chunks(sentence["ner"])) for sentence in test)
    f1 = 2 * hits.sum() / (len(hits) + gold_count) * 100 if len(hits) + gold_count else 0.0
    return CalibrationResult(
        len(hits),
        int(hits.sum()),
        float(f1),
        reliability(np.array(exact), hits),
        reliability(np.array(mean_marginal), hits),
        temperature,
        reliability(np.array(tempered_probabilities), hits),
        predict_seconds,
        spans_seconds,
        train_seconds,
    )


def plot(result: CalibrationResult, path: Path) -> None:
    """The reliability diagram of both confidences."""
    from fstcrf.extras import require

    require("matplotlib", "--plot")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6, 5))
    axis.plot([0, 1], [0, 1], color="grey", linestyle=":", label="perfect calibration")
    for name, curve, marker in (
        ("exact entity probability", result.exact, "o"),
        ("mean token marginal", result.mean_marginal, "s"),
        (f"exact, temperature {result.temperature:.2f} (fit on dev)", result.tempered, "^"),
    ):
        shown = [i for i, count in enumerate(curve.counts) if count]
        axis.plot(
            [curve.confidence[i] for i in shown],
            [curve.accuracy[i] for i in shown],
            marker=marker,
            label=f"{name} (ECE {curve.ece:.4f})",
        )
    axis.set_xlabel("confidence of a predicted entity")
    axis.set_ylabel("fraction correct (eng.testb)")
    axis.set_title(f"CoNLL-2003 English NER, {result.entities} predicted entities")
    axis.legend(loc="lower right", fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m fstcrf.experiments.calibration", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--data", required=True, help="folder holding conll2003/ (eng.train, eng.testa, eng.testb)")
    parser.add_argument("--plot", default=None, help="write the reliability diagram here (PNG)")
    parser.add_argument("--json", default=None, help="write the figures here")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--max-iter", type=int, default=None, help="L-BFGS iterations of the NER model (default: fstcrf train's)"
    )
    args = parser.parse_args(argv)
    try:
        corpora = read_conll2003(Path(args.data) / "conll2003")
    except (FstcrfError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    result = measure(corpora["eng.train"], corpora["eng.testa"], corpora["eng.testb"], args.threads, args.max_iter)
    print(format_result(result))
    if args.plot:
        plot(result, Path(args.plot))
    if args.json:
        Path(args.json).write_text(json.dumps(asdict(result), indent=1))
    return 0


def format_result(result: CalibrationResult) -> str:
    lines = [
        f"{result.entities} predicted entities, {result.correct} correct (F1 {result.test_f1:.2f}); "
        f"train {result.train_seconds:.1f} s, predict {result.predict_seconds:.2f} s, "
        f"predict_spans {result.predict_spans_seconds:.2f} s",
        "bin        entities  exact: conf  acc     mean marginal: entities  conf  acc",
    ]
    for b in range(BINS):
        exact, marginal = result.exact, result.mean_marginal
        lines.append(
            f"[{b / BINS:.1f}, {(b + 1) / BINS:.1f})  {exact.counts[b]:8d}  {exact.confidence[b]:.3f}  "
            f"{exact.accuracy[b]:.3f}   {marginal.counts[b]:8d}  {marginal.confidence[b]:.3f}  "
            f"{marginal.accuracy[b]:.3f}"
        )
    lines.append(
        f"ECE: exact {result.exact.ece:.4f}, mean token marginal {result.mean_marginal.ece:.4f}, "
        f"exact at the dev-fitted temperature {result.temperature:.3f}: {result.tempered.ece:.4f}"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
