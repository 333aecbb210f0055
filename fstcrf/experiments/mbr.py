"""F1-optimal (MBR) decoding against Viterbi: a model file, a development and a test file.

For each file: conlleval's precision, recall and F1 of Viterbi, of MBR at
temperature 1 and of MBR at the temperature ``fit_temperature`` fits on the
development file (its likelihood, not its F1); each MBR output's threshold and
expected F1 (ratio of expectations); a paired bootstrap over sentences of its F1
difference with Viterbi.  On the development file, the ratio of expectations is
checked against the expected corpus F1 estimated from corpora drawn from the
model.  Decoding times are the best of ``--repeats`` interleaved runs::

    python -m fstcrf.experiments.mbr ner.model eng.testa eng.testb --json out.json
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from fstcrf.corpus.evaluate import score_chunks
from fstcrf.corpus.schemes import read_chunks
from fstcrf.engine.inference import sample, viterbi
from fstcrf.engine.mbr import ChunkMarginals, expected_f1, mbr_decode
from fstcrf.engine.spans import ChunkEdges, Entity, decoded_entities, path_chunks, state_labels
from fstcrf.engine.tempering import tempered
from fstcrf.errors import FstcrfError
from fstcrf.model.chain import ChainCRF, load_model


@dataclass
class Bootstrap:
    """The F1 difference B - A (points) of two outputs, the 95% interval of its paired
    bootstrap over sentences, and the fraction of resamples where B does not gain."""

    difference: float
    low: float
    high: float
    p_value: float


def sentence_counts(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> np.ndarray:
    """float [B, 3]: each sentence's correct, predicted and gold chunks."""
    rows = []
    for gold_labels, labels in zip(gold, predicted):
        gold_chunks, chunks = set(read_chunks(gold_labels)), set(read_chunks(labels))
        rows.append((len(gold_chunks & chunks), len(chunks), len(gold_chunks)))
    return np.array(rows, dtype=float).reshape(-1, 3)


def counts_f1(counts: np.ndarray) -> np.ndarray:
    """F1 (points) of summed counts [..., 3] (0 where nothing was predicted nor expected)."""
    total = counts[..., 1] + counts[..., 2]
    return np.where(total > 0, 200 * counts[..., 0] / np.maximum(total, 1), 0.0)


def paired_bootstrap(
    gold: Sequence[Sequence[str]],
    a: Sequence[Sequence[str]],
    b: Sequence[Sequence[str]],
    resamples: int = 10_000,
    seed: int = 0,
) -> Bootstrap:
    """The F1 difference of output b over output a, resampling sentences with replacement."""
    counts_a, counts_b = sentence_counts(gold, a), sentence_counts(gold, b)
    draws = np.random.default_rng(seed).integers(0, len(counts_a), (resamples, len(counts_a)))
    differences = counts_f1(counts_b[draws].sum(axis=1)) - counts_f1(counts_a[draws].sum(axis=1))
    low, high = np.percentile(differences, [2.5, 97.5])
    difference = float(counts_f1(counts_b.sum(axis=0)) - counts_f1(counts_a.sum(axis=0)))
    return Bootstrap(difference, float(low), float(high), float(np.mean(differences <= 0)))


def sampled_expected_f1(pot, labels: Sequence[str], chosen: Sequence[Sequence[Entity]], draws: int, seed: int = 0):
    """(mean, standard error) of the corpus F1 (points) of the chunks ``chosen`` against
    ``draws`` label sequences per sentence drawn from ``pot``."""
    paths = sample(pot, draws, seed)
    predicted = [{entity[:3] for entity in sentence} for sentence in chosen]
    values = []
    for path in paths:
        drawn = [set(path_chunks([labels[s] for s in path[pot.sentence(b)]])) for b in range(pot.num_sequences)]
        correct = sum(len(gold & spans) for gold, spans in zip(drawn, predicted))
        total = sum(len(gold) + len(spans) for gold, spans in zip(drawn, predicted))
        values.append(200 * correct / total if total else 0.0)
    scores = np.array(values)
    return float(scores.mean()), float(scores.std(ddof=1) / np.sqrt(draws)) if draws > 1 else 0.0


@dataclass
class Decoding:
    """One output on one file: conlleval's figures, and for MBR its threshold, expected F1
    and the bootstrap of its gain over Viterbi."""

    name: str
    precision: float
    recall: float
    f1: float
    threshold: float | None = None
    expected_f1: float | None = None
    bootstrap: Bootstrap | None = None


@dataclass
class FileResult:
    path: str
    tokens: int
    decodings: list[Decoding] = field(default_factory=list)
    sampled: dict = field(default_factory=dict)  # name -> (ratio of expectations, sampled mean, standard error)
    seconds: dict = field(default_factory=dict)  # name -> best decoding time


def decode_file(
    model: ChainCRF, path: str, temperature: float, draws: int = 0, repeats: int = 1, resamples: int = 10_000
) -> FileResult:
    """Viterbi, MBR and MBR at ``temperature`` on one labelled file."""
    from fstcrf.corpus.conll import read_conll

    corpus = read_conll(path, columns=model.columns_)
    sentences, gold = corpus.sentences, corpus.column(model.target_)
    result = FileResult(path, corpus.num_tokens)
    viterbi_labels = model.predict(sentences)
    scores = score_chunks(gold, viterbi_labels)
    result.decodings.append(Decoding("viterbi", scores.precision, scores.recall, scores.f1))
    runs: dict[str, Callable[[], object]] = {"viterbi": lambda: model.predict(sentences)}
    for name, scale in (("mbr", 1.0), (f"mbr at T = {temperature:.4f}", temperature)):
        pot = tempered(model.span_potentials(sentences), scale)
        labels = state_labels(pot.topology)
        decoded = mbr_decode(pot, labels, threads=int(model.threads))
        predicted = model.predict_mbr(sentences, temperature=scale)
        scores = score_chunks(gold, predicted)
        result.decodings.append(
            Decoding(
                name,
                scores.precision,
                scores.recall,
                scores.f1,
                decoded.threshold,
                100 * decoded.expected_f1,
                paired_bootstrap(gold, viterbi_labels, predicted, resamples),
            )
        )
        runs[name] = functools.partial(model.predict_mbr, sentences, temperature=scale)
        if draws:
            marginals = ChunkMarginals.of(pot, ChunkEdges.of(pot.topology, labels))
            viterbi_spans = decoded_entities(pot, labels, viterbi(pot, int(model.threads)).paths)
            for output, chosen in (("viterbi", viterbi_spans), ("mbr", decoded.chunks)):
                ratio = 100 * expected_f1(chosen, marginals.expected_chunks)
                result.sampled[f"{output}, T = {scale:.4f}"] = (ratio, *sampled_expected_f1(pot, labels, chosen, draws))
    best = {name: np.inf for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            started = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - started)
    result.seconds = best
    return result


def measure(
    model: ChainCRF,
    dev: str,
    test: str,
    draws: int = 200,
    repeats: int = 3,
    resamples: int = 10_000,
    temperature: float | None = None,
) -> dict:
    """The temperature (fitted on ``dev`` unless given), and both files' results (draws
    on ``dev`` only)."""
    from fstcrf.corpus.conll import read_conll

    if temperature is None:
        temperature = model.fit_temperature(read_conll(dev, columns=model.columns_))
    return {
        "temperature": temperature,
        "dev": decode_file(model, dev, temperature, draws, repeats, resamples),
        "test": decode_file(model, test, temperature, 0, repeats, resamples),
    }


def format_result(result: FileResult) -> str:
    lines = [f"{result.path} ({result.tokens} tokens)"]
    for decoding in result.decodings:
        line = f"  {decoding.name:22s} P {decoding.precision:6.2f}  R {decoding.recall:6.2f}  F1 {decoding.f1:6.2f}"
        if decoding.bootstrap is not None:
            boot = decoding.bootstrap
            line += (
                f"  threshold {decoding.threshold:.4f}, expected F1 {decoding.expected_f1:.2f}; "
                f"{boot.difference:+.2f} [{boot.low:+.2f}, {boot.high:+.2f}] p {boot.p_value:.4f}"
            )
        lines.append(line)
    for name, (ratio, mean, error) in result.sampled.items():
        lines.append(f"  expected F1 of {name}: ratio {ratio:.3f}, sampled {mean:.3f} +- {error:.3f}")
    for name, seconds in result.seconds.items():
        lines.append(f"  {name}: {seconds:.3f} s, {result.tokens / seconds:,.0f} tokens/s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fstcrf.experiments.mbr", description=__doc__.split("\n")[0])
    parser.add_argument("model", help="model file with chunk labels")
    parser.add_argument("dev", help="labelled development file (the temperature is fitted on it)")
    parser.add_argument("test", help="labelled test file")
    parser.add_argument("--draws", type=int, default=200, help="corpora drawn on dev to check the expected F1")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved timing runs")
    parser.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples")
    parser.add_argument("--temperature", type=float, default=None, help="instead of fitting it on dev")
    parser.add_argument("--json", default=None, help="write the figures here")
    args = parser.parse_args(argv)
    try:
        model = load_model(args.model)
        result = measure(model, args.dev, args.test, args.draws, args.repeats, args.resamples, args.temperature)
    except (FstcrfError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"temperature {'given' if args.temperature else 'fitted on ' + args.dev}: {result['temperature']:.4f}")
    for key in ("dev", "test"):
        print(format_result(result[key]))
    if args.json:
        with open(args.json, "w") as stream:
            json.dump(
                {key: value if key == "temperature" else asdict(value) for key, value in result.items()},
                stream,
                indent=1,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
