"""Document-level NER on a local model: Finkel et al.'s consistency factors, Krishnan &
Manning's two-stage tagger, and both together, on CoNLL-2003 English.

From ``DIR`` holding ``eng.train``, ``eng.testa`` and ``eng.testb`` (IOB1 or IOB2
NER labels in the fourth column, read as IOB2):

1. the local model (``--template``, ``--sigma``) trained on eng.train, with the
   consistency penalties estimated from its gold documents;
2. its ``--folds``-fold jackknife of eng.train, computed once and shared by every
   second stage;
3. one second stage per ``--second-sigma`` (the local template plus the majority
   columns of :mod:`fstcrf.document.two_stage`);
4. on eng.testa, the dev F1 of the local model's Viterbi output, of consistency
   decoding of the local model for each ``--scale`` and ``--block-size``, of each
   second stage, and of consistency decoding of the dev-best second stage for
   each scale (its block size the one chosen for the local model);
5. on eng.testb, once, each method at its dev-chosen settings: F1, McNemar's test
   and a paired bootstrap over sentences against the local model, and the
   decoding time.

Models and the jackknife are cached in ``--cache`` under a key of their settings,
so a second run only decodes::

    python -m fstcrf.experiments.document_level --data /work/shared/data/conll2003 \\
        --folds 10 --json document_level.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import TypeVar

from fstcrf.corpus.conll import Corpus, read_conll, write_conll
from fstcrf.corpus.evaluate import mcnemar, score_labels
from fstcrf.corpus.schemes import convert
from fstcrf.document.decode import decode_documents, estimate_consistency, model_factors
from fstcrf.document.two_stage import TwoStageTagger, load_two_stage, second_stage_template
from fstcrf.errors import FstcrfError
from fstcrf.experiments.mbr import Bootstrap, paired_bootstrap
from fstcrf.features.defaults import template_feature_set
from fstcrf.model.chain import ChainCRF
from fstcrf.model.compose import jackknife

#: The files read from ``--data``, their columns and the target.
SPLITS = ("eng.train", "eng.testa", "eng.testb")
COLUMNS = "word,pos,chunk,ner"
TARGET = "ner"
T = TypeVar("T")


def read_split(folder: str | Path, name: str) -> Corpus:
    """One CoNLL-2003 file with its NER labels converted to IOB2."""
    path = Path(folder) / name
    if not path.exists():
        raise FstcrfError(f"{path} does not exist: give --data DIR holding {', '.join(SPLITS)}")
    corpus = read_conll(path, COLUMNS)
    sentences = [sentence.with_column(TARGET, convert(sentence[TARGET], "iob2")) for sentence in corpus]
    return Corpus(corpus.column_names, sentences, corpus.path, corpus.separator, corpus.trailing_docstart_lines)


@dataclass
class Settings:
    """What the figures depend on (see the module doc)."""

    template: str = "ner-rich"
    sigma: float = 1.0
    folds: int = 10
    second_sigmas: tuple[float, ...] = (1.0,)
    scales: tuple[float, ...] = (0.5, 1.0, 2.0)
    block_sizes: tuple[int, ...] = (0, 4)
    sweeps: int = 20
    max_iter: int = 100
    threads: int = 2
    resamples: int = 10_000

    def local(self, sigma: float | None = None) -> ChainCRF:
        """An unfitted local model (at ``sigma`` if given), with the feature set that
        ``fstcrf train`` gives the template (every pair for the rich NER templates)."""
        return ChainCRF(
            self.template,
            sigma=self.sigma if sigma is None else sigma,
            max_iter=self.max_iter,
            threads=self.threads,
            features=template_feature_set(self.template, "lbfgs"),
        )

    def key(self, *extra) -> str:
        """A short hash of the local model's settings and ``extra``."""
        parts = [self.template, self.sigma, self.max_iter, template_feature_set(self.template, "lbfgs"), *extra]
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:12]


@dataclass
class Method:
    """One method's dev-chosen setting and test figures against the local model."""

    name: str
    setting: str
    dev_f1: float
    test_f1: float = 0.0
    mcnemar_p: float = 1.0
    bootstrap: Bootstrap | None = None
    decode_seconds: float = 0.0


@dataclass
class Result:
    settings: Settings
    train_seconds: dict = field(default_factory=dict)  # step -> seconds (0 when cached)
    dev: dict = field(default_factory=dict)  # "method setting" -> dev F1
    methods: list[Method] = field(default_factory=list)


def _timed(run: Callable[[], T]) -> tuple[T, float]:
    started = time.perf_counter()
    value = run()
    return value, time.perf_counter() - started


def first_stage(train: Corpus, settings: Settings, cache: Path) -> tuple[ChainCRF, float]:
    """(the local model with the consistency penalties of ``train``, training seconds;
    0 when read from the cache)."""
    path = cache / f"local-{settings.key()}.model"
    if path.exists():
        return ChainCRF.load(path), 0.0
    model, seconds = _timed(lambda: settings.local().fit(train, target=TARGET))
    model.consistency_ = estimate_consistency(train, TARGET)
    cache.mkdir(parents=True, exist_ok=True)
    model.save(path)
    return model, seconds


def jackknifed(train: Corpus, settings: Settings, cache: Path) -> tuple[list[list[str]], float]:
    """(held-out labels [B][T] of ``train`` from ``settings.folds`` folds, seconds; 0 when cached)."""
    path = cache / f"jackknife{settings.folds}-{settings.key(settings.folds)}.txt"
    if path.exists():
        return read_conll(path, COLUMNS).column(TARGET), 0.0
    held_out, seconds = _timed(lambda: jackknife(train, settings.local(), TARGET, folds=settings.folds))
    cache.mkdir(parents=True, exist_ok=True)
    write_conll(held_out, path)
    return held_out.column(TARGET), seconds


def second_stage(
    train: Corpus, first: ChainCRF, held_out: Sequence[Sequence[str]], sigma: float, settings: Settings, cache: Path
) -> tuple[TwoStageTagger, float]:
    """(the two-stage tagger whose second stage has ``sigma``, seconds; 0 when cached),
    with the first stage's consistency penalties on the second stage too."""
    path = cache / f"two-stage{settings.folds}-{settings.key(settings.folds, sigma)}.model"
    if path.exists():
        tagger = load_two_stage(path)
        seconds = 0.0
    else:
        template = second_stage_template(settings.template)
        second = ChainCRF(**{**settings.local(sigma).get_params(), "template": template})
        tagger = TwoStageTagger(settings.local(), second, settings.folds, progress=False)
        _, seconds = _timed(lambda: tagger.fit_second(train, first, held_out, TARGET))
        tagger.save(path)
    tagger.second_.consistency_ = first.consistency_
    return tagger, seconds


def consistency_labels(model: ChainCRF, corpus: Corpus, scale: float, block_size: int, sweeps: int) -> list[list[str]]:
    """The labels [B][T] of annealing ``model`` with its consistency penalties at ``scale``
    (seed 0)."""
    factors = model_factors(model, ["consistency"], scale)
    return decode_documents(model, corpus, factors, "block", sweeps, block_size=block_size, seed=0)[0]


def _f1(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> float:
    return score_labels(gold, predicted).primary


def measure(data: str | Path, settings: Settings, cache: str | Path, log: Callable[[str], None] = print) -> Result:
    """The figures of the module doc."""
    cache = Path(cache)
    train, dev, test = (read_split(data, name) for name in SPLITS)
    result = Result(settings)
    first, result.train_seconds["local"] = first_stage(train, settings, cache)
    log(f"local model: {result.train_seconds['local']:.1f} s")
    held_out, result.train_seconds["jackknife"] = jackknifed(train, settings, cache)
    log(f"{settings.folds}-fold jackknife: {result.train_seconds['jackknife']:.1f} s")
    taggers = {}
    for sigma in settings.second_sigmas:
        taggers[sigma], result.train_seconds[f"second stage sigma {sigma:g}"] = second_stage(
            train, first, held_out, sigma, settings, cache
        )
        log(f"second stage at sigma {sigma:g}: {result.train_seconds[f'second stage sigma {sigma:g}']:.1f} s")
    dev_gold = dev.column(TARGET)
    # each method: name -> {setting: (dev F1, decoder of a corpus)}
    candidates: dict[str, dict[str, tuple[float, Callable[[Corpus], list[list[str]]]]]] = {}

    def score(method: str, setting: str, decoder: Callable[[Corpus], list[list[str]]]) -> None:
        f1 = _f1(dev_gold, decoder(dev))
        candidates.setdefault(method, {})[setting] = (f1, decoder)
        result.dev[f"{method} {setting}"] = f1
        log(f"dev {method} {setting}: {f1:.2f}")

    score("local", "viterbi", first.predict)
    for scale in settings.scales:
        for block in settings.block_sizes:
            score(
                "consistency",
                f"scale {scale:g} block {block}",
                partial(consistency_labels, first, scale=scale, block_size=block, sweeps=settings.sweeps),
            )
    for sigma, tagger in taggers.items():
        score("two-stage", f"sigma {sigma:g}", tagger.predict)
    best_block = int(_best(candidates["consistency"]).rsplit(" ", 1)[1])
    best_tagger = taggers[float(_best(candidates["two-stage"]).split(" ")[1])]
    for scale in settings.scales:
        score(
            "two-stage + consistency",
            f"sigma {best_tagger.second_.sigma:g} scale {scale:g} block {best_block}",
            partial(_combined, best_tagger, scale=scale, block_size=best_block, sweeps=settings.sweeps),
        )
    test_gold = test.column(TARGET)
    local_test = None
    for method, options in candidates.items():
        setting = _best(options)
        labels, seconds = _timed(lambda: options[setting][1](test))
        local_test = labels if local_test is None else local_test
        outcome = Method(method, setting, options[setting][0], _f1(test_gold, labels), decode_seconds=seconds)
        if method != "local":
            outcome.mcnemar_p = mcnemar(test_gold, local_test, labels).p_value
            outcome.bootstrap = paired_bootstrap(test_gold, local_test, labels, settings.resamples)
        result.methods.append(outcome)
        log(f"test {method} {setting}: {outcome.test_f1:.2f}")
    return result


def _best(options: dict) -> str:
    """The setting of highest dev F1 (the first one on ties)."""
    return max(options, key=lambda setting: options[setting][0])


def _combined(tagger: TwoStageTagger, corpus: Corpus, scale: float, block_size: int, sweeps: int) -> list[list[str]]:
    """The second stage's consistency decoding of the majority columns of the first stage's labels."""
    extended = tagger.with_majorities(corpus, tagger.first_.predict(corpus), str(corpus.path or "the input"))
    return consistency_labels(tagger.second_, extended, scale, block_size, sweeps)


def format_result(result: Result) -> str:
    lines = ["training: " + ", ".join(f"{step} {seconds:.1f} s" for step, seconds in result.train_seconds.items())]
    lines.append("dev F1: " + "; ".join(f"{name} {f1:.2f}" for name, f1 in result.dev.items()))
    for method in result.methods:
        line = (
            f"{method.name:24s} {method.setting:32s} dev {method.dev_f1:6.2f}  test {method.test_f1:6.2f}  "
            f"decode {method.decode_seconds:6.1f} s"
        )
        if method.bootstrap is not None:
            boot = method.bootstrap
            line += (
                f"  McNemar p {method.mcnemar_p:.3g}; bootstrap {boot.difference:+.2f} "
                f"[{boot.low:+.2f}, {boot.high:+.2f}] p {boot.p_value:.4f}"
            )
        lines.append(line)
    return "\n".join(lines)


def _numbers(kind: type) -> Callable[[str], tuple]:
    return lambda text: tuple(kind(value) for value in text.split(","))


def main(argv: list[str] | None = None) -> int:
    defaults = Settings()
    parser = argparse.ArgumentParser(
        prog="python -m fstcrf.experiments.document_level", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--data", required=True, help=f"folder holding {', '.join(SPLITS)}")
    parser.add_argument("--cache", default="document-level-cache", help="models and jackknife (default %(default)s)")
    parser.add_argument("--template", default=defaults.template, help="local template (default %(default)s)")
    parser.add_argument("--sigma", type=float, default=defaults.sigma, help="local sigma (default %(default)s)")
    parser.add_argument("--folds", type=int, default=defaults.folds, help="jackknife folds (default %(default)s)")
    parser.add_argument(
        "--second-sigma",
        type=_numbers(float),
        default=defaults.second_sigmas,
        help="second-stage sigmas, comma-separated (default 1)",
    )
    parser.add_argument(
        "--scale", type=_numbers(float), default=defaults.scales, help="penalty scales (default 0.5,1,2)"
    )
    parser.add_argument("--block-size", type=_numbers(int), default=defaults.block_sizes, help="(default 0,4)")
    parser.add_argument("--sweeps", type=int, default=defaults.sweeps, help="annealing sweeps (default %(default)s)")
    parser.add_argument("--max-iter", type=int, default=defaults.max_iter, help="L-BFGS iterations (default 100)")
    parser.add_argument("--threads", type=int, default=defaults.threads, help="(default %(default)s)")
    parser.add_argument("--resamples", type=int, default=defaults.resamples, help="bootstrap (default 10000)")
    parser.add_argument("--json", default=None, help="write the figures here (default: none)")
    args = parser.parse_args(argv)
    settings = Settings(
        args.template,
        args.sigma,
        args.folds,
        args.second_sigma,
        args.scale,
        args.block_size,
        args.sweeps,
        args.max_iter,
        args.threads,
        args.resamples,
    )
    try:
        result = measure(args.data, settings, args.cache, log=lambda line: print(line, file=sys.stderr, flush=True))
    except (FstcrfError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(format_result(result))
    if args.json:
        Path(args.json).write_text(json.dumps(asdict(result), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
