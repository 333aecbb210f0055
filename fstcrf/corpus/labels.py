"""Gold label columns: label sets, partial labels and the state paths labels fix; a
person's corrections of one sentence as a partial-label column.

A gold column value is one label, or, in training data only, UNKNOWN_LABEL
("?", any label) or a label set ("B-NP|I-NP", any of these labels).  Model
labels never hold that syntax (:func:`gold_label_set` takes the members of a
set), and scoring predictions against gold with it raises LabelError
(:mod:`fstcrf.corpus.evaluate`).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

from fstcrf.engine import budget
from fstcrf.engine.chunks import chunks_of_parts, continues, parse_chunk_label
from fstcrf.corpus.conll import Corpus
from fstcrf.engine.constraints import Constraints
from fstcrf.errors import LabelError
from fstcrf.engine.inference import lengths_to_offsets
from fstcrf.corpus.schemes import LABEL_SET_SEPARATOR, UNKNOWN_LABEL
from fstcrf.engine.topology import Topology, first_order, second_order

#: The outside tag, c_0 of second-order models.
OUTSIDE = "O"


def chain_topology(order: int, labels: Sequence[str]) -> Topology:
    if order == 1:
        return first_order(labels)
    if OUTSIDE not in labels:
        raise LabelError(
            f"a second-order model needs the outside tag {OUTSIDE!r} among the "
            f"labels (it is c_0 before every sentence); the labels are {', '.join(labels)}"
        )
    return second_order(labels, outside=OUTSIDE)


def _label_options(value: str) -> list[str] | None:
    """The labels a gold-column value allows: None for UNKNOWN_LABEL (any label)."""
    if value == UNKNOWN_LABEL:
        return None
    if LABEL_SET_SEPARATOR in value:
        options = value.split(LABEL_SET_SEPARATOR)
        if not all(options) or UNKNOWN_LABEL in options:
            raise LabelError(
                f"label set {value!r} has an empty member or {UNKNOWN_LABEL!r}; "
                f"write labels separated by {LABEL_SET_SEPARATOR!r}, e.g. 'B-NP|I-NP'"
            )
        return options
    return [value]


def _known_options(value: str, labels: Sequence[str] | None) -> list[str] | None:
    """:func:`_label_options` of a value; LabelError for a label not among ``labels``
    (when given)."""
    options = _label_options(value)
    unknown = [] if options is None or labels is None else [label for label in options if label not in labels]
    if unknown:
        raise LabelError(f"unknown label {unknown[0]!r}; the model knows {', '.join(labels or ())}")
    return options


def check_gold_column(sentences: Sequence[Sequence[str]], labels: Sequence[str] | None = None) -> None:
    """LabelError at the first value of a gold column [B][T] that is a malformed label
    set or, given a model's ``labels``, names a label they lack, with its ``sentence``
    and ``position`` set: what training refuses, checked before any work."""
    known = frozenset(labels or ())
    for b, values in enumerate(sentences):
        for t, value in enumerate(values):
            if value in known or (labels is None and LABEL_SET_SEPARATOR not in value):
                continue
            try:
                _known_options(value, labels)
            except LabelError as error:
                error.sentence, error.position = b, t
                raise


def token_location(corpus: Corpus, sentence: int, position: int = 0) -> str:
    """FILE:LINE of a token of a corpus read from a file (standard input without a
    path; ? without line numbers), for messages about its values."""
    lines = corpus.sentences[sentence].line_numbers
    return f"{corpus.path or 'standard input'}:{lines[position] if lines else '?'}"


def partial_label_constraints(values: Sequence[str]) -> Constraints | None:
    """The constraints a column in the partial-label convention gives one sentence
    (decoding a partly annotated file): UNKNOWN_LABEL leaves a token free, a label set
    allows its labels, a label fixes it; None when every token is free.  LabelError
    for a malformed label set, its ``position`` the token's."""
    fixed, allowed = {}, {}
    for token, value in enumerate(values):
        try:
            options = _label_options(value)
        except LabelError as error:
            error.position = token
            raise
        if options is not None and len(options) == 1:
            fixed[token] = options[0]
        elif options is not None:
            allowed[token] = options
    return Constraints(fixed=fixed, allowed=allowed) or None


def corrected_labels(constraints: Constraints, decoded: Sequence[str], labels: Sequence[str]) -> list[str]:
    """The partial-label column [T] that a person's hard ``constraints`` on one sentence
    make of its labels ``decoded`` [T] under them (``labels``: the model's): a fixed
    token gets its label and an allowed one its set; a required span's tokens get their
    decoded labels, the token after it the labels that do not continue its last label,
    and the token before it the labels its first label does not continue (IOB1's I-X
    begins a chunk only after them; IOB2's B-X after any, which leaves that token
    UNKNOWN_LABEL); a token several rules name gets what they all allow, and every
    other token UNKNOWN_LABEL.  Weighted rules, forbidden spans, unbroken ranges and
    scores name no token's labels and are left out.  So every label sequence the
    column allows keeps to those hard rules, and ``decoded`` is one of them (LabelError
    when it breaks a rule)."""
    universe = tuple(labels)
    parts = {label: parse_chunk_label(label) for label in (*universe, *decoded)}
    known: dict[int, frozenset[str]] = {}

    def narrow(token: int, allowed) -> None:
        known[token] = known.get(token, frozenset(universe)) & frozenset(allowed)

    def continued(previous: str, current: str) -> bool:
        before, after = parts[previous], parts[current]
        return before is not None and after is not None and continues(before, after)

    for token, label in constraints.fixed.items():
        narrow(token, {label})
    for token, options in constraints.allowed.items():
        narrow(token, options)
    held = set(chunks_of_parts([parts[label] or ("O", "") for label in decoded]))
    for span in constraints.spans:
        if span.weight is not None:
            continue
        if (span.first, span.last, span.type) not in held:
            raise LabelError(f"the labels {' '.join(decoded)} do not hold the required span {tuple(span[:3])}")
        for token in range(span.first, span.last + 1):
            narrow(token, {decoded[token]})
        if span.first > 0:
            narrow(span.first - 1, (label for label in universe if not continued(label, decoded[span.first])))
        if span.last + 1 < len(decoded):
            narrow(span.last + 1, (label for label in universe if not continued(decoded[span.last], label)))
    column = [UNKNOWN_LABEL] * len(decoded)
    for token, allowed in known.items():
        if decoded[token] not in allowed:
            raise LabelError(f"the label {decoded[token]} at token {token} breaks the constraints of the sentence")
        if len(allowed) < len(universe):
            column[token] = LABEL_SET_SEPARATOR.join(label for label in universe if label in allowed)
    return column


def gold_label_set(sentences: Sequence[Sequence[str]]) -> list[str]:
    """The sorted labels a gold column mentions (in single labels and label sets)."""
    labels: set[str] = set()
    for values in sentences:
        for value in set(values):
            labels.update(_label_options(value) or ())
    if not labels:
        raise LabelError(f"the gold column names no label: every token is unknown ({UNKNOWN_LABEL!r})")
    return sorted(labels)


def parse_gold(topology: Topology, sentences: Sequence[Sequence[str]]) -> tuple[np.ndarray, np.ndarray | None]:
    """(label index int64 [N], -1 where the gold value is not one label; the labels
    each token allows, bool [N, L], or None if every token has one label)."""
    index = {label: i for i, label in enumerate(topology.labels)}
    values = [value for labels in sentences for value in labels]
    label_ids = np.array([index.get(value, -1) for value in values], dtype=np.int64)
    unresolved = np.flatnonzero(label_ids < 0)
    if len(unresolved) == 0:
        return label_ids, None
    allowed = np.zeros((len(values), topology.num_labels), dtype=bool)
    allowed[np.flatnonzero(label_ids >= 0), label_ids[label_ids >= 0]] = True
    for row in unresolved.tolist():
        options = _known_options(values[row], topology.labels)
        if options is None:
            allowed[row] = True
            continue
        allowed[row, [index[label] for label in options]] = True
    resolved = allowed.sum(axis=1) == 1
    label_ids[resolved] = allowed[resolved].argmax(axis=1)
    return label_ids, allowed


def gold_states(topology: Topology, label_ids: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """int32 [N]: the gold state of every token of the fully labelled sentences,
    -1 throughout a sentence with a token whose label is not known (label_ids -1)."""
    states = np.full(len(label_ids), -1, dtype=np.int32)
    complete = np.flatnonzero(np.minimum.reduceat(label_ids, offsets[:-1]) >= 0)
    if len(complete):
        rows = np.concatenate([np.arange(offsets[b], offsets[b + 1]) for b in complete])
        sub_offsets = lengths_to_offsets(np.diff(offsets)[complete])
        states[rows] = label_states(topology, label_ids[rows], sub_offsets, complete)
    return states


def split_labels(topology: Topology, states: np.ndarray, offsets: np.ndarray) -> list[list[str]]:
    """The label strings of state paths [N], one list per sentence."""
    names, indices = topology.state_label_names, states.tolist()
    # one itemgetter call is some 2.5x quicker than a lookup per token; on one index it gives the bare label
    labels = list(operator.itemgetter(*indices)(names)) if len(indices) > 1 else [names[i] for i in indices]
    if len(offsets) == 2:  # one sentence: its labels as they are
        return [labels]
    bounds = offsets.tolist()
    return [labels[first:last] for first, last in zip(bounds[:-1], bounds[1:])]


def label_states(
    topology: Topology, label_ids: np.ndarray, offsets: np.ndarray, sentence_numbers: np.ndarray | None = None
) -> np.ndarray:
    """int32 [N]: the state sequence of label index sequences int [N] (sentences cut at offsets).

    The topology is deterministic, so labels fix states; raises LabelError
    naming the first sentence whose labels it does not allow (numbered by
    ``sentence_numbers`` [B] when the sentences are a selection)."""
    S, L = topology.num_states, topology.num_labels
    budget.check_table((S + 1, L), f"topology {topology.name!r}'s table of the state each label leads to:")
    successor = np.full((S + 1, L), -1, dtype=np.int64)  # row S: no state (a dead path)
    successor[topology.edge_src, topology.state_label[topology.edge_dst]] = topology.edge_dst
    entry = np.full(L, -1, dtype=np.int64)
    starts = np.flatnonzero(topology.start)
    entry[topology.state_label[starts]] = starts
    lengths = np.diff(offsets)
    states = np.empty(len(label_ids), dtype=np.int64)
    states[offsets[:-1]] = entry[label_ids[offsets[:-1]]]
    for t in range(1, int(lengths.max(initial=0))):
        rows = offsets[:-1][lengths > t] + t
        states[rows] = successor[states[rows - 1], label_ids[rows]]
    ends = offsets[1:] - 1
    bad: np.ndarray | list[int] = (
        np.flatnonzero((np.minimum.reduceat(states, offsets[:-1]) < 0) | ~topology.final[states[ends]])
        if len(lengths)
        else []
    )
    if len(bad):
        sentence = int(bad[0])
        labels = [topology.labels[i] for i in label_ids[offsets[sentence] : offsets[sentence + 1]]]
        number = sentence if sentence_numbers is None else int(sentence_numbers[sentence])
        raise LabelError(
            f"sentence {number} ({' '.join(labels)}) is not allowed by the "
            f"{topology.name} topology ({len(bad)} such sentences)"
        )
    return states.astype(np.int32)
