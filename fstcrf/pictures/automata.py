"""Automata as Graphviz pictures: a grammar's compiled acceptor (minimal and
deterministic, as :func:`fstcrf.grammar.compile_grammar` builds it) and a model's
topology (its own state space: first or second order, a tagging scheme, a training
grammar).

Each state is a node (final states drawn with a double border, the start state
entered by an arrow from nowhere) and the arcs from one state to another are
merged into one edge labelled with the set of labels they read, written as the
grammar language writes it: ``B-NP``, ``[B-NP I-NP]``, ``[^O]`` (every label but
O) or ``.`` (any label).  The label alphabet is listed beside the automaton.
Pictures of more than ``max_states`` states are refused: Graphviz would take long
and the result could not be read."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np

from fstcrf.engine.acceptor import NO_STATE, Acceptor
from fstcrf.engine.topology import Topology
from fstcrf.errors import PictureError
from fstcrf.grammar.nodes import Grammar
from fstcrf.grammar.parser import EXTENSION, KEYWORDS
from fstcrf.pictures.dot import digraph, edge, node
from fstcrf.pictures.settings import DEFAULT_MAX_STATES

#: Labels per line in an arc's label set and in the alphabet.
LABELS_PER_LINE = 5

#: A label the grammar language reads as it is written (else it is quoted).
_GRAMMAR_WORD = re.compile(r"[A-Za-z0-9_$]+(-[A-Za-z0-9_$]+)*")

_DEFAULTS = {
    "graph": {"rankdir": "LR", "labelloc": "t", "fontname": "Helvetica"},
    "node": {"fontname": "Helvetica"},
    "edge": {"fontname": "Helvetica", "fontsize": "11"},
}


def check_size(num_states: int, what: str, max_states: int) -> None:
    """PictureError when ``what`` has more than ``max_states`` states, giving the count
    and how to raise the limit."""
    if num_states > max_states:
        raise PictureError(
            f"{what} has {num_states} states, more than the {max_states} a picture may have; "
            f"raise the limit to draw it anyway: --max-states {num_states} on the command line, "
            f"max_states={num_states} in Python"
        )


def grammar_acceptor(
    grammar: Grammar, labels: Sequence[str], rule: str = "start", params: Mapping[str, str] | None = None
) -> Acceptor:
    """The minimal deterministic acceptor of ``grammar``'s rule ``rule`` over ``labels``
    (label i = key i + 1), with the labels as its symbols; needs pynini."""
    from fstcrf.engine.bounded import as_arrays
    from fstcrf.grammar.compiler import compile_grammar

    return as_arrays(compile_grammar(grammar, labels, rule, params), f"grammar {grammar.source}")


def grammar_title(grammar: Grammar, rule: str, params: Mapping[str, str] | None) -> str:
    """How a picture names a grammar's rule: ``iob2.fgr, rule start`` and its parameters."""
    name = grammar.source.replace("\\", "/").rsplit("/", 1)[-1]
    name = name if name.endswith(EXTENSION) else name + EXTENSION
    given = ", ".join(f"{key} = {value}" for key, value in sorted((params or {}).items()))
    return f"{name}, rule {rule}" + (f" with {given}" if given else "")


def grammar_label(label: str) -> str:
    """``label`` as the grammar language writes it: as it is, or quoted."""
    if _GRAMMAR_WORD.fullmatch(label) and label not in KEYWORDS:
        return label
    return '"' + label.replace("\\", "\\\\").replace('"', '\\"') + '"'


def label_set(keys: set[int], alphabet: Sequence[int], symbols: Mapping[int, str]) -> str:
    """The labels of ``keys`` (a subset of the label keys ``alphabet``) in the grammar
    language: ``.`` for all of them, one label, a class ``[a b]`` or the complement
    ``[^c]``, whichever lists fewer labels (a new line every few labels)."""
    inside = [key for key in alphabet if key in keys]
    outside = [key for key in alphabet if key not in keys]
    if not outside:
        return "."
    if len(inside) == 1:
        return grammar_label(symbols[inside[0]])
    listed, opening = (outside, "[^") if len(outside) < len(inside) else (inside, "[")
    words = [grammar_label(symbols[key]) for key in listed]
    lines = [" ".join(words[i : i + LABELS_PER_LINE]) for i in range(0, len(words), LABELS_PER_LINE)]
    return opening + "\n".join(lines) + "]"


def alphabet_text(labels: Sequence[str]) -> str:
    """The legend listing a picture's label alphabet."""
    words = [grammar_label(label) for label in labels]
    lines = [" ".join(words[i : i + LABELS_PER_LINE]) for i in range(0, len(words), LABELS_PER_LINE)]
    return "\n".join([f"labels ({len(labels)}):", *lines])


def acceptor_dot(
    acceptor: Acceptor,
    title: str,
    state_names: Sequence[str] | None = None,
    arc_labels: bool = True,
    max_states: int = DEFAULT_MAX_STATES,
) -> str:
    """The dot text of ``acceptor`` under the caption ``title``: its states (named by
    ``state_names``, else numbered), start and final states, and its arcs merged per
    pair of states, each labelled with its label set unless ``arc_labels`` is False;
    epsilon arcs (key 0) are drawn apart, labelled ε.  Its symbols (key -> label) give
    the alphabet.  PictureError if it has more than ``max_states`` states."""
    check_size(acceptor.num_states, title.split("\n", 1)[0], max_states)
    symbols = dict(acceptor.symbols or {})
    used = {int(key) for key in np.unique(acceptor.arc_key) if key > 0}
    alphabet = sorted((set(symbols) - {0}) | used)
    for key in alphabet:
        symbols.setdefault(key, str(key))
    statements = [
        node(
            f"q{state}",
            {
                "label": str(state) if state_names is None else state_names[state],
                "shape": "circle" if state_names is None else "ellipse",
                "peripheries": "2" if acceptor.final[state] else "1",
            },
        )
        for state in range(acceptor.num_states)
    ]
    if acceptor.start != NO_STATE:
        statements += [node("start", {"shape": "point", "label": ""}), edge("start", f"q{acceptor.start}", {})]
    merged: dict[tuple[int, int, bool], set[int]] = {}
    for src, key, dst in zip(acceptor.arc_src.tolist(), acceptor.arc_key.tolist(), acceptor.arc_dst.tolist()):
        merged.setdefault((src, dst, key == 0), set()).add(key)
    for (src, dst, epsilon), keys in merged.items():
        text = "ε" if epsilon else label_set(keys, alphabet, symbols)
        statements.append(edge(f"q{src}", f"q{dst}", {"label": text} if arc_labels or epsilon else {}))
    if alphabet:
        statements.append(node("alphabet", {"shape": "note", "label": alphabet_text([symbols[k] for k in alphabet])}))
    return digraph("automaton", {**_DEFAULTS, "graph": {**_DEFAULTS["graph"], "label": title}}, statements)


def grammar_dot(
    grammar: Grammar,
    labels: Sequence[str],
    rule: str = "start",
    params: Mapping[str, str] | None = None,
    max_states: int = DEFAULT_MAX_STATES,
) -> str:
    """The dot text of the minimal acceptor of ``grammar``'s rule over ``labels`` (see
    :func:`acceptor_dot`); needs pynini."""
    acceptor = grammar_acceptor(grammar, labels, rule, params)
    named = grammar_title(grammar, rule, params)
    check_size(acceptor.num_states, f"the acceptor of {named}", max_states)
    title = f"{named}\n{acceptor.num_states} states, {acceptor.num_arcs} arcs"
    return acceptor_dot(acceptor, title, max_states=max_states)


def topology_dot(topology: Topology, name: str, max_states: int = DEFAULT_MAX_STATES) -> str:
    """The dot text of a topology's state space under the caption ``name``: a start
    state, then each model state, named by its label (and the history or grammar
    state it remembers), entered by reading its label (see :attr:`Topology.arcs`)."""
    check_size(topology.num_states, f"the topology of {name}", max_states)
    title = f"{name}: topology {topology.name}\n{topology.num_states} states, {topology.num_edges} edges"
    return acceptor_dot(
        topology.arcs, title, ("start", *topology.state_names), arc_labels=False, max_states=max_states + 1
    )
