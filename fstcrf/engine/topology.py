"""Label topologies: deterministic acceptors over label symbols, compiled to dense state spaces.

A topology says which label sequences a model may output and what history a
model state remembers.  It is written as a deterministic pynini acceptor whose
arcs carry label symbols; each *model state* is a pair (label read, acceptor
state reached), so a label sequence determines its state sequence and no
sequence is counted twice.  The compiled form is what the C kernel consumes:

    S  states, each with a label index             state_label  int32 [S]
    E  allowed transitions, destination-major     edge_src, edge_dst  int32 [E]
    start / final states                           start, final  bool [S]

Builders (free functions returning new topologies, in the OpenFst style):
:func:`first_order`, :func:`iob2`, :func:`bioes`, :func:`kth_order`,
:func:`second_order` and :func:`intersect` with any user acceptor.
"""

from __future__ import annotations

from collections import Counter
from functools import cached_property
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from fstcrf.engine import budget
from fstcrf.engine.acceptor import NO_STATE, Acceptor, arcs_leaving, connect, from_arcs, is_fst
from fstcrf.engine.acceptor import intersect as intersect_acceptors
from fstcrf.errors import InfeasibleError, LabelError, TopologyError

if TYPE_CHECKING:
    import pynini
    import pywrapfst

EPSILON = "<eps>"


def symbol_table(labels: Sequence[str]) -> pywrapfst.SymbolTable:
    """The pywrapfst symbol table with ``<eps>`` = 0 and label i at key i + 1 (needs pynini)."""
    from fstcrf.engine import bounded

    return bounded.symbol_table(labels)


def check_labels(labels: Iterable[str]) -> tuple[str, ...]:
    labels = tuple(labels)
    if not labels:
        raise TopologyError("a topology needs at least one label")
    for label in labels:
        if not isinstance(label, str) or not label or label == EPSILON or any(c.isspace() for c in label):
            raise LabelError(
                f"invalid label {label!r}: labels are non-empty strings without whitespace, not {EPSILON!r}"
            )
    if len(set(labels)) < len(labels):
        counts = Counter(labels)
        duplicates = sorted(label for label, count in counts.items() if count > 1)
        raise LabelError(f"duplicate labels: {shown_labels(duplicates)}")
    return labels


def shown_labels(labels: Sequence[str]) -> str:
    """The labels as an error message shows them: the first 60, then their count."""
    shown = ", ".join(labels[:60])
    return shown + (f", ... ({len(labels)} labels)" if len(labels) > 60 else "")


class Topology:
    """A compiled label topology.

    Attributes:
        labels: tuple of L label strings; label i has symbol key i + 1.
        symbols: the pynini symbol table of the labels.
        state_label: int32 [S], label index of each state.
        state_names: tuple of S readable state names.
        edge_src, edge_dst: int32 [E], allowed transitions sorted by (dst, src) (edges
            given in that order are kept as they are, not sorted again).
        start, final: bool [S], states a path may start / end in.
        in_ptr: int32 [S+1], edges entering state j are in_ptr[j]..in_ptr[j+1]-1.
        out_ptr: int32 [S+1]; out_dst, out_edge: int32 [E], the same edges by source.
        feasibility: the :class:`Reachability` of its states: which lengths its
            label sequences can have.
    """

    def __init__(
        self,
        labels: Sequence[str],
        state_label,
        edge_src,
        edge_dst,
        start,
        final,
        state_names: Sequence[str] | None = None,
        name: str = "custom",
    ):
        self.labels = check_labels(labels)
        self.name = name
        state_label = np.asarray(state_label, dtype=np.int64)
        num_states = len(state_label)
        if state_label.ndim != 1 or num_states == 0:
            raise TopologyError("a topology needs at least one state")
        if state_label.min() < 0 or state_label.max() >= len(self.labels):
            raise LabelError(f"state labels must lie in [0, {len(self.labels)})")
        src = np.asarray(edge_src, dtype=np.int64).ravel()
        dst = np.asarray(edge_dst, dtype=np.int64).ravel()
        if src.shape != dst.shape:
            raise TopologyError("edge_src and edge_dst must have the same length")
        if len(src) and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= num_states):
            raise LabelError(f"edge endpoints must lie in [0, {num_states})")
        start = np.asarray(start, dtype=bool).ravel()
        final = np.asarray(final, dtype=bool).ravel()
        if start.shape != (num_states,) or final.shape != (num_states,):
            raise TopologyError(f"start and final masks must have shape ({num_states},)")
        pairs = dst * num_states + src
        if not np.all(pairs[1:] > pairs[:-1]):  # edges not already sorted by (dst, src), or repeated
            by_pair = np.argsort(pairs)
            src, dst, pairs = src[by_pair], dst[by_pair], pairs[by_pair]
            if np.any(pairs[1:] == pairs[:-1]):
                raise TopologyError("duplicate edges")
        self.state_label = state_label.astype(np.int32)
        self.edge_dst = dst.astype(np.int32)
        self.edge_src = src.astype(np.int32)
        self.start = start
        self.final = final
        if state_names is None:
            state_names = [self.labels[i] for i in self.state_label]
            if len(set(state_names)) < num_states:
                state_names = [f"{n}#{i}" for i, n in enumerate(state_names)]
        self.state_names = tuple(state_names)
        state_bounds = np.arange(num_states + 1, dtype=np.int32)  # of the edges' dtype: searched without a copy
        self.in_ptr = np.searchsorted(self.edge_dst, state_bounds).astype(np.int32)
        by_source = np.argsort(self.edge_src, kind="stable")  # by (src, dst): the edges are by (dst, src)
        self.out_edge = by_source.astype(np.int32)
        self.out_dst = self.edge_dst[by_source]
        self.out_ptr = np.searchsorted(self.edge_src[by_source], state_bounds).astype(np.int32)
        self.feasibility = Reachability(self.start, self.successors, self.final, f"topology {self.name!r}")

    def __setstate__(self, state: dict) -> None:
        """Unpickle, also a Topology pickled before its lengths' feasibility was kept
        apart (its sets of reachable states are found again)."""
        stale = ("_reachable", "_cycle_start", "_cycle_end", "_seen", "_feasible")
        self.__dict__.update({key: value for key, value in state.items() if key not in stale})
        if "feasibility" not in state:
            self.feasibility = Reachability(self.start, self.successors, self.final, f"topology {self.name!r}")

    # -- sizes and symbols ---------------------------------------------------
    @property
    def num_states(self) -> int:
        return len(self.state_label)

    @property
    def num_edges(self) -> int:
        return len(self.edge_src)

    @property
    def num_labels(self) -> int:
        return len(self.labels)

    @cached_property
    def edge_ids(self) -> np.ndarray:
        """int64 [S, S]: the edge id of each allowed (source, destination) pair, -1 elsewhere."""
        budget.check_table((self.num_states, self.num_states), f"the edge ids of topology {self.name!r}:")
        table = np.full((self.num_states, self.num_states), -1, dtype=np.int64)
        table[self.edge_src, self.edge_dst] = np.arange(self.num_edges)
        return table

    @cached_property
    def open_start(self) -> np.ndarray:
        """float [S], read-only: 0 where a path may start, -inf elsewhere (the start
        scores of potentials given none)."""
        return _read_only(np.where(self.start, 0.0, -np.inf))

    @cached_property
    def open_final(self) -> np.ndarray:
        """float [S], read-only: 0 where a path may end, -inf elsewhere."""
        return _read_only(np.where(self.final, 0.0, -np.inf))

    @cached_property
    def state_label_names(self) -> tuple[str, ...]:
        """The label of each state, S strings: ``labels[state_label[s]]``."""
        return tuple(self.labels[label] for label in self.state_label.tolist())

    @cached_property
    def no_transitions(self) -> np.ndarray:
        """float [E], read-only: a score of 0 on every edge."""
        return _read_only(np.zeros(self.num_edges))

    @cached_property
    def symbols(self) -> pywrapfst.SymbolTable:
        return symbol_table(self.labels)

    @cached_property
    def state_symbols(self) -> pywrapfst.SymbolTable:
        """A symbol table with state i at key i + 1 (for lattices over states)."""
        return symbol_table(self.state_names)

    def label_index(self, label: str) -> int:
        """The index of ``label`` in ``labels`` (LabelError for a label the topology lacks)."""
        try:
            return self.labels.index(label)
        except ValueError:
            raise LabelError(f"unknown label {label!r}; the topology knows {', '.join(self.labels)}") from None

    def density(self) -> float:
        """Fraction of the S*S state pairs that are allowed transitions."""
        return self.num_edges / float(self.num_states**2)

    def __repr__(self) -> str:
        return (
            f"Topology({self.name!r}, labels={len(self.labels)}, states={self.num_states}, "
            f"edges={self.num_edges}, density={self.density():.3f})"
        )

    # -- the acceptor view ---------------------------------------------------
    @cached_property
    def arcs(self) -> Acceptor:
        """The topology as a deterministic acceptor over label keys (arrays).

        Its state 0 is initial and state s + 1 is model state s; reading label
        ``state_label[s]`` from a predecessor of ``s`` enters ``s``."""
        keys = self.state_label.astype(np.int64) + 1
        starts = np.flatnonzero(self.start)
        by_source = self.out_edge  # each state's edges in edge order (by destination)
        return Acceptor(
            self.num_states + 1,
            0,
            np.concatenate([[False], self.final]),
            np.concatenate([np.zeros(len(starts), dtype=np.int64), self.edge_src[by_source].astype(np.int64) + 1]),
            np.concatenate([keys[starts], keys[self.out_dst]]),
            np.concatenate([starts + 1, self.out_dst.astype(np.int64) + 1]),
            {0: EPSILON, **{key: label for key, label in enumerate(self.labels, start=1)}},
        )

    @cached_property
    def acceptor(self) -> pynini.Fst:
        """The topology as a deterministic pynini acceptor (:attr:`arcs`; needs pynini)."""
        from fstcrf.engine import bounded

        return bounded.to_fst(self.arcs)

    # -- feasibility ---------------------------------------------------------
    def successors(self, states: np.ndarray) -> np.ndarray:
        """bool [..., S]: the states an edge leads to from the states ``states`` bool
        [..., S] (each row apart)."""
        states = np.asarray(states, dtype=bool)
        rows = states.reshape(-1, self.num_states)
        if len(rows) == 1:  # one set: the edges leaving its states, where they are few
            leaving = arcs_leaving(self.out_ptr, np.flatnonzero(rows[0]))[1]
            if 4 * len(leaving) < self.num_edges:
                following = np.zeros(self.num_states, dtype=bool)
                following[self.out_dst[leaving]] = True
                return following.reshape(states.shape)
        entered = np.flatnonzero(np.diff(self.in_ptr) > 0)
        following = np.zeros_like(rows)
        block = max(1, (1 << 22) // max(self.num_edges, 1))  # rows x edges at most 4M at a time
        for first in range(0, len(rows), block):
            gathered = rows[first : first + block, self.edge_src]  # [rows, E]
            if len(entered):
                following[first : first + block, entered] = np.logical_or.reduceat(
                    gathered, self.in_ptr[entered], axis=1
                )
        return following.reshape(states.shape)

    def reachable_at(self, length: int) -> np.ndarray:
        """bool [S]: states that some allowed prefix of ``length`` labels ends in."""
        return self.feasibility.reachable_at(length)

    def is_feasible(self, length: int) -> bool:
        """Whether some allowed label sequence has exactly ``length`` labels."""
        return self.feasibility.is_feasible(length)

    def check_lengths(self, lengths: Iterable[int]) -> None:
        """Raise InfeasibleError naming the sentences no allowed sequence fits."""
        self.feasibility.check_lengths(lengths)


class Reachability:
    """Which lengths a state space's label sequences can have: the sets R_t of states
    that some allowed prefix of t labels ends in (R_1 = ``start``, R_t+1 =
    ``step(R_t)``), grown on demand until they repeat, after which they are periodic,
    so that any length up to 10^6 and beyond is answered in a few steps.

    ``start``, ``final``: bool [S]; ``step``: bool [S] -> bool [S]; ``name`` (e.g.
    "topology 'iob2'") is what errors call the state space."""

    def __init__(self, start: np.ndarray, step: Callable[[np.ndarray], np.ndarray], final: np.ndarray, name: str):
        self.start, self.step, self.final, self.name = start, step, final, name
        self._reachable: list[bytes] = []  # R_t, a bit a state (np.packbits): 4,096 sets of 200,000 states in 100 MB
        self._seen: dict[bytes, int] = {}
        self._cycle: tuple[int, int] | None = None  # (first, end) of the sets that repeat
        self._feasible: dict[int, bool] = {}

    def _extend(self, length: int) -> None:
        """Grow the sets R_t to ``length`` or until they repeat."""
        if not self._reachable:
            self._reachable.append(np.packbits(self.start).tobytes())
            self._seen[self._reachable[0]] = 0
        last = self._unpacked(self._reachable[-1])
        while self._cycle is None and len(self._reachable) < length:
            last = self.step(last)
            key = np.packbits(last).tobytes()
            if key in self._seen:
                self._cycle = (self._seen[key], len(self._reachable))
                return
            self._seen[key] = len(self._reachable)
            self._reachable.append(key)

    def __setstate__(self, state: dict) -> None:
        """Unpickle; the sets of a release that kept them unpacked are found again."""
        self.__dict__.update(state)
        if self._reachable and not isinstance(self._reachable[0], bytes):
            self._reachable, self._seen, self._cycle = [], {}, None

    def _unpacked(self, packed: bytes) -> np.ndarray:
        """bool [S]: a set of states kept a bit a state."""
        return np.unpackbits(np.frombuffer(packed, dtype=np.uint8), count=len(self.start)).astype(bool)

    def reachable_at(self, length: int) -> np.ndarray:
        """bool [S]: R_length."""
        if length < 1:
            raise InfeasibleError("sequences have at least one token")
        self._extend(length)
        index = length - 1
        if self._cycle is not None and index >= len(self._reachable):
            first, end = self._cycle
            index = first + (index - first) % (end - first)
        return self._unpacked(self._reachable[index])

    def is_feasible(self, length: int) -> bool:
        """Whether some allowed label sequence has exactly ``length`` labels."""
        feasible = self._feasible.get(length)
        if feasible is None:
            feasible = self._feasible[length] = bool(np.any(self.reachable_at(length) & self.final))
        return feasible

    @cached_property
    def every_length_feasible(self) -> bool:
        """Whether an allowed label sequence has each length from 1 on (found from the
        reachable sets once they repeat; False when they have not within
        FEASIBILITY_STEPS tokens, and lengths are then checked one by one)."""
        self._extend(FEASIBILITY_STEPS)
        final = np.packbits(self.final)
        return self._cycle is not None and all(
            np.any(np.frombuffer(reached, dtype=np.uint8) & final) for reached in self._reachable
        )

    def check_lengths(self, lengths: Iterable[int]) -> None:
        """Raise InfeasibleError naming the sentences no allowed sequence fits."""
        lengths = np.asarray(list(lengths) if not isinstance(lengths, np.ndarray) else lengths)
        if self.every_length_feasible and min(lengths.tolist(), default=1) >= 1:
            return
        bad_lengths = [n for n in sorted(set(lengths.tolist())) if not self.is_feasible(int(n))]
        if bad_lengths:
            sentences = np.flatnonzero(np.isin(lengths, bad_lengths))
            shown = ", ".join(str(i) for i in sentences[:10]) + (" ..." if len(sentences) > 10 else "")
            raise InfeasibleError(
                f"{self.name} allows no label sequence of length "
                f"{', '.join(map(str, bad_lengths))} (sentences {shown}); "
                "relax the topology or grammar, or drop those sentences"
            )


#: Tokens :attr:`Reachability.every_length_feasible` follows the reachable sets for.
FEASIBILITY_STEPS = 4096


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def from_acceptor(acceptor: Acceptor | pynini.Fst, labels: Sequence[str], name: str = "acceptor") -> Topology:
    """Compile an acceptor over label symbols into a topology.

    The acceptor's arcs carry label keys (label i = key i + 1, as in
    :func:`symbol_table`); weights must be trivial.  A pynini acceptor that is
    non-deterministic or has epsilons is determinised first; an
    :class:`~fstcrf.engine.acceptor.Acceptor` must be deterministic.  Each model
    state is a distinct (label, destination) pair of the trimmed acceptor."""
    labels = check_labels(labels)
    if is_fst(acceptor):
        from fstcrf.engine import bounded

        fsa = bounded.deterministic(acceptor, name)
    elif isinstance(acceptor, Acceptor):
        fsa = acceptor
        if fsa.start == NO_STATE:
            raise TopologyError(f"{name}: the acceptor has no start state (empty language)")
        if not fsa.is_deterministic():
            raise TopologyError(f"{name}: the acceptor must be deterministic and free of epsilons")
    else:
        raise TopologyError(f"{name}: expected an Acceptor or a pynini.Fst, got {type(acceptor).__name__}")
    fsa = connect(fsa)
    if fsa.num_arcs == 0:
        raise TopologyError(f"{name}: the acceptor accepts no non-empty label sequence")
    arc_src, arc_key, arc_dst = fsa.arc_src, fsa.arc_key, fsa.arc_dst
    if arc_key.max() > len(labels):
        raise LabelError(f"{name}: arc label key {int(arc_key.max())} is beyond the {len(labels)} labels")
    # model states = distinct (label, destination) pairs, numbered label-major
    num_fsa_states = fsa.num_states
    pair_ids, arc_state = np.unique(arc_key * num_fsa_states + arc_dst, return_inverse=True)
    arc_state = arc_state.ravel()
    budget.check_states(len(pair_ids), f"{name}: the topology")
    state_dst = pair_ids % num_fsa_states
    state_label = pair_ids // num_fsa_states - 1
    # an arc q -> (label, q2) is entered from every model state whose destination is q
    order = np.argsort(state_dst, kind="stable")
    lo = np.searchsorted(state_dst[order], arc_src, side="left")
    hi = np.searchsorted(state_dst[order], arc_src, side="right")
    counts = hi - lo
    budget.check_edges(counts.sum(), f"{name}: the topology ({len(pair_ids):,} states)")
    edge_dst = np.repeat(arc_state, counts)
    within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    edge_src = order[np.repeat(lo, counts) + within]
    start = np.zeros(len(pair_ids), dtype=bool)
    start[arc_state[arc_src == fsa.start]] = True
    final = fsa.final[state_dst]
    topology = Topology(labels, state_label, edge_src, edge_dst, start, final, name=name)
    if not np.any(final):
        raise TopologyError(f"{name}: no state is final (empty language)")
    return topology


def _history_acceptor(labels: Sequence[str], order: int, pad: str | None) -> Acceptor:
    """Acceptor whose state is the last ``order`` labels (fewer at the start, or
    pad-filled when ``pad`` is given); states are numbered as they are found, depth
    first from the start.  The caller has budgeted its states and arcs."""
    keys = {label: i + 1 for i, label in enumerate(labels)}
    initial_history = (pad,) * (order - 1) if pad is not None else ()
    state_of: dict[tuple[str | None, ...], int] = {initial_history: 0}
    agenda = [initial_history]
    arcs: list[tuple[int, int, int]] = []
    while agenda:
        history = agenda.pop()
        for label in labels:
            following = (history + (label,))[-order:]
            if following not in state_of:
                state_of[following] = len(state_of)
                agenda.append(following)
            arcs.append((state_of[history], keys[label], state_of[following]))
    final = np.ones(len(state_of), dtype=bool)
    final[0] = False  # every state but the start is entered by a label
    return from_arcs(len(state_of), 0, final, arcs)


#: What a tagging scheme's rule says of a label after another (or at the start):
#: it may never follow, always follow, or follow only a label of its own chunk type.
NEVER, ALWAYS, SAME_TYPE = 0, 1, 2

#: A rule: (the previous label's prefix, None at the start; the label's prefix) ->
#: NEVER, ALWAYS or SAME_TYPE.  Prefixes are "O", "B", "I", "E", "S".
Rule = Callable[[str | None, str], int]


def _label_parts(labels: Sequence[str]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(prefix int [L], type int [L] (-1 for O), the distinct prefixes) of chunk labels."""
    parts = [chunk_type(label) for label in labels]
    prefixes = sorted({prefix for prefix, _ in parts})
    types = {kind: i for i, kind in enumerate(sorted({kind for _, kind in parts if kind is not None}))}
    prefix_of = np.array([prefixes.index(prefix) for prefix, _ in parts], dtype=np.int64)
    type_of = np.array([-1 if kind is None else types[kind] for _, kind in parts], dtype=np.int64)
    return prefix_of, type_of, prefixes


def _pair_count(labels: Sequence[str], rule: Rule) -> int:
    """How many (previous label, label) pairs ``rule`` allows, counted by prefix and
    type without listing the pairs."""
    prefix_of, type_of, prefixes = _label_parts(labels)
    by_type = np.zeros((len(prefixes), int(type_of.max(initial=-1)) + 2), dtype=np.int64)  # last column: O
    np.add.at(by_type, (prefix_of, type_of), 1)
    per_prefix = by_type.sum(axis=1)
    count = 0
    for before, previous in enumerate(prefixes):
        for after, prefix in enumerate(prefixes):
            verdict = rule(previous, prefix)
            if verdict == ALWAYS:
                count += int(per_prefix[before] * per_prefix[after])
            elif verdict == SAME_TYPE:
                count += int(by_type[before, :-1] @ by_type[after, :-1])
    return count


def _pair_acceptor(labels: Sequence[str], rule: Rule) -> Acceptor:
    """The first-order acceptor of ``labels``: state 0 is the start, state i + 1 is
    reached by reading label i, and ``rule`` (a tagging scheme's) says which label may
    follow which.  Budgeted (max_edges) before any pair is listed, then built with
    numpy."""
    L = len(labels)
    budget.check_edges(_pair_count(labels, rule), f"the first-order topology over {L:,} labels")
    prefix_of, type_of, prefixes = _label_parts(labels)
    verdicts = np.array([[rule(previous, prefix) for prefix in prefixes] for previous in prefixes], dtype=np.int8)
    pair = verdicts[prefix_of[:, None], prefix_of[None, :]]
    same_type = (type_of[:, None] == type_of[None, :]) & (type_of[:, None] >= 0)
    allowed = (pair == ALWAYS) | ((pair == SAME_TYPE) & same_type)
    first = np.array([rule(None, prefix) for prefix in prefixes])[prefix_of] == ALWAYS
    source, label = np.nonzero(allowed)  # by source, each source's labels in order
    starts = np.flatnonzero(first)
    arc_src = np.concatenate([np.zeros(len(starts), dtype=np.int64), source + 1])
    arc_key = np.concatenate([starts, label]) + 1
    final = np.ones(L + 1, dtype=bool)
    final[0] = False  # every state but the start is entered by a label
    return Acceptor(L + 1, 0, final, arc_src, arc_key, arc_key)


def first_order(labels: Sequence[str]) -> Topology:
    """Every label may follow every label: one state per label."""
    return _every_pair(check_labels(labels), "first-order")


def _every_pair(labels: tuple[str, ...], name: str) -> Topology:
    """The topology in which every label may follow every label, state i being label
    i, built straight from its arrays: the L^2 edges are made in (dst, src) order
    (what :func:`from_acceptor` of the complete acceptor gives, without the work)."""
    L = len(labels)
    budget.check_edges(L * L, f"the first-order topology over {L:,} labels")
    budget.check_states(L, f"{name}: the topology")
    each = np.arange(L)
    start, final = np.ones(L, dtype=bool), np.ones(L, dtype=bool)
    return Topology(labels, each, np.tile(each, L), np.repeat(each, L), start, final, name=name)


def kth_order(labels: Sequence[str], order: int, pad: str | None = None) -> Topology:
    """States remember the last ``order`` labels.

    With ``pad`` the history before the first token is ``order - 1`` copies of
    ``pad`` (Sha & Pereira's c_0 = O), so every state is a full ``order``-tuple;
    without it the first states remember shorter prefixes."""
    labels = check_labels(labels)
    if not isinstance(order, int) or order < 1:
        raise TopologyError(f"order must be a positive integer, got {order!r}")
    if pad is not None and pad not in labels:
        raise LabelError(f"pad label {pad!r} is not among the labels")
    # a state per history: L^order full ones, and without a pad the shorter ones first
    histories = len(labels) ** order if pad is not None else sum(len(labels) ** n for n in range(1, order + 1))
    what = f"the order-{order} topology over {len(labels):,} labels"
    budget.check_states(histories, what)
    budget.check_edges(histories * len(labels), what)  # a history's arcs: one per label
    if order == 1:
        return _every_pair(labels, "order-1")
    topology = from_acceptor(_history_acceptor(labels, order, pad), labels, name=f"order-{order}")
    return _rename_by_history(topology, order, pad)


def _rename_by_history(topology: Topology, order: int, pad: str | None) -> Topology:
    """Name each state of a history topology by the labels it remembers."""
    if order == 1:
        return topology
    # walk back along the unique predecessor histories to name the states
    names = []
    for s in range(topology.num_states):
        history = [topology.labels[topology.state_label[s]]]
        current = s
        while len(history) < order:
            sources = topology.edge_src[topology.in_ptr[current] : topology.in_ptr[current + 1]]
            if len(sources) == 0:
                if pad is not None:
                    history += [pad] * (order - len(history))
                break
            current = sources[0]
            history.append(topology.labels[topology.state_label[current]])
        names.append(" ".join(reversed(history)))
    if len(set(names)) == len(names):
        topology.state_names = tuple(names)
    return topology


def iob2_labels(types: Sequence[str]) -> tuple[str, ...]:
    """O, then B-t and I-t for each chunk type t."""
    return ("O",) + tuple(f"{prefix}-{t}" for t in types for prefix in ("B", "I"))


def _check_types(types: Sequence[str]) -> tuple[str, ...]:
    types = tuple(types)
    if not types:
        raise TopologyError("at least one chunk type is required")
    for t in types:
        if not isinstance(t, str) or not t or any(c.isspace() for c in t):
            raise LabelError(f"invalid chunk type {t!r}")
    return types


def chunk_type(label: str) -> tuple[str, str | None]:
    """Split 'B-NP' into ('B', 'NP'); 'O' gives ('O', None)."""
    prefix, _, kind = label.partition("-")
    return prefix, (kind or None)


def iob2(types: Sequence[str]) -> Topology:
    """IOB2 validity: I-t only after B-t or I-t."""
    labels = iob2_labels(_check_types(types))
    return from_acceptor(_pair_acceptor(labels, iob2_rule), labels, name="iob2")


def iob1_rule(previous: str | None, prefix: str) -> int:
    """IOB1: B-t only right after a chunk of type t (I-t or B-t), to split two chunks."""
    if prefix != "B":
        return ALWAYS
    return SAME_TYPE if previous in ("B", "I") else NEVER


def iob2_rule(previous: str | None, prefix: str) -> int:
    """IOB2: I-t only after B-t or I-t."""
    if prefix != "I":
        return ALWAYS
    return NEVER if previous is None else SAME_TYPE


def bioes_rule(previous: str | None, prefix: str) -> int:
    """BIOES: inside a segment (after B-t or I-t) only I-t or E-t; elsewhere O, B-t or S-t."""
    if previous in ("B", "I"):
        return SAME_TYPE if prefix in ("I", "E") else NEVER
    return ALWAYS if prefix in ("O", "B", "S") else NEVER


#: Each tagging scheme: the prefixes its labels carry besides O, and which label may follow which.
SCHEME_RULES: dict[str, tuple[tuple[str, ...], Rule]] = {
    "iob1": (("B", "I"), iob1_rule),
    "iob2": (("B", "I"), iob2_rule),
    "bioes": (("B", "I", "E", "S"), bioes_rule),
}


def with_scheme(topology: Topology, scheme: str) -> Topology:
    """The topology restricted to the label sequences valid in a tagging scheme
    (``"iob1"``, ``"iob2"`` or ``"bioes"``), whatever the order of its labels; its
    labels must be O and prefix-type labels of that scheme (``B-PER``, ...)."""
    if scheme not in SCHEME_RULES:
        raise TopologyError(f"unknown scheme {scheme!r}; choose one of {', '.join(SCHEME_RULES)}")
    prefixes, rule = SCHEME_RULES[scheme]
    for label in topology.labels:
        prefix, kind = chunk_type(label)
        if label != "O" and (prefix not in prefixes or not kind):
            raise LabelError(
                f"label {label!r} is not a {scheme} label: expected O or one of "
                f"{', '.join(p + '-<type>' for p in prefixes)}"
            )
    validity = _pair_acceptor(topology.labels, rule)
    restricted = intersect(topology, validity, name=f"{topology.name}&{scheme}")
    return _ending_outside_segments(restricted) if scheme == "bioes" else restricted


def bioes_labels(types: Sequence[str]) -> tuple[str, ...]:
    return ("O",) + tuple(f"{prefix}-{t}" for t in types for prefix in ("B", "I", "E", "S"))


def bioes(types: Sequence[str]) -> Topology:
    """BIOES validity: B-t (I-t)* E-t or S-t segments separated by O."""
    labels = bioes_labels(_check_types(types))
    return _ending_outside_segments(from_acceptor(_pair_acceptor(labels, bioes_rule), labels, name="bioes"))


def _ending_outside_segments(topology: Topology) -> Topology:
    """The topology with no final state whose label opens or continues a BIOES
    segment (B-t, I-t): a sentence may not end inside one."""
    ends_inside = np.isin([chunk_type(topology.labels[i])[0] for i in topology.state_label], ["B", "I"])
    return Topology(
        topology.labels,
        topology.state_label,
        topology.edge_src,
        topology.edge_dst,
        topology.start,
        topology.final & ~ends_inside,
        state_names=topology.state_names,
        name=topology.name,
    )


def second_order(tags: Sequence[str], outside: str = "O") -> Topology:
    """Sha & Pereira's second-order chunk topology.

    A state is the pair (c_{i-1}, c_i) of consecutive chunk tags with c_0 =
    ``outside``; pairs must overlap consistently, and a pair ending in an I tag
    after ``outside`` is impossible.  ``tags`` are the chunk tags themselves,
    e.g. ``iob2_labels(["NP"])`` or all 23 CoNLL-2000 tags."""
    tags = check_labels(tags)
    if outside not in tags:
        raise LabelError(f"the outside tag {outside!r} is not among the tags")
    history = kth_order(tags, 2, pad=outside)
    # state 0: after the outside tag (or at the start), state 1: elsewhere; I tags only from 1
    after_outside, elsewhere = 0, 1
    arcs = []
    for state in (after_outside, elsewhere):
        for tag_key, tag in enumerate(tags, start=1):
            if tag == outside:
                arcs.append((state, tag_key, after_outside))
            elif chunk_type(tag)[0] != "I" or state == elsewhere:
                arcs.append((state, tag_key, elsewhere))
    no_inside_after_outside = from_arcs(2, after_outside, np.ones(2, dtype=bool), arcs)
    topology = intersect(history, no_inside_after_outside, name="second-order")
    return _rename_by_history(topology, 2, outside)


def intersect(topology: Topology, acceptor: Acceptor | pynini.Fst, name: str | None = None) -> Topology:
    """The topology restricted to the label sequences ``acceptor`` accepts.

    The acceptor is over the topology's label keys (label i = key i + 1): a
    pynini acceptor (determinised and minimised first, by OpenFst) or a
    deterministic :class:`~fstcrf.engine.acceptor.Acceptor`, taken as it is (e.g.
    a model's stored constraint, minimised when it was compiled).  The product
    state remembers the topology's history and the acceptor's, numbered as
    OpenFst's intersection numbers them."""
    name = name or f"{topology.name}&grammar"
    if is_fst(acceptor):
        from fstcrf.engine import bounded

        fsa = bounded.checked(acceptor, f"{name}: the constraint")
        _check_symbol_keys(bounded.as_arrays(fsa), topology)
        constraint = bounded.minimal(fsa, name)
    elif isinstance(acceptor, Acceptor):
        if acceptor.start == NO_STATE:
            raise TopologyError(f"{name}: the constraint acceptor has no start state (empty language)")
        _check_symbol_keys(acceptor, topology)
        if not acceptor.is_deterministic():
            raise TopologyError(f"{name}: the constraint acceptor must be deterministic and free of epsilons")
        constraint = acceptor
    else:
        raise TopologyError(f"{name}: a constraint is an Acceptor or a pynini.Fst, got {type(acceptor).__name__}")
    what = f"{name}: the product of the topology and the constraint"
    product = intersect_acceptors(topology.arcs, constraint, what)
    if product.num_states == 0:
        raise TopologyError(f"{name}: no label sequence is allowed by both the topology and the constraint")
    return from_acceptor(product, topology.labels, name=name)


def _check_symbol_keys(acceptor: Acceptor, topology: Topology) -> None:
    """Reject arcs whose keys are outside the topology's labels, or whose
    symbol table disagrees with the topology's labels."""
    table = acceptor.symbols or {}
    for key in np.unique(acceptor.arc_key).tolist():
        if key == 0:
            continue
        if key > topology.num_labels:
            label = repr(table[key]) if key in table else f"label key {key}"
            raise LabelError(
                f"the constraint uses {label}, which the model does not know "
                f"(it has {topology.num_labels} labels: {', '.join(topology.labels)})"
            )
        if key in table and table[key] != topology.labels[key - 1]:
            raise LabelError(
                f"symbol key {key} is {table[key]!r} in the constraint but {topology.labels[key - 1]!r} in the model"
            )
