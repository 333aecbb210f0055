"""Non-local factors: scores of a whole labelled document, kept incrementally.

A factor λ multiplies the chain CRF's p(y | x) by exp(log_score(y)), so the
product model over a document is

    p(y | x) ∝ p_CRF(y | x) · Π_λ exp(log_score_λ(y, x)).

A sampler changes the labels of one span of one sentence at a time (a
*move*) and needs each factor's change in log score for a proposed move.
:class:`DocumentFactor` gives that change by rescoring the whole document
(O(document) per move); a factor whose score is a sum over parts overrides
:meth:`DocumentFactor.attach` to return a :class:`FactorState` that keeps
counts and answers in time independent of the document's length, as the
label-consistency factor does.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Sequence

import numpy as np

from fstcrf.errors import FactorError, FstcrfError


@dataclass
class LabelledDocument:
    """A document and one labelling of it.

    ``words``: one list of words [T_j] per sentence j; ``label_names``: the L
    label strings; ``labels``: one list of label ids [T_j] per sentence
    (indices into ``label_names``); ``index``: the document's number in its file.
    """

    words: list[list[str]]
    label_names: tuple[str, ...]
    labels: list[list[int]]
    index: int = 0

    def label_strings(self) -> list[list[str]]:
        """The labels as strings, one list [T_j] per sentence."""
        return [[self.label_names[label] for label in sentence] for sentence in self.labels]

    def relabelled(self, sentence: int, first: int, new_labels: Sequence[int]) -> LabelledDocument:
        """A copy with ``labels[sentence][first:first + len(new_labels)]`` replaced."""
        labels = list(self.labels)
        changed = list(labels[sentence])
        changed[first : first + len(new_labels)] = new_labels
        labels[sentence] = changed
        return LabelledDocument(self.words, self.label_names, labels, self.index)


class FactorState:
    """A factor's view of a document's current labelling, updated move by move."""

    def delta(self, sentence: int, first: int, new_labels: Sequence[int]) -> float:
        """The change in log score if ``labels[sentence][first:first + len(new_labels)]``
        became ``new_labels`` (label ids); the state is left as it was."""
        raise NotImplementedError

    def apply(self, sentence: int, first: int, new_labels: Sequence[int]) -> None:
        """Make the move."""
        raise NotImplementedError


class DocumentFactor:
    """Base class of non-local factors.  Subclasses define :meth:`log_score`; those
    that can answer a move's change faster than rescoring also override :meth:`attach`."""

    name = "factor"

    def log_score(self, document: LabelledDocument) -> float:
        """log of the factor's value on a labelled document (0 = no effect, <= 0 penalises)."""
        raise NotImplementedError

    def attach(self, document: LabelledDocument) -> FactorState:
        """A state for ``document``'s current labelling (its own copy of the labels)."""
        return _RescoringState(self, document)


class _RescoringState(FactorState):
    """Answers a move by scoring the whole relabelled document: O(document) per move."""

    def __init__(self, factor: DocumentFactor, document: LabelledDocument):
        self.factor = factor
        self.document = LabelledDocument(
            document.words, document.label_names, [list(sentence) for sentence in document.labels], document.index
        )
        self.score = checked_score(factor, self.document)

    def delta(self, sentence, first, new_labels) -> float:
        return checked_score(self.factor, self.document.relabelled(sentence, first, new_labels)) - self.score

    def apply(self, sentence, first, new_labels) -> None:
        self.document = self.document.relabelled(sentence, first, new_labels)
        self.score = checked_score(self.factor, self.document)


def checked_score(factor: DocumentFactor, document: LabelledDocument) -> float:
    """``factor.log_score(document)``, or FactorError naming the factor and the document
    when it raises or is not a finite number."""
    return call_factor(factor, document.index, lambda: factor.log_score(document), "log score")


def call_factor(factor, document_index: int, call, what: str = "change in log score") -> float:
    """``call()`` (a factor's score or change on document ``document_index``) as a float, or
    FactorError naming the factor and the document when it raises or is not finite."""
    try:
        value = call()
    except FstcrfError:
        raise
    except Exception as error:  # a user's factor: any failure is reported with where it happened
        raise FactorError(
            f"factor {getattr(factor, 'name', type(factor).__name__)!r} failed on document "
            f"{document_index}: {type(error).__name__}: {error}"
        ) from error
    return checked_change(value, factor, document_index, what)


def checked_change(value, factor, document_index: int, what: str = "change in log score") -> float:
    """``value`` as a float, or FactorError when it is not a finite number."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if not np.isfinite(number):
        raise FactorError(
            f"factor {getattr(factor, 'name', type(factor).__name__)!r} returned the "
            f"{what} {value!r} on document {document_index}; expected a finite number"
        )
    return number
