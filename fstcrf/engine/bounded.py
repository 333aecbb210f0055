"""Size-bounded determinisation and intersection of pynini acceptors, and their
conversion to :class:`~fstcrf.engine.acceptor.Acceptor` arrays.

This is the one engine module that imports pynini: the grammar compiler builds its
acceptors with it, and a topology given a pynini acceptor prepares it here
(epsilons removed, determinised within the state budget) before compiling the arrays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fstcrf.engine import budget
from fstcrf.engine.acceptor import NO_STATE, Acceptor
from fstcrf.engine.openfst import parse_acceptor, symbol_entries
from fstcrf.errors import TopologyError
from fstcrf.extras import require

if TYPE_CHECKING:
    import pynini
    import pywrapfst
else:
    pynini = require("pynini", "building a pynini acceptor")
    pywrapfst = require("pywrapfst", "building a pynini acceptor")

# determinisation first runs pynini with this state threshold: small results are
# complete at once, larger ones are counted by subset_states before pynini builds them
_PROBE_STATES = 4096
_CHUNK_CELLS = 1 << 21  # subset members expanded per step of subset_states


def acceptor_arcs(fsa: pynini.Fst) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(Q, src, key, dst int64 [A], initial int64 [1]): the states and arcs of an
    unweighted acceptor, read from its OpenFst bytes (:func:`as_arrays`; a loop over
    pynini's arcs took 2.3 s for 2.2 million)."""
    arrays = as_arrays(fsa)
    return arrays.num_states, arrays.arc_src, arrays.arc_key, arrays.arc_dst, np.array([arrays.start], dtype=np.int64)


def subset_states(
    num_states: int, src: np.ndarray, key: np.ndarray, dst: np.ndarray, initial: np.ndarray, limit: int
) -> int:
    """States of the determinised acceptor with ``num_states`` states, arcs src -> dst
    reading key (int [A], no epsilons) and initial states int [I]: the sets of
    states reachable by some label sequence, counted breadth-first until the
    count passes ``limit`` (so the result is min(true count, about limit + 1)).

    Each set is identified by a 64-bit hash (a sum of random per-state values),
    so two sets collide with probability 2^-64."""
    import scipy.sparse  # not on the tagging path (fstcrf.features.sparse_rows)

    # labels with the same arcs lead every set to the same set: keep one of each
    order = np.lexsort((dst, src, key))
    src, key, dst = src[order], key[order], dst[order]
    labels, first_arc = np.unique(key, return_index=True)
    arcs_by_label = np.split(np.stack([src, dst], axis=1), first_arc[1:])
    distinct = {arcs.tobytes(): label for label, arcs in zip(labels.tolist(), arcs_by_label)}
    kept = np.isin(key, list(distinct.values()))
    src, key, dst = src[kept], key[kept], dst[kept]
    labels, label_slot = np.unique(key, return_inverse=True)
    width = len(labels) * num_states
    # one sparse step: row q of `step` has a 1 in column (label slot, q') for each arc q -(label)-> q'
    step = scipy.sparse.csr_matrix(
        (np.ones(len(src), dtype=np.float32), (src, label_slot * num_states + dst)), shape=(num_states, width)
    )
    state_hash = np.random.default_rng(0).integers(0, 2**63, size=num_states, dtype=np.uint64) * np.uint64(
        2
    ) + np.uint64(1)
    out_degree = max(1.0, len(src) / max(1, num_states))
    first = np.unique(initial)
    queue = [
        scipy.sparse.csr_matrix(
            (np.ones(len(first), dtype=np.float32), (np.zeros(len(first), dtype=np.int64), first)),
            shape=(1, num_states),
        )
    ]
    seen = {int(state_hash[first].sum(dtype=np.uint64))}
    while queue and len(seen) <= limit:
        frontier = queue.pop(0)
        rows = max(1, int(_CHUNK_CELLS / (out_degree * max(1.0, frontier.nnz / frontier.shape[0]))))
        if frontier.shape[0] > rows:
            queue.insert(0, frontier[rows:])
            frontier = frontier[:rows]
        following = frontier @ step
        following.sort_indices()  # entries by (row, label, state): sets in order of their ids
        following = following.tocoo()
        label_of, member = np.divmod(following.col, num_states)
        subset = following.row.astype(np.int64) * len(labels) + label_of
        hashes = np.zeros(frontier.shape[0] * len(labels), dtype=np.uint64)
        np.add.at(hashes, subset, state_hash[member])
        alive = np.zeros(len(hashes), dtype=bool)
        alive[subset] = True
        candidates, where = np.unique(hashes[alive], return_index=True)
        is_new = np.array([h not in seen for h in candidates.tolist()], dtype=bool)
        if not is_new.any():
            continue
        seen.update(candidates[is_new].tolist())
        chosen = np.sort(np.flatnonzero(alive)[where[is_new]])
        new_row = np.full(len(hashes), -1, dtype=np.int64)
        new_row[chosen] = np.arange(len(chosen))
        row_of_entry = new_row[subset]
        entries = np.flatnonzero(row_of_entry >= 0)
        row_ptr = np.concatenate([[0], np.cumsum(np.bincount(row_of_entry[entries], minlength=len(chosen)))])
        queue.append(
            scipy.sparse.csr_matrix(
                (np.ones(len(entries), dtype=np.float32), member[entries], row_ptr), shape=(len(chosen), num_states)
            )
        )
    return len(seen)


def bounded_determinize(fsa: pynini.Fst, what: str) -> pynini.Fst:
    """``fsa`` (an epsilon-free unweighted acceptor) determinised, or BudgetError naming
    ``what`` if the result would have more than ``budget.max_states`` states, found by
    counting the subsets before building them."""
    if fsa.properties(pywrapfst.I_DETERMINISTIC, True):
        return fsa
    limit = budget.current("max_states")
    probe_states = min(_PROBE_STATES, limit + 1)
    probe = pynini.determinize(fsa, nstate=probe_states)
    if probe.num_states() < probe_states:
        return probe
    count = subset_states(*acceptor_arcs(fsa), limit=limit)
    budget.check_states(count, what, at_least=count > limit)
    return pynini.determinize(fsa)


def bounded_intersect(left: pynini.Fst, right: pynini.Fst, what: str, difference: bool = False) -> pynini.Fst:
    """``left & right`` (or ``left - right``) of two unweighted acceptors, the right one
    deterministic, or BudgetError naming ``what`` if the product would have more than
    max_states states: bounded by the product of the operands' sizes and, if that
    exceeds the budget, counted on the determinisation of their union (whose sets
    include every reachable pair of states)."""
    limit = budget.current("max_states")
    if left.num_states() * (right.num_states() + (1 if difference else 0)) > limit:
        left_states, left_src, left_key, left_dst, left_initial = acceptor_arcs(left)
        right_states, right_src, right_key, right_dst, right_initial = acceptor_arcs(right)
        count = subset_states(
            left_states + right_states,
            np.concatenate([left_src, right_src + left_states]),
            np.concatenate([left_key, right_key]),
            np.concatenate([left_dst, right_dst + left_states]),
            np.concatenate([left_initial, right_initial + left_states]),
            limit,
        )
        budget.check_states(count, what, at_least=count > limit)
    right = pynini.arcsort(right, "ilabel")
    return pynini.difference(left, right) if difference else pynini.intersect(left, right)


def symbol_table(labels) -> pywrapfst.SymbolTable:
    """A symbol table with ``<eps>`` = 0 and label i at key i + 1."""
    table = pywrapfst.SymbolTable()
    table.add_symbol("<eps>", 0)
    for key, label in enumerate(labels, start=1):
        table.add_symbol(label, key)
    return table


def as_arrays(fsa: pynini.Fst, where: str = "the acceptor") -> Acceptor:
    """The unweighted acceptor ``fsa`` as arrays, its state numbers and arc order kept
    (read from its OpenFst bytes); TopologyError naming ``where`` for a transducer or
    a weighted machine."""
    if fsa.fst_type() != "vector":
        fsa = pynini.Fst.from_pywrapfst(fsa)
    return parse_acceptor(fsa.write_to_string(), where, TopologyError)


def checked(fsa: pynini.Fst, name: str) -> pynini.Fst:
    """``fsa``, or TopologyError if it is not an unweighted acceptor with a start state."""
    if fsa.start() == pywrapfst.NO_STATE_ID or fsa.num_states() == 0:
        raise TopologyError(f"{name}: the acceptor has no start state (empty language)")
    if not fsa.properties(pywrapfst.ACCEPTOR, True):
        raise TopologyError(f"{name}: expected an acceptor, got a transducer (input and output labels differ)")
    if not fsa.properties(pywrapfst.UNWEIGHTED, True):
        raise TopologyError(f"{name}: topology acceptors must be unweighted")
    return fsa


def deterministic(fsa: pynini.Fst, name: str) -> Acceptor:
    """A checked acceptor without epsilons, determinised within the state budget, as arrays."""
    fsa = checked(fsa, name)
    if fsa.properties(pywrapfst.EPSILONS, True):
        fsa = pynini.rmepsilon(fsa)
    return as_arrays(bounded_determinize(fsa, f"{name}: the deterministic acceptor"))


def minimal(fsa: pynini.Fst, name: str) -> Acceptor:
    """The constraint ``fsa`` of ``name`` (an acceptor :func:`checked` already) without
    epsilons, determinised within the state budget and minimised by OpenFst, as arrays
    (a constraint's language is all that matters)."""
    return as_arrays(bounded_determinize(pynini.rmepsilon(fsa), f"{name}: the constraint acceptor").minimize())


def to_fst(acceptor: Acceptor) -> pynini.Fst:
    """``acceptor`` as a pynini acceptor with "standard" arcs: its states, start, finals
    and arcs in their order, its symbols as input and output symbol table."""
    entries = symbol_entries(acceptor)
    fsa = pynini.Fst()
    if acceptor.num_states:
        fsa.add_states(acceptor.num_states)  # add_states(0) would clear property bits
    if acceptor.start != NO_STATE:
        fsa.set_start(acceptor.start)
    for state in np.flatnonzero(acceptor.final).tolist():
        fsa.set_final(state)
    one = pywrapfst.Weight.one(fsa.weight_type())
    for src, key, dst in zip(acceptor.arc_src.tolist(), acceptor.arc_key.tolist(), acceptor.arc_dst.tolist()):
        fsa.add_arc(src, pywrapfst.Arc(key, key, one, dst))
    if acceptor.symbols is not None:
        table = pywrapfst.SymbolTable()
        for key, symbol in entries:
            table.add_symbol(symbol, key)
        fsa.set_input_symbols(table)
        fsa.set_output_symbols(table)
    return fsa
