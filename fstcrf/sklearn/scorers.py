"""Scorers for ``cross_val_score``, ``GridSearchCV`` and ``RandomizedSearchCV``
(``scoring=``), as sklearn_crfsuite.scorers: token accuracy and sequence
accuracy; :func:`flat_f1` builds a token F1 scorer over chosen labels (the
CoNLL tutorials' "F1 without O")."""

from __future__ import annotations

from sklearn.metrics import make_scorer

from fstcrf.sklearn import metrics

__all__ = ["flat_accuracy", "sequence_accuracy", "flat_f1"]

#: A scorer of token accuracy.
flat_accuracy = make_scorer(metrics.flat_accuracy_score)
#: A scorer of the share of sequences predicted without an error.
sequence_accuracy = make_scorer(metrics.sequence_accuracy_score)


def flat_f1(labels, average: str = "weighted"):
    """A scorer of the token F1 over ``labels`` (sklearn's f1_score with ``average``)."""
    return make_scorer(metrics.flat_f1_score, labels=list(labels), average=average, zero_division=0)
