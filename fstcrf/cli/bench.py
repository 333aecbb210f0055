"""``fstcrf bench TARGET``: the benchmarks of :mod:`fstcrf.bench`, run through the
table :data:`TARGETS`."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

from fstcrf.cli.common import find_conll2000
from fstcrf.cli.options import POSITIVE, add_command, real_number, whole_number
from fstcrf.document.settings import DEFAULT_SWEEPS
from fstcrf.errors import FstcrfError


@dataclass(frozen=True)
class Measurement:
    """One benchmark of a target.  ``measure`` runs it with the command's options and
    returns the arguments of the functions that print its result, named
    "module:function" in :mod:`fstcrf.bench` (imported when the target runs, as they
    load numpy and more): ``table``, and ``json`` for --json, which is a function
    giving a JSON value or its text, True when the one argument is a JSON value
    itself, or False when the table is printed."""

    measure: Callable[[argparse.Namespace], tuple]
    table: str
    json: str | bool = False

    def report(self, arguments: tuple, as_json: bool) -> str:
        """The text printed for the result ``arguments``."""
        if not (as_json and self.json):
            return _bench_function(self.table)(*arguments)
        if self.json is True:
            return json.dumps(arguments[0])
        value = _bench_function(self.json)(*arguments)
        return value if isinstance(value, str) else json.dumps(value)


def _bench_function(name: str) -> Callable:
    """The function of a "module:function" name in :mod:`fstcrf.bench`."""
    module, function = name.split(":")
    return getattr(import_module(f"fstcrf.bench.{module}"), function)


def _bench(args: argparse.Namespace) -> int:
    """Run a target's benchmarks, printing each one's result as soon as it is measured."""
    if args.in_memory and args.what != "train":
        raise FstcrfError("--in-memory applies to bench train")
    for number, measurement in enumerate(_measurements(args)):
        if number:
            print()
        print(measurement.report(measurement.measure(args), args.json))
    return 0


def _measurements(args: argparse.Namespace) -> tuple[Measurement, ...]:
    """The benchmarks of the command's target, or of the variant an option chooses."""
    if args.what == "compose" and (args.model or args.test):
        return VARIANTS["compose --model"]
    if args.what == "train" and args.in_memory:
        return VARIANTS["train --in-memory"]
    if args.what == "bandit" and args.speed_only:
        return VARIANTS["bandit --speed-only"]
    if args.what == "tag" and args.test:
        return VARIANTS["tag --test"]
    return TARGETS[args.what]


def _conll2000(args: argparse.Namespace) -> Path:
    """The CoNLL-2000 folder of --data, $FSTCRF_DATA or NLTK's data (find_conll2000); an
    error naming the target when there is none."""
    folder = find_conll2000(args.data)
    if folder is None:
        raise FstcrfError(f"bench {args.what} needs CoNLL-2000: set FSTCRF_DATA or --data")
    return folder


def _shared_data(args: argparse.Namespace, corpora: list[str]) -> Path:
    """The data folder (--data, else $FSTCRF_DATA) holding the named corpus folders."""
    chosen = args.data or os.environ.get("FSTCRF_DATA")
    if not chosen:
        raise FstcrfError(f"bench {args.what} needs --data DIR (or FSTCRF_DATA) holding {', '.join(corpora)}")
    missing = [name for name in corpora if not (Path(chosen) / name).is_dir()]
    if missing:
        raise FstcrfError(f"bench {args.what}: {chosen} has no {', '.join(missing)} folder")
    return Path(chosen)


def _names_among(text: str, known, option: str) -> list[str]:
    """The comma-separated names of ``text``, at least one, each among ``known``."""
    names = [name for name in text.split(",") if name]
    if not names or set(names) - set(known):
        raise FstcrfError(f"{option} takes {', '.join(known)}, got {text!r}")
    return names


def _whole_numbers(text: str) -> tuple[int, ...]:
    """An argparse type: comma-separated whole numbers >= 1, at least one."""
    return tuple(POSITIVE(number) for number in text.split(","))


def _kernel(args: argparse.Namespace) -> tuple:
    from fstcrf.bench.kernel import bench_kernel

    return (
        bench_kernel(tokens=args.tokens, repeats=args.repeats, reference_seconds=args.seconds or 1.0, seed=args.seed),
    )


def _compose(args: argparse.Namespace) -> tuple:
    from fstcrf.bench.compose import bench_compose

    return (bench_compose(tokens=args.tokens, repeats=args.repeats, seed=args.seed),)


def _compose_model(args: argparse.Namespace) -> tuple:
    if not (args.model and args.test):
        raise FstcrfError("bench compose on a real model needs both --model JOINT and --test FILE")
    from fstcrf.bench.compose import bench_compose_model

    return (bench_compose_model(args.model, args.test, repeats=args.repeats),)


def _compose_process(args: argparse.Namespace) -> tuple:
    from fstcrf.bench.process import bench_compose_process

    return (bench_compose_process(args.model, args.test, args.threads, args.repeats, not args.quiet),)


def _requiring(purpose: str, *modules: str) -> None:
    """MissingExtraError naming the extra of the first of ``modules`` not installed,
    before a benchmark starts (its child processes would end in a traceback)."""
    from fstcrf.extras import require

    for module in modules:
        require(module, purpose)


def _train_process(args: argparse.Namespace) -> tuple:
    from fstcrf.bench.process import bench_train_process

    _requiring("bench train", "pycrfsuite")
    folder = _conll2000(args)
    return (bench_train_process(folder, args.iterations or 50, args.threads, args.repeats, not args.quiet),)


def _train_in_memory(args: argparse.Namespace) -> tuple:
    from fstcrf.bench.in_memory import bench_train

    _requiring("bench train", "pycrfsuite")
    folder = _conll2000(args)
    return (bench_train(folder, args.vs, iterations=args.iterations or 50, threads=args.threads),)


def _tag_process(args: argparse.Namespace) -> tuple:
    from fstcrf.bench.process import bench_tag_process

    _requiring("bench tag", "pycrfsuite")
    folder = _conll2000(args)
    return (bench_tag_process(folder, args.copies or 10, args.model, args.threads, args.repeats, not args.quiet),)


def _tag_file(args: argparse.Namespace) -> tuple:
    from fstcrf.bench.process import bench_tag_file

    if args.model is None:
        raise FstcrfError("bench tag --test FILE needs --model MODEL, the model to tag FILE with")
    return (bench_tag_file(args.model, args.test, args.threads, args.repeats, not args.quiet),)


def _stream(args: argparse.Namespace) -> tuple:
    from fstcrf.bench.process import bench_stream_process

    folder = _conll2000(args)
    return (bench_stream_process(folder, args.gigabytes, args.model, args.threads, not args.quiet),)


def _grammar(args: argparse.Namespace) -> tuple:
    if not (args.model and args.test):
        raise FstcrfError("bench grammar needs --model MODEL --test FILE")
    from fstcrf.bench.grammar import bench_grammar

    return (bench_grammar(args.model, args.test, repeats=args.repeats),)


def _partial(args: argparse.Namespace) -> tuple:
    from fstcrf.bench.partial import bench_partial

    folder = _conll2000(args)
    return (bench_partial(folder, args.fraction, args.seed, args.iterations or 50, args.threads),)


def _corrections(args: argparse.Namespace) -> tuple:
    from fstcrf.bench.corrections import bench_corrections

    data = _shared_data(args, ["conll2000", "conll2003"])
    models = {task: path for task, path in (("chunk", args.model), ("ner", args.ner_model)) if path}
    results = bench_corrections(
        data, models, args.held_out, args.threads, not args.quiet, args.iterations, args.sentences
    )
    return (results,)


def _bandit(args: argparse.Namespace) -> tuple:
    from fstcrf.bench.bandit import bench_bandit

    folder = _conll2000(args)
    result = bench_bandit(
        folder,
        seeds=args.seeds or 3,
        calls=args.calls,
        threads=args.threads,
        plot=args.plot,
        dev_sentences=args.dev_sentences,
    )
    return (result,)


def _bandit_speed(args: argparse.Namespace) -> tuple:
    from fstcrf.bench.bandit import measure_speed, splits

    folder = _conll2000(args)
    return (measure_speed(splits(folder, args.dev_sentences)[0], args.threads, args.repeats),)


def _nonlocal(args: argparse.Namespace) -> tuple:
    from fstcrf.bench.consistency import CORPORA, bench_nonlocal

    languages = _names_among(args.languages, CORPORA, "--languages")
    results = bench_nonlocal(
        _shared_data(args, [CORPORA[x][0] for x in languages]),
        languages,
        args.cache,
        seeds=args.seeds or 5,
        sweeps=args.sweeps,
        gibbs_sweeps=args.gibbs_sweeps,
        threads=args.threads,
        plot=args.plot,
        curve_sweeps=args.curve_sweeps,
        **({"max_iter": args.iterations} if args.iterations else {}),
    )
    return (results,)


def _transfer(args: argparse.Namespace) -> tuple:
    from fstcrf.bench.transfer import bench_transfer

    results = bench_transfer(
        _shared_data(args, ["conll2003", "seminars"]),
        splits=args.splits,
        seed=args.seed,
        threads=args.threads,
        learning_curve=args.plot is not None,
        plot=args.plot,
        progress=not args.quiet,
        cache=args.cache,
        max_iter=args.iterations,
    )
    return (results,)


def _defaults(args: argparse.Namespace) -> tuple:
    from fstcrf.bench.defaults import bench_defaults

    results = bench_defaults(
        _shared_data(args, ["conll2000", "conll2003"]),
        folds=args.folds,
        sentences=args.sentences or 4000,
        max_iter=args.iterations or 60,
        threads=args.threads,
        progress=not args.quiet,
        default_max_iter=args.iterations,
    )
    return (results,)


def _sklearn(args: argparse.Namespace) -> tuple:
    from fstcrf.bench.sklearn import bench_sklearn

    _requiring("bench sklearn", "sklearn", "sklearn_crfsuite")
    return (bench_sklearn(_shared_data(args, ["conll2002"]), search=args.search),)


def _pycrfsuite(args: argparse.Namespace) -> tuple:
    from fstcrf.bench.pycrfsuite import bench_pycrfsuite

    _requiring("bench pycrfsuite", "pycrfsuite", "nltk")
    return (bench_pycrfsuite(_conll2000(args), args.iterations),)


def _distributed(args: argparse.Namespace) -> tuple:
    """The rows and the load averages (1, 5 and 15 minutes) before and after them."""
    from fstcrf.bench.distributed import bench_distributed

    folder = _conll2000(args)
    load_before = os.getloadavg()
    rows = bench_distributed(folder, args.copies or 20, args.iterations or 5)
    return rows, (load_before, os.getloadavg())


def _mce(args: argparse.Namespace) -> tuple:
    from fstcrf.bench.mce import TASKS, bench_mce

    tasks = _names_among(args.tasks, TASKS, "--tasks")
    results = bench_mce(
        _shared_data(args, [TASKS[task][0] for task in tasks]),
        tasks,
        map_iter=args.map_iter,
        mce_iter=args.mce_iter,
        threads=args.threads,
        progress=not args.quiet,
    )
    return (results,)


def _features(args: argparse.Namespace) -> tuple:
    """Feature extraction on CoNLL-2000, on the tutorial's dicts when conll2002/ is
    beside conll2000/ (or in it), and with the NER template when conll2003/ is."""
    from fstcrf.bench.features import bench_features

    folder = _conll2000(args)

    def beside(name: str, *files: str) -> Path | None:
        candidates = (folder.parent / name, folder / name)
        return next((where for where in candidates if all((where / file).is_file() for file in files)), None)

    tutorial = beside("conll2002", "esp.train", "esp.testb")
    ner = beside("conll2003", "eng.train", "eng.testa")
    return (bench_features(folder, args.copies or 10, args.repeats, tutorial, ner),)


#: The cases of ``fstcrf bench calls`` (fstcrf.bench.calls; its module imports numpy).
CALL_CASES = ("chunker", "grammar", "joint", "cascade", "ner", "sklearn", "tagger", "nltk", "logits", "spacy")


def _calls(args: argparse.Namespace) -> tuple:
    """One sentence per call against a file at a time, per kind of model."""
    from fstcrf.bench.calls import MODEL_KINDS, bench_calls

    models = {}
    for given in filter(None, (args.call_models or "").split(",")):
        kind, _, path = given.partition("=")
        if kind not in MODEL_KINDS or not path:
            raise FstcrfError(f"--models takes KIND=MODEL pairs, KIND one of {', '.join(MODEL_KINDS)}; got {given!r}")
        models[kind] = path
    folder = _conll2000(args)
    cases = _names_among(args.cases, CALL_CASES, "--cases") if args.cases else None
    conll2003 = folder.parent / "conll2003"
    result = bench_calls(folder, models, conll2003, args.sentences or 1000, args.repeats, cases)
    return (result,)


def _spacy(args: argparse.Namespace) -> tuple:
    """The spaCy component in nlp.pipe against the model's own decoding (needs fstcrf[spacy])."""
    from fstcrf.bench.spacy import bench_spacy

    folder = _conll2000(args)
    return (bench_spacy(folder, args.model, args.threads, args.repeats, args.iterations or 20),)


def _torch(args: argparse.Namespace) -> tuple:
    """fstcrf.torch.CRF against pytorch-crf and torch-struct (needs fstcrf[torch,bench-torch])."""
    from importlib.util import find_spec

    from fstcrf.bench.neural import TOOLS, bench_torch
    from fstcrf.errors import MissingExtraError
    from fstcrf.extras import install_hint

    tools = _names_among(args.tools, TOOLS, "--tools")
    if "fstcrf" not in tools:
        raise FstcrfError("--tools must name fstcrf: the other tools' times are given as multiples of its")
    modules = {"fstcrf": "torch", "pytorch-crf": "torchcrf", "torch-struct": "torch_struct"}
    for module in (modules[tool] for tool in tools):
        if find_spec(module) is None:  # each tool's process imports it; this one need not
            raise MissingExtraError(f"bench torch needs {module}, which is not installed: {install_hint(module)}")
    return (
        bench_torch(
            args.tag_counts,
            seed=args.seed,
            repeats=args.repeats,
            tools=tools,
            round_seconds=args.seconds or 1.0,
            threads=args.threads,
        ),
    )


def _serve(args: argparse.Namespace) -> tuple:
    """fstcrf serve under load (wrk) against a python-crfsuite service (needs fstcrf[serve,bench])."""
    from fstcrf.bench.serve import bench_serve

    _requiring("bench serve", "starlette", "uvicorn", "prometheus_client", "pycrfsuite")
    result = bench_serve(
        _conll2000(args),
        args.model,
        iterations=args.iterations or 20,
        seconds=args.seconds or 10.0,
        threads=args.threads,
        soak_minutes=args.soak_minutes,
        progress=not args.quiet,
        copies=args.copies or 5,
        concurrencies=args.concurrencies,
        request_sentences=args.request_sentences,
        repeats=args.repeats,
    )
    return (result,)


#: The benchmarks of each target of ``fstcrf bench``, printed one after another, in
#: the order the help lists the targets.
TARGETS: dict[str, tuple[Measurement, ...]] = {
    "kernel": (Measurement(_kernel, "kernel:format_kernel"),),
    "compose": (Measurement(_compose, "compose:format_compose"),),
    "train": (Measurement(_train_process, "process:format_process", json=True),),
    "grammar": (Measurement(_grammar, "grammar:format_grammar"),),
    "partial": (Measurement(_partial, "partial:format_partial"),),
    "corrections": (Measurement(_corrections, "corrections:format_corrections", json=True),),
    "bandit": (Measurement(_bandit, "bandit:format_bandit"),),
    "nonlocal": (Measurement(_nonlocal, "consistency:format_nonlocal", json="consistency:nonlocal_json"),),
    "transfer": (Measurement(_transfer, "transfer:format_transfer", json="transfer:transfer_json"),),
    "defaults": (Measurement(_defaults, "defaults:format_defaults", json="defaults:defaults_json"),),
    "tag": (Measurement(_tag_process, "process:format_process", json=True),),
    "sklearn": (Measurement(_sklearn, "sklearn:format_sklearn", json=True),),
    "pycrfsuite": (Measurement(_pycrfsuite, "pycrfsuite:format_pycrfsuite", json=True),),
    "distributed": (Measurement(_distributed, "distributed:format_distributed", json="distributed:distributed_json"),),
    "mce": (Measurement(_mce, "mce:format_mce", json="mce:mce_json"),),
    "stream": (Measurement(_stream, "process:format_stream", json=True),),
    "features": (Measurement(_features, "features:format_features", json=True),),
    "torch": (Measurement(_torch, "neural:format_torch", json=True),),
    "spacy": (Measurement(_spacy, "spacy:format_spacy", json=True),),
    "calls": (Measurement(_calls, "calls:format_calls", json=True),),
    "serve": (Measurement(_serve, "serve:format_serve", json=True),),
}

#: The benchmarks of the variants of a target that an option chooses.
VARIANTS: dict[str, tuple[Measurement, ...]] = {
    "compose --model": (
        Measurement(_compose_model, "compose:format_compose_model"),
        Measurement(_compose_process, "process:format_process"),
    ),
    "train --in-memory": (Measurement(_train_in_memory, "in_memory:format_train"),),
    "bandit --speed-only": (Measurement(_bandit_speed, "bandit:format_speed"),),
    "tag --test": (Measurement(_tag_file, "process:format_tag_file", json=True),),
}


def add_parsers(commands) -> None:
    """Register fstcrf bench on the subparsers ``commands``."""
    bench = add_command(
        commands,
        "bench",
        "measure speed against reference implementations",
        _bench,
        inputs=("data", "model", "ner_model", "call_models", "test", "cache"),
        outputs=("plot",),
    )
    bench.add_argument(
        "what",
        choices=list(TARGETS),
        help="kernel: forward-backward and Viterbi against numpy and pynini; "
        "compose: factorised joint inference against the dense cross product; "
        "train: the whole fstcrf train process against a python-crfsuite script with "
        "the same predicates on CoNLL-2000 (--in-memory: training and tagging inside one "
        "process); tag: the whole fstcrf tag process against a python-crfsuite script on "
        "--copies copies of the CoNLL-2000 test set (--model: an fstcrf model to tag with; "
        "--model M --test F: fstcrf tag M F alone, in whole processes, and its tokens per second); "
        "sklearn: sklearn-crfsuite's CoNLL-2002 Spanish tutorial with sklearn_crfsuite and "
        "fstcrf.sklearn (--search: also a RandomizedSearchCV with each); "
        "pycrfsuite: python-crfsuite's tutorial workflow and NLTK's CRFTagger on CoNLL-2000 chunking, "
        "each with python-crfsuite and with fstcrf.pycrfsuite (needs fstcrf[bench] and nltk); "
        "grammar: decoding time under each shipped grammar (--model, --test); "
        "partial: training with hidden labels against fewer whole sentences; "
        "corrections: a simulated person correcting chunks until every sentence is right, each "
        "correction decoded as a constraint against pasted into the output, on CoNLL-2000 chunking and "
        "CoNLL-2003 English NER with fstcrf train's default models (--data DIR holding conll2000/ and "
        "conll2003/; --model and --ner-model: use these models instead of training them; --held-out: on "
        "development data); "
        "bandit: learning from bandit feedback against full information on CoNLL-2000 "
        "NP chunking (about an hour with the defaults); "
        "nonlocal: label consistency by annealed sampling against Viterbi on CoNLL-2003 "
        "English and CoNLL-2002 Dutch NER (--data DIR holding conll2003/ and conll2002/); "
        "transfer: seminar extraction with no transfer, the cascade and joint decoding of "
        "a CoNLL-2003 NER model (--data DIR holding conll2003/ and seminars/); "
        "defaults: the default templates of fstcrf train by cross-validation on the training "
        "data of CoNLL-2000 chunking and CoNLL-2003 NER, and their test F1 (--data DIR); "
        "distributed: seconds per L-BFGS iteration in one process and on LocalClusters of 1 "
        "and 2 workers, on CoNLL-2000 and on --copies copies of it (default 20) (needs "
        "fstcrf[distributed]); "
        "mce: MAP against MCE-F F-score training on CoNLL-2000 chunking and CoNLL-2003 "
        "English NER, C and MCE-F iterations chosen on dev, test F1 and McNemar's test "
        "(--data DIR holding conll2000/ and conll2003/); "
        "stream: fstcrf tag MODEL - fed --gigabytes of copies of the CoNLL-2000 test set on "
        "standard input: throughput, time to first output and resident memory; "
        "features: tokens per second of feature extraction for the shipped chunking "
        "templates on --copies copies of the CoNLL-2000 test set (default 10), and for "
        "sklearn-crfsuite's tutorial dicts when conll2002/ is beside conll2000/, and for the "
        "NER default ner-rich on --copies copies of eng.testa when conll2003/ is; "
        "torch: the CRF layer fstcrf.torch.CRF against pytorch-crf and torch-struct, NLL "
        "forward+backward and Viterbi at batch 32, lengths 25-50, 9 and 45 tags (--tag-counts), each tool "
        "(--tools) in its own process (needs fstcrf[torch,bench-torch]); "
        "spacy: tokens per second of the spaCy component inside nlp.pipe on the CoNLL-2000 test set "
        "against the model's own decoding (--model: a chunker or composed model; default: one trained "
        "for --iterations, default 20) (needs fstcrf[spacy]); "
        "calls: one sentence per call against one call on a batch, per kind of model (--models), "
        "fstcrf.pycrfsuite's Tagger against python-crfsuite's, NLTK's CRFTagger over each, decode_logits "
        "and the spaCy component (--repeats alternations, --sentences); "
        "serve: fstcrf serve under load from wrk on the loopback interface against a python-crfsuite "
        "service in the same web framework, requests of 1 and 20 CoNLL-2000 test sentences "
        "(--request-sentences) at concurrency 1, 8 and 64 (--concurrencies), --seconds per run, with "
        "fstcrf tag's sentences per second on --copies copies of the test set (default 5) and "
        "--soak-minutes at 80%% of the peak (--model: the model served; default: "
        "one trained for --iterations, default 20) (needs fstcrf[serve,bench] and wrk)",
    )
    bench.add_argument(
        "--gigabytes",
        type=real_number(1e-6, 1e4),
        default=5.0,
        help="stream: gigabytes (10^9 bytes) fed to fstcrf tag (default %(default)s)",
    )
    bench.add_argument(
        "--seconds",
        type=real_number(0.001, 3600.0),
        default=None,
        help="serve: seconds of load per run, in whole seconds (wrk's), each after a warm-up of 2 s or "
        "--seconds if fewer (default 10); kernel: seconds each numpy and pynini "
        "run is sized to take per lattice (default 1); torch: seconds of calls a timed round makes at most "
        "(default 1)",
    )
    bench.add_argument(
        "--concurrencies",
        type=_whole_numbers,
        default="1,8,64",
        help="serve: comma-separated connection counts of the load (default %(default)s)",
    )
    bench.add_argument(
        "--request-sentences",
        type=_whole_numbers,
        default="1,20",
        help="serve: comma-separated sentences per request of the load (default %(default)s)",
    )
    bench.add_argument(
        "--soak-minutes",
        type=real_number(0.0, 1440.0),
        default=0.0,
        help="serve: then load fstcrf serve for this many minutes at 80%% of the peak and check errors "
        "and memory (default %(default)s: no soak)",
    )
    bench.add_argument(
        "--folds", type=whole_number(2), default=3, help="defaults: cross-validation folds (default %(default)s)"
    )
    bench.add_argument(
        "--sentences",
        type=POSITIVE,
        default=None,
        help="defaults: training sentences cross-validated (default 4000); calls: test sentences of each "
        "side (default 1000); corrections: the first N sentences of each test set "
        "(default all)",
    )
    bench.add_argument(
        "--models",
        dest="call_models",
        default=None,
        metavar="KIND=MODEL,...",
        help="calls: the model files of its cases, by kind: chunker (fstcrf train train.txt), grammar "
        "(--grammar iob2), composed (fstcrf compose), ner (fstcrf train eng.train --target ner), spacy "
        "(a model reading words alone) (default: none; cases without their model are left out)",
    )
    bench.add_argument(
        "--cases",
        default=None,
        help="calls: comma-separated cases to run, from " + ", ".join(CALL_CASES) + " (default: all that can)",
    )
    bench.add_argument(
        "--seeds",
        type=POSITIVE,
        default=None,
        help="bandit: seeds per objective (default 3); nonlocal: seeds of the block sampler (default 5)",
    )
    bench.add_argument(
        "--json",
        action="store_true",
        help="nonlocal, transfer, defaults, tag, train, sklearn, pycrfsuite, distributed, mce, stream, features, "
        "spacy, calls, serve: print JSON instead of the table (default: off)",
    )
    bench.add_argument(
        "--copies",
        type=POSITIVE,
        default=None,
        help="tag: copies of the CoNLL-2000 test set tagged as one file (default 10; features: "
        "transformed; serve: default 5); distributed: "
        "copies of the training set trained on as one file (default 20)",
    )
    bench.add_argument(
        "--in-memory",
        action="store_true",
        help="train: time training and tagging inside one process, without start-up, reading "
        "or writing (default: the whole processes)",
    )
    bench.add_argument(
        "--search",
        action="store_true",
        help="sklearn: also run RandomizedSearchCV over c1 and c2 with each tool (long; default: off)",
    )
    bench.add_argument(
        "--splits",
        type=POSITIVE,
        default=10,
        help="transfer: random 50/50 splits of the seminar messages (default %(default)s)",
    )
    bench.add_argument(
        "--tag-counts",
        type=_whole_numbers,
        default="9,45",
        help="torch: comma-separated numbers of tags (default %(default)s)",
    )
    bench.add_argument(
        "--tools",
        default="fstcrf,pytorch-crf,torch-struct",
        help="torch: comma-separated tools timed, fstcrf among them (default %(default)s)",
    )
    bench.add_argument(
        "--languages",
        default="eng,ned",
        help="nonlocal: comma-separated languages, from eng and ned (default %(default)s)",
    )
    bench.add_argument(
        "--sweeps",
        type=POSITIVE,
        default=DEFAULT_SWEEPS,
        help="nonlocal: sweeps of the block sampler (default %(default)s)",
    )
    bench.add_argument(
        "--curve-sweeps",
        type=POSITIVE,
        default=50,
        help="nonlocal --plot: the curve's largest sweep count, of 1, 2, 5, 10, 20 and 50 (default %(default)s)",
    )
    bench.add_argument(
        "--gibbs-sweeps", type=POSITIVE, default=10, help="nonlocal: sweeps of the gibbs sampler (default %(default)s)"
    )
    bench.add_argument(
        "--cache",
        default=None,
        metavar="DIR",
        help="nonlocal, transfer: keep trained models here and reuse them (default ~/.cache/fstcrf)",
    )
    bench.add_argument(
        "--calls", type=POSITIVE, default=1_000_000, help="bandit: feedback calls per run (default %(default)s)"
    )
    bench.add_argument(
        "--speed-only",
        action="store_true",
        help="bandit: only time epochs against a full gradient, and on more --threads against one thread "
        "(a few minutes; default: off)",
    )
    bench.add_argument(
        "--dev-sentences",
        type=POSITIVE,
        default=1000,
        help="bandit: the last N training sentences are the dev split (default %(default)s)",
    )
    bench.add_argument(
        "--plot",
        default=None,
        metavar="PNG",
        help="bandit: write dev F1 against feedback calls here; nonlocal: English test F1 against "
        "sweeps for both samplers; transfer: the learning curve (needs matplotlib; default: "
        "none)",
    )
    bench.add_argument(
        "--tokens",
        type=POSITIVE,
        default=100_000,
        help="tokens per lattice size (kernel, compose) (default %(default)s)",
    )
    bench.add_argument(
        "--repeats",
        type=POSITIVE,
        default=3,
        help="timings are the best of this many runs; tag and train: runs of each side; serve: runs of "
        "fstcrf tag; bandit --speed-only: runs of each learner (--threads, and two on one thread), in "
        "turn, medians reported (default %(default)s)",
    )
    bench.add_argument(
        "--seed",
        type=whole_number(0),
        default=0,
        help="seed of the random scores and hidden labels (default %(default)s)",
    )
    bench.add_argument(
        "--vs", choices=["crfsuite"], default="crfsuite", help="peer for bench train (default %(default)s)"
    )
    bench.add_argument(
        "--iterations",
        type=POSITIVE,
        default=None,
        help="L-BFGS iterations (bench train, partial: default 50; distributed: default 5; pycrfsuite: each "
        "workflow's own, 50 for the tutorial and until convergence for NLTK; spacy, serve: of the "
        "chunker trained when --model is not given, default 20; defaults: of each model cross-validated, "
        "default 60, and of the default model, default fstcrf train's own; nonlocal: of each "
        "local model, default 250; transfer: of the NER model and each seminar CRF, default 150 and 100; "
        "corrections: of the models it trains, default fstcrf train's own)",
    )
    bench.add_argument(
        "--tasks",
        default="chunking,ner",
        help="mce: comma-separated tasks, from chunking and ner (default %(default)s)",
    )
    bench.add_argument(
        "--map-iter",
        type=POSITIVE,
        default=None,
        help="mce: L-BFGS iterations of MAP training (default: 200 chunking, 150 ner)",
    )
    bench.add_argument(
        "--mce-iter",
        type=POSITIVE,
        default=30,
        help="mce: MCE-F iterations scored on dev for each C (default %(default)s)",
    )
    bench.add_argument(
        "--fraction",
        type=real_number(0.0, 1.0, closed=False),
        default=0.5,
        help="share of labels hidden (bench partial) (default %(default)s)",
    )
    bench.add_argument(
        "--threads",
        type=POSITIVE,
        default=2,
        help="fstcrf threads for bench train, partial, spacy and serve; torch: torch threads of each tool "
        "(default %(default)s)",
    )
    bench.add_argument(
        "--data", default=None, help="folder holding CoNLL-2000 (bench train, partial) (default: as for fstcrf demo)"
    )
    bench.add_argument(
        "--model",
        default=None,
        help="trained model (bench grammar, tag, stream, spacy, serve; bench corrections: the chunker) or "
        "composed model (bench compose on real data, spacy) "
        "(default: none)",
    )
    bench.add_argument(
        "--ner-model",
        default=None,
        help="bench corrections: the English NER model (default: one trained by fstcrf train eng.train "
        "--columns word,pos,chunk,ner --target ner)",
    )
    bench.add_argument(
        "--held-out",
        action="store_true",
        help="bench corrections: simulate on development data, where its settings were chosen: the last "
        "20%% of CoNLL-2000's train.txt (the chunker trained on the first 80%%) and eng.testa (default: "
        "the test sets)",
    )
    bench.add_argument(
        "--test",
        default=None,
        help="test file (bench grammar, bench compose --model; bench tag --model M --test F: fstcrf tag M F "
        "alone, whole processes, tokens per second) (default: none)",
    )
