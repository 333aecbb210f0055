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
from fstcrf.engine.openfst import parse_acceptor, symbol_entries, write_acceptor
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
# an acceptor to determinise this large, or whose result is, is determinised over one
# key of each set of keys with the same arcs (minimal_acceptor); smaller ones cost more
# to split (0.5 ms) than to determinise
_SHARED_KEYS_STATES = 256

#: An acceptor's (Q, src, key, dst int64 [A], initial int64 [I]): its states, its arcs
#: src -> dst reading key, and its initial states.
Arcs = tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def acceptor_arcs(fsa: pynini.Fst) -> Arcs:
    """(Q, src, key, dst int64 [A], initial int64 [1]): the states and arcs of an
    unweighted acceptor, read from its OpenFst bytes (:func:`as_arrays`; a loop over
    pynini's arcs took 2.3 s for 2.2 million)."""
    arrays = as_arrays(fsa)
    return arrays.num_states, arrays.arc_src, arrays.arc_key, arrays.arc_dst, np.array([arrays.start], dtype=np.int64)


def key_classes(src: np.ndarray, key: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(keys, representative int64 [K]): the distinct keys of the arcs src -> dst
    reading key (int [A]) in ascending order, and for each the smallest key whose
    arcs join the same pairs of states (such keys are read alike from every set
    of states, so a determinisation or a minimisation needs one of them)."""
    order = np.lexsort((dst, src, key))
    keys, first_arc = np.unique(key[order], return_index=True)
    pairs = np.split(np.stack([src[order], dst[order]], axis=1), first_arc[1:])
    first_with: dict[bytes, int] = {}
    representative = [first_with.setdefault(arcs.tobytes(), k) for k, arcs in zip(keys.tolist(), pairs)]
    return keys.astype(np.int64), np.array(representative, dtype=np.int64)


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
    keys, representative = key_classes(src, key, dst)
    kept = np.isin(key, keys[keys == representative])
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


def minimal_acceptor(fsa: pynini.Fst, what: str) -> pynini.Fst:
    """The minimal deterministic acceptor of the unweighted acceptor ``fsa``'s language,
    a new machine: epsilons removed, determinised within the state budget
    (:func:`bounded_determinize`, BudgetError naming ``what``), arcs sorted and
    minimised (:func:`_minimised`).  The grammar compiler and :func:`minimal` both
    come here.

    Keys whose arcs join the same pairs of states (all those of '.', say) are read
    alike from every state and set of states, so an acceptor to determinise whose
    result has _SHARED_KEYS_STATES states or more (or which has that many itself) is
    determinised and minimised over the smallest key of each such set
    (:func:`key_classes`), and its arcs are copied to the others after:
    ((.?){1000}){3} over the 22 CoNLL-2000 chunk labels needed 16 s of OpenFst's
    determinisation over all of them, 0.3 s over one."""
    # a new machine (minimised in place below); the compiler's parts come epsilon-free,
    # which rmepsilon would pass over again (0.09 s for 32,768 states, a copy 0.005 s)
    fsa = pynini.rmepsilon(fsa) if fsa.properties(pywrapfst.EPSILONS, True) else fsa.copy()
    if fsa.start() == pywrapfst.NO_STATE_ID or fsa.properties(pywrapfst.I_DETERMINISTIC, True):
        return _minimised(fsa)
    if fsa.num_states() < _SHARED_KEYS_STATES:  # a small result is complete at once, and within the budget
        probe_states = min(_SHARED_KEYS_STATES, budget.current("max_states") + 1)
        probe = pynini.determinize(fsa, nstate=probe_states)
        if probe.num_states() < probe_states:
            return _minimised(probe)
    arrays = as_arrays(fsa)
    keys, representative = key_classes(arrays.arc_src, arrays.arc_key, arrays.arc_dst)
    if np.array_equal(keys, representative):
        return _minimised(bounded_determinize(fsa, what))
    kept = np.isin(arrays.arc_key, keys[keys == representative])
    shared = Acceptor(
        arrays.num_states,
        arrays.start,
        arrays.final,
        arrays.arc_src[kept],
        arrays.arc_key[kept],
        arrays.arc_dst[kept],
    )
    return minimal_spread(shared, keys, representative, arrays.symbols, what)


def minimal_spread(shared: Acceptor, keys: np.ndarray, representative: np.ndarray, symbols, what: str) -> pynini.Fst:
    """The minimal deterministic acceptor of ``shared`` (whose arcs read representative
    keys only: :func:`key_classes`) determinised within the budget (BudgetError naming
    ``what``), its arcs sorted and minimised, then :func:`spread_keys`."""
    minimised = _minimised(bounded_determinize(from_arrays(shared), what))
    return from_arrays(spread_keys(as_arrays(minimised), keys, representative, symbols))


def _minimised(dfa: pynini.Fst) -> pynini.Fst:
    """The deterministic acceptor ``dfa``, changed in place: its arcs sorted, then
    minimised (OpenFst leaves an acceptor with unsorted arcs unminimised: two states
    for (.*)*, where a grammar's compiler sorted them and :func:`minimal` did not)."""
    return dfa.arcsort("ilabel").minimize()


def nullable_power(fsa: pynini.Fst, copies: int, what: str) -> pynini.Fst:
    """The minimal deterministic acceptor of ``copies`` copies of ``fsa`` in a row, for
    a minimal deterministic ``fsa`` that accepts the empty sequence (so x^n is also
    x{0,n}, from any m); BudgetError naming ``what`` once it passes max_states, or its
    table [states, states of fsa] passes max_edges cells.

    Where a copy holds a state of ``fsa`` after some labels, every later copy holds it
    too (empty copies before it), so a set of states of the copies, a state of the
    determinisation, is the first copy holding each state of ``fsa``: a vector of
    |fsa| entries, where the sets pynini determinised held up to copies x |fsa| states
    (((.?){1000}){10}, 10,001 states, took 18 s; over twice as many copies, 110 s).
    Keys are read one of each set with the same arcs (:func:`key_classes`)."""
    arrays = as_arrays(fsa)
    keys, representative = key_classes(arrays.arc_src, arrays.arc_key, arrays.arc_dst)
    read = keys[keys == representative]
    num_states = arrays.num_states
    budget.check_table((len(read), num_states), f"{what}, its table of the state each label leads to:")
    successor = np.full((len(read), num_states), -1, dtype=np.int64)
    kept = np.isin(arrays.arc_key, read)
    successor[np.searchsorted(read, arrays.arc_key[kept]), arrays.arc_src[kept]] = arrays.arc_dst[kept]
    final, start, absent = arrays.final, arrays.start, np.int16(copies)  # copies <= 1000 (MAX_REPEAT)

    def begun(first_copy: np.ndarray) -> np.ndarray:
        """``first_copy`` with the start of the copy after the first that holds a final
        state (no later one begins earlier)."""
        following = first_copy[final].min() + 1
        if following < absent:
            first_copy[start] = min(first_copy[start], following)
        return first_copy

    initial = np.full(num_states, absent, dtype=np.int16)
    initial[start] = 0
    found = {begun(initial).tobytes(): 0}
    finals, frontier = [bool(initial[final].min() < absent)], [initial]
    src, key, dst = [], [], []
    while frontier:
        first_copy = frontier.pop()
        state = found[first_copy.tobytes()]
        for column, label in enumerate(read.tolist()):
            targets = successor[column]
            moving = (targets >= 0) & (first_copy < absent)
            if not moving.any():
                continue
            following = np.full(num_states, absent, dtype=np.int16)
            np.minimum.at(following, targets[moving], first_copy[moving])
            target = found.setdefault(begun(following).tobytes(), len(found))
            if target == len(finals):
                budget.check_states(len(found), what, at_least=True)
                budget.check_edges(
                    len(found) * num_states,
                    f"{what}, its table of the first copy holding each state,",
                    "cells",
                    at_least=True,
                )
                finals.append(bool(following[final].min() < absent))
                frontier.append(following)
            src.append(state)
            key.append(label)
            dst.append(target)
    order = np.argsort(src, kind="stable")
    power = Acceptor(len(finals), 0, np.array(finals), np.array(src)[order], np.array(key)[order], np.array(dst)[order])
    return minimal_spread(power, keys, representative, arrays.symbols, what)


def spread_keys(fsa: Acceptor, keys: np.ndarray, representative: np.ndarray, symbols=None) -> Acceptor:
    """``fsa``, whose arcs read representative keys only, with each arc copied to every
    key it represents (keys and representative int [K], as :func:`key_classes` gives
    them), each state's arcs by key, and ``symbols`` as its symbol table."""
    by_class = np.argsort(representative, kind="stable")
    members, classes = keys[by_class], representative[by_class]
    first = np.searchsorted(classes, fsa.arc_key)
    size = np.searchsorted(classes, fsa.arc_key, side="right") - first
    member = np.repeat(first - np.cumsum(size) + size, size) + np.arange(int(size.sum()))
    src, key, dst = np.repeat(fsa.arc_src, size), members[member], np.repeat(fsa.arc_dst, size)
    order = np.lexsort((key, src))
    return Acceptor(fsa.num_states, fsa.start, fsa.final, src[order], key[order], dst[order], symbols)


def from_arrays(acceptor: Acceptor) -> pynini.Fst:
    """``acceptor`` as a pynini acceptor, read from the OpenFst bytes written for it
    (:func:`fstcrf.engine.openfst.write_acceptor`; :func:`to_fst` adds its arcs one by one)."""
    return pynini.Fst.read_from_string(write_acceptor(acceptor))


def minimal_arcs(fsa: pynini.Fst, is_minimal: bool) -> Arcs | None:
    """The :data:`Arcs` of an acceptor whose determinisation from its initial states
    is the minimal deterministic acceptor of the epsilon-free ``fsa``'s language:
    ``fsa`` itself if ``is_minimal`` (and trim), else the reverse of a deterministic
    acceptor of the reversed language (Brzozowski), or None if that one has
    _PROBE_STATES states or more."""
    if fsa.start() == pywrapfst.NO_STATE_ID:
        none = np.zeros(0, dtype=np.int64)
        return 0, none, none, none, none
    trim = pywrapfst.ACCESSIBLE | pywrapfst.COACCESSIBLE
    if is_minimal and fsa.properties(trim, True) == trim:
        return acceptor_arcs(fsa)
    backwards = pynini.determinize(pynini.rmepsilon(pynini.reverse(fsa)), nstate=_PROBE_STATES)
    if backwards.num_states() >= _PROBE_STATES:
        return None
    arrays = as_arrays(backwards)
    return arrays.num_states, arrays.arc_dst, arrays.arc_key, arrays.arc_src, np.flatnonzero(arrays.final)


def determinised_states(arcs: Arcs, limit: int) -> int:
    """The states of the determinisation of an acceptor given as its :data:`Arcs`,
    counted by :func:`subset_states` until the count passes ``limit`` (none without
    states)."""
    num_states, src, key, dst, initial = arcs
    return subset_states(num_states, src, key, dst, initial, limit) if num_states else 0


def paired_states(left: Arcs, right: Arcs, limit: int) -> int:
    """The pairs of sets of states that label sequences reach in two acceptors, one
    set possibly empty but not both, each given as its :data:`Arcs`: the sets of
    states of their union's determinisation, counted by :func:`subset_states` until
    the count passes ``limit``.  For two deterministic acceptors, the pairs of states
    of their product and those where one has no state left (what
    :func:`bounded_intersect` counts).  On the :func:`minimal_arcs` of two languages,
    at most one more than that count on the minimal acceptors of the languages or of
    their complements (a complement has its operand's states, and one for what the
    operand rejects, less one from where the operand accepts everything)."""
    left_states, left_src, left_key, left_dst, left_initial = left
    right_states, right_src, right_key, right_dst, right_initial = right
    return subset_states(
        left_states + right_states,
        np.concatenate([left_src, right_src + left_states]),
        np.concatenate([left_key, right_key]),
        np.concatenate([left_dst, right_dst + left_states]),
        np.concatenate([left_initial, right_initial + left_states]),
        limit,
    )


def bounded_intersect(left: pynini.Fst, right: pynini.Fst, what: str, difference: bool = False) -> pynini.Fst:
    """``left & right`` (or ``left - right``) of two unweighted acceptors, the right one
    deterministic, or BudgetError naming ``what`` if the product would have more than
    max_states states: bounded by the product of the operands' sizes and, if that
    exceeds the budget, counted on the determinisation of their union (whose sets
    include every reachable pair of states)."""
    limit = budget.current("max_states")
    if left.num_states() * (right.num_states() + (1 if difference else 0)) > limit:
        count = paired_states(acceptor_arcs(left), acceptor_arcs(right), limit)
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
    """The constraint ``fsa`` of ``name`` (an acceptor :func:`checked` already) as its
    :func:`minimal_acceptor`, as arrays (a constraint's language is all that matters)."""
    return as_arrays(minimal_acceptor(fsa, f"{name}: the constraint acceptor"))


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
