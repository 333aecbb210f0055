"""Token-level metrics of label sequences, as sklearn_crfsuite.metrics: each
``flat_*`` function joins the sequences of ``y_true`` and ``y_pred`` [B][T] into
one list of tokens and calls the scikit-learn metric of the same name with
the remaining arguments (``labels=``, ``average=``, ...).  The sequences may come
from any iterable (a generator is read once)."""

from __future__ import annotations

from itertools import chain

from sklearn import metrics

from fstcrf.errors import ShapeError

__all__ = [
    "flat_accuracy_score",
    "flat_precision_score",
    "flat_recall_score",
    "flat_f1_score",
    "flat_fbeta_score",
    "flat_classification_report",
    "sequence_accuracy_score",
    "flatten",
]


def flatten(sequences) -> list:
    """The items of sequences [B][T] in one list [sum T]."""
    return list(chain.from_iterable(sequences))


def _check_lengths(y_true, y_pred) -> None:
    if len(y_true) != len(y_pred):
        raise ShapeError(f"y_true has {len(y_true)} sequences but y_pred has {len(y_pred)}")
    for number, (truth, predicted) in enumerate(zip(y_true, y_pred)):
        if len(truth) != len(predicted):
            raise ShapeError(f"sentence {number}: y_true has {len(truth)} labels but y_pred has {len(predicted)}")


def _on_tokens(metric, name: str):
    """The scikit-learn ``metric`` applied to the flattened sequences, named ``name``."""

    def flat(y_true, y_pred, *args, **kwargs):
        y_true, y_pred = [list(labels) for labels in y_true], [list(labels) for labels in y_pred]
        _check_lengths(y_true, y_pred)
        return metric(flatten(y_true), flatten(y_pred), *args, **kwargs)

    flat.__name__ = flat.__qualname__ = name
    flat.__doc__ = f"sklearn.metrics.{metric.__name__} of the tokens of y_true and y_pred [B][T] (see the module doc)."
    return flat


#: Token accuracy of y_pred against y_true [B][T] (sklearn.metrics.accuracy_score).
flat_accuracy_score = _on_tokens(metrics.accuracy_score, "flat_accuracy_score")
#: Token precision (sklearn.metrics.precision_score: ``labels=``, ``average=``, ...).
flat_precision_score = _on_tokens(metrics.precision_score, "flat_precision_score")
#: Token recall (sklearn.metrics.recall_score).
flat_recall_score = _on_tokens(metrics.recall_score, "flat_recall_score")
#: Token F1 (sklearn.metrics.f1_score): the CoNLL tutorials' "F1 without O" with ``labels=``.
flat_f1_score = _on_tokens(metrics.f1_score, "flat_f1_score")
#: Token F-beta (sklearn.metrics.fbeta_score, ``beta=``).
flat_fbeta_score = _on_tokens(metrics.fbeta_score, "flat_fbeta_score")
#: Per-label precision, recall and F1 of the tokens as text (sklearn.metrics.classification_report).
flat_classification_report = _on_tokens(metrics.classification_report, "flat_classification_report")


def sequence_accuracy_score(y_true, y_pred) -> float:
    """The share of sequences predicted without a single error (0 for no sequences); a
    predicted sequence of another length is an error, as in sklearn_crfsuite."""
    if len(y_true) != len(y_pred):
        raise ShapeError(f"y_true has {len(y_true)} sequences but y_pred has {len(y_pred)}")
    if not len(y_true):
        return 0.0
    return sum(list(truth) == list(predicted) for truth, predicted in zip(y_true, y_pred)) / len(y_true)
