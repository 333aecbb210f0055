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
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import cast
from collections.abc import Sequence

import numpy as np

from fstcrf.engine import budget, kernel
from fstcrf.errors import CompositionError, ShapeError
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
    sample,
)
from fstcrf.engine.topology import Topology


class JointSpace:
    """The product of component topologies, optionally restricted.

    Args:
        components: N >= 1 topologies.
        allowed: bool [P] joint states that may occur (default all), e.g. the
            pairs a compatibility relation between label sets admits.
    """

    def __init__(self, components: Sequence[Topology], allowed=None):
        check_type(components, (list, tuple), "components", "a list of Topology")
        self.components = tuple(components)
        if not self.components:
            raise CompositionError("a joint space needs at least one component")
        for k, topology in enumerate(self.components):
            check_type(topology, Topology, f"components[{k}]", "a Topology")
        if len(self.components) > 64:
            raise CompositionError("at most 64 components can be composed")
        self.sizes = tuple(t.num_states for t in self.components)
        self.num_states = int(np.prod(self.sizes))
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
        its own; with one, the dense product is built and checked."""
        if self.allowed is not None:
            self.product.check_lengths(lengths)
            return
        for topology in self.components:
            topology.check_lengths(lengths)

    @property
    def product(self) -> Topology:
        """The dense cross-product topology (edges = products of component edges)."""
        return self._product[0]

    @property
    def product_edge_components(self) -> np.ndarray:
        """int [E_prod, N]: the component edges behind each product edge."""
        return self._product[1]

    @cached_property
    def _product(self) -> tuple[Topology, np.ndarray]:
        budget.check_states(self.num_states, "the dense cross product of the components")
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


def joint_emissions(space: JointSpace, component_emissions: Sequence[np.ndarray]) -> np.ndarray:
    """float [N, P]: the sum of component emissions.

    The k-th array is [N, S_k], or [N, L_k, S_k] when component k's emission
    depends on the state of component k-1 at the same token (a cascaded
    model reading the lower model's label)."""
    if len(component_emissions) != len(space.components):
        raise ShapeError(f"expected {len(space.components)} emission arrays, got {len(component_emissions)}")
    N = len(component_emissions[0])
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
            self.transitions.append(as_float_array(f"transitions[{k}]", scores, shape))
        self.start = np.where(
            space.start, as_float_array("start", np.zeros(P) if start is None else start, (P,)), -np.inf
        )
        self.final = np.where(
            space.final, as_float_array("final", np.zeros(P) if final is None else final, (P,)), -np.inf
        )
        space.check_lengths(self.lengths)

    def to_product(self) -> Potentials:
        """The same scores on the dense cross-product topology (oracle, k-best, sampling)."""
        space = self.space
        edge_components = space.product_edge_components
        lower_states = space.component_states(space.product.edge_dst)
        trans = np.zeros(len(edge_components))
        for k in range(len(space.components)):
            lower = np.zeros(len(trans), dtype=np.int64) if k == 0 else lower_states[:, k - 1]
            trans += self.transitions[k][lower, edge_components[:, k]]
        return Potentials(
            space.product,
            self.emissions,
            self.lengths,
            trans,
            np.where(np.isfinite(self.start), self.start, 0.0),
            np.where(np.isfinite(self.final), self.final, 0.0),
        )


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
    """log Z, joint node marginals and expected component edge counts, factorised.

    Sentences whose scores spread too widely for the linear domain are redone
    exactly on the dense cross-product topology."""
    _check_joint(jp, "joint_posteriors")
    marginals = check_flag(marginals, "marginals")
    edge_counts = check_flag(edge_counts, "edge_counts")
    space = jp.space
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
            single = Potentials(
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
    """Best joint state sequence [N] and its score [B], factorised."""
    _check_joint(jp, "joint_viterbi")
    paths = np.empty(jp.num_tokens, dtype=np.int32)
    scores = np.empty(jp.num_sequences)

    def job(first: int, last: int):
        chunk = _JointChunk(jp, first, last)
        kernel.joint_viterbi(chunk.joint, chunk.batch, paths[chunk.token_range], scores[first:last], chunk.workspace)

    run_chunks(jp, threads, job)
    return Viterbi(paths, scores)


def joint_kbest(jp: JointPotentials, k: int, threads: int = 1) -> KBest:
    """The k best joint state sequences, exactly, on the dense cross product
    (k-best lists do not factorise; this costs O(P^2) per token)."""
    _check_joint(jp, "joint_kbest")
    k = check_count(k, "k")
    budget.check_work(
        k * jp.num_tokens * jp.space.num_states,
        f"joint k-best lists (k={k}) over {jp.num_tokens} tokens and {jp.space.num_states} joint states",
    )
    return kbest(jp.to_product(), k, threads=threads)


def joint_sample(jp: JointPotentials, num_samples: int, seed: int = 0, threads: int = 1) -> np.ndarray:
    """int32 [num_samples, N] exact joint draws, on the dense cross product."""
    _check_joint(jp, "joint_sample")
    num_samples = check_count(num_samples, "num_samples")
    budget.check_work(
        num_samples * jp.num_tokens * jp.space.num_states,
        f"{num_samples} joint samples over {jp.num_tokens} tokens and {jp.space.num_states} joint states",
    )
    return sample(jp.to_product(), num_samples, seed=seed, threads=threads)


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
