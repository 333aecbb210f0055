"""Topologies and inference under a grammar: :func:`constrain` a topology to a
grammar's language, map constrained states back to the original ones, and
:func:`restrict` or :func:`decode` potentials in the original state space."""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Mapping, Sequence

import numpy as np

from fstcrf.engine import budget
from fstcrf.errors import GrammarError, LabelError, TopologyError
from fstcrf.engine.inference import Potentials, Viterbi, viterbi
from fstcrf.engine.acceptor import Acceptor, arcs_leaving, is_fst
from fstcrf.engine.constrained import note_grammar
from fstcrf.engine.topology import (
    shown_labels,
    Topology,
    intersect,
)
from fstcrf.grammar.nodes import Grammar
from fstcrf.grammar.parser import EXTENSION


# -- topologies and inference under a grammar ------------------------------------------

_CONSTRAINED: weakref.WeakKeyDictionary[Topology, dict] = weakref.WeakKeyDictionary()


def constrain(
    topology: Topology,
    constraint,
    rule: str = "start",
    params: Mapping[str, str] | None = None,
    name: str = "the grammar",
) -> Topology:
    """The topology restricted to a grammar's language (or any acceptor's, an
    :class:`~fstcrf.engine.acceptor.Acceptor` or a pynini.Fst, via
    :func:`fstcrf.engine.topology.intersect`, its errors naming it ``name``).  Grammar
    results are cached per topology; compiling a grammar needs pynini
    (MissingExtraError without it)."""
    if isinstance(constraint, Acceptor) or is_fst(constraint):
        restricted = intersect(topology, constraint)
        note_grammar(restricted, topology, name)
        return restricted
    if not isinstance(constraint, Grammar):
        raise GrammarError(f"a constraint is a Grammar, an Acceptor or a pynini.Fst, got {type(constraint).__name__}")
    from fstcrf.grammar.compiler import check_params, compile_grammar

    key = (constraint, rule, tuple(sorted(check_params(params).items())))
    cached = _CONSTRAINED.setdefault(topology, {})
    if key not in cached:
        from fstcrf.engine.bounded import as_arrays

        # compiled minimal and deterministic already: as arrays, intersect takes it as it is
        acceptor = as_arrays(compile_grammar(constraint, topology.labels, rule, params))
        label = Path(constraint.source).name.removesuffix(EXTENSION) + ("" if rule == "start" else f".{rule}")
        cached[key] = intersect(topology, acceptor, name=f"{topology.name}&{label}")
        note_grammar(cached[key], topology, grammar_name(constraint, rule))
    return cached[key]


def grammar_name(grammar: Grammar, rule: str = "start") -> str:
    """How errors name ``grammar`` (and its ``rule``), e.g. "the grammar /work/chunks.fgr"."""
    name = "the grammar" if grammar.source.startswith("<") else f"the grammar {grammar.source}"
    return name if rule == "start" else f"rule '{rule}' of {name}"


def accepts(acceptor, labels: Sequence[str]) -> bool:
    """Whether ``acceptor`` (an Acceptor, e.g. a model's ``constraint_``, or a pynini
    acceptor) accepts the label sequence, looked up in its input symbols
    (:meth:`Acceptor.accepts_keys`: time linear in the labels, given the acceptor's arrays)."""
    if isinstance(labels, str):
        raise LabelError(f"expected a sequence of labels, got the string {labels!r}")
    if is_fst(acceptor):
        from fstcrf.engine.bounded import as_arrays

        acceptor = as_arrays(acceptor)
    if not isinstance(acceptor, Acceptor):
        raise GrammarError(f"expected an Acceptor or a pynini.Fst, got {type(acceptor).__name__}")
    if acceptor.symbols is None:
        raise LabelError("the acceptor has no symbol table to look labels up in")
    keys = {symbol: key for key, symbol in acceptor.symbols.items() if key > 0}
    for label in labels:
        if label not in keys:
            raise LabelError(f"unknown label {label!r}; the acceptor knows {shown_labels(sorted(keys, key=keys.get))}")
    return acceptor.accepts_keys([keys[label] for label in labels])


def state_map(original: Topology, constrained: Topology) -> np.ndarray:
    """int32 [S']: the state of ``original`` that each state of ``constrained``
    (a restriction of it, e.g. from :func:`constrain`) stands for.

    ``original`` must be deterministic over labels (true of every topology built
    from an acceptor): a state's label sequence then fixes its original state."""
    if original.labels != constrained.labels:
        raise TopologyError("the constrained topology has other labels than the original")
    L, S = original.num_labels, original.num_states
    budget.check_table((S + 1, L), f"topology {original.name!r}'s table of the state each label leads to:")
    starts = np.flatnonzero(original.start)
    sources = np.concatenate([original.edge_src, np.full(len(starts), S)]).astype(np.int64)
    targets = np.concatenate([original.edge_dst, starts]).astype(np.int64)
    keys = sources * L + original.state_label[targets]
    if len(np.unique(keys)) != len(keys):
        raise TopologyError(
            f"topology {original.name!r} has two states with the same label that "
            "start a path or follow one state; inference under a grammar needs label "
            "sequences to determine state sequences"
        )
    successor = np.full((S + 1) * L, -1, dtype=np.int64)
    successor[keys] = targets
    mapping = np.full(constrained.num_states, -1, dtype=np.int64)
    first = np.flatnonzero(constrained.start)
    mapping[first] = successor[S * L + constrained.state_label[first]]
    # breadth first from the states mapped last, over the edges they leave: each edge
    # once (a pass over every edge per step took 22 s for the 3,000 steps of ((.?){1000}){3})
    by_source = np.argsort(constrained.edge_src, kind="stable")
    src, dst = constrained.edge_src[by_source], constrained.edge_dst[by_source]
    first_edge = np.searchsorted(src, np.arange(constrained.num_states + 1))
    frontier = first[mapping[first] >= 0]
    while len(frontier):
        edges = arcs_leaving(first_edge, frontier)[1]
        edges = edges[mapping[dst[edges]] < 0]
        targets = dst[edges]
        mapping[targets] = successor[mapping[src[edges]] * L + constrained.state_label[targets]]
        frontier = np.unique(targets[mapping[targets] >= 0])
    if np.any(mapping < 0):
        raise TopologyError("the constrained topology is not a restriction of the original one")
    return mapping.astype(np.int32)


@dataclass
class Restriction:
    """Potentials under a grammar and the way back to the original states."""

    potentials: Potentials  # over the constrained topology (S' states, E' edges)
    original: Topology  # the topology restricted (S states, E edges)
    state_map: np.ndarray  # int32 [S']: original state of each constrained state
    edge_map: np.ndarray  # int64 [E']: original edge of each constrained edge

    def original_marginals(self, marginals: np.ndarray) -> np.ndarray:
        """float [N, S]: constrained-state marginals [N, S'] summed per original state."""
        order = np.argsort(self.state_map, kind="stable")
        states, starts = np.unique(self.state_map[order], return_index=True)
        out = np.zeros((len(marginals), self.original.num_states))
        out[:, states] = np.add.reduceat(marginals[:, order], starts, axis=1)
        return out

    def original_edge_counts(self, counts: np.ndarray) -> np.ndarray:
        """float [E] (or [C, E]): constrained edge counts [E'] (or [C, E'], by token
        class) summed per original edge."""
        return sum_per_original_edge(self.edge_map, self.original.num_edges, counts)


def sum_per_original_edge(edge_map: np.ndarray, num_edges: int, counts: np.ndarray) -> np.ndarray:
    """float [E] (or [C, E]): counts [E'] (or [C, E']) on the edges of a restriction
    summed per original edge, edge_map int [E'] giving each one's original edge."""
    rows = np.atleast_2d(counts)
    summed = np.stack([np.bincount(edge_map, weights=row, minlength=num_edges) for row in rows])
    return summed.reshape(np.shape(counts)[:-1] + (num_edges,))


_MAPS: weakref.WeakKeyDictionary[Topology, dict] = weakref.WeakKeyDictionary()


def restriction_maps(original: Topology, constrained: Topology) -> tuple[np.ndarray, np.ndarray]:
    """(state_map int32 [S'], edge_map int64 [E']): the original state and edge that
    each state and edge of a restriction of ``original`` stands for (cached)."""
    cached = _MAPS.setdefault(constrained, {})
    if original not in cached:
        mapping = state_map(original, constrained)
        S = original.num_states
        edge_keys = original.edge_dst.astype(np.int64) * S + original.edge_src
        wanted = mapping[constrained.edge_dst].astype(np.int64) * S + mapping[constrained.edge_src]
        cached[original] = (mapping, np.searchsorted(edge_keys, wanted))
    return cached[original]


def restrict(pot: Potentials, constraint, rule: str = "start", params: Mapping[str, str] | None = None) -> Restriction:
    """The same scores on the topology constrained by a grammar (or acceptor).

    Raises InfeasibleError when the grammar allows no sequence of some sentence's length."""
    return restrict_to(pot, constrain(pot.topology, constraint, rule, params))


def restrict_to(pot: Potentials, constrained: Topology) -> Restriction:
    """The same scores on ``constrained``, a restriction of ``pot.topology`` (e.g. from
    :func:`constrain`).  Raises InfeasibleError for lengths it cannot tag."""
    original = pot.topology
    mapping, edges = restriction_maps(original, constrained)
    if not pot.sealed():  # arrays replaced since they were checked: check them all again
        start = np.where(constrained.start, pot.start[mapping], 0.0)
        final = np.where(constrained.final, pot.final[mapping], 0.0)
        restricted = Potentials(
            constrained,
            pot.emissions[:, mapping],
            pot.lengths,
            pot.transitions[..., edges],
            start,
            final,
            pot.token_class,
        )
        return Restriction(restricted, original, mapping, edges)
    constrained.check_lengths(pot.lengths)
    restricted = Potentials.of_checked(
        constrained,
        pot.emissions.take(mapping, axis=1),
        pot.lengths,
        pot.offsets,
        pot.transitions.take(edges, axis=-1),
        pot.token_class,
        np.where(constrained.start, pot.start[mapping], -np.inf),
        np.where(constrained.final, pot.final[mapping], -np.inf),
    )
    return Restriction(restricted, original, mapping, edges)


def decode(
    pot: Potentials, constraint, rule: str = "start", params: Mapping[str, str] | None = None, threads: int = 1
) -> Viterbi:
    """The best state sequence of every sentence among those the grammar accepts.

    ``.paths`` int32 [N] are states of ``pot.topology``; ``.scores`` [B]."""
    restriction = restrict(pot, constraint, rule, params)
    best = viterbi(restriction.potentials, threads=threads)
    return Viterbi(restriction.state_map[best.paths], best.scores)
