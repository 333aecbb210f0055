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
        allowed anywhere) and ends in a final state: the states each key leads to,
        found among the arcs of the states the keys before it led to, so that a
        deterministic acceptor takes time linear in the keys, not in keys x arcs (a
        scan of every arc at each key took 10 s for 50,000 keys and states)."""
        if self.start == NO_STATE:
            return False
        ptr = self.arc_ptr().tolist()
        arc_key, arc_dst = self.arc_key, self.arc_dst
        epsilons = bool(np.any(arc_key == 0))

        def following(states: set[int], key: int) -> set[int]:
            found: set[int] = set()
            for state in states:
                first, stop = ptr[state], ptr[state + 1]
                found.update(arc_dst[first:stop][arc_key[first:stop] == key].tolist())
            return found

        def closure(states: set[int]) -> set[int]:
            """``states`` and the states epsilon arcs lead to from them."""
            reached, frontier = set(states), states
            while epsilons and frontier:
                frontier = following(frontier, 0) - reached
                reached |= frontier
            return reached

        current = closure({self.start})
        for key in keys:
            current = closure(following(current, key))
            if not current:
                return False
        return bool(self.final[list(current)].any())

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


def arcs_leaving(arc_ptr: np.ndarray, states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(owner, arc int64 [n]): the arcs leaving ``states`` int [k], the states in their
    order and each one's arcs in order, where the arcs leaving state q are
    arc_ptr[q]..arc_ptr[q+1]-1 (arc_ptr int [Q+1]); ``owner`` indexes ``states``."""
    first, stop = arc_ptr[states], arc_ptr[states + 1]
    counts = stop - first
    owner = np.repeat(np.arange(len(states)), counts)
    return owner, np.repeat(first - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))


def reached(num_states: int, origin: np.ndarray, tail: np.ndarray, head: np.ndarray) -> np.ndarray:
    """bool [Q]: the states reached from the ``origin`` ones along arcs tail -> head,
    breadth first from the frontier (work in the states and arcs reached)."""
    by_tail = np.argsort(tail, kind="stable")
    tail_ptr = np.searchsorted(tail[by_tail], np.arange(num_states + 1))
    head = head[by_tail]
    seen = np.zeros(num_states, dtype=bool)
    frontier = np.unique(origin)
    seen[frontier] = True
    while len(frontier):
        following = head[arcs_leaving(tail_ptr, frontier)[1]]
        frontier = np.unique(following[~seen[following]])
        seen[frontier] = True
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
    pair_id = {left.start * R + right.start: 0}  # pair key (left state x R + right state) -> id
    src_parts, key_parts, dst_parts = [], [], []
    first, count = 0, 1
    while first < count:  # the states first..count-1, found last, in id order
        lefts, rights = pair_left[-1], pair_right[-1]
        owner, arc = arcs_leaving(left_ptr, lefts)  # arcs in left's order
        keys = left.arc_key[arc]
        wanted = rights[owner] * width + keys
        where = np.minimum(np.searchsorted(right_keys, wanted), len(right_keys) - 1)
        matched = right_keys[where] == wanted if len(right_keys) else np.zeros(len(wanted), dtype=bool)
        owner, arc, keys, where = owner[matched], arc[matched], keys[matched], where[matched]
        targets = left.arc_dst[arc] * R + right_dst[where]
        # the distinct targets in order of first appearance; new ones numbered in that order
        distinct, first_seen, inverse = np.unique(targets, return_index=True, return_inverse=True)
        by_appearance = np.argsort(first_seen)
        in_order = distinct[by_appearance]
        ids = np.fromiter((pair_id.get(key, -1) for key in in_order.tolist()), dtype=np.int64, count=len(in_order))
        fresh = ids < 0
        new_count = count + int(fresh.sum())
        budget.check_states(new_count, what, at_least=True)
        ids[fresh] = np.arange(count, new_count)
        pair_id.update(zip(in_order[fresh].tolist(), range(count, new_count)))
        target_id = np.empty(len(distinct), dtype=np.int64)
        target_id[by_appearance] = ids
        src_parts.append(first + owner)
        key_parts.append(keys)
        dst_parts.append(target_id[inverse.ravel()])
        pair_left.append(in_order[fresh] // R)
        pair_right.append(in_order[fresh] % R)
        first, count = count, new_count
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
