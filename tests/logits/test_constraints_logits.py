"""Logits decoded under per-sentence constraints (decode_logits, LogitDecoder.decode):
the best sequence and the entities' probabilities against enumeration of every label
sequence under the constraints (tests/constraint_oracles.py)."""

import numpy as np
import pytest

from fstcrf.engine.constraints import Constraints, Span
from fstcrf.errors import ConstraintLabelError, InfeasibleError
from fstcrf.logits import LogitDecoder, decode_logits

from constraint_oracles import SentenceOracle, chunks_of

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
CONSTRAINTS = [
    Constraints(spans=[Span(1, 2, "LOC")], forbidden=[Span(3, 3, "PER")]),
    None,
    Constraints(fixed={0: "B-PER"}, forbidden=[Span(0, 1, "PER", weight=3.0)], unbroken=[(2, 4)]),
]


def check_against_enumeration(decoded, free):
    """``decoded`` under CONSTRAINTS against the enumeration of ``free``'s lattice (the
    same logits decoded without them) under them."""
    for b, given in enumerate(CONSTRAINTS):
        oracle = SentenceOracle(free.potentials.select([b]), given)
        labels, _, margin = oracle.best()
        if margin > 1e-9:
            assert tuple(decoded.labels[b]) == labels
        if given is not None:
            assert all(given.fixed.get(t, label) == label for t, label in enumerate(decoded.labels[b]))
            held = chunks_of(tuple(decoded.labels[b]))
            assert all((s.first, s.last, s.type) in held for s in given.spans if s.weight is None)
            assert not any((s.first, s.last, s.type) in held for s in given.forbidden if s.weight is None)
        for first, last, kind, p in decoded.entities[b]:
            assert abs(p - oracle.probability(lambda y, span=(first, last, kind): span in chunks_of(y))) < 1e-9


def test_decode_logits_under_constraints():
    logits = np.random.default_rng(2).normal(scale=2, size=(3, 5, 5))
    decoded = decode_logits(logits, LABELS, scheme="iob2", constraints=CONSTRAINTS)
    free = decode_logits(logits, LABELS, scheme="iob2")
    check_against_enumeration(decoded, free)
    assert decoded.labels[1] == free.labels[1]


def test_a_logit_decoder_under_constraints():
    logits = np.random.default_rng(3).normal(scale=2, size=(3, 5, 5))
    decoder = LogitDecoder(LABELS)
    check_against_enumeration(decoder.decode(logits, constraints=CONSTRAINTS), decoder.decode(logits))
    with pytest.raises(InfeasibleError, match="LogitDecoder.decode: sentence 2: .* clash: token 0 fixed to B-PER"):
        LogitDecoder(LABELS, scheme="iob1").decode(logits, constraints=CONSTRAINTS)  # B- only after the type
    with pytest.raises(ConstraintLabelError, match="LogitDecoder.decode: sentence 0"):
        LogitDecoder(LABELS).decode(logits, constraints=[Constraints(fixed={0: "B-ORG"}), None, None])
