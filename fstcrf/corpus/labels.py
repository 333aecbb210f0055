"""Gold label columns: label sets, partial labels and the state paths labels fix.

A gold column value is one label, or, in training data only, UNKNOWN_LABEL
("?", any label) or a label set ("B-NP|I-NP", any of these labels).  Model
labels never hold that syntax (:func:`gold_label_set` takes the members of a
set), and scoring predictions against gold with it raises LabelError
(:mod:`fstcrf.corpus.evaluate`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fstcrf.engine import budget
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


def partial_label_constraints(values: Sequence[str]) -> Constraints | None:
    """The constraints a column in the partial-label convention gives one sentence
    (decoding a partly annotated file): UNKNOWN_LABEL leaves a token free, a label set
    allows its labels, a label fixes it; None when every token is free."""
    fixed, allowed = {}, {}
    for token, value in enumerate(values):
        options = _label_options(value)
        if options is not None and len(options) == 1:
            fixed[token] = options[0]
        elif options is not None:
            allowed[token] = options
    return Constraints(fixed=fixed, allowed=allowed) or None


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
        options = _label_options(values[row])
        if options is None:
            allowed[row] = True
            continue
        unknown = [label for label in options if label not in index]
        if unknown:
            raise LabelError(f"unknown label {unknown[0]!r}; the model knows {', '.join(topology.labels)}")
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
    labels = list(map(topology.labels.__getitem__, topology.state_label[states].tolist()))
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
