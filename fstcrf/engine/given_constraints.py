"""The constraints a decoding method is given, one per sentence, read before they are
resolved: a dict form (:meth:`~fstcrf.engine.constraints.Constraints.from_dict`) is
read here, so that its errors name the method and the sentence as
:func:`~fstcrf.engine.constraints.resolve` names those of a Constraints."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from fstcrf.engine.constraints import Constraints, SentenceRules, as_constraints, resolve_batch
from fstcrf.errors import ConstraintError


def read_constraints(constraints, what: str):
    """``constraints`` (one Constraints, its dict form or None per sentence) with each
    dict form read as a Constraints; ConstraintError "``what``: sentence b: ..." for
    a malformed one.  Anything that is not such a list is returned as it is (for
    :func:`~fstcrf.engine.constraints.resolve_batch` to refuse)."""
    if isinstance(constraints, (Constraints, Mapping, str)) or not isinstance(constraints, Sequence):
        return constraints
    read = []
    for b, value in enumerate(constraints):
        try:
            read.append(as_constraints(value, f"{what}: constraints[{b}]"))
        except ConstraintError as error:
            raise type(error)(f"{what}: sentence {b}: {error}") from None
    return read


def resolve_given(
    constraints, lengths: Sequence[int] | np.ndarray, labels: Sequence[str], what: str
) -> list[SentenceRules | None] | None:
    """:func:`~fstcrf.engine.constraints.resolve_batch` of ``constraints`` read by
    :func:`read_constraints`: every error names ``what`` and the sentence."""
    return resolve_batch(read_constraints(constraints, what), lengths, labels, what)
