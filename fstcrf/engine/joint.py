"""Exact inference over the cross product of composed chains (Sutton & McCallum 2005).

N component chains with topologies of S_0, ..., S_{N-1} states are decoded
jointly over the product space of P = prod S_k states (row-major: the last
component varies fastest).  Component k's transition scores may depend on the
new state of component k-1 at the same token, so a joint transition is a sum
of component transitions and the kernel sums out one component at a time:
O(P * sum_k S_k) per token for dense components, instead of O(P^2).

:class:`JointSpace` is the composed state space (components and an optional
compatibility mask); it builds the dense cross-product :class:`Topology` on
demand, which is the oracle and the exact fallback.  :class:`JointPotentials`
holds the scores of a batch.

A joint constraint is a deterministic acceptor over the joint labels
"a/b/..." (component labels in component order, :func:`tuple_labels`).  A
per-token one (a single state, start and final) only masks joint states, and
decoding stays factorised; any other is decoded on the dense cross product
intersected with it (:class:`ConstrainedProduct`).
"""

from __future__ import annotations

import copy
import itertools
import math
import weakref
from dataclasses import dataclass
from functools import cached_property
from typing import cast
from collections.abc import Sequence

import numpy as np

from fstcrf.engine import budget, kernel
from fstcrf.engine.acceptor import Acceptor, reached
from fstcrf.errors import CompositionError, InfeasibleError, LabelError, ShapeError
from fstcrf.engine.inference import (
    KBest,
    Potentials,
    SentenceBatch,
    Viterbi,
    as_float_array,
    chunk_batch,
    run_chunks,
    check_count,
    check_emissions,
    check_flag,
    check_lengths,
    check_type,
    forward_backward,
    kbest,
    lengths_to_offsets,
    neighbours,
    sample,
    viterbi,
)
from fstcrf.engine.topology import Reachability, Topology

#: Separates the component labels of a joint label: "B-PER/O".
SEPARATOR = "/"


def tuple_labels(label_sets: Sequence[Sequence[str]], names: Sequence[str] | None = None) -> tuple[str, ...]:
    """The joint label of every label tuple, row-major (the last component varies
    fastest): ["O", "B-X"] and ["O"] give ("O/O", "B-X/O").  LabelError, naming the
    component (``names[k]``, default "component k"), for a label holding SEPARATOR."""
    sizes = [len(labels) for labels in label_sets]
    budget.check_states(math.prod(sizes), f"the joint labels ({' x '.join(map(str, sizes))}), a state each at least,")
    for k, labels in enumerate(label_sets):
        for label in labels:
            if SEPARATOR in label:
                name = f"component {k}" if names is None else names[k]
                raise LabelError(
                    f"{name} has the label {label!r}, which contains {SEPARATOR!r}, the separator of joint labels"
                )
    return tuple(SEPARATOR.join(combo) for combo in itertools.product(*label_sets))


def check_joint_states(sizes: Sequence[int]) -> int:
    """P, the joint states of components of ``sizes`` states, computed in linear time
    without overflow; BudgetError beyond the budget's max_states."""
    count = math.prod(int(size) for size in sizes)
    budget.check_states(count, f"the joint state space ({' x '.join(map(str, sizes))} states)")
    return count


def is_per_token(constraint: Acceptor) -> bool:
    """Whether an acceptor constrains each token alone: one state, start and final."""
    return constraint.num_states == 1 and constraint.start == 0 and bool(constraint.final[0])


class JointSpace:
    """The product of component topologies, optionally restricted.

    Args:
        components: N >= 1 topologies.
        allowed: bool [P] joint states that may occur (default all), e.g. the
            pairs a compatibility relation between label sets admits.
        constraint: a deterministic Acceptor over the joint labels (key i + 1 is
            ``labels[i]``), or None.  A per-token one (:func:`is_per_token`)
            joins ``allowed``; any other is kept as ``constraint`` and decoded on
            :attr:`constrained`, unless ``factorise`` is False, which keeps
            every constraint (to check the factorised decoder against it).
    """

    def __init__(self, components: Sequence[Topology], allowed=None, constraint=None, factorise: bool = True):
        check_type(components, (list, tuple), "components", "a list of Topology")
        self.components = tuple(components)
        if not self.components:
            raise CompositionError("a joint space needs at least one component")
        for k, topology in enumerate(self.components):
            check_type(topology, Topology, f"components[{k}]", "a Topology")
        if len(self.components) > 64:
            raise CompositionError("at most 64 components can be composed")
        self.sizes = tuple(t.num_states for t in self.components)
        self.num_states = check_joint_states(self.sizes)
        for k in range(1, len(self.components)):  # component k's transitions by component k-1's state
            budget.check_table(self.transition_shape(k), f"the transition scores of component {k} by lower state:")
        if self.num_states > 2**31 - 1:
            raise CompositionError(f"the product space has {self.num_states} states, more than the kernel's 2^31 - 1")
        if allowed is None:
            self.allowed = None
        else:
            allowed = np.asarray(allowed, dtype=bool).ravel()
            if allowed.shape != (self.num_states,):
                raise ShapeError(f"allowed must have shape ({self.num_states},), got {allowed.shape}")
            if not allowed.any():
                raise CompositionError("the compatibility relation excludes every joint state")
            self.allowed = allowed
        self.constraint: Acceptor | None = None
        if constraint is not None:
            self._check_constraint(constraint)
            if factorise and is_per_token(constraint):
                by_key = np.zeros(len(self.labels) + 1, dtype=bool)
                by_key[constraint.arc_key] = True
                allowed = by_key[1:][self.state_tuple]
                if self.allowed is not None:
                    allowed &= self.allowed
                if not allowed.any():
                    raise CompositionError("the joint constraint excludes every joint state")
                self.allowed = allowed
            else:
                self.constraint = constraint
                self.constrained  # built now: CompositionError if no joint path is left

    def __setstate__(self, state: dict) -> None:
        """Unpickle, also a JointSpace pickled by 0.1 (which had no joint constraint)."""
        self.__dict__.update({"constraint": None, **state})

    def _check_constraint(self, constraint) -> None:
        check_type(constraint, Acceptor, "constraint", "an Acceptor over the joint labels")
        if constraint.start < 0 or not constraint.is_deterministic():
            raise CompositionError("the joint constraint must be a deterministic, non-empty acceptor without epsilons")
        if constraint.arc_key.max(initial=0) > len(self.labels):
            raise CompositionError(
                f"the joint constraint reads label key {int(constraint.arc_key.max())}; "
                f"the joint space has {len(self.labels)} joint labels"
            )
        if constraint.symbols is not None:
            wrong = [
                f"{key}: {symbol!r} (expected {self.labels[key - 1]!r})"
                for key, symbol in constraint.symbols.items()
                if 0 < key <= len(self.labels) and symbol != self.labels[key - 1]
            ]
            if wrong:
                raise CompositionError(
                    f"the joint constraint's symbols are not the joint labels: {', '.join(wrong[:5])}"
                )

    @cached_property
    def labels(self) -> tuple[str, ...]:
        """The joint labels "a/b/..." of all label tuples, row-major (:func:`tuple_labels`)."""
        return tuple_labels([t.labels for t in self.components])

    @cached_property
    def state_tuple(self) -> np.ndarray:
        """int64 [P]: the joint label (index into :attr:`labels`) of each joint state."""
        states = self.component_states(np.arange(self.num_states))
        label_of = [t.state_label[states[:, k]] for k, t in enumerate(self.components)]
        return np.ravel_multi_index(tuple(label_of), tuple(t.num_labels for t in self.components))

    @cached_property
    def constrained(self) -> ConstrainedProduct:
        """The dense cross product under :attr:`constraint` (which must be set)."""
        if self.constraint is None:
            raise CompositionError("this joint space has no non-local constraint; decode it factorised")
        return ConstrainedProduct(self)

    @property
    def decoder(self) -> str:
        """How exact inference runs: "factorised", or "product, S' states" under a
        non-local constraint."""
        return "factorised" if self.constraint is None else f"product, {self.constrained.topology.num_states} states"

    def transition_shape(self, k: int) -> tuple[int, int]:
        """(L_k, E_k): component k's transition scores depend on L_k lower states."""
        lower = 1 if k == 0 else self.sizes[k - 1]
        return lower, self.components[k].num_edges

    def component_states(self, joint_states) -> np.ndarray:
        """int [..., N]: each component's state of joint states int [...]."""
        return np.stack(np.unravel_index(np.asarray(joint_states), self.sizes), axis=-1)

    def joint_state(self, component_states) -> np.ndarray:
        """int [...]: joint state of component states int [..., N]."""
        component_states = np.asarray(component_states)
        return np.ravel_multi_index(tuple(np.moveaxis(component_states, -1, 0)), self.sizes)

    @cached_property
    def start(self) -> np.ndarray:
        """bool [P]: joint states where a path may start (every component may, and allowed)."""
        return self._joint_mask([t.start for t in self.components])

    @cached_property
    def final(self) -> np.ndarray:
        """bool [P]: joint states where a path may end."""
        return self._joint_mask([t.final for t in self.components])

    @cached_property
    def open_ends(self) -> tuple[np.ndarray, np.ndarray]:
        """float [P] twice, read-only: the start and final scores of JointPotentials
        given none (0 where a path may start or end, -inf elsewhere)."""
        start, final = np.where(self.start, 0.0, -np.inf), np.where(self.final, 0.0, -np.inf)
        start.flags.writeable = final.flags.writeable = False
        return start, final

    def _joint_mask(self, masks: list[np.ndarray]) -> np.ndarray:
        joint = np.ones(self.sizes, dtype=bool)
        for k, mask in enumerate(masks):
            shape = [1] * len(self.sizes)
            shape[k] = self.sizes[k]
            joint &= np.asarray(mask, dtype=bool).reshape(shape)
        joint = joint.ravel()
        return joint if self.allowed is None else joint & self.allowed

    def check_lengths(self, lengths: np.ndarray) -> None:
        """Raise InfeasibleError naming a sentence no joint path fits.  Without a
        compatibility mask the components are independent, so each is checked on
        its own; with one, the reachable joint states are followed factorised
        (:meth:`successors`); under a non-local constraint, on the constrained
        product."""
        if self.constraint is not None:
            self.constrained.topology.check_lengths(lengths)
            return
        if self.allowed is not None:
            self.feasibility.check_lengths(lengths)
            return
        for topology in self.components:
            topology.check_lengths(lengths)

    @cached_property
    def feasibility(self) -> Reachability:
        """Which lengths the joint label sequences can have, from the allowed joint states."""
        return Reachability(self.start, self.successors, self.final, "the joint state space")

    def successors(self, states: np.ndarray) -> np.ndarray:
        """bool [P]: the allowed joint states one joint transition leads to from
        ``states`` bool [P]: each component's edges followed along its own axis, in
        O(P x sum_k E_k / S_k), never the product's edges."""
        grid = np.asarray(states, dtype=bool).reshape(self.sizes)
        for k, topology in enumerate(self.components):
            grid = np.moveaxis(topology.successors(np.moveaxis(grid, k, -1)), -1, k)
        reached = grid.ravel()
        return reached if self.allowed is None else reached & self.allowed

    @property
    def product(self) -> Topology:
        """The dense cross-product topology (edges = products of component edges)."""
        return self._product[0]

    @property
    def product_edge_components(self) -> np.ndarray:
        """int [E_prod, N]: the component edges behind each product edge."""
        return self._product[1]

    def check_product(self) -> None:
        """BudgetError, in linear time, if the dense cross product (:attr:`product`)
        is beyond the budget's max_states or max_edges: what exact inference that
        does not factorise (k-best lists, sampling, span probabilities, a non-local
        constraint) would build."""
        budget.check_states(self.num_states, "the dense cross product of the components")
        edges = [t.num_edges for t in self.components]
        budget.check_edges(
            math.prod(edges), f"the dense cross product of the components ({' x '.join(map(str, edges))} edges)"
        )

    @cached_property
    def _product(self) -> tuple[Topology, np.ndarray]:
        self.check_product()
        grids = np.meshgrid(*[np.arange(t.num_edges) for t in self.components], indexing="ij")
        edge_components = np.stack([g.ravel() for g in grids], axis=-1)  # [E_prod, N]
        src = self.joint_state(np.stack([t.edge_src[edge_components[:, k]] for k, t in enumerate(self.components)], -1))
        dst = self.joint_state(np.stack([t.edge_dst[edge_components[:, k]] for k, t in enumerate(self.components)], -1))
        states = self.component_states(np.arange(self.num_states))
        start = np.all([t.start[states[:, k]] for k, t in enumerate(self.components)], axis=0)
        final = np.all([t.final[states[:, k]] for k, t in enumerate(self.components)], axis=0)
        if self.allowed is not None:
            keep = self.allowed[src] & self.allowed[dst]
            src, dst, edge_components = src[keep], dst[keep], edge_components[keep]
            start &= self.allowed
            final &= self.allowed
        # Topology numbers edges by (dst, src); keep the component edges aligned
        order = np.argsort(dst * np.int64(self.num_states) + src, kind="stable")
        # a product state is named by each component state's label and number ("NN#3|B-NP#7"):
        # unique, and free of the spaces that k-th order state names hold
        names = ["|".join(f"{t.labels[t.state_label[s]]}#{s}" for t, s in zip(self.components, row)) for row in states]
        topology = Topology(names, np.arange(self.num_states), src[order], dst[order], start, final, name="product")
        return topology, edge_components[order]


class ConstrainedProduct:
    """The dense cross product of a JointSpace intersected with its constraint: a
    state is a pair (joint state, constraint state) that some path of an accepted
    joint-label sequence passes through.

    Attributes:
        topology: the S' pairs over the joint labels, E' edges.
        joint_state: int64 [S'], the joint state of each pair (of P).
        product_edge: int64 [E'], the edge of ``space.product`` behind each edge.
    """

    def __init__(self, space: JointSpace):
        constraint = cast(Acceptor, space.constraint)
        Q, P = constraint.num_states, space.num_states
        what = f"the cross product of the components ({P} joint states) under the joint constraint ({Q} states)"
        budget.check_states(P * Q, what)
        budget.check_edges(math.prod([t.num_edges for t in space.components]) * Q, what)
        budget.check_table((Q, len(space.labels) + 1), "the joint constraint's table of moves")
        product = space.product
        move = np.full((Q, len(space.labels) + 1), -1, dtype=np.int64)  # [Q, keys]: the constraint's next state
        move[constraint.arc_src, constraint.arc_key] = constraint.arc_dst
        key = space.state_tuple + 1  # [P]
        # pair p * Q + q: every product edge p -> p' taken from every constraint state q
        next_state = move[:, key[product.edge_dst]].T  # [E_prod, Q]
        taken = next_state >= 0
        src = (product.edge_src.astype(np.int64)[:, None] * Q + np.arange(Q))[taken]
        dst = (product.edge_dst.astype(np.int64)[:, None] * Q + next_state)[taken]
        edge = np.broadcast_to(np.arange(product.num_edges)[:, None], taken.shape)[taken]
        first = move[constraint.start, key]  # [P]
        start = np.zeros(P * Q, dtype=bool)
        start[(np.arange(P) * Q + first)[product.start & (first >= 0)]] = True
        final = np.repeat(product.final, Q) & np.tile(constraint.final, P)
        keep = reached(P * Q, np.flatnonzero(start), src, dst) & reached(P * Q, np.flatnonzero(final), dst, src)
        if not keep.any():
            raise CompositionError(
                "the joint constraint accepts no label sequence that the components can produce together"
            )
        kept = keep[src] & keep[dst]
        number = np.cumsum(keep) - 1
        src, dst, edge = number[src[kept]], number[dst[kept]], edge[kept]
        order = np.argsort(dst * int(keep.sum()) + src, kind="stable")  # Topology's edge order
        self.num_joint_states = P
        self.joint_state = np.flatnonzero(keep) // Q
        self.product_edge = edge[order]
        self.topology = Topology(
            space.labels,
            space.state_tuple[self.joint_state],
            src[order],
            dst[order],
            start[keep],
            final[keep],
            name="product&joint",
        )

    def potentials(self, jp: JointPotentials) -> Potentials:
        """The scores of ``jp`` on :attr:`topology`."""
        product = jp.to_product()
        return clamped_potentials(
            self.topology,
            product.emissions[:, self.joint_state],
            jp.lengths,
            product.transitions[self.product_edge],
            *(np.where(np.isfinite(v), v, 0.0)[self.joint_state] for v in (product.start, product.final)),
        )

    def joint_marginals(self, marginals: np.ndarray) -> np.ndarray:
        """float [N, P]: pair marginals [N, S'] summed per joint state."""
        order = np.argsort(self.joint_state, kind="stable")
        states, starts = np.unique(self.joint_state[order], return_index=True)
        out = np.zeros((len(marginals), self.num_joint_states))
        out[:, states] = np.add.reduceat(marginals[:, order], starts, axis=1)
        return out


def joint_emissions(space: JointSpace, component_emissions: Sequence[np.ndarray]) -> np.ndarray:
    """float [N, P]: the sum of component emissions.

    The k-th array is [N, S_k], or [N, L_k, S_k] when component k's emission
    depends on the state of component k-1 at the same token (a cascaded
    model reading the lower model's label)."""
    if len(component_emissions) != len(space.components):
        raise ShapeError(f"expected {len(space.components)} emission arrays, got {len(component_emissions)}")
    N = len(component_emissions[0])
    budget.check_work(N * space.num_states, f"the joint scores of {N} tokens x {space.num_states} joint states")
    views = []  # each component's scores, shaped to broadcast over the joint states
    for k, scores in enumerate(component_emissions):
        scores = np.asarray(scores, dtype=np.float64)
        S_k = space.sizes[k]
        shape = [N] + [1] * len(space.sizes)
        if scores.ndim == 3 and k > 0:
            if scores.shape != (N, space.sizes[k - 1], S_k):
                raise ShapeError(
                    f"emissions[{k}] has shape {scores.shape}, expected ({N}, {space.sizes[k - 1]}, {S_k})"
                )
            shape[k] = space.sizes[k - 1]
        elif scores.shape != (N, S_k):
            raise ShapeError(f"emissions[{k}] has shape {scores.shape}, expected ({N}, {S_k})")
        shape[k + 1] = S_k
        views.append(scores.reshape(shape))
    total = np.empty((N,) + space.sizes)
    if len(views) == 1:
        total[...] = views[0]
    else:  # the first two components in one pass
        np.add(views[0], views[1], out=total)
    for view in views[2:]:
        total += view
    return total.reshape(N, space.num_states)


class JointPotentials(SentenceBatch):
    """Scores of a batch of sentences over a joint space.

    Args:
        space: the JointSpace (P joint states).
        emissions: float [N, P] joint emission scores (typically the sum of
            each component's emission, broadcast over the others).
        lengths: int [B] or None for one sentence.
        transitions: N arrays; the k-th is float [L_k, E_k], the score of
            component k's edge e when component k-1 is in state l at the new
            token (L_0 = 1; an [E_k] array means no dependence).
        start, final: float [P] (default 0), masked by the components' and
            the space's own start / final sets.
    """

    def __init__(self, space: JointSpace, emissions, lengths=None, transitions=None, start=None, final=None):
        check_type(space, JointSpace, "space", "a JointSpace")
        self.space = space
        P = space.num_states
        self.emissions = check_emissions(emissions, P)
        self.lengths = check_lengths(lengths, len(self.emissions))
        self.offsets = lengths_to_offsets(self.lengths)
        if transitions is None:
            transitions = [np.zeros(space.transition_shape(k)) for k in range(len(space.components))]
        if len(transitions) != len(space.components):
            raise ShapeError(f"expected {len(space.components)} transition arrays, got {len(transitions)}")
        self.transitions = []
        for k, scores in enumerate(transitions):
            shape = space.transition_shape(k)
            scores = np.asarray(scores, dtype=np.float64)
            if scores.ndim == 1:
                scores = np.broadcast_to(scores, shape)
            self.transitions.append(_checked_transitions(f"transitions[{k}]", scores, shape))
        self.start, self.final = space.open_ends
        if start is not None:
            self.start = np.where(space.start, as_float_array("start", start, (P,)), -np.inf)
        if final is not None:
            self.final = np.where(space.final, as_float_array("final", final, (P,)), -np.inf)
        space.check_lengths(self.lengths)

    def clamp(self, allowed: np.ndarray) -> JointPotentials:
        """The same scores with joint state p forbidden at token n where ``allowed[n, p]``
        (bool [N, P]) is False: Z then sums over the joint paths that keep to
        ``allowed`` (e.g. the label tuples consistent with observed labels)."""
        allowed = np.asarray(allowed, dtype=bool)
        if allowed.shape != self.emissions.shape:
            raise ShapeError(f"allowed has shape {allowed.shape}, expected {self.emissions.shape}")
        if not np.all(allowed.any(axis=1)):
            row = int(np.flatnonzero(~allowed.any(axis=1))[0])
            raise ShapeError(f"token {row} allows no joint state; a clamp must leave every token one state")
        clamped = copy.copy(self)
        clamped.emissions = np.where(allowed, self.emissions, -np.inf)
        return clamped

    def to_product(self) -> Potentials:
        """The same scores on the dense cross-product topology (oracle, k-best, sampling)."""
        space = self.space
        edge_components = space.product_edge_components
        lower_states = space.component_states(space.product.edge_dst)
        trans = np.zeros(len(edge_components))
        for k in range(len(space.components)):
            lower = np.zeros(len(trans), dtype=np.int64) if k == 0 else lower_states[:, k - 1]
            trans += self.transitions[k][lower, edge_components[:, k]]
        return clamped_potentials(
            space.product,
            self.emissions,
            self.lengths,
            trans,
            np.where(np.isfinite(self.start), self.start, 0.0),
            np.where(np.isfinite(self.final), self.final, 0.0),
        )


#: Read-only transition tables that own their memory and were found finite, by id:
#: checked once, however many calls pass them (a composed model's kept tables).
_checked_tables: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def _checked_transitions(name: str, scores: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``as_float_array(name, scores, shape)``, at once for a table checked before and
    read-only since (a table made writeable again is checked again)."""
    if _checked_tables.get(id(scores)) is scores and scores.shape == shape and not scores.flags.writeable:
        return scores
    checked = as_float_array(name, scores, shape)
    if checked is scores and scores.base is None and not scores.flags.writeable:
        _checked_tables[id(scores)] = scores
    return checked


def clamped_potentials(topology: Topology, emissions: np.ndarray, lengths, *scores) -> Potentials:
    """Potentials(topology, emissions, lengths, *scores) where emissions [N, S] may be
    -inf (a state forbidden at a token, :meth:`JointPotentials.clamp`)."""
    finite = np.isfinite(emissions)
    pot = Potentials(topology, np.where(finite, emissions, 0.0), lengths, *scores)
    return pot if finite.all() else pot.clamp(finite)


class _JointChunk:
    """The kernel structs of sentences first .. last-1 of a JointPotentials: the
    joint space and its scores, their batch and a workspace; ``token_range``: their rows."""

    def __init__(self, jp: JointPotentials, first: int, last: int):
        space = jp.space
        allowed = None if space.allowed is None else space.allowed.astype(np.uint8)
        self.joint = kernel.Joint(space.components, jp.transitions, jp.start, jp.final, allowed)
        self.batch, self.token_range = chunk_batch(jp, first, last)
        self.workspace = kernel.joint_workspace(self.joint, int(jp.lengths[first:last].max()))


@dataclass
class JointPosteriors:
    """log_z float [B]; node_marginals float [N, P] or None; edge_counts: None,
    or N arrays, the k-th float [L_k, E_k]: the expected number of transitions
    of the batch that take edge e of component k while component k-1 is in
    state l at the new token (L_0 = 1), i.e. the gradient of sum_b log Z_b in
    the transition scores of JointPotentials."""

    log_z: np.ndarray
    node_marginals: np.ndarray | None
    edge_counts: list[np.ndarray] | None


def joint_posteriors(
    jp: JointPotentials, marginals: bool = True, edge_counts: bool = True, threads: int = 1
) -> JointPosteriors:
    """log Z, joint node marginals and expected component edge counts, factorised
    (under a non-local constraint, on :attr:`JointSpace.constrained`).

    Sentences whose scores spread too widely for the linear domain are redone
    exactly on the dense cross-product topology."""
    _check_joint(jp, "joint_posteriors")
    marginals = check_flag(marginals, "marginals")
    edge_counts = check_flag(edge_counts, "edge_counts")
    space = jp.space
    if space.constraint is not None:
        return _constrained_posteriors(jp, marginals, edge_counts, threads)
    log_z = np.empty(jp.num_sequences)
    node = np.empty((jp.num_tokens, space.num_states)) if marginals else None
    redo = np.zeros(jp.num_sequences, dtype=np.int32)
    num_weights = sum(int(np.prod(space.transition_shape(k))) for k in range(len(space.components)))

    def job(first: int, last: int):
        chunk = _JointChunk(jp, first, last)
        counts = np.zeros(num_weights) if edge_counts else None
        kernel.joint_forward_backward(
            chunk.joint,
            chunk.batch,
            log_z[first:last],
            node[chunk.token_range] if node is not None else None,
            counts,
            redo[first:last],
            chunk.workspace,
        )
        return counts

    results = run_chunks(jp, threads, job)
    total = np.sum(results, axis=0) if edge_counts else None
    if redo.any():
        product = jp.to_product()
        for b in np.flatnonzero(redo):
            rows = jp.sentence(b)
            single = clamped_potentials(
                product.topology,
                product.emissions[rows],
                None,
                product.transitions,
                np.where(np.isfinite(product.start), product.start, 0.0),
                np.where(np.isfinite(product.final), product.final, 0.0),
            )
            exact = forward_backward(single, marginals=marginals, edge_counts=edge_counts)
            log_z[b] = exact.log_z[0]
            if node is not None:
                node[rows] = exact.node_marginals
            if total is not None:
                total += np.concatenate(
                    [c.ravel() for c in product_edge_counts(space, cast(np.ndarray, exact.edge_counts))]
                )
    if total is not None:
        blocks = np.cumsum([0] + [int(np.prod(space.transition_shape(k))) for k in range(len(space.components))])
        total = [total[lo:hi].reshape(space.transition_shape(k)) for k, (lo, hi) in enumerate(zip(blocks, blocks[1:]))]
    return JointPosteriors(log_z, node, total)


def path_posteriors(jp: JointPotentials, paths: np.ndarray) -> JointPosteriors:
    """The posteriors of the distribution that puts all its mass on one joint state
    path per sentence (int [N]): log_z [B] the paths' scores, one-hot node marginals
    [N, P] and the paths' component edge counts: what :func:`joint_posteriors` gives
    when ``jp`` is clamped to those paths, without running the forward-backward.
    InfeasibleError if a path leaves the joint space (a missing component edge, a
    state the space does not allow, a start or end it forbids)."""
    _check_joint(jp, "path_posteriors")
    space = jp.space
    if space.constraint is not None:
        raise CompositionError("path_posteriors: under a non-local joint constraint, clamp and use joint_posteriors")
    paths = np.asarray(paths, dtype=np.int64)
    if paths.shape != (jp.num_tokens,) or paths.min(initial=0) < 0 or paths.max(initial=0) >= space.num_states:
        raise ShapeError(f"paths must be joint states in [0, {space.num_states}) of shape ({jp.num_tokens},)")
    if space.allowed is not None and not space.allowed[paths].all():
        raise InfeasibleError("a joint path passes through a joint state the joint space does not allow")
    scores = jp.emissions[np.arange(jp.num_tokens), paths]
    before, after = neighbours(jp.offsets, jp.num_tokens)
    states = space.component_states(paths)  # [N, K]
    counts = []
    for k, topology in enumerate(space.components):
        edges = topology.edge_ids[states[before, k], states[after, k]]
        if np.any(edges < 0):
            raise InfeasibleError(f"a joint path takes a transition that component {k} does not have")
        lower = np.zeros(len(after), dtype=np.int64) if k == 0 else states[after, k - 1]
        scores[after] += jp.transitions[k][lower, edges]
        block = np.zeros(space.transition_shape(k))
        np.add.at(block, (lower, edges), 1.0)
        counts.append(block)
    firsts, lasts = jp.offsets[:-1], jp.offsets[1:] - 1
    bounds = jp.start[paths[firsts]] + jp.final[paths[lasts]]
    if not np.all(np.isfinite(scores)) or not np.all(np.isfinite(bounds)):
        raise InfeasibleError("a joint path passes through a joint state, start or end the joint space forbids")
    log_z = np.add.reduceat(scores, firsts) + bounds
    node = np.zeros((jp.num_tokens, space.num_states))
    node[np.arange(jp.num_tokens), paths] = 1.0
    return JointPosteriors(log_z, node, counts)


def _constrained_posteriors(jp: JointPotentials, marginals: bool, edge_counts: bool, threads: int) -> JointPosteriors:
    """joint_posteriors on the constrained product, summed back onto the joint space."""
    constrained = jp.space.constrained
    exact = forward_backward(constrained.potentials(jp), marginals=marginals, edge_counts=edge_counts, threads=threads)
    node = None if exact.node_marginals is None else constrained.joint_marginals(exact.node_marginals)
    counts = None
    if exact.edge_counts is not None:
        per_edge = np.bincount(
            constrained.product_edge, weights=exact.edge_counts, minlength=jp.space.product.num_edges
        )
        counts = product_edge_counts(jp.space, per_edge)
    return JointPosteriors(exact.log_z, node, counts)


def product_edge_counts(space: JointSpace, counts: np.ndarray) -> list[np.ndarray]:
    """Expected edge counts float [E_prod] of the dense cross product, summed
    into each component's (lower state, edge) counts float [L_k, E_k]."""
    lower_states = space.component_states(space.product.edge_dst)
    edges = space.product_edge_components
    result = []
    for k in range(len(space.components)):
        block = np.zeros(space.transition_shape(k))
        lower = np.zeros(len(edges), dtype=np.int64) if k == 0 else lower_states[:, k - 1]
        np.add.at(block, (lower, edges[:, k]), counts)
        result.append(block)
    return result


def joint_forward_backward(jp: JointPotentials, marginals: bool = True, threads: int = 1):
    """(log Z [B], joint node marginals [N, P] or None), factorised (see joint_posteriors)."""
    _check_joint(jp, "joint_forward_backward")
    result = joint_posteriors(jp, marginals=marginals, edge_counts=False, threads=threads)
    return result.log_z, result.node_marginals


def joint_viterbi(jp: JointPotentials, threads: int = 1) -> Viterbi:
    """Best joint state sequence [N] and its score [B], factorised (under a non-local
    constraint, on :attr:`JointSpace.constrained`)."""
    _check_joint(jp, "joint_viterbi")
    if jp.space.constraint is not None:
        constrained = jp.space.constrained
        best = viterbi(constrained.potentials(jp), threads=threads)
        return Viterbi(constrained.joint_state[best.paths].astype(np.int32), best.scores)
    paths = np.empty(jp.num_tokens, dtype=np.int32)
    scores = np.empty(jp.num_sequences)

    def job(first: int, last: int):
        chunk = _JointChunk(jp, first, last)
        kernel.joint_viterbi(chunk.joint, chunk.batch, paths[chunk.token_range], scores[first:last], chunk.workspace)

    run_chunks(jp, threads, job)
    return Viterbi(paths, scores)


def joint_kbest(jp: JointPotentials, k: int, threads: int = 1) -> KBest:
    """The k best joint state sequences, exactly, on the dense cross product (under
    a non-local constraint, the constrained one); k-best lists do not factorise,
    this costs O(P^2) per token."""
    _check_joint(jp, "joint_kbest")
    k = check_count(k, "k")
    budget.check_work(
        k * jp.num_tokens * jp.space.num_states,
        f"joint k-best lists (k={k}) over {jp.num_tokens} tokens and {jp.space.num_states} joint states",
    )
    if jp.space.constraint is None:
        return kbest(jp.to_product(), k, threads=threads)
    constrained = jp.space.constrained
    best = kbest(constrained.potentials(jp), k, threads=threads)
    paths = np.where(best.paths >= 0, constrained.joint_state[np.maximum(best.paths, 0)], -1).astype(np.int32)
    return KBest(paths, best.scores, best.found)


def joint_sample(jp: JointPotentials, num_samples: int, seed: int = 0, threads: int = 1) -> np.ndarray:
    """int32 [num_samples, N] exact joint draws, on the dense cross product (under a
    non-local constraint, the constrained one)."""
    _check_joint(jp, "joint_sample")
    num_samples = check_count(num_samples, "num_samples")
    budget.check_work(
        num_samples * jp.num_tokens * jp.space.num_states,
        f"{num_samples} joint samples over {jp.num_tokens} tokens and {jp.space.num_states} joint states",
    )
    if jp.space.constraint is None:
        return sample(jp.to_product(), num_samples, seed=seed, threads=threads)
    constrained = jp.space.constrained
    draws = sample(constrained.potentials(jp), num_samples, seed=seed, threads=threads)
    return constrained.joint_state[draws].astype(np.int32)


def _check_joint(jp, what: str) -> None:
    check_type(
        jp,
        JointPotentials,
        f"{what}: the potentials",
        "a JointPotentials (JointPotentials(space, emissions, ...) or JointModel.potentials(sentences))",
    )


def component_marginals(space: JointSpace, node_marginals: np.ndarray) -> list[np.ndarray]:
    """Per-component marginals [N, S_k] summed out of joint marginals [N, P]."""
    check_type(space, JointSpace, "space", "a JointSpace")
    tensor = node_marginals.reshape((len(node_marginals),) + space.sizes)
    axes = range(1, len(space.sizes) + 1)
    return [tensor.sum(axis=tuple(a for a in axes if a != k + 1)) for k in range(len(space.sizes))]
