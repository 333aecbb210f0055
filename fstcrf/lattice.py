"""Export a scored sentence lattice as a pynini Fst.

The lattice of sentence b has an initial state and one state per (token,
model state); an arc into (t, s) carries the label of s (or s itself with
``symbols="states"``) and weight minus the score gained there, so path
weights are negated path scores.  In the tropical semiring shortestpath is
Viterbi; in the log semiring shortestdistance from the start is -log Z.  OpenFst's
"tropical" and "log" weights are single precision; "log64" keeps doubles.
"""
from __future__ import annotations

import numpy as np
import pynini

from .errors import LabelError, ShapeError
from .inference import Potentials

ARC_TYPES = ("tropical", "log", "log64")


def to_fst(pot: Potentials, sentence: int = 0, arc_type: str = "tropical",
           symbols: str = "labels") -> pynini.Fst:
    """The lattice of one sentence of ``pot`` as an acceptor.

    Args:
        arc_type: "tropical", "log" or "log64".
        symbols: "labels" (arcs carry label keys, symbol table = labels) or
            "states" (arcs carry state keys, so distinct state paths stay
            distinct even when states share a label).
    """
    if arc_type not in ARC_TYPES:
        raise ShapeError(f"arc_type must be one of {ARC_TYPES}, got {arc_type!r}")
    if symbols not in ("labels", "states"):
        raise ShapeError(f"symbols must be 'labels' or 'states', got {symbols!r}")
    if not 0 <= sentence < pot.num_sequences:
        raise LabelError(f"sentence {sentence} is out of range [0, {pot.num_sequences})")
    topo = pot.topology
    S = topo.num_states
    emit = pot.emissions[pot.sentence(sentence)]
    T = len(emit)
    keys = (topo.state_label + 1) if symbols == "labels" else np.arange(1, S + 1)
    fst = pynini.Fst(arc_type="standard" if arc_type == "tropical" else arc_type)
    if arc_type == "tropical":
        def weight(value):
            return value
    else:
        def weight(value):
            return pynini.Weight(arc_type, value)
    initial = fst.add_state()
    fst.set_start(initial)
    first_node = initial + 1
    for _ in range(T * S):
        fst.add_state()

    def node(t: int, s: int) -> int:
        return first_node + t * S + s

    for s in np.flatnonzero(topo.start):
        fst.add_arc(initial, pynini.Arc(keys[s], keys[s], weight(-(pot.start[s] + emit[0, s])), node(0, s)))
    transitions = pot.transitions_into(pot.sentence(sentence))
    for t in range(1, T):
        weights = -(transitions[t] + emit[t, topo.edge_dst])
        for src, dst, score in zip(topo.edge_src.tolist(), topo.edge_dst.tolist(), weights.tolist()):
            fst.add_arc(node(t - 1, src), pynini.Arc(keys[dst], keys[dst], weight(score), node(t, dst)))
    for s in np.flatnonzero(topo.final):
        fst.set_final(node(T - 1, s), weight(-pot.final[s]))
    table = topo.symbols if symbols == "labels" else topo.state_symbols
    fst.set_input_symbols(table)
    fst.set_output_symbols(table)
    return fst


def write_lattice(pot: Potentials, path: str, sentence: int = 0, arc_type: str = "tropical",
                  symbols: str = "labels") -> None:
    """Write the lattice of one sentence as an OpenFst binary ``.fst`` file."""
    to_fst(pot, sentence, arc_type, symbols).write(str(path))
