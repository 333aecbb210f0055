"""``fstcrf eval`` (conlleval scores, or tag accuracy) and ``fstcrf compare``
(McNemar's test between two tagged files)."""

from __future__ import annotations

import argparse
import logging

from fstcrf.cli.common import infeasible_located, label_scores, only_types, read_corpus
from fstcrf.cli.decoding import (
    check_two_stage_options,
    grammar_options,
    joint_predict_with_progress,
    predict_with_progress,
    read_for,
    resolve_decode,
    warn_ignored_decoding_options,
)
from fstcrf.cli.options import add_command, add_decoding_arguments
from fstcrf.errors import FstcrfError, LabelError
from fstcrf.model.decoders import load_decoder, model_components

LOG = logging.getLogger("fstcrf")


def _eval(args: argparse.Namespace) -> int:
    from fstcrf.corpus.evaluate import scheme_mismatch

    keep = only_types(args)
    if args.pred:
        if args.model or args.test:
            raise FstcrfError("give either --pred FILE or MODEL TEST, not both")
        gold, predicted = _split_gold_pred(args.pred)
        print(label_scores(gold, predicted, keep, f"the gold column of {args.pred}").format())
        return 0
    if not (args.model and args.test):
        raise FstcrfError("give MODEL and TEST, or --pred FILE")
    from fstcrf.model.compose import JointModel

    model = load_decoder(args.model)
    composed = isinstance(model, JointModel)
    resolve_decode(model, args, composed)
    warn_ignored_decoding_options(args, composed)
    check_two_stage_options(model, args)
    corpus = read_for(model, args.test, gold_required=True)
    if not corpus.sentences:
        raise FstcrfError(f"no sentences in {args.test}: nothing to score")
    components = model_components(model)
    for component in components:
        _check_gold(corpus, component.target_)
    with infeasible_located(corpus):
        if composed:
            predictions = joint_predict_with_progress(model, corpus, args)
        else:
            predictions = [predict_with_progress(model, corpus, args, grammar_options(args))]
    for component, predicted in zip(components, predictions):
        gold = corpus.column(component.target_)
        mismatch = scheme_mismatch(component.labels_, gold)
        if mismatch:
            LOG.warning("%s: %s", args.test, mismatch)
        if composed:
            print(f"== {component.target_} ({args.mode} decoding)")
        print(label_scores(gold, predicted, keep, f"the {component.target_} column of {args.test}").format())
    return 0


def _compare(args: argparse.Namespace) -> int:
    from fstcrf.corpus.evaluate import mcnemar

    gold_a, pred_a = _split_gold_pred(args.pred_a)
    gold_b, pred_b = _split_gold_pred(args.pred_b)
    if gold_a != gold_b:
        raise FstcrfError(
            f"{args.pred_a} and {args.pred_b} do not have the same gold labels; "
            "compare predictions of the same test file"
        )
    result = mcnemar(gold_a, pred_a, pred_b)
    for name, path, predicted in (("A", args.pred_a, pred_a), ("B", args.pred_b, pred_b)):
        scores = label_scores(gold_a, predicted)
        print(f"{name}: {path}  {scores.metric} {scores.primary:.2f}")
    print(f"tokens A labels right and B wrong: {result.n01}")
    print(f"tokens A labels wrong and B right: {result.n10}")
    print(f"McNemar's test ({result.method}): two-sided p = {result.p_value:.3g}")
    return 0


def _split_gold_pred(path: str) -> tuple[list[list[str]], list[list[str]]]:
    """The last two columns of a tagged file: gold and predicted (conlleval's layout)."""
    corpus = read_corpus(path)
    if len(corpus.column_names) < 2:
        raise FstcrfError(f"{path}: expected at least two columns (gold, predicted), found {len(corpus.column_names)}")
    gold_name, pred_name = corpus.column_names[-2:]
    _check_gold(corpus, gold_name)
    gold, predicted = corpus.column(gold_name), corpus.column(pred_name)
    _warn_if_untagged(path, len(corpus.column_names), gold, predicted)
    return gold, predicted


def _warn_if_untagged(path: str, num_columns: int, gold: list[list[str]], predicted: list[list[str]]) -> None:
    """A warning when the predicted column shares no label with the gold one: the
    file is likely not tagged (its last two columns are, say, POS and chunks)."""
    gold_labels = {label for labels in gold for label in labels}
    predicted_labels = {label for labels in predicted for label in labels}
    if gold_labels and predicted_labels and not gold_labels & predicted_labels:
        LOG.warning(
            "%s: the predicted labels (column %d) share none with the gold labels (column %d), "
            "so every token counts as wrong: is the file tagged? The last two columns are read as gold and "
            "predicted (fstcrf tag MODEL FILE adds the predicted one)",
            path,
            num_columns,
            num_columns - 1,
        )


def _check_gold(corpus, column: str) -> None:
    """LabelError naming FILE:LINE at the first partial label ("?" or "A|B", which only
    training reads) of a gold column, before any tagging starts."""
    from fstcrf.corpus.evaluate import check_single_labels

    try:
        check_single_labels(corpus.column(column))
    except LabelError as error:
        sentence = corpus.sentences[error.sentence]
        line = sentence.line_numbers[error.position] if sentence.line_numbers else "?"
        raise LabelError(f"{corpus.path}:{line}: {error}") from None


def add_parsers(commands) -> None:
    """Register fstcrf eval and fstcrf compare on the subparsers ``commands``."""
    evaluate = add_command(
        commands,
        "eval",
        "conlleval scores (or tag accuracy) of a model on a test file, or of a tagged file",
        _eval,
        inputs=("model", "test", "pred", "grammar"),
    )
    evaluate.add_argument("model", nargs="?", help="model file (from train or compose)")
    evaluate.add_argument("test", nargs="?", help="CoNLL file with gold labels")
    evaluate.add_argument(
        "--pred",
        default=None,
        help="instead of MODEL TEST: a tagged file whose last two columns are gold and predicted (default: none)",
    )
    evaluate.add_argument(
        "--only-types",
        default=None,
        help="score only these comma-separated chunk types (others become O) (default: all)",
    )
    add_decoding_arguments(evaluate)

    compare = add_command(
        commands,
        "compare",
        "McNemar's test between two tagged files; each file's last two columns are read as gold and predicted labels",
        _compare,
        inputs=("pred_a", "pred_b"),
    )
    compare.add_argument("pred_a", help="first tagged file (last two columns: gold, predicted)")
    compare.add_argument("pred_b", help="second tagged file of the same sentences (last two columns: gold, predicted)")
