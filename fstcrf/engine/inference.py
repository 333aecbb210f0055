"""Exact inference over batches of scored sentences, run by the C kernel.

:class:`Potentials` holds everything the dynamic programs read -- a topology,
emission scores over states for a batch of sentences, and transition, start
and final scores -- validated once.  The free functions below run one kernel
call per batch (split over ``threads`` Python threads; the kernel releases the
GIL) and return plain numpy arrays:

    forward_backward  log Z [B], node marginals [N, S], expected edge counts [E]
    log_partition     log Z [B] (forward pass only)
    viterbi           best path [N] (states) and its score [B]
    kbest             k best paths [k, N], scores [B, k], how many exist [B]
    sample            exact draws from p(y | x) [num_samples, N]
    max_marginals     best score through each (token, state) [N, S], best [B]

N is the total number of tokens of the batch, B the number of sentences, S
the number of states and E the number of allowed transitions.
"""

from __future__ import annotations

import copy
import math
import operator
from dataclasses import dataclass
from collections.abc import Sequence

import numpy as np

from fstcrf.engine import budget, kernel
from fstcrf.errors import ArgumentTypeError, EmptySequenceError, LabelError, ScoreError, ShapeError
from fstcrf.engine.threads import run_parallel
from fstcrf.engine.topology import Topology


def as_float_array(name: str, values, shape: tuple[int, ...]) -> np.ndarray:
    given = numeric_array(name, values)
    array = np.ascontiguousarray(given, dtype=np.float64)
    if array.shape != shape:
        raise ShapeError(f"{name} has shape {array.shape}, expected {shape}")
    if not np.all(np.isfinite(array)):
        where = np.argwhere(~np.isfinite(array))[0]
        raise ScoreError(
            f"{name} has a non-finite value {array[tuple(where)]} at index "
            f"{tuple(int(i) for i in where)}; scores must be finite (use the topology "
            "or a grammar to forbid states)"
        )
    return array


def numeric_array(name: str, values) -> np.ndarray:
    """``values`` as an array of real numbers (bool, integer or float): ScoreError for
    complex or object values, ShapeError for anything else that is not numeric."""
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as error:  # a ragged nesting of lists, ...
        raise ShapeError(f"{name} must be numeric: {error}") from None
    if array.dtype.kind in "cO":
        raise ScoreError(f"{name} must be real numbers, got an array of dtype {array.dtype}; scores are float64")
    if array.dtype.kind not in "biuf":
        raise ShapeError(f"{name} must be numeric, got an array of dtype {array.dtype}")
    return array


def check_emissions(emissions, num_states: int) -> np.ndarray:
    """float64 [N, S] finite emission scores."""
    emissions = numeric_array("emissions", emissions)
    if emissions.ndim != 2:
        raise ShapeError(f"emissions must be a 2-D array [tokens, {num_states} states], got shape {emissions.shape}")
    return as_float_array("emissions", emissions, (emissions.shape[0], num_states))


def _check_token_class(token_class, num_tokens: int, num_classes: int) -> np.ndarray | None:
    """int32 [N] token classes in [0, C), or None (allowed when C = 1)."""
    if token_class is None:
        if num_classes != 1:
            raise ShapeError(
                f"transitions have {num_classes} class rows; give token_class [N], the class of each token"
            )
        return None
    token_class = np.asarray(token_class)
    if token_class.shape != (num_tokens,) or not np.issubdtype(token_class.dtype, np.integer):
        raise ShapeError(
            f"token_class must be integers of shape ({num_tokens},), got {token_class.dtype} {token_class.shape}"
        )
    if num_tokens and (token_class.min() < 0 or token_class.max() >= num_classes):
        raise ShapeError(
            f"token classes must lie in [0, {num_classes}), got [{token_class.min()}, {token_class.max()}]"
        )
    return np.ascontiguousarray(token_class, dtype=np.int32)


def check_lengths(lengths, num_tokens: int) -> np.ndarray:
    """int64 [B] sentence lengths, validated against the N rows of the scores
    (``None`` means one sentence of all N tokens)."""
    lengths = np.asarray([num_tokens] if lengths is None else lengths)
    if lengths.ndim != 1 or len(lengths) == 0 or not np.issubdtype(lengths.dtype, np.integer):
        raise ShapeError(f"lengths must be a non-empty 1-D integer array, got {lengths!r}")
    if np.any(lengths <= 0):
        raise EmptySequenceError(
            f"sentence {int(np.flatnonzero(lengths <= 0)[0])} is empty; every sentence needs at least one token"
        )
    if int(lengths.sum()) != num_tokens:
        raise ShapeError(f"lengths sum to {int(lengths.sum())} but the scores have {num_tokens} rows")
    return lengths.astype(np.int64)


def lengths_to_offsets(lengths) -> np.ndarray:
    """int64 [B+1] token offsets of sentences with the given lengths."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.add.accumulate(lengths, out=offsets[1:])  # np.cumsum's ufunc, without its Python wrapper
    return offsets


class SentenceBatch:
    """Bookkeeping shared by everything that holds B sentences as int64
    ``lengths`` [B] and token ``offsets`` [B+1]."""

    lengths: np.ndarray
    offsets: np.ndarray

    @property
    def num_sequences(self) -> int:
        return len(self.lengths)

    @property
    def num_tokens(self) -> int:
        return int(self.offsets[-1])

    def sentence(self, index: int | np.integer) -> slice:
        """Rows of sentence ``index`` in every [N, ...] array."""
        return slice(int(self.offsets[index]), int(self.offsets[index + 1]))

    def token_rows(self, first: int, last: int) -> slice:
        """Rows of sentences first .. last-1."""
        return slice(int(self.offsets[first]), int(self.offsets[last]))


class Potentials(SentenceBatch):
    """Scores of a batch of sentences over one topology.

    Args:
        topology: the compiled state space (S states, E edges).
        emissions: float [N, S], score of each state at each token of the
            concatenated sentences.
        lengths: int [B] sentence lengths summing to N; None means one sentence.
        transitions: float [E] score of each allowed edge (default 0), or
            float [C, E]: the score of edge e into a token of class c.
        start, final: float [S] extra score of starting / ending in a state
            (default 0); states the topology forbids are masked out.
        token_class: int [N] class of each token in [0, C) (with [C, E]
            transitions; the class of a sentence's first token is not read).
    """

    def __init__(
        self,
        topology: Topology,
        emissions,
        lengths: Sequence[int] | np.ndarray | None = None,
        transitions=None,
        start=None,
        final=None,
        token_class=None,
    ):
        check_type(topology, Topology, "topology", "a Topology (e.g. fstcrf.first_order(labels))")
        self.topology = topology
        S, E = topology.num_states, topology.num_edges
        self.emissions = check_emissions(emissions, S)
        N = len(self.emissions)
        self.lengths = check_lengths(lengths, N)
        self.offsets = lengths_to_offsets(self.lengths)
        zeros_s = np.zeros(S)
        transitions = np.zeros(E) if transitions is None else numeric_array("transitions", transitions)
        if transitions.ndim == 2:
            self.transitions = as_float_array("transitions", transitions, (len(transitions), E))
            self.token_class = _check_token_class(token_class, N, len(transitions))
        else:
            self.transitions = as_float_array("transitions", transitions, (E,))
            if token_class is not None:
                raise ShapeError("token_class needs transitions of shape [C, E], one row per class")
            self.token_class = None
        start = as_float_array("start", zeros_s if start is None else start, (S,))
        final = as_float_array("final", zeros_s if final is None else final, (S,))
        self.start = np.where(topology.start, start, -np.inf)
        self.final = np.where(topology.final, final, -np.inf)
        topology.check_lengths(self.lengths)
        self.seal()

    @classmethod
    def of_checked(
        cls,
        topology: Topology,
        emissions: np.ndarray,
        lengths: np.ndarray,
        offsets: np.ndarray,
        transitions: np.ndarray,
        token_class: np.ndarray | None = None,
        start: np.ndarray | None = None,
        final: np.ndarray | None = None,
    ) -> Potentials:
        """Potentials of parts the caller made and checked, taken as they are (a model's
        scorer makes them so for every batch, one sentence or thousands): emissions
        float64 [N, S] C-contiguous and finite, lengths int64 [B] (all feasible on the
        topology) with their offsets int64 [B+1], transitions float64 [E] or [C, E]
        with token_class int32 [N] or None; start and final float64 [S], -inf where
        the topology forbids a state, or None: no scores.  Every array is made
        read-only (the emissions themselves, views of the others), so that inference
        need not check them again."""
        pot = cls.__new__(cls)
        pot.topology = topology
        pot.emissions = emissions
        pot.lengths, pot.offsets = lengths, offsets
        pot.transitions, pot.token_class = transitions, token_class
        pot.start = topology.open_start if start is None else start
        pot.final = topology.open_final if final is None else final
        if emissions.flags.writeable:
            emissions.flags.writeable = False  # the caller's own: no view needed
        pot.seal(("lengths", "offsets", "start", "final", "transitions", "token_class"))
        return pot

    def __copy__(self) -> Potentials:
        """A shallow copy (the same arrays), made without copy's generic protocol,
        which costs several times more on a sentence's potentials."""
        copied = Potentials.__new__(type(self))
        copied.__dict__.update(self.__dict__)
        return copied

    def seal(self, frozen: Sequence[str] = ("lengths", "offsets", "start", "final")) -> None:
        """Remember the arrays as checked, the ``frozen`` ones made read-only (views of
        them: a caller's array keeps its flags), so that :func:`check_potentials`
        checks again only those that may change: the arrays left writable (emissions,
        transitions and token classes, which callers may edit in place) and any
        array replaced since."""
        for name in frozen:
            array = getattr(self, name)
            if array is not None and array.flags.writeable:
                view = array.view()
                view.flags.writeable = False
                setattr(self, name, view)
        self._sealed = self._parts()

    def _parts(self) -> tuple:
        return (
            self.topology,
            self.emissions,
            self.lengths,
            self.offsets,
            self.transitions,
            self.start,
            self.final,
            self.token_class,
        )

    def sealed(self) -> bool:
        """Whether every array is the one :meth:`seal` checked (those left writable may
        have been edited in place since)."""
        kept = self.__dict__.get("_sealed")
        return kept is not None and all(map(operator.is_, kept, self._parts()))

    @property
    def num_classes(self) -> int:
        """C: rows of transition scores (1 for transitions of shape [E])."""
        return 1 if self.transitions.ndim == 1 else len(self.transitions)

    def transitions_into(self, rows) -> np.ndarray:
        """float [n, E]: the transition scores into each of the given token rows."""
        if self.token_class is None:
            table = self.transitions if self.transitions.ndim == 1 else self.transitions[0]
            return np.broadcast_to(table, (len(np.arange(self.num_tokens)[rows]), len(table)))
        return self.transitions[self.token_class[rows]]

    def select(self, sentences: Sequence[int] | np.ndarray) -> Potentials:
        """The potentials of some of the sentences (indices into [B]), in that order."""
        sentences = np.asarray(sentences)
        if sentences.ndim != 1 or len(sentences) == 0 or not np.issubdtype(sentences.dtype, np.integer):
            raise ArgumentTypeError(
                f"sentences must be a non-empty 1-D array of sentence indices, got "
                f"dtype {sentences.dtype} and shape {sentences.shape}"
            )
        bad = np.flatnonzero((sentences < 0) | (sentences >= self.num_sequences))
        if len(bad):
            raise LabelError(f"sentence {sentences[bad[0]]} is out of range [0, {self.num_sequences})")
        rows = np.concatenate([np.arange(self.offsets[b], self.offsets[b + 1]) for b in sentences])
        selected = copy.copy(self)
        selected.emissions = self.emissions[rows]
        if self.token_class is not None:
            selected.token_class = self.token_class[rows]
        selected.lengths = self.lengths[sentences]
        selected.offsets = lengths_to_offsets(selected.lengths)
        return selected

    def clamp(self, allowed: np.ndarray) -> Potentials:
        """The same scores with state s forbidden at token n where ``allowed[n, s]``
        (bool [N, S]) is False: the sum over the paths that keep to ``allowed``.

        Such potentials may have sentences without any allowed path; inference
        routines then raise, except :func:`forward_backward` with
        ``allow_infeasible=True``, which gives them log Z = -inf."""
        allowed = np.asarray(allowed, dtype=bool)
        if allowed.shape != self.emissions.shape:
            raise ShapeError(f"allowed has shape {allowed.shape}, expected {self.emissions.shape}")
        if not np.all(allowed.any(axis=1)):
            row = int(np.flatnonzero(~allowed.any(axis=1))[0])
            raise ShapeError(f"token {row} allows no state; a clamp must leave every token one state")
        clamped = copy.copy(self)
        clamped.emissions = np.where(allowed, self.emissions, -np.inf)
        return clamped

    def split(self, array: np.ndarray, axis: int = 0) -> list[np.ndarray]:
        """Cut an array whose ``axis`` runs over the N tokens into sentences."""
        return np.split(array, self.offsets[1:-1], axis=axis)

    def score(self, states) -> np.ndarray:
        """float [B]: score of a state sequence int [N] (for checking decoders)."""
        states = check_state_path(states, self)
        edge_index = {
            (int(a), int(b)): e for e, (a, b) in enumerate(zip(self.topology.edge_src, self.topology.edge_dst))
        }
        result = np.empty(self.num_sequences)
        for b in range(self.num_sequences):
            rows = self.sentence(b)
            path = states[rows]
            transitions = self.transitions_into(rows)
            total = self.start[path[0]] + self.emissions[rows][0, path[0]]
            for t in range(1, len(path)):
                e = edge_index.get((int(path[t - 1]), int(path[t])))
                total = -np.inf if e is None else total + transitions[t, e] + self.emissions[rows][t, path[t]]
            result[b] = total + self.final[path[-1]]
        return result

    def path_scores(self, paths) -> np.ndarray:
        """float [K, B]: the scores of K state paths int [K, N] (vectorised; -inf where a
        path takes a transition, start or end the topology forbids)."""
        paths = np.atleast_2d(paths)
        for path in paths:
            check_state_path(path, self)
        firsts, lasts = self.offsets[:-1], self.offsets[1:] - 1
        inside = np.ones(self.num_tokens, dtype=bool)
        inside[firsts] = False
        rows = np.flatnonzero(inside)
        transitions = self.transitions_into(rows)  # [N - B, E]
        table = self.topology.edge_ids
        result = np.empty((len(paths), self.num_sequences))
        for k, path in enumerate(paths):
            tokens = self.emissions[np.arange(self.num_tokens), path]
            edges = table[path[rows - 1], path[rows]]
            tokens[rows] += np.where(edges >= 0, transitions[np.arange(len(rows)), edges], -np.inf)
            tokens[firsts] += self.start[path[firsts]]
            tokens[lasts] += self.final[path[lasts]]
            result[k] = np.add.reduceat(tokens, firsts)
        return result


# -- kernel plumbing ---------------------------------------------------------


class ChunkStructs:
    """The kernel structs of sentences first .. last-1 of a Potentials: its graph and
    scores, their batch and a workspace (k paths); ``token_range``: their rows."""

    def __init__(self, pot: Potentials, first: int, last: int, k: int = 1):
        self.batch, self.token_range = chunk_batch(pot, first, last)
        self.graph = kernel.topology_graph(pot.topology)
        self.scores = kernel.kept_scores(pot.transitions, pot.start, pot.final)
        t_max = int(pot.lengths[first]) if last == first + 1 else int(pot.lengths[first:last].max())
        self.workspace = kernel.scratch_workspace(pot.topology, pot.num_classes, t_max, k)


def chunk_batch(pot, first: int, last: int) -> tuple[kernel.Batch, slice]:
    """The kernel batch of sentences first .. last-1 of a Potentials or JointPotentials,
    and their token rows."""
    offsets = pot.offsets[first : last + 1]
    rows = slice(int(offsets[0]), int(offsets[-1]))
    token_class = getattr(pot, "token_class", None)
    return kernel.Batch(
        offsets if first == 0 else offsets - offsets[0],
        pot.emissions[rows],
        None if token_class is None else token_class[rows],
    ), rows


def neighbours(offsets: np.ndarray, num_tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """int64 [N - B] twice: tokens t - 1 and t of each pair of neighbours within the
    sentences that offsets [B+1] cut N tokens into."""
    inside = np.ones(num_tokens, dtype=bool)
    inside[offsets[:-1]] = False
    after = np.flatnonzero(inside)
    return after - 1, after


#: Sentences up to which a batch's results are checked in Python (quicker than numpy
#: on a few numbers).
SMALL_BATCH = 16

#: Work (tokens x (states + edges)) below which a batch is not split over threads:
#: handing a run to a pool thread costs some 50-100 microseconds, what the Viterbi of
#: a few hundred tokens of a 22-label chunker costs.
PARALLEL_WORK = 1 << 18


def useful_threads(num_tokens: int, topology: Topology, threads: int) -> int:
    """How many of ``threads`` a batch of ``num_tokens`` tokens on ``topology`` is split
    over: one below PARALLEL_WORK (a few sentences), else ``threads``."""
    if num_tokens * (topology.num_states + topology.num_edges) < PARALLEL_WORK:
        return 1
    return threads


def thread_chunks(pot: SentenceBatch, threads: int) -> list[tuple[int, int]]:
    """Split sentences into at most ``threads`` contiguous runs of similar token counts
    (one run for a batch too small to share, see :func:`useful_threads`)."""
    topology = getattr(pot, "topology", None)
    if topology is not None:
        threads = useful_threads(pot.num_tokens, topology, threads)
    return sentence_runs(pot.offsets, threads)


def sentence_runs(offsets: np.ndarray, threads: int) -> list[tuple[int, int]]:
    """(first, last) pairs: the sentences of ``offsets`` int [B+1] (from 0) cut into at
    most ``threads`` contiguous runs of similar token counts, sentences first .. last-1."""
    num_sequences = len(offsets) - 1
    threads = max(1, min(int(threads), num_sequences))
    if threads == 1:
        return [(0, num_sequences)]
    cuts = np.searchsorted(offsets, np.linspace(0, offsets[-1], threads + 1)[1:-1])
    bounds = sorted({0, num_sequences, *cuts.tolist()})
    return list(zip(bounds[:-1], bounds[1:]))


def run_chunks(pot: SentenceBatch, threads: int, job) -> list:
    """Run ``job(first, last)`` on each chunk of sentences, in parallel threads."""
    if threads == 1:
        return [job(0, pot.num_sequences)]
    check_count(threads, "threads")
    chunks = thread_chunks(pot, threads)
    if len(chunks) == 1:
        return [job(*chunks[0])]
    return run_parallel(lambda chunk: job(*chunk), chunks)


def check_totals(totals: np.ndarray, what: str, name: str, allow_infeasible: bool = False) -> None:
    """ScoreError naming the first sentence whose total [B] (log Z or a path score)
    left float64's range: +inf or NaN (or -inf, unless infeasible sentences are allowed)."""
    if len(totals) <= SMALL_BATCH:
        if all(map(math.isfinite, totals.tolist())):
            return
    elif np.isfinite(totals).all():
        return
    overflow = np.isnan(totals) | (totals == np.inf)
    if not allow_infeasible:
        overflow |= totals == -np.inf
    if overflow.any():
        b = int(np.argmax(overflow))
        raise ScoreError(
            f"{what}: {name} of sentence {b} is {totals[b]}: the scores are too large "
            "to add up in float64 (scale them down)"
        )


# -- public entry points -----------------------------------------------------


def check_type(value, expected, argument: str, description: str) -> None:
    """Raise ArgumentTypeError unless ``value`` is an instance of ``expected``; the
    message says ``argument`` must be ``description`` and names the type given."""
    if not isinstance(value, expected):
        raise ArgumentTypeError(f"{argument} must be {description}, got {type(value).__name__}")


def check_count(value, argument: str) -> int:
    """A positive integer such as k, num_samples or threads (not a bool)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ArgumentTypeError(f"{argument} must be a positive integer, got {type(value).__name__} {value!r}")
    if value < 1:
        raise ShapeError(f"{argument} must be a positive integer, got {value!r}")
    return int(value)


def check_flag(value, argument: str) -> bool:
    """A bool (or numpy bool) option."""
    check_type(value, (bool, np.bool_), argument, "True or False")
    return bool(value)


def check_state_path(states, pot: Potentials) -> np.ndarray:
    """int64 [N]: a state sequence for the N tokens of ``pot``, each in [0, S)."""
    array = np.asarray(states)
    if array.dtype == object or not (np.issubdtype(array.dtype, np.integer) or array.size == 0):
        raise ArgumentTypeError(
            f"states must be an integer array of shape ({pot.num_tokens},), got dtype {array.dtype}"
        )
    if array.shape != (pot.num_tokens,):
        raise ShapeError(f"states has shape {array.shape}, expected ({pot.num_tokens},), one state per token")
    S = pot.topology.num_states
    bad = np.flatnonzero((array < 0) | (array >= S))
    if len(bad):
        raise LabelError(f"state {array[bad[0]]} at token {bad[0]} is out of range [0, {S})")
    return array.astype(np.int64)


def _float_table(pot: Potentials, name: str, shape: tuple[int, ...], what: str) -> np.ndarray:
    """Potentials attribute ``name``, checked to be float64 C-contiguous [shape] without NaN or +inf."""
    array = getattr(pot, name)
    changed = f"{what}: Potentials.{name} was changed after the Potentials was built; build a new Potentials instead"
    if (
        not isinstance(array, np.ndarray)
        or array.dtype != np.float64
        or array.shape != shape
        or not array.flags.c_contiguous
    ):
        found = f"{array.dtype} {array.shape}" if isinstance(array, np.ndarray) else type(array).__name__
        raise ShapeError(f"{changed} (it is {found}, expected float64 {shape})")
    if not array.max(initial=-np.inf) < np.inf:  # +inf or NaN somewhere
        where = tuple(int(i) for i in np.argwhere(~(array < np.inf))[0])
        raise ScoreError(f"{changed} (it holds {array[where]} at index {where})")
    return array


def check_potentials(pot, what: str) -> Potentials:
    """``pot`` itself after checking that it is a Potentials whose arrays still fit
    together: ArgumentTypeError for another type, ShapeError or ScoreError for
    arrays replaced or edited after it was built (which the kernel would reject)."""
    if type(pot) is Potentials and pot.sealed() and not _writable(pot):  # nothing can have changed
        return pot
    check_type(
        pot,
        Potentials,
        f"{what}: the potentials",
        "a Potentials (fstcrf.Potentials(topology, emissions, ...) or model.potentials(sentences))",
    )
    check_type(pot.topology, Topology, f"{what}: Potentials.topology", "a Topology")
    S, E = pot.topology.num_states, pot.topology.num_edges
    if pot.sealed():  # only the arrays left writable may have changed
        N = int(pot.offsets[-1])
        if pot.emissions.flags.writeable:
            _float_table(pot, "emissions", (N, S), what)
        if pot.transitions.flags.writeable or (pot.token_class is not None and pot.token_class.flags.writeable):
            _check_transitions(pot, N, E, what)
        return pot
    lengths, offsets = pot.lengths, pot.offsets
    if not (
        isinstance(lengths, np.ndarray)
        and isinstance(offsets, np.ndarray)
        and lengths.ndim == 1
        and len(lengths)
        and lengths.dtype == np.int64
        and offsets.shape == (len(lengths) + 1,)
        and np.all(lengths > 0)
        and np.array_equal(offsets, lengths_to_offsets(lengths))
    ):
        raise ShapeError(
            f"{what}: Potentials.lengths and .offsets were changed after the Potentials was built "
            "and no longer fit together; build a new Potentials instead"
        )
    N = int(offsets[-1])
    _float_table(pot, "emissions", (N, S), what)
    for name in ("start", "final"):
        allowed = getattr(pot.topology, name)
        if np.any(_float_table(pot, name, (S,), what)[~allowed] != -np.inf):
            raise ScoreError(
                f"{what}: Potentials.{name} was changed after the Potentials was built and "
                f"gives a score to a state the topology does not let a path {name} in"
            )
    _check_transitions(pot, N, E, what)
    return pot


def _writable(pot: Potentials) -> bool:
    """Whether an array of ``pot`` that check_potentials checks may have been edited in place."""
    return (
        pot.emissions.flags.writeable
        or pot.transitions.flags.writeable
        or (pot.token_class is not None and pot.token_class.flags.writeable)
    )


def _check_transitions(pot: Potentials, N: int, E: int, what: str) -> None:
    """:func:`check_potentials`' check of the transitions [E] or [C, E] and the token classes."""
    two_d = isinstance(pot.transitions, np.ndarray) and pot.transitions.ndim == 2
    C = len(pot.transitions) if two_d else 1
    _float_table(pot, "transitions", (C, E) if two_d else (E,), what)
    token_class = pot.token_class
    if token_class is None:
        fits = C == 1
    else:
        fits = (
            two_d
            and isinstance(token_class, np.ndarray)
            and token_class.dtype == np.int32
            and token_class.shape == (N,)
            and token_class.flags.c_contiguous
            and 0 <= token_class.min()
            and token_class.max() < C
        )
    if not fits:
        raise ShapeError(
            f"{what}: Potentials.token_class was changed after the Potentials was built (expected "
            f"int32 ({N},) classes in [0, {C}) with transitions [C, E], or None with {C} "
            "transition row); build a new Potentials instead"
        )


@dataclass
class ForwardBackward:
    """What :func:`forward_backward` computes: log Z, node marginals and expected edge counts."""

    log_z: np.ndarray  # [B]
    node_marginals: np.ndarray | None  # [N, S] (None if not requested)
    edge_counts: np.ndarray | None  # [E] (or [C, E], by token class) summed over the batch, or [B, E] (or
    # [B, C, E]) per sentence with each_sentence (None if not requested)


def forward_backward(
    pot: Potentials,
    marginals: bool = True,
    edge_counts: bool = True,
    threads: int = 1,
    allow_infeasible: bool = False,
    each_sentence: bool = False,
) -> ForwardBackward:
    """Sum-product inference: log Z, node marginals and expected edge counts (summed
    over the batch, or with ``each_sentence`` one row per sentence).

    With ``allow_infeasible`` (for :meth:`Potentials.clamp` potentials) a sentence
    without an allowed path gets log Z = -inf and zero marginals instead of an error."""
    check_potentials(pot, "forward_backward")
    marginals, edge_counts = check_flag(marginals, "marginals"), check_flag(edge_counts, "edge_counts")
    allow_infeasible = check_flag(allow_infeasible, "allow_infeasible")
    each_sentence = check_flag(each_sentence, "each_sentence")
    log_z = np.empty(pot.num_sequences)
    node = np.empty((pot.num_tokens, pot.topology.num_states)) if marginals else None
    per_sentence = np.zeros((pot.num_sequences, *pot.transitions.shape)) if edge_counts and each_sentence else None

    def job(first: int, last: int):
        chunk = ChunkStructs(pot, first, last)
        counts = (
            (per_sentence[first:last] if per_sentence is not None else np.zeros(pot.transitions.shape))
            if edge_counts
            else None
        )
        kernel.forward_backward(
            chunk.graph,
            chunk.scores,
            chunk.batch,
            log_z[first:last],
            node[chunk.token_range] if node is not None else None,
            counts,
            chunk.workspace,
            each_sentence,
            allow_infeasible,
        )
        return counts

    results = run_chunks(pot, threads, job)
    check_totals(log_z, "forward_backward", "log Z", allow_infeasible)
    if not edge_counts or each_sentence:
        return ForwardBackward(log_z, node, per_sentence)
    return ForwardBackward(log_z, node, np.sum(results, axis=0))


def log_partition(pot: Potentials, threads: int = 1) -> np.ndarray:
    """float [B]: log Z of each sentence (forward pass only)."""
    check_potentials(pot, "log_partition")
    return forward_backward(pot, marginals=False, edge_counts=False, threads=threads).log_z


@dataclass
class Viterbi:
    """The best state path of every sentence and its score (:func:`viterbi`)."""

    paths: np.ndarray  # int32 [N] best state at each token
    scores: np.ndarray  # [B]


def viterbi(pot: Potentials, threads: int = 1, allow_infeasible: bool = False) -> Viterbi:
    """The best state sequence of every sentence (ties: smallest states read backwards).
    With ``allow_infeasible``, a sentence without an allowed path scores -inf and its
    path is -1 throughout, instead of an error."""
    check_potentials(pot, "viterbi")
    allow_infeasible = check_flag(allow_infeasible, "allow_infeasible")
    paths = np.empty(pot.num_tokens, dtype=np.int32)
    scores = np.empty(pot.num_sequences)

    def job(first: int, last: int):
        chunk = ChunkStructs(pot, first, last)
        kernel.viterbi(
            chunk.graph,
            chunk.scores,
            chunk.batch,
            paths[chunk.token_range],
            scores[first:last],
            chunk.workspace,
            allow_infeasible,
        )

    run_chunks(pot, threads, job)
    check_totals(scores, "viterbi", "the best path's score", allow_infeasible)
    return Viterbi(paths, scores)


def max_marginals(pot: Potentials, threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """float [N, S]: best score of any path through each (token, state); and the best score [B]."""
    check_potentials(pot, "max_marginals")
    table = np.empty((pot.num_tokens, pot.topology.num_states))
    best = np.empty(pot.num_sequences)

    def job(first: int, last: int):
        chunk = ChunkStructs(pot, first, last)
        kernel.max_marginals(
            chunk.graph, chunk.scores, chunk.batch, table[chunk.token_range], best[first:last], chunk.workspace
        )

    run_chunks(pot, threads, job)
    return table, best


@dataclass
class KBest:
    """The k best state paths of every sentence, best first, with their scores (:func:`kbest`)."""

    paths: np.ndarray  # int32 [k, N], -1 where the r-th path does not exist
    scores: np.ndarray  # [B, k], -inf where it does not exist
    found: np.ndarray  # int32 [B] number of paths found (<= k)

    def sentence_paths(self, pot: Potentials, index: int) -> list[tuple[float, np.ndarray]]:
        """The (score, states) pairs of sentence ``index``, best first."""
        rows = pot.sentence(index)
        return [(float(self.scores[index, r]), self.paths[r, rows]) for r in range(self.found[index])]


def kbest(pot: Potentials, k: int, threads: int = 1) -> KBest:
    """The k best state sequences of every sentence, exactly, best first."""
    check_potentials(pot, "kbest")
    k = check_count(k, "k")
    budget.check_work(
        k * pot.num_tokens * pot.topology.num_states,
        f"k-best lists (k={k}) over {pot.num_tokens} tokens and {pot.topology.num_states} states",
    )
    t_max = int(pot.lengths.max())
    cells = t_max * pot.topology.num_states * k
    if cells > 2**31 - 1:
        raise ShapeError(
            f"k-best tables would need {cells} cells (longest sentence {t_max} x "
            f"{pot.topology.num_states} states x k={k}); lower k or split long sentences"
        )
    paths = np.empty((k, pot.num_tokens), dtype=np.int32)
    scores = np.empty((pot.num_sequences, k))
    found = np.empty(pot.num_sequences, dtype=np.int32)

    def job(first: int, last: int):
        chunk = ChunkStructs(pot, first, last, k)
        chunk_paths = np.empty((k, chunk.token_range.stop - chunk.token_range.start), dtype=np.int32)
        kernel.kbest(
            chunk.graph,
            chunk.scores,
            chunk.batch,
            k,
            chunk_paths,
            scores[first:last],
            found[first:last],
            chunk.workspace,
        )
        paths[:, chunk.token_range] = chunk_paths

    run_chunks(pot, threads, job)
    return KBest(paths, scores, found)


def sample(pot: Potentials, num_samples: int, seed: int = 0, threads: int = 1) -> np.ndarray:
    """int32 [num_samples, N]: exact draws from p(y | x), reproducible for a seed
    whatever the number of threads."""
    check_potentials(pot, "sample")
    num_samples = check_count(num_samples, "num_samples")
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise ArgumentTypeError(f"seed must be an integer in [0, 2**64), got {type(seed).__name__} {seed!r}")
    if not 0 <= seed < 2**64:
        raise ShapeError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    budget.check_work(
        num_samples * pot.num_tokens * pot.topology.num_states,
        f"{num_samples} samples over {pot.num_tokens} tokens and {pot.topology.num_states} states",
    )
    draws = np.empty((num_samples, pot.num_tokens), dtype=np.int32)

    def job(first: int, last: int):
        chunk = ChunkStructs(pot, first, last)
        chunk_draws = np.empty((num_samples, chunk.token_range.stop - chunk.token_range.start), dtype=np.int32)
        kernel.sample(chunk.graph, chunk.scores, chunk.batch, int(seed), first, chunk_draws, chunk.workspace)
        draws[:, chunk.token_range] = chunk_draws

    run_chunks(pot, threads, job)
    return draws
