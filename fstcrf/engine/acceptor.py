"""Unweighted acceptors over label keys as numpy arrays, and what topologies need of them.

An :class:`Acceptor` is OpenFst's VectorFst reduced to what a label topology
uses: states 0..Q-1, one start state, final states, and arcs in OpenFst's order
(by source state, then in the order they were added) reading label keys
(label i = key i + 1; key 0 is epsilon).  The operations here are the ones a
topology is built with, written so that their state numbering is the one
OpenFst gives (pynini is the oracle in tests/engine/test_acceptor.py), which
keeps every topology, and so every weight layout, the same with or without pynini.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Mapping

import numpy as np

from fstcrf.errors import TopologyError

NO_STATE = -1


@dataclass(frozen=True, eq=False)
class Acceptor:
    """An unweighted acceptor.

    Attributes:
        num_states: Q.
        start: the start state, or NO_STATE (-1) for the empty machine.
        final: bool [Q], the final states.
        arc_src, arc_key, arc_dst: int64 [A], arcs by source state, each source's
            arcs in their order.
        symbols: key -> symbol of the label symbol table, or None without one.
    """

    num_states: int
    start: int
    final: np.ndarray
    arc_src: np.ndarray
    arc_key: np.ndarray
    arc_dst: np.ndarray
    symbols: Mapping[int, str] | None = field(default=None)

    def __post_init__(self) -> None:
        Q = self.num_states
        for name in ("arc_src", "arc_key", "arc_dst"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=np.int64).ravel())
        object.__setattr__(self, "final", np.asarray(self.final, dtype=bool).ravel())
        if self.final.shape != (Q,):
            raise TopologyError(f"an acceptor of {Q} states needs {Q} final flags, got {self.final.shape[0]}")
        if not (len(self.arc_src) == len(self.arc_key) == len(self.arc_dst)):
            raise TopologyError("an acceptor's arc arrays must have one length")
        if not (self.start == NO_STATE or 0 <= self.start < Q):
            raise TopologyError(f"the start state {self.start} is not one of the {Q} states")
        if len(self.arc_src) and (
            min(self.arc_src.min(), self.arc_dst.min()) < 0 or max(self.arc_src.max(), self.arc_dst.max()) >= Q
        ):
            raise TopologyError(f"an arc leaves or enters a state outside [0, {Q})")
        if len(self.arc_key) and self.arc_key.min() < 0:
            raise TopologyError("arc label keys must be >= 0")
        if len(self.arc_src) > 1 and np.any(np.diff(self.arc_src) < 0):
            raise TopologyError("an acceptor's arcs must be grouped by source state, in state order")

    @property
    def num_arcs(self) -> int:
        return len(self.arc_src)

    def arc_ptr(self) -> np.ndarray:
        """int64 [Q+1]: the arcs leaving state q are arc_ptr[q]..arc_ptr[q+1]-1."""
        return np.searchsorted(self.arc_src, np.arange(self.num_states + 1)).astype(np.int64)
