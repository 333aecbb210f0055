"""The sentences of a tag request that a person corrected, as partial-label training
data (docs/grammars.md) that ``fstcrf train --init MODEL`` continues to learn from.

The data is CoNLL lines, a blank line after each sentence, in the layout of the
model's training files (so that they can be added to them): the columns the model
reads as the request gave them, each lower component's predicted labels (a composed
model's), the top chain's column as :func:`~fstcrf.corpus.labels.corrected_labels`
writes it from the sentence's constraints and its labels decoded under them (what
the person looked at is labelled, every other token ``?``), and in a column the
model neither reads nor predicts, what the request gave or else :data:`UNREAD`.  A
sentence with no token looked at (no constraints, or soft ones only) teaches nothing
and is left out; so is one that CoNLL lines cannot hold (a token with white space in
it, or the word ``-DOCSTART-``), named in ``left_out`` with the reason, so that its
tags and the other sentences' lines are still answered."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fstcrf.corpus.conll import Sentence, conll_lines, unwritable_token
from fstcrf.corpus.labels import corrected_labels
from fstcrf.corpus.schemes import UNKNOWN_LABEL
from fstcrf.serve.parsing import TagRequest
from fstcrf.serve.registry import ServedModel

#: The value of a column the model neither reads nor predicts, where a request lacks it.
UNREAD = "_"
#: Between the fields of a line.
SEPARATOR = " "


def partial_label_data(
    model: ServedModel, request: TagRequest, labels: Sequence[Sequence[str]], lower: Mapping[str, Sequence]
) -> dict:
    """``{"columns": [...], "sentences": [...], "conll": "...", "left_out": [...]}``: the
    column names in file order, the numbers of the request's sentences written, their
    lines, and ``{"sentence": b, "token": t, "reason": ...}`` for each corrected
    sentence that CoNLL lines cannot hold; from the top chain's ``labels`` [B][T] and
    the lower components' labels by column (``lower``: column -> [B][T])."""
    chain = model.chains()[-1]
    target = chain.target_
    names = model.file_columns
    written, numbers, left_out = [], [], []
    for b, sentence in enumerate(request.sentences):
        constraints = None if request.constraints is None else request.constraints[b]
        if constraints is None:
            continue
        column = corrected_labels(constraints, labels[b], chain.labels_)
        if all(value == UNKNOWN_LABEL for value in column):
            continue
        given = {**sentence.columns, **{name: lower[name][b] for name in lower}, target: column}
        columns = {name: given.get(name, [UNREAD] * len(column)) for name in names}
        problem = unwritable_token(list(columns.values()), SEPARATOR)
        if problem is not None:
            left_out.append({"sentence": b, "token": problem[0], "reason": problem[1]})
            continue
        written.append(Sentence(columns))
        numbers.append(b)
    lines = conll_lines(written, (), (), SEPARATOR, "partial_labels")
    return {"columns": list(names), "sentences": numbers, "conll": "".join(lines), "left_out": left_out}
