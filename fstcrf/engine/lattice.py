"""Export a scored sentence lattice as a pynini Fst.

The lattice of sentence b has an initial state and one state per (token,
model state); an arc into (t, s) carries the label of s (or s itself with
``symbols="states"``) and weight minus the score gained there, so path
weights are negated path scores.  In the tropical semiring shortestpath is
Viterbi; in the log semiring shortestdistance from the start is -log Z.  OpenFst's
"tropical" and "log" weights are single precision; "log64" keeps doubles.
"""

from __future__ import annotations

import os

from typing import TYPE_CHECKING

import numpy as np

from fstcrf.engine import budget
from fstcrf.errors import ArgumentTypeError, LabelError, OutputPathError, ShapeError
from fstcrf.files import check_output_path, write_atomically
from fstcrf.engine.inference import Potentials, check_potentials
from fstcrf.extras import require

if TYPE_CHECKING:
    import pynini

ARC_TYPES = ("tropical", "log", "log64")


def to_fst(pot: Potentials, sentence: int = 0, arc_type: str = "tropical", symbols: str = "labels") -> pynini.Fst:
    """The lattice of one sentence of ``pot`` as an acceptor.

    Args:
        arc_type: "tropical", "log" or "log64".
        symbols: "labels" (arcs carry label keys, symbol table = labels) or
            "states" (arcs carry state keys, so distinct state paths stay
            distinct even when states share a label).
    """
    check_potentials(pot, "to_fst")
    for name, value, allowed in (("arc_type", arc_type, ARC_TYPES), ("symbols", symbols, ("labels", "states"))):
        if not isinstance(value, str):
            raise ArgumentTypeError(f"{name} must be a string, one of {allowed}, got {type(value).__name__}")
        if value not in allowed:
            raise ShapeError(f"{name} must be one of {allowed}, got {value!r}")
    if isinstance(sentence, (bool, np.bool_)) or not isinstance(sentence, (int, np.integer)):
        raise ArgumentTypeError(f"sentence must be an integer index, got {type(sentence).__name__} {sentence!r}")
    if not 0 <= sentence < pot.num_sequences:
        raise LabelError(f"sentence {sentence} is out of range [0, {pot.num_sequences})")
    pynini = require("pynini", "exporting a lattice")
    pywrapfst = require("pywrapfst", "exporting a lattice")
    topo = pot.topology
    S = topo.num_states
    emit = pot.emissions[pot.sentence(int(sentence))]
    T = len(emit)
    budget.check_states(1 + T * S, f"the lattice of sentence {sentence} ({T} tokens x {S} states)")
    keys = (topo.state_label + 1) if symbols == "labels" else np.arange(1, S + 1)
    fst = pynini.Fst(arc_type="standard" if arc_type == "tropical" else arc_type)
    if arc_type == "tropical":

        def weight(value):
            return value
    else:

        def weight(value):
            return pywrapfst.Weight(arc_type, value)

    initial = fst.add_state()
    fst.set_start(initial)
    first_node = initial + 1
    for _ in range(T * S):
        fst.add_state()

    def node(t: int, s: int) -> int:
        return first_node + t * S + s

    for s in np.flatnonzero(topo.start).tolist():
        fst.add_arc(initial, pywrapfst.Arc(keys[s], keys[s], weight(-(pot.start[s] + emit[0, s])), node(0, s)))
    transitions = pot.transitions_into(pot.sentence(sentence))
    for t in range(1, T):
        weights = -(transitions[t] + emit[t, topo.edge_dst])
        for src, dst, score in zip(topo.edge_src.tolist(), topo.edge_dst.tolist(), weights.tolist()):
            fst.add_arc(node(t - 1, src), pywrapfst.Arc(keys[dst], keys[dst], weight(score), node(t, dst)))
    for s in np.flatnonzero(topo.final).tolist():
        fst.set_final(node(T - 1, s), weight(-pot.final[s]))
    table = topo.symbols if symbols == "labels" else topo.state_symbols
    fst.set_input_symbols(table)
    fst.set_output_symbols(table)
    return fst


def write_lattice(
    pot: Potentials, path: str | os.PathLike, sentence: int = 0, arc_type: str = "tropical", symbols: str = "labels"
) -> None:
    """Write the lattice of one sentence as an OpenFst binary ``.fst`` file, atomically.

    Raises OutputPathError, before any work, when ``path`` is a folder or its
    folder is missing or unwritable, and when the file cannot be written."""
    if not isinstance(path, (str, os.PathLike)):
        raise ArgumentTypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    require("pynini", "exporting a lattice")
    check_output_path(path)
    data = to_fst(pot, sentence, arc_type, symbols).write_to_string()
    try:
        write_atomically(path, lambda stream: stream.write(data))
    except OSError as error:
        raise OutputPathError(f"{os.fspath(path)}: cannot write the lattice: {error.strerror}") from None
