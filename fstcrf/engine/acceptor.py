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

import sys
from dataclasses import dataclass, field
from collections.abc import Mapping, Sequence

from typing import TYPE_CHECKING, TypeGuard

import numpy as np

from fstcrf.engine import budget
from fstcrf.errors import TopologyError

if TYPE_CHECKING:
    import pynini

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

    def accepts_keys(self, keys: Sequence[int]) -> bool:
        """Whether some path from the start reads the label keys ``keys`` (epsilons
        allowed anywhere) and ends in a final state."""
        if self.start == NO_STATE:
            return False
        current = self._closure(np.array([self.start]))
        for key in keys:
            moved = self.arc_dst[np.isin(self.arc_src, current) & (self.arc_key == key)]
            current = self._closure(np.unique(moved))
            if len(current) == 0:
                return False
        return bool(self.final[current].any())

    def _closure(self, states: np.ndarray) -> np.ndarray:
        """int64 [n]: ``states`` and those epsilon arcs lead to from them."""
        epsilon = self.arc_key == 0
        return np.flatnonzero(reached(self.num_states, states, self.arc_src[epsilon], self.arc_dst[epsilon]))

    def is_deterministic(self) -> bool:
        """No epsilon arc and no two arcs of one state reading one key."""
        if np.any(self.arc_key == 0):
            return False
        pairs = np.sort(self.arc_src * (int(self.arc_key.max(initial=0)) + 1) + self.arc_key)
        return not np.any(pairs[1:] == pairs[:-1])


def from_arcs(num_states: int, start: int, final, arcs: Sequence[tuple[int, int, int]]) -> Acceptor:
    """An acceptor from (source, key, destination) triples, each state's arcs in the
    order ``arcs`` lists them."""
    columns = np.array(arcs, dtype=np.int64).reshape(-1, 3)
    by_source = np.argsort(columns[:, 0], kind="stable")
    src, key, dst = columns[by_source].T
    return Acceptor(num_states, start, final, src, key, dst)


def reached(num_states: int, origin: np.ndarray, tail: np.ndarray, head: np.ndarray) -> np.ndarray:
    """bool [Q]: the states reached from the ``origin`` ones along arcs tail -> head."""
    seen = np.zeros(num_states, dtype=bool)
    seen[origin] = True
    frontier = seen.copy()
    while frontier.any():
        following = np.zeros(num_states, dtype=bool)
        following[head[frontier[tail]]] = True
        frontier = following & ~seen
        seen |= frontier
    return seen


def connect(fsa: Acceptor) -> Acceptor:
    """``fsa`` without the states no path from the start to a final state passes
    through, the others renumbered in their order (OpenFst's Connect)."""
    Q = fsa.num_states
    if fsa.start == NO_STATE:
        return empty(fsa.symbols)
    accessible = reached(Q, np.array([fsa.start]), fsa.arc_src, fsa.arc_dst)
    coaccessible = reached(Q, np.flatnonzero(fsa.final), fsa.arc_dst, fsa.arc_src)
    keep = accessible & coaccessible
    if not keep[fsa.start]:
        return empty(fsa.symbols)
    renumber = np.cumsum(keep) - 1
    arcs = keep[fsa.arc_src] & keep[fsa.arc_dst]
    return Acceptor(
        int(keep.sum()),
        int(renumber[fsa.start]),
        fsa.final[keep],
        renumber[fsa.arc_src[arcs]],
        fsa.arc_key[arcs],
        renumber[fsa.arc_dst[arcs]],
        fsa.symbols,
    )


def empty(symbols: Mapping[int, str] | None = None) -> Acceptor:
    """The machine without states (the empty language)."""
    none = np.zeros(0, dtype=np.int64)
    return Acceptor(0, NO_STATE, np.zeros(0, dtype=bool), none, none, none, symbols)


def intersect(left: Acceptor, right: Acceptor, what: str = "the intersection") -> Acceptor:
    """The product of two epsilon-free acceptors, ``right`` deterministic, connected;
    BudgetError naming ``what`` once it passes the budget's max_states.

    Product states are numbered as OpenFst's composition numbers them: breadth
    first from the pair of start states, each state's arcs in ``left``'s order."""
    if left.start == NO_STATE or right.start == NO_STATE:
        return empty(left.symbols)
    R = right.num_states
    width = int(max(left.arc_key.max(initial=0), right.arc_key.max(initial=0))) + 1
    # right's move on (state, key), looked up by searchsorted on the sorted keys
    right_keys = right.arc_src * width + right.arc_key
    by_key = np.argsort(right_keys, kind="stable")
    right_keys, right_dst = right_keys[by_key], right.arc_dst[by_key]
    left_ptr = left.arc_ptr()
    pair_left, pair_right = [np.array([left.start])], [np.array([right.start])]
    known = np.array([left.start * R + right.start])  # sorted pair keys seen so far
    known_id = np.array([0])
    src_parts, key_parts, dst_parts = [], [], []
    first, count = 0, 1
    while first < count:
        lefts, rights = np.concatenate(pair_left[-1:]), np.concatenate(pair_right[-1:])
        ids = np.arange(first, count)
        # every arc of every frontier state, states in id order, arcs in left's order
        starts, stops = left_ptr[lefts], left_ptr[lefts + 1]
        counts = stops - starts
        owner = np.repeat(np.arange(len(lefts)), counts)
        arc = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
        keys = left.arc_key[arc]
        wanted = rights[owner] * width + keys
        where = np.searchsorted(right_keys, wanted)
        matched = where < len(right_keys)
        matched[matched] = right_keys[where[matched]] == wanted[matched]
        owner, arc, keys, where = owner[matched], arc[matched], keys[matched], where[matched]
        targets = left.arc_dst[arc] * R + right_dst[where]
        # ids of known pairs; new ones numbered in order of first appearance
        position = np.searchsorted(known, targets)
        seen = position < len(known)
        seen[seen] = known[position[seen]] == targets[seen]
        target_id = np.empty(len(targets), dtype=np.int64)
        target_id[seen] = known_id[position[seen]]
        fresh, first_seen, inverse = np.unique(targets[~seen], return_index=True, return_inverse=True)
        rank = np.empty(len(fresh), dtype=np.int64)
        rank[np.argsort(first_seen, kind="stable")] = np.arange(len(fresh))
        target_id[~seen] = count + rank[inverse.ravel()]
        budget.check_states(count + len(fresh), what, at_least=True)
        src_parts.append(ids[owner])
        key_parts.append(keys)
        dst_parts.append(target_id)
        in_order = fresh[np.argsort(rank)]
        pair_left.append(in_order // R)
        pair_right.append(in_order % R)
        merged = np.argsort(np.concatenate([known, fresh]), kind="stable")
        known = np.concatenate([known, fresh])[merged]
        known_id = np.concatenate([known_id, count + rank])[merged]
        first, count = count, count + len(fresh)
    all_left, all_right = np.concatenate(pair_left), np.concatenate(pair_right)
    product = Acceptor(
        count,
        0,
        left.final[all_left] & right.final[all_right],
        np.concatenate(src_parts),
        np.concatenate(key_parts),
        np.concatenate(dst_parts),
        left.symbols,
    )
    return connect(product)


def is_fst(value) -> TypeGuard[pynini.Fst]:
    """Whether ``value`` is a pynini (OpenFst) machine; False whenever pynini is not loaded.
    pynini 2.1.7 loads OpenFst's binding as ``_pywrapfst`` (its ``pywrapfst`` package
    re-exports it, and is imported only on request); earlier releases as ``pywrapfst``."""
    pywrapfst = sys.modules.get("_pywrapfst") or sys.modules.get("pywrapfst")
    return pywrapfst is not None and isinstance(value, pywrapfst.Fst)
