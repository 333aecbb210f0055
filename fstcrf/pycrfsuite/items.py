"""python-crfsuite's instances: ``ItemSequence``, and how a sequence of items and
its labels are read.

An item (a token's features) is a dict -- string values, numbers, booleans and
nested dicts, lists and sets, flattened as python-crfsuite flattens them (see
:mod:`fstcrf.features.attributes`) -- or any other iterable of attribute names
(a list, a tuple, a set, a dict's keys ...), each of value 1 (a name given twice
counts twice, as CRFsuite adds the two).  A sequence is an iterable of items or an
ItemSequence.  Dicts, lists and tuples are read as they are, in C (fstcrf's
attribute reader); another iterable of names becomes the list of its names.
"""

from __future__ import annotations

from collections.abc import Iterable

from fstcrf.corpus.conll import Sentence
from fstcrf.errors import ArgumentTypeError, LabelError, LabelTypeError
from fstcrf.engine.topology import EPSILON
from fstcrf.features.attributes import COLUMN, attribute_pairs, check_sentences

#: The column the labels are learnt from.
TARGET = "label"
#: The types of item a sequence's list holds that are read as they are (a copy of the list is kept).
READ_AS_THEY_ARE = frozenset({dict, list})


def _item(token):
    """A token as fstcrf reads it: a dict, list or tuple as it is, another iterable of
    names as the list of its names; anything else as it is (the reader rejects it)."""
    if isinstance(token, (dict, list, tuple, str, bytes)) or not isinstance(token, Iterable):
        return token
    return list(token)


def item_list(xseq, where: str) -> list:
    """The items [T] of one sequence as fstcrf reads them (see the module doc), from
    an iterable of items or an ItemSequence (fstcrf's, or python-crfsuite's, whose
    flattened dicts are read).  ArgumentTypeError naming ``where`` for a string, a
    dict or anything not iterable; the items themselves are checked when read."""
    if type(xseq) is not list:  # a list, the common case, needs none of these checks
        if isinstance(xseq, ItemSequence):
            return xseq.tokens
        if type(xseq).__name__ == "ItemSequence" and callable(getattr(xseq, "items", None)):
            return xseq.items()
        if isinstance(xseq, (str, bytes, dict)) or not isinstance(xseq, Iterable):
            raise ArgumentTypeError(
                f"{where} must be a sequence of items (token feature dicts or lists of attribute names), "
                f"got {type(xseq).__name__}"
            )
    if type(xseq) is list and set(map(type, xseq)) <= READ_AS_THEY_ARE:
        return list(xseq)
    return [token if type(token) in READ_AS_THEY_ARE else _item(token) for token in xseq]


def label_list(yseq, where: str, training: bool = False) -> list[str]:
    """The labels [T] of one sequence: strings, or UTF-8 bytes (decoded).
    ArgumentTypeError for a string or a non-iterable ``yseq``, LabelTypeError for a
    label that is not a string, LabelError for an empty one or, ``training``, one a
    model cannot hold (whitespace, or the epsilon symbol), naming ``where`` and the
    token."""
    if isinstance(yseq, (str, bytes, dict)) or not isinstance(yseq, Iterable):
        raise ArgumentTypeError(f"{where} must be a sequence of labels (strings), got {type(yseq).__name__}")
    labels = []
    for position, label in enumerate(yseq):
        if isinstance(label, bytes):
            try:
                label = label.decode("utf-8")
            except UnicodeDecodeError:
                raise LabelError(f"{where}, token {position}: the label {label!r} is not UTF-8") from None
        if not isinstance(label, str):
            raise LabelTypeError(
                f"{where}, token {position}: the label is {label!r} ({type(label).__name__}); labels are strings"
            )
        if not label:
            raise LabelError(f"{where}, token {position}: the label is empty; labels must be non-empty strings")
        if training and (label == EPSILON or any(character.isspace() for character in label)):
            raise LabelError(
                f"{where}, token {position}: the label {label!r} cannot be learned: fstcrf's labels hold no "
                f"whitespace (they are written in CoNLL columns and model files) and are not {EPSILON!r}"
            )
        labels.append(label)
    return labels


def lower_labels(tokens: list, reads: str, where: str) -> tuple[list, list[str]]:
    """The token dicts of one sequence without their key ``reads``, and the lower
    labels [T] it held; a token without one raises LabelError naming it."""
    dicts, labels = [], []
    for position, token in enumerate(tokens):
        label = token.get(reads) if isinstance(token, dict) else None
        if not isinstance(label, str) or not label:
            held = f"{label!r}" if isinstance(token, dict) and reads in token else "nothing"
            raise LabelError(
                f"{where}, token {position}: the key {reads!r} holds {held}; a model with "
                f"reads={reads!r} needs the lower tagger's label (a string) there in every token dict"
            )
        dicts.append({key: value for key, value in token.items() if key != reads})
        labels.append(label)
    return dicts, labels


def item_sentence(tokens: list, where: str, reads: str | None = None, labels: list[str] | None = None) -> Sentence:
    """The Sentence of one sequence's items: column "attributes" (without the key
    ``reads``, whose values go to a column of their own) and, with ``labels``,
    column "label"."""
    if reads is None and labels is None:  # one column: nothing to check, and the sentence only reads it
        return Sentence.of_lists({COLUMN: tokens}, None, ())
    columns: dict = {COLUMN: tokens}
    if reads is not None:
        columns[COLUMN], columns[reads] = lower_labels(tokens, reads, where)
    if labels is not None:
        columns[TARGET] = labels
    return Sentence(columns)


def _counts(names) -> dict[str, float]:
    """name -> the times it is given, of a token given as names."""
    counts: dict[str, float] = {}
    for name, value in attribute_pairs(names):
        counts[name] = counts.get(name, 0.0) + value
    return counts


class ItemSequence:
    """The items of one sequence, read and checked once (python-crfsuite's
    ItemSequence): pass it to ``Trainer.append`` or ``Tagger.tag`` in place of the
    list.  A bad item raises FeatureTypeError (a TypeError) or FeatureValueError
    (a ValueError) naming it."""

    def __init__(self, pyseq):
        self.tokens = item_list(pyseq, "ItemSequence")
        check_sentences([Sentence({COLUMN: self.tokens})])

    def items(self) -> list[dict[str, float]]:
        """The flattened items [T]: dicts attribute name -> value (python-crfsuite's
        ``items()``; of a name a dict gives twice, the last value; of a name a list of
        names gives twice, its count)."""
        return [dict(attribute_pairs(token)) if isinstance(token, dict) else _counts(token) for token in self.tokens]

    def __len__(self) -> int:
        return len(self.tokens)

    def __repr__(self) -> str:
        return f"<ItemSequence of size {len(self)}>"
