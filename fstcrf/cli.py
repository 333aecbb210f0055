"""The ``fstcrf`` command line."""
from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from .errors import FstcrfError, LabelError

LOG = logging.getLogger("fstcrf")


def _map_types(labels: list[list[str]], keep: set[str] | None) -> list[list[str]]:
    """Replace chunk labels whose type is not in ``keep`` by O (NP chunking); an
    unknown label "?" stays, and each member of a label set "A|B" is mapped."""
    if not keep:
        return labels

    def mapped(value: str) -> str:
        if value == "?":
            return value
        members = [label if label.partition("-")[2] in keep else "O" for label in value.split("|")]
        return "|".join(dict.fromkeys(members))

    return [[mapped(label) for label in sentence] for sentence in labels]


def _restrict_types(corpus, target: str, keep: set[str] | None):
    """The corpus with the target column's foreign chunk types mapped to O."""
    if not keep:
        return corpus
    for sentence, labels in zip(corpus.sentences, _map_types(corpus.column(target), keep)):
        sentence.columns[target] = labels
    return corpus


def _read(path: str, columns=None, allow_missing=()):
    from .conll import read_conll
    return read_conll(path, columns, allow_missing=allow_missing)


def _convert(args: argparse.Namespace) -> int:
    from .conll import write_conll
    from .schemes import convert
    corpus = _read(args.input, args.columns)
    if args.column not in corpus.column_names:
        raise FstcrfError(f"{args.input} has no column {args.column!r} (columns: {', '.join(corpus.column_names)}; "
                          "name them with --columns)")
    for sentence in corpus.sentences:
        try:
            sentence.columns[args.column] = convert(sentence.columns[args.column], args.scheme)
        except LabelError as error:
            line = sentence.line_numbers[error.position] if sentence.line_numbers else "?"
            raise LabelError(f"{args.input}:{line}: {error}") from None
    write_conll(corpus, args.output)
    LOG.info("wrote %s with column %s in %s", args.output, args.column, args.scheme.upper())
    return 0


def _model_from_args(args: argparse.Namespace):
    """An unfitted ChainCRF configured by the training options."""
    from .features import load_template
    from .model import TEMPLATES, ChainCRF
    template = args.template if args.template in TEMPLATES else load_template(args.template)
    return ChainCRF(template=template, order=args.order, algorithm=args.algorithm, sigma=args.sigma,
                    max_iter=args.max_iter, features=args.features, min_count=args.min_count,
                    threads=args.threads, grammar=args.grammar, grammar_params=_grammar_params(args),
                    reads=args.reads, read_transitions=not args.no_read_transitions, mce_c=args.mce_c,
                    mce_iter=args.mce_iter)


def _jackknife(args: argparse.Namespace) -> int:
    from .compose import jackknife
    from .conll import write_conll
    corpus = _read(args.train, args.columns)
    model = _model_from_args(args)
    LOG.info("jackknifing column %s of %s: %d models, each trained on %d/%d of the sentences",
             args.target, args.train, args.folds, args.folds - 1, args.folds)
    result = jackknife(corpus, model, args.target, args.folds)
    write_conll(result, args.output)
    LOG.info("wrote %s with column %s replaced by held-out predictions", args.output, args.target)
    return 0


def _train(args: argparse.Namespace) -> int:
    keep = set(args.only_types.split(",")) if args.only_types else None
    train = _restrict_types(_read(args.train, args.columns), args.target, keep)
    dev = _restrict_types(_read(args.dev, args.columns), args.target, keep) if args.dev else None
    init = None
    if args.init:
        from .model import load_model
        init = load_model(args.init)
        args.order, args.reads, args.no_read_transitions = init.order, init.reads, not init.read_transitions
    model = _model_from_args(args)
    LOG.info("training a %s order-%d CRF on %s (%d sentences, %d tokens)%s%s", args.algorithm, args.order,
             args.train, len(train), train.num_tokens, f", selecting on {args.dev}" if dev else "",
             f", starting from {args.init}" if init else "")
    model.fit(train, target=args.target, dev=dev, init=init)
    model.save(args.output)
    state = "interrupted; kept" if model.interrupted_ else "kept"
    LOG.info("%s the weights of iteration %d of %d; %d features; model written to %s", state,
             model.best_iteration_, model.n_iter_, len(model.weights_), args.output)
    return 0


def _grammar_params(args: argparse.Namespace) -> dict | None:
    """Grammar parameters from --define NAME=VALUE options (None if there are none)."""
    params = {}
    for definition in args.define:
        name, equals, value = definition.partition("=")
        if not equals or not name or not value:
            raise FstcrfError(f"--define expects NAME=VALUE, got {definition!r}")
        params[name] = value
    return params or None


def _grammar_options(args: argparse.Namespace) -> dict:
    """predict() keyword arguments from --grammar, --define and --on-infeasible."""
    if not args.grammar:
        return {}
    from .grammar import load_grammar
    return {"grammar": load_grammar(args.grammar), "params": _grammar_params(args),
            "on_infeasible": args.on_infeasible}


def _predict_with_progress(model, corpus, args: argparse.Namespace, chunk: int = 2000) -> list[list[str]]:
    from .progress import Progress
    if args.threads is not None:
        model.threads = args.threads
    options = _grammar_options(args)
    predictions = []
    sentences = corpus.sentences
    with Progress(len(sentences), "tagging", unit="sentences",
                  enabled=len(sentences) > chunk and not args.quiet) as bar:
        for first in range(0, len(sentences), chunk):
            batch = sentences[first:first + chunk]
            predictions += model.predict(batch, **options)
            bar.update(len(batch))
    return predictions


def _joint_predict_with_progress(joint, corpus, args: argparse.Namespace, chunk: int = 2000
                                 ) -> list[list[list[str]]]:
    """[components][sentences][tokens] labels of a composed model, with a progress bar."""
    from .progress import Progress
    if args.grammar:
        raise FstcrfError("--grammar applies to single models; a composed model decodes without one")
    if args.threads is not None:
        joint.threads = args.threads
    predictions: list[list[list[str]]] = [[] for _ in joint.components]
    sentences = corpus.sentences
    with Progress(len(sentences), f"{args.mode} decoding", unit="sentences",
                  enabled=len(sentences) > chunk and not args.quiet) as bar:
        for first in range(0, len(sentences), chunk):
            batch = sentences[first:first + chunk]
            for column, labels in zip(predictions, joint.predict(batch, mode=args.mode, k=args.k)):
                column.extend(labels)
            bar.update(len(batch))
    return predictions


def _read_for(model, path: str, gold_required: bool = False):
    """A CoNLL file read with the columns a model or a joint model was trained on
    (the predicted columns may be missing unless ``gold_required``)."""
    from .compose import JointModel
    if isinstance(model, JointModel):
        columns = model.components[0].columns_
        missing = () if gold_required else tuple(model.targets)
    else:
        columns, missing = model.columns_, () if gold_required else (model.target_,)
    return _read(path, columns, allow_missing=missing)


def _tag(args: argparse.Namespace) -> int:
    from .compose import JointModel, load_any
    from .conll import write_conll
    model = load_any(args.model)
    corpus = _read_for(model, args.input)
    if isinstance(model, JointModel):
        extra = _joint_predict_with_progress(model, corpus, args)
    else:
        extra = [_predict_with_progress(model, corpus, args)]
    write_conll(corpus, args.output if args.output else sys.stdout, extra_columns=extra)
    return 0


def _compose(args: argparse.Namespace) -> int:
    import pynini
    from .compose import compose
    from .model import load_model
    models = [load_model(path) for path in args.models]
    relations = [None] * (len(models) - 1)
    for spec in args.compat:
        position, equals, path = spec.partition("=")
        if not equals or not position.isdigit() or not 1 <= int(position) < len(models):
            raise FstcrfError(f"--compat expects K=FILE with 1 <= K < {len(models)} (the relation between "
                              f"models K-1 and K), got {spec!r}")
        try:
            relations[int(position) - 1] = pynini.Fst.read(path)
        except pynini.FstIOError:
            raise FstcrfError(f"{path}: cannot read an FST (OpenFst binary with symbol tables expected)") from None
    scales = None
    if args.scales:
        try:
            scales = [float(value) for value in args.scales.split(",")]
        except ValueError:
            raise FstcrfError(f"--scales expects comma-separated numbers, got {args.scales!r}") from None
    joint = compose(models, relations, scales=scales)
    joint.save(args.output)
    sizes = " x ".join(str(m.topology_.num_states) for m in models)
    LOG.info("composed %s (%s = %d joint states%s); written to %s", " + ".join(joint.targets), sizes,
             joint.space.num_states, "" if joint.space.allowed is None
             else f", {int(joint.space.allowed.sum())} compatible", args.output)
    return 0


def _split_gold_pred(path: str) -> tuple[list[list[str]], list[list[str]]]:
    """The last two columns of a tagged file: gold and predicted (conlleval's layout)."""
    corpus = _read(path)
    if len(corpus.column_names) < 2:
        raise FstcrfError(f"{path}: expected at least two columns (gold, predicted), found "
                          f"{len(corpus.column_names)}")
    gold_name, pred_name = corpus.column_names[-2:]
    return corpus.column(gold_name), corpus.column(pred_name)


def _eval(args: argparse.Namespace) -> int:
    from .evaluate import score_chunks
    keep = set(args.only_types.split(",")) if args.only_types else None
    if args.pred:
        if args.model or args.test:
            raise FstcrfError("give either --pred FILE or MODEL TEST, not both")
        gold, predicted = _split_gold_pred(args.pred)
    else:
        if not (args.model and args.test):
            raise FstcrfError("give MODEL and TEST, or --pred FILE")
        from .compose import JointModel, load_any
        model = load_any(args.model)
        corpus = _read_for(model, args.test, gold_required=True)
        if isinstance(model, JointModel):
            for target, predicted in zip(model.targets, _joint_predict_with_progress(model, corpus, args)):
                gold = corpus.column(target)
                print(f"== {target} ({args.mode} decoding)")
                if any(label[:2] in ("B-", "I-") for labels in gold for label in labels):
                    print(score_chunks(_map_types(gold, keep), _map_types(predicted, keep)).format())
                else:
                    right = sum(g == p for gs, ps in zip(gold, predicted) for g, p in zip(gs, ps))
                    total = sum(len(labels) for labels in gold)
                    print(f"processed {total} tokens; accuracy: {100 * right / total:6.2f}%")
            return 0
        gold = corpus.column(model.target_)
        predicted = _predict_with_progress(model, corpus, args)
    print(score_chunks(_map_types(gold, keep), _map_types(predicted, keep)).format())
    return 0


def _compare(args: argparse.Namespace) -> int:
    from .evaluate import mcnemar, score_chunks
    gold_a, pred_a = _split_gold_pred(args.pred_a)
    gold_b, pred_b = _split_gold_pred(args.pred_b)
    if gold_a != gold_b:
        raise FstcrfError(f"{args.pred_a} and {args.pred_b} do not have the same gold labels; "
                          "compare predictions of the same test file")
    result = mcnemar(gold_a, pred_a, pred_b)
    print(f"A: {args.pred_a}  F1 {score_chunks(gold_a, pred_a).f1:.2f}")
    print(f"B: {args.pred_b}  F1 {score_chunks(gold_b, pred_b).f1:.2f}")
    print(f"tokens A labels right and B wrong: {result.n01}")
    print(f"tokens A labels wrong and B right: {result.n10}")
    print(f"McNemar's test ({result.method}): two-sided p = {result.p_value:.3g}")
    return 0


def find_conll2000(data_dir: str | None = None) -> Path | None:
    """The CoNLL-2000 folder (train.txt, test.txt) from --data, $FSTCRF_DATA or NLTK's data folders."""
    candidates = []
    if data_dir:
        candidates += [Path(data_dir), Path(data_dir) / "conll2000"]
    if os.environ.get("FSTCRF_DATA"):
        candidates.append(Path(os.environ["FSTCRF_DATA"]) / "conll2000")
    candidates.append(Path("../shared/data/conll2000"))
    nltk_roots = os.environ.get("NLTK_DATA", "").split(os.pathsep) + [
        str(Path.home() / "nltk_data"), "/usr/share/nltk_data", "/usr/local/share/nltk_data",
        "/usr/lib/nltk_data", "/usr/local/lib/nltk_data"]
    candidates += [Path(root) / "corpora" / "conll2000" for root in nltk_roots if root]
    for folder in candidates:
        if (folder / "train.txt").is_file() and (folder / "test.txt").is_file():
            return folder
    return None


def _demo(args: argparse.Namespace) -> int:
    from .model import ChainCRF
    from .synthetic import DATA_DIR
    folder = find_conll2000(args.data)
    if folder is not None:
        train_path, test_path = folder / "train.txt", folder / "test.txt"
        print(f"fstcrf demo: using CoNLL-2000 from {folder}")
    else:
        train_path, test_path = DATA_DIR / "demo_train.txt", DATA_DIR / "demo_test.txt"
        print("fstcrf demo: CoNLL-2000 not found (set FSTCRF_DATA or --data); using the small synthetic "
              f"corpus fstcrf generated itself ({DATA_DIR})")
    train, test = _read(str(train_path)), _read(str(test_path))
    print(f"training a first-order CRF (Sha & Pereira features, L-BFGS, {args.max_iter} iterations) "
          f"on {len(train)} sentences")
    model = ChainCRF(max_iter=args.max_iter, threads=args.threads).fit(train)
    if args.output:
        model.save(args.output)
        print(f"model written to {args.output}")
    scores = model.score(test)
    print(f"tagged {len(test)} test sentences ({test.num_tokens} tokens)")
    print(scores.format())
    return 0


def _history(args: argparse.Namespace) -> int:
    from .model import load_model
    model = load_model(args.model)
    history = model.history_
    print("iteration  objective      gradient-norm  seconds  dev-F1")
    for record in history:
        dev = record.get("dev_f1")
        print(f"{record['iteration']:9d}  {record['objective']:<13.6g}  {record.get('gradient_norm') or 0:<13.4g}  "
              f"{record['seconds']:7.2f}  {'' if dev is None else f'{dev:.2f}'}")
    print(f"kept the weights of iteration {model.best_iteration_} of {model.n_iter_}"
          + (" (interrupted)" if model.interrupted_ else ""))
    if args.plot:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            raise FstcrfError("plotting needs matplotlib: pip install 'fstcrf[bench]'") from None
        iterations = [r["iteration"] for r in history]
        figure, objective_axis = plt.subplots(figsize=(7, 4))
        objective_axis.semilogy(iterations, [r["objective"] for r in history], color="tab:blue")
        objective_axis.set_xlabel(f"{model.algorithm} iteration")
        objective_axis.set_ylabel("objective (penalised negative log-likelihood)", color="tab:blue")
        dev = [(r["iteration"], r["dev_f1"]) for r in history if r.get("dev_f1") is not None]
        if dev:
            f1_axis = objective_axis.twinx()
            f1_axis.plot(*zip(*dev), color="tab:red")
            f1_axis.set_ylabel("dev chunk F1", color="tab:red")
        objective_axis.set_title(args.title or f"{args.model}")
        figure.tight_layout()
        figure.savefig(args.plot, dpi=110)
        print(f"plot written to {args.plot}")
    return 0


def _bench(args: argparse.Namespace) -> int:
    from . import bench
    if args.what == "kernel":
        print(bench.format_kernel(bench.bench_kernel(tokens=args.tokens, repeats=args.repeats, seed=args.seed)))
    elif args.what == "grammar":
        if not (args.model and args.test):
            raise FstcrfError("bench grammar needs --model MODEL --test FILE")
        print(bench.format_grammar(bench.bench_grammar(args.model, args.test, repeats=args.repeats)))
    elif args.what == "partial":
        folder = find_conll2000(args.data)
        if folder is None:
            raise FstcrfError("bench partial needs CoNLL-2000: set FSTCRF_DATA or --data")
        print(bench.format_partial(bench.bench_partial(folder, args.fraction, args.seed, args.iterations,
                                                       args.threads)))
    elif args.what == "compose" and (args.model or args.test):
        if not (args.model and args.test):
            raise FstcrfError("bench compose on a real model needs both --model JOINT and --test FILE")
        print(bench.format_compose_model(bench.bench_compose_model(args.model, args.test, repeats=args.repeats)))
    elif args.what == "compose":
        print(bench.format_compose(bench.bench_compose(tokens=args.tokens, repeats=args.repeats, seed=args.seed)))
    else:
        folder = find_conll2000(args.data)
        if folder is None:
            raise FstcrfError("bench train needs CoNLL-2000: set FSTCRF_DATA or --data")
        print(bench.format_train(bench.bench_train(folder, args.vs, iterations=args.iterations,
                                                   threads=args.threads)))
    return 0


def _add_training_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--columns", default=None, help="column names, e.g. word,pos,chunk (default for 3 columns)")
    parser.add_argument("--target", default="chunk", help="column to learn (default chunk)")
    parser.add_argument("--order", type=int, choices=[1, 2], default=1, help="1: label states; 2: tag-pair states")
    parser.add_argument("--algorithm", choices=["lbfgs", "perceptron", "sgd", "mce-f"], default="lbfgs",
                        help="mce-f: L-BFGS on the log-likelihood, then on the smoothed chunk F-score "
                             "(Suzuki et al. 2006)")
    parser.add_argument("--sigma", type=float, default=10.0, help="Gaussian prior standard deviation")
    parser.add_argument("--max-iter", type=int, default=100, help="L-BFGS iterations or online epochs")
    parser.add_argument("--mce-c", type=float, default=1e5,
                        help="mce-f: C of the F-score stage's prior ||w||^2 / (2C) (default 1e5)")
    parser.add_argument("--mce-iter", type=int, default=50, help="mce-f: L-BFGS iterations of the F-score stage")
    parser.add_argument("--template", default="sha-pereira",
                        help="feature template: sha-pereira, chunking-extended, crfpp, pos, chunking-reads-pos "
                             "or a template file")
    parser.add_argument("--features", choices=["supported", "complete", "complete-tags"], default="supported")
    parser.add_argument("--min-count", type=int, default=1, help="drop predicates seen fewer times")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--grammar", default=None,
                        help="train under a constraint grammar (Z sums over the sequences it accepts; the "
                             "model then always decodes under it): a .fgr file or a shipped grammar name")
    parser.add_argument("--define", action="append", default=[], metavar="NAME=VALUE",
                        help="set a parameter of the training grammar, e.g. X=NP (repeatable)")
    parser.add_argument("--reads", default=None, metavar="COLUMN",
                        help="read a lower tagger's labels from COLUMN at the same token (template may use "
                             "it at offset 0 only), so that fstcrf compose can decode both models jointly; "
                             "e.g. --reads pos --template chunking-reads-pos")
    parser.add_argument("--no-read-transitions", action="store_true",
                        help="with --reads: transition weights that do not depend on the lower label "
                             "(by default each edge has a base weight and a deviation per lower label)")


def _add_decoding_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mode", choices=["joint", "cascade", "kbest"], default="joint",
                        help="composed models: exact joint decoding (default), the 1-best cascade, or the "
                             "cascade passing k-best lists")
    parser.add_argument("--k", type=int, default=5, help="list length of --mode kbest (default 5)")
    parser.add_argument("--grammar", default=None,
                        help="decode among the label sequences a constraint grammar accepts: a .fgr file "
                             "or a shipped grammar (iob2, bioes, second_order, at_most_one, at_least_one)")
    parser.add_argument("--define", action="append", default=[], metavar="NAME=VALUE",
                        help="set a grammar parameter, e.g. X=NP (repeatable)")
    parser.add_argument("--on-infeasible", choices=["error", "unconstrained"], default="error",
                        help="a sentence no accepted sequence fits: stop with an error naming it (default), "
                             "or tag it without the grammar")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fstcrf", description="Conditional random fields as weighted FSTs.")
    parser.add_argument("-q", "--quiet", action="store_true", help="only print warnings and results")
    commands = parser.add_subparsers(dest="command", required=True)

    train = commands.add_parser("train", help="train a CRF tagger on a CoNLL file")
    train.add_argument("train", help="training file (CoNLL columns, blank line between sentences)")
    train.add_argument("-o", "--output", required=True, help="model file to write")
    _add_training_arguments(train)
    train.add_argument("--dev", default=None, help="development file: keep the iteration with the best F1")
    train.add_argument("--init", default=None, metavar="MODEL",
                       help="start from this model's weights (lbfgs, mce-f); its template, order, reads and "
                            "feature dictionary are used")
    train.add_argument("--only-types", default=None,
                       help="comma-separated chunk types to keep; others become O (e.g. NP)")
    train.set_defaults(run=_train)

    jackknife = commands.add_parser("jackknife", help="replace a column by k-fold held-out predictions (to "
                                                      "train a model that reads a lower tagger's output)")
    jackknife.add_argument("train", help="CoNLL file")
    jackknife.add_argument("-o", "--output", required=True, help="CoNLL file to write")
    jackknife.add_argument("--folds", type=int, default=5, help="number of folds (default 5)")
    _add_training_arguments(jackknife)
    jackknife.set_defaults(run=_jackknife)

    compose = commands.add_parser("compose", help="compose trained models (lowest first) into a joint model")
    compose.add_argument("models", nargs="+", help="model files in chain order; each reads the previous one's labels")
    compose.add_argument("-o", "--output", required=True, help="joint model file to write")
    compose.add_argument("--compat", action="append", default=[], metavar="K=FST",
                         help="restrict the label pairs of models K-1 and K to a transducer from lower to upper "
                              "labels (OpenFst binary with symbol tables; repeatable)")
    compose.add_argument("--scales", default=None, metavar="W0,W1,...",
                         help="weigh each model's score (default all 1), e.g. 1,0.5 to temper an upper model "
                              "trained on gold lower labels; choose the weights on held-out data")
    compose.set_defaults(run=_compose)

    tag = commands.add_parser("tag", help="append a predicted label column (one per component of a composed "
                                          "model) to a CoNLL file")
    tag.add_argument("model")
    tag.add_argument("input", help="CoNLL file; the gold column may be absent")
    tag.add_argument("-o", "--output", default=None, help="output file (default: standard output)")
    tag.add_argument("--threads", type=int, default=None)
    _add_decoding_arguments(tag)
    tag.set_defaults(run=_tag)

    evaluate = commands.add_parser("eval", help="conlleval scores of a model on a test file, or of a tagged file")
    evaluate.add_argument("model", nargs="?")
    evaluate.add_argument("test", nargs="?")
    evaluate.add_argument("--pred", default=None, help="tagged file whose last two columns are gold and predicted")
    evaluate.add_argument("--only-types", default=None, help="score only these chunk types (others become O)")
    evaluate.add_argument("--threads", type=int, default=None)
    _add_decoding_arguments(evaluate)
    evaluate.set_defaults(run=_eval)

    compare = commands.add_parser("compare", help="McNemar's test between two tagged files")
    compare.add_argument("pred_a")
    compare.add_argument("pred_b")
    compare.set_defaults(run=_compare)

    convert = commands.add_parser("convert", help="rewrite a chunk column in another tagging scheme")
    convert.add_argument("input", help="CoNLL file")
    convert.add_argument("-o", "--output", required=True, help="CoNLL file to write")
    convert.add_argument("--scheme", choices=["iob2", "bioes"], required=True,
                         help="target scheme; the input may be IOB1, IOB2 or BIOES")
    convert.add_argument("--column", default="chunk", help="the column to rewrite (default chunk)")
    convert.add_argument("--columns", default=None, help="column names, e.g. word,pos,chunk (default for 3 columns)")
    convert.set_defaults(run=_convert)

    demo = commands.add_parser("demo", help="train, tag and evaluate a chunker out of the box")
    demo.add_argument("--data", default=None, help="folder holding CoNLL-2000 train.txt and test.txt")
    demo.add_argument("--max-iter", type=int, default=60)
    demo.add_argument("--threads", type=int, default=2)
    demo.add_argument("-o", "--output", default=None, help="also save the model here")
    demo.set_defaults(run=_demo)

    history = commands.add_parser("history", help="per-iteration training record of a model, optionally plotted")
    history.add_argument("model")
    history.add_argument("--plot", default=None, help="write a PNG of objective and dev F1 per iteration")
    history.add_argument("--title", default=None)
    history.set_defaults(run=_history)

    bench = commands.add_parser("bench", help="measure speed against reference implementations")
    bench.add_argument("what", choices=["kernel", "compose", "train", "grammar", "partial"],
                       help="kernel: forward-backward and Viterbi against numpy and pynini; "
                            "compose: factorised joint inference against the dense cross product; "
                            "train: training and tagging against python-crfsuite on CoNLL-2000; "
                            "grammar: decoding time under each shipped grammar (--model, --test); "
                            "partial: training with hidden labels against fewer whole sentences")
    bench.add_argument("--tokens", type=int, default=100_000, help="tokens per lattice size (kernel, compose)")
    bench.add_argument("--repeats", type=int, default=3, help="timings are the best of this many runs")
    bench.add_argument("--seed", type=int, default=0)
    bench.add_argument("--vs", choices=["crfsuite"], default="crfsuite", help="peer for bench train")
    bench.add_argument("--iterations", type=int, default=50, help="L-BFGS iterations (bench train, partial)")
    bench.add_argument("--fraction", type=float, default=0.5, help="share of labels hidden (bench partial)")
    bench.add_argument("--threads", type=int, default=2, help="fstcrf threads for bench train")
    bench.add_argument("--data", default=None, help="folder holding CoNLL-2000 (bench train)")
    bench.add_argument("--model", default=None,
                       help="trained model (bench grammar) or composed model (bench compose on real data)")
    bench.add_argument("--test", default=None, help="test file (bench grammar, bench compose --model)")
    bench.set_defaults(run=_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO, format="%(message)s",
                        stream=sys.stderr)
    try:
        return args.run(args)
    except FstcrfError as error:
        print(f"fstcrf: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("fstcrf: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (``fstcrf eval ... | head``): stop quietly, as
        # Unix tools do, and keep Python from failing again on the final flush
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
