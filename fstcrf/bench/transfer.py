"""``fstcrf bench transfer``: Sutton & McCallum's (2005) transfer experiment.

An NER CRF trained on CoNLL-2003 (word column only, cached, see
:func:`fstcrf.experiments.transfer.ner_model`) is composed with a seminar CRF that reads
its labels.  Three systems with the same seminar features on the same splits
(seeded random halves of the 485 announcements, and the upstream 301/184
split): no transfer (the seminar CRF without the NER reading predicates),
cascade (NER 1-best feeds the reading CRF) and joint (exact Viterbi of the
composition, the NER component's scale chosen on the dev side of each
training half).  Reported: document-level F1 per field (one value per
document, as the paper scores) and per token, means and spreads over the
splits, paired t-tests and sign tests over splits, McNemar per split, the
"Host:" analysis, the time of joint decoding against the cascade measured
in the same run, and optionally the learning curve.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fstcrf.experiments import transfer
from fstcrf.errors import FstcrfError, OutputPathError
from fstcrf.progress import Progress

#: Sutton & McCallum (2005), Table 2 (F1).
PUBLISHED = {
    "none": {"stime": 99.1, "etime": 97.3, "location": 81.0, "speaker": 73.7, "overall": 87.8},
    "cascade": {"stime": 99.2, "etime": 96.0, "location": 84.3, "speaker": 74.2, "overall": 88.4},
    "joint": {"stime": 99.1, "etime": 96.0, "location": 85.3, "speaker": 76.3, "overall": 89.2},
}
#: The learning curve's fractions of the training e-mails and how many random splits it averages.
CURVE_FRACTIONS = (0.25, 0.5, 0.75, 1.0)
CURVE_SPLITS = 3


@dataclass
class TransferResults:
    """``ner`` (the NER model and its F1), ``splits`` (the random splits' results),
    ``upstream`` (the 301/184 split's), ``curve`` (fraction -> system -> field ->
    mean F1 over :data:`CURVE_SPLITS` splits, or None) and the wall ``seconds``."""

    ner: transfer.NerModel
    splits: list[transfer.SplitResult]
    upstream: transfer.SplitResult | None
    seed: int
    seconds: float
    curve: dict[float, dict[str, dict[str, float]]] | None = None


def _folders(data_folder) -> tuple[Path, Path]:
    data_folder = Path(data_folder)
    conll, seminars = data_folder / "conll2003", data_folder / "seminars"
    for folder in (conll, seminars):
        if not folder.is_dir():
            raise FstcrfError(f"{folder}: missing; --data must hold conll2003/ and seminars/")
    return conll, seminars


def bench_transfer(
    data_folder,
    splits: int = 10,
    seed: int = 0,
    threads: int = 2,
    learning_curve: bool = False,
    plot=None,
    progress: bool = True,
    cache=None,
    upstream: bool = True,
    ner_samples: int = 0,
    max_iter: int | None = None,
) -> TransferResults:
    """Run the experiment on ``data_folder`` (holding conll2003/ and seminars/):
    ``splits`` random halves seeded by ``seed`` plus (``upstream``) the upstream
    split; with ``learning_curve`` (or ``plot``, a PNG path) the learning curve
    too.  ``cache`` holds the trained NER model (default $FSTCRF_CACHE or
    ~/.cache/fstcrf); ``ner_samples`` > 0 trains the reading seminar CRF on that
    many NER samples per document instead of the NER 1-best; ``max_iter`` caps the L-BFGS
    iterations of the NER model and of each seminar CRF (default: 150 and 100)."""
    if isinstance(splits, bool) or not isinstance(splits, int) or splits < 1:
        raise FstcrfError(f"splits must be a positive integer, got {splits!r}")
    if plot is not None and not Path(plot).parent.is_dir():
        raise OutputPathError(f"{plot}: the folder for the plot does not exist")
    started = time.perf_counter()
    conll, seminars = _folders(data_folder)
    learning_curve = learning_curve or plot is not None
    steps = 1 + splits + int(upstream) + (CURVE_SPLITS * len(CURVE_FRACTIONS) if learning_curve else 0)
    with Progress(steps, "bench transfer", unit="steps", enabled=progress) as bar:
        sizes = {"max_iter": max_iter} if max_iter else {}
        ner = transfer.ner_model(conll, cache, threads, **sizes)
        documents, paths = transfer.seminar_documents(seminars)
        documents = transfer.with_ner(documents, ner.model)
        bar.update()
        random = transfer.random_splits(len(documents), splits, seed)
        results = []
        for split in random:
            results.append(
                transfer.run_split(ner.model, documents, split, threads, seed=seed, ner_samples=ner_samples, **sizes)
            )
            bar.update()
        upstream_result = None
        if upstream:
            upstream_result = transfer.run_split(
                ner.model,
                documents,
                transfer.upstream_split(paths),
                threads,
                seed=seed,
                ner_samples=ner_samples,
                **sizes,
            )
            bar.update()
        curve = None
        if learning_curve:
            curves = []
            for split, result in zip(random[:CURVE_SPLITS], results):
                curves.append(
                    transfer.learning_curve(
                        ner.model,
                        documents,
                        split,
                        CURVE_FRACTIONS,
                        threads,
                        ner_scale=result.ner_scale,
                        seed=seed,
                        ner_samples=ner_samples,
                        **sizes,
                    )
                )
                bar.update(len(CURVE_FRACTIONS))
            curve = {
                fraction: {
                    system: {
                        name: float(np.mean([c[fraction][system][name] for c in curves]))
                        for name in transfer.SCORE_FIELDS
                    }
                    for system in transfer.SYSTEMS
                }
                for fraction in CURVE_FRACTIONS
            }
    results = TransferResults(ner, results, upstream_result, seed, time.perf_counter() - started, curve)
    if plot is not None:
        plot_curve(results, plot)
    return results


def _mean(results: list[transfer.SplitResult], system: str, name: str, per_token: bool = False) -> float:
    return float(np.mean([(r.token_f1 if per_token else r.f1)[system][name] for r in results]))


def _spread(results: list[transfer.SplitResult], system: str, name: str, per_token: bool = False) -> float:
    values = [(r.token_f1 if per_token else r.f1)[system][name] for r in results]
    return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def transfer_json(results: TransferResults) -> dict:
    """``{FIELD: {"none": F1, "cascade": F1, "joint": F1}}``: mean document-level F1
    (percent) over the random splits, for the four fields and "overall"."""
    return {
        name: {system: _mean(results.splits, system, name) for system in transfer.SYSTEMS}
        for name in transfer.SCORE_FIELDS
    }


def _table(results: list[transfer.SplitResult], per_token: bool) -> list[str]:
    lines = [
        f"{'field':<9} {'none':>12} {'cascade':>12} {'joint':>12}"
        + ("" if per_token else f" {'j-c':>6} {'t p':>7} {'sign p':>7} {'W/L':>5} {'c-n':>6} {'t p':>7}")
    ]
    if not per_token:
        joint_cascade = transfer.paired_tests(results, "joint", "cascade")
        cascade_none = transfer.paired_tests(results, "cascade", "none")
    for name in transfer.SCORE_FIELDS:
        cells = " ".join(
            f"{_mean(results, s, name, per_token):6.1f} ±{_spread(results, s, name, per_token):4.1f}"
            for s in transfer.SYSTEMS
        )
        if per_token:
            lines.append(f"{name:<9} {cells}")
            continue
        jc, cn = joint_cascade[name], cascade_none[name]
        lines.append(
            f"{name:<9} {cells} {jc.mean_difference:+6.1f} {jc.t_p:7.3f} {jc.sign_p:7.3f} "
            f"{jc.wins:>2}/{jc.losses:<2} {cn.mean_difference:+6.1f} {cn.t_p:7.3f}"
        )
    return lines


def _header_lines(results: list[transfer.SplitResult]) -> list[str]:
    headers = transfer.HeaderCounts()
    for result in results:
        headers = headers.add(result.headers)
    lines = [
        f"header words (a line's first token ending in ':') on the test halves, summed over splits: "
        f"{headers.tokens}; inside an NER entity: cascade {headers.entity['cascade']}, "
        f"joint {headers.entity['joint']}"
    ]
    shown = [word for word, _ in (headers.by_word["cascade"] + headers.by_word["joint"]).most_common(6)]
    for word in shown + (["host:"] if "host:" not in shown else []):
        lines.append(
            f"  {word:<12} {headers.header_totals[word]:>5} times; entity: cascade "
            f"{headers.by_word['cascade'][word]}, joint {headers.by_word['joint'][word]}"
        )
    lines.append(
        f"NER labels that joint decoding changed from the cascade's: {headers.changed} tokens, "
        f"{headers.changed_in_field} of them inside a gold seminar field"
    )
    return lines


def format_transfer(results: TransferResults) -> str:
    """The report: tables, tests, analysis, timing and the learning curve."""
    ner = results.ner
    splits = results.splits
    lines = [
        f"NER (CoNLL-2003, word column only{', cached' if ner.cached else ''}): eng.testa F1 "
        f"{ner.dev_f1:.2f}, eng.testb F1 {ner.test_f1:.2f}",
        f"{len(splits)} random 50/50 splits (seed {results.seed}); document-level F1, mean ± sd over "
        "splits; j-c / c-n: mean difference joint - cascade / cascade - none with paired t-test and "
        "sign-test p (W/L: splits joint won / lost)",
    ]
    lines += _table(splits, per_token=False)
    lines += ["", "per-token F1 (Finkel et al.), mean ± sd"] + _table(splits, per_token=True)
    lines += [
        "",
        "published (Sutton & McCallum 2005, Table 2): "
        + "; ".join(
            f"{system} " + " / ".join(f"{PUBLISHED[system][name]:.1f}" for name in transfer.SCORE_FIELDS)
            for system in transfer.SYSTEMS
        )
        + " (speaker / location / stime / etime / overall)",
    ]
    significant = sum(r.mcnemar_p < 0.05 for r in splits)
    lines.append(
        f"McNemar (field labels per token, joint vs cascade): p < 0.05 in {significant} of "
        f"{len(splits)} splits; median p {np.median([r.mcnemar_p for r in splits]):.3f}"
    )
    lines.append("NER scale chosen on the dev side: " + ", ".join(f"{r.ner_scale:g}" for r in splits))
    if results.upstream is not None:
        up = results.upstream
        lines.append(
            "upstream 301/184 split (none / cascade / joint): "
            + "; ".join(
                f"{name} " + " / ".join(f"{up.f1[s][name]:.1f}" for s in transfer.SYSTEMS)
                for name in transfer.SCORE_FIELDS
            )
            + f"; McNemar p {up.mcnemar_p:.3f}; NER scale {up.ner_scale:g}"
        )
    lines += [""] + _header_lines(splits)
    every = splits + ([results.upstream] if results.upstream is not None else [])
    cascade_seconds = sum(r.seconds["cascade"] for r in every)
    joint_seconds = sum(r.seconds["joint"] for r in every)
    lines.append(
        f"time: joint decoding of the test halves / cascade = {joint_seconds / cascade_seconds:.2f} "
        "(same run, same documents)"
    )
    if results.curve is not None:
        lines += ["", f"learning curve (mean of {CURVE_SPLITS} splits; overall / speaker / location F1):"]
        for fraction, row in results.curve.items():
            lines.append(
                f"  {fraction:4.0%} of the training e-mails: "
                + "; ".join(
                    f"{s} {row[s]['overall']:.1f} / {row[s]['speaker']:.1f} / {row[s]['location']:.1f}"
                    for s in transfer.SYSTEMS
                )
            )
    lines.append(f"wall time {results.seconds:.0f} s")
    return "\n".join(lines)


def plot_curve(results: TransferResults, path) -> None:
    """The learning curve (overall and speaker F1 against the share of training
    e-mails) as a PNG, written atomically."""
    if results.curve is None:
        raise FstcrfError("the results hold no learning curve; run bench_transfer with learning_curve=True")
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    path = Path(path)
    fractions = sorted(results.curve)
    figure, axes = pyplot.subplots(1, 2, figsize=(9, 3.6))
    for axis, name in zip(axes, ("overall", "speaker")):
        for system, style in zip(transfer.SYSTEMS, (":", "--", "-")):
            axis.plot(
                [100 * f for f in fractions],
                [results.curve[f][system][name] for f in fractions],
                style,
                marker="o",
                label=system,
            )
        axis.set_xlabel("training e-mails (% of a half)")
        axis.set_ylabel(f"{name} F1")
        axis.set_xticks([100 * f for f in fractions])
        axis.grid(alpha=0.3)
    axes[0].legend()
    figure.suptitle(f"Seminar extraction with transfer from CoNLL-2003 NER (mean of {CURVE_SPLITS} splits)")
    figure.tight_layout()
    temporary = path.with_name(f".{path.name}.tmp.png")
    figure.savefig(temporary, dpi=100)
    pyplot.close(figure)
    os.replace(temporary, path)
