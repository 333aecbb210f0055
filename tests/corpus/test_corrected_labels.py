"""A person's corrections of a sentence as a partial-label column
(fstcrf.corpus.labels.corrected_labels), against enumeration: on random label
sequences (IOB1, IOB2 and BIOES labels) and random hard rules they keep to, every label
sequence the column allows keeps to every rule, the decoded labels are among them, and
a token no rule names, nor borders a required span, stays unknown."""

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstcrf.corpus.labels import corrected_labels, partial_label_constraints
from fstcrf.engine.chunks import chunks_of_parts, parse_chunk_label
from fstcrf.engine.constraints import Constraints, Span
from fstcrf.errors import LabelError

SCHEMES = {
    "iob1": ("O", "B-A", "I-A", "I-B"),
    "iob2": ("O", "B-A", "I-A", "B-B", "I-B"),
    "bioes": ("O", "B-A", "I-A", "E-A", "S-A"),
}


def chunks(labels) -> set:
    return set(chunks_of_parts([parse_chunk_label(label) for label in labels]))


def keeps_to(labels, constraints: Constraints) -> bool:
    """Whether a label sequence keeps to the hard token rules and required spans."""
    return (
        all(labels[t] == label for t, label in constraints.fixed.items())
        and all(labels[t] in options for t, options in constraints.allowed.items())
        and all(tuple(span[:3]) in chunks(labels) for span in constraints.spans)
    )


@st.composite
def corrected_sentences(draw):
    """(the model's labels, labels decoded under constraints, the constraints)."""
    labels = SCHEMES[draw(st.sampled_from(sorted(SCHEMES)))]
    decoded = draw(st.lists(st.sampled_from(labels), min_size=1, max_size=5))
    held = sorted(chunks(decoded))
    spans = draw(st.lists(st.sampled_from(held), unique=True)) if held else []
    tokens = range(len(decoded))
    fixed = {t: decoded[t] for t in draw(st.sets(st.sampled_from(tokens)))}
    allowed = {
        t: {decoded[t], *draw(st.sets(st.sampled_from(labels), max_size=2))}
        for t in draw(st.sets(st.sampled_from(tokens)))
    }
    return labels, decoded, Constraints(fixed=fixed, allowed=allowed, spans=[Span(*span) for span in spans])


@settings(max_examples=150, deadline=None)
@given(corrected_sentences())
def test_every_sequence_the_column_allows_keeps_to_the_corrections(case):
    labels, decoded, constraints = case
    column = corrected_labels(constraints, decoded, labels)
    read = partial_label_constraints(column) or Constraints()  # the column as training reads it
    options = [{read.fixed[t]} if t in read.fixed else set(read.allowed.get(t, labels)) for t in range(len(column))]
    assert all(label in allowed for label, allowed in zip(decoded, options))
    for sequence in itertools.product(*options):
        assert keeps_to(sequence, constraints), (column, sequence)
    named = set(constraints.fixed) | set(constraints.allowed)
    named |= {t for span in constraints.spans for t in range(span.first - 1, span.last + 2)}
    assert all(value == "?" for t, value in enumerate(column) if t not in named)


def test_a_required_span_is_written_with_its_borders():
    labels = SCHEMES["iob2"]
    decoded = ["B-A", "I-A", "B-A", "I-A", "O"]
    column = corrected_labels(Constraints(spans=[Span(2, 3, "A")], fixed={0: "B-A"}), decoded, labels)
    assert column == ["B-A", "?", "B-A", "I-A", "O|B-A|B-B|I-B"]
    iob1 = corrected_labels(Constraints(spans=[Span(1, 1, "A")]), ["O", "I-A", "O"], SCHEMES["iob1"])
    assert iob1 == ["O|I-B", "I-A", "O|B-A|I-B"]  # I-A begins a chunk only after a label it does not continue
    assert corrected_labels(Constraints(), decoded, labels) == ["?"] * 5
    soft = Constraints(spans=[Span(0, 1, "A", weight=2.0)], forbidden=[Span(2, 3, "A")], unbroken=[(0, 4)])
    assert corrected_labels(soft, decoded, labels) == ["?"] * 5


def test_labels_that_break_the_rules_are_refused():
    labels = SCHEMES["iob2"]
    with pytest.raises(LabelError, match="do not hold the required span"):
        corrected_labels(Constraints(spans=[Span(0, 1, "A")]), ["B-A", "B-A"], labels)
    with pytest.raises(LabelError, match="at token 1"):
        corrected_labels(Constraints(fixed={1: "O"}), ["B-A", "I-A"], labels)
