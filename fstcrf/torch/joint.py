"""``fstcrf.torch.JointCRF``: several CRF layers over the same tokens, trained and
decoded jointly as one module (a factorial CRF, Sutton, Rohanimanesh & McCallum
2004).

The joint state is the tuple of the components' states (P = prod S_k states).
Its score is the sum of the components' scores, with two couplings:

* ``reads[k]``: component k's transition scores also depend on component
  k-1's state at the new token (a parameter ``lower_transitions_k`` of shape
  [S_{k-1}, E_k], added to the component's own [E_k] scores);
* ``compatible``: which label tuples may occur at one token (bool
  [L_0, ..., L_{n-1}], e.g. "a named entity only inside a noun phrase").

On CPU tensors log Z and its gradient come from the kernel's factorised joint
forward-backward (:func:`fstcrf.engine.joint.joint_posteriors`: joint node
marginals and, per component, expected (lower state, edge) counts); on other
devices, from the vectorised chain programs over the dense product topology.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np
import torch
from torch import nn

from fstcrf.engine.joint import JointPotentials, JointSpace, joint_posteriors, joint_viterbi
from fstcrf.errors import ArgumentTypeError, CompositionError, FstcrfError, LabelError, ShapeError
from fstcrf.torch import vectorised
from fstcrf.torch.batch import PaddedBatch, check_tags, gold_tags, read_batch
from fstcrf.torch.compiled import as_float64, as_tensors, node_gradients, refuse_higher_order
from fstcrf.torch.crf import (
    CRF,
    REDUCTIONS,
    ChainInputs,
    check_engine,
    check_positive,
    path_scores,
    reduced,
    runs_kernel,
    thread_count,
    uses_kernel,
)
from fstcrf.torch.structure import LabelStructure


class JointCRF(nn.Module):
    """Components decoded and trained jointly.

    Args:
        layers: N >= 1 :class:`~fstcrf.torch.CRF` layers (their parameters are
            this module's), all with the same ``batch_first``.
        reads: N flags; ``reads[k]`` (k >= 1) lets component k's transitions read
            component k-1's state (default: none read).
        compatible: bool [L_0, ..., L_{N-1}], the label tuples allowed at a token
            (default: all).
        engine, threads: as for :class:`~fstcrf.torch.CRF`.
    """

    def __init__(
        self,
        layers: Sequence[CRF],
        reads: Sequence[bool] | None = None,
        compatible=None,
        *,
        engine: str = "auto",
        threads: int | None = None,
    ):
        super().__init__()
        if isinstance(layers, CRF) or not isinstance(layers, Sequence) or not layers:
            raise ArgumentTypeError("layers must be a non-empty sequence of fstcrf.torch.CRF layers")
        for k, layer in enumerate(layers):
            if not isinstance(layer, CRF):
                raise ArgumentTypeError(f"layers[{k}] must be an fstcrf.torch.CRF, got {type(layer).__name__}")
        if len({layer.batch_first for layer in layers}) > 1:
            raise CompositionError("the layers disagree on batch_first")
        self.layers = nn.ModuleList(layers)
        self.crfs: tuple[CRF, ...] = tuple(layers)  # the same layers, typed
        self.batch_first = layers[0].batch_first
        self.engine = check_engine(engine)
        self.threads = None if threads is None else check_positive(threads, "threads")
        reads = [False] * len(layers) if reads is None else [bool(r) for r in reads]
        if len(reads) != len(layers) or reads[0]:
            raise CompositionError(f"reads needs {len(layers)} flags, and the first layer reads no other")
        self.reads = tuple(reads)
        structures = [layer.structure for layer in layers]
        self.lower_transitions = nn.ParameterList(
            [
                nn.Parameter(torch.zeros(structures[k - 1].num_states, structures[k].num_edges)) if read else None
                for k, read in enumerate(self.reads)
            ]
        )
        allowed = None if compatible is None else self._allowed_states(compatible, structures)
        self.space = JointSpace([s.topology for s in structures], allowed)
        self._product: LabelStructure | None = None

    @staticmethod
    def _allowed_states(compatible, structures: list[LabelStructure]) -> np.ndarray:
        """bool [P] from the allowed label tuples bool [L_0, ..., L_{N-1}]."""
        table = np.asarray(compatible.cpu() if isinstance(compatible, torch.Tensor) else compatible)
        shape = tuple(s.num_labels for s in structures)
        if table.shape != shape or table.dtype != bool:
            raise ShapeError(f"compatible must be a bool array of shape {shape} (one axis per layer's labels)")
        grids = np.meshgrid(*[s.state_label for s in structures], indexing="ij")
        return table[tuple(grids)].ravel()

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    def product(self) -> LabelStructure:
        """The structure of the dense product topology (the torch engine's state space)."""
        if self._product is None:
            self._product = LabelStructure(self.space.product)
        return self._product

    # -- scores ------------------------------------------------------------------------------
    def component_transitions(self) -> list[torch.Tensor]:
        """N tensors: the k-th [L_k, E_k] (L_0 = 1), the score of component k's edge e
        when component k-1 is in state l at the new token."""
        result = []
        for k, layer in enumerate(self.crfs):
            own = layer.edge_scores()[0]
            lower = self.lower_transitions[k]
            result.append(own[None, :] if lower is None else own[None, :] + lower)
        return result

    def joint_scores(self, batch: list[PaddedBatch]):
        """(packed joint emissions [N, P], joint start [P], joint final [P], the
        components' transitions)."""
        starts, finals, emissions = [], [], []
        for layer, part in zip(self.crfs, batch):
            _, start, final = layer.edge_scores()
            starts.append(start)
            finals.append(final)
            emissions.append(layer.lift(part.pack(part.emissions)))
        return (
            broadcast_sum(emissions, 1),
            broadcast_sum(starts, 0),
            broadcast_sum(finals, 0),
            self.component_transitions(),
        )

    def product_transitions(self, transitions: list[torch.Tensor]) -> torch.Tensor:
        """[E_prod]: each product edge's score, the sum of its component edges' scores."""
        device = transitions[0].device
        edges = torch.as_tensor(self.space.product_edge_components, device=device)
        lower = torch.as_tensor(self.space.component_states(self.space.product.edge_dst), device=device)
        total = transitions[0][0, edges[:, 0]]
        for k in range(1, self.num_layers):
            rows = lower[:, k - 1] if transitions[k].shape[0] > 1 else torch.zeros_like(edges[:, k])
            total = total + transitions[k][rows, edges[:, k]]
        return total

    # -- checks ---------------------------------------------------------------------------------
    def checked(self, emissions, tags=None, mask=None) -> list[PaddedBatch]:
        """Each layer's batch, checked as :meth:`CRF.checked` checks one, and all of the same
        batch size and steps."""
        if isinstance(emissions, torch.Tensor) or not isinstance(emissions, Sequence):
            raise ArgumentTypeError("emissions must be a sequence of tensors, one per layer")
        if len(emissions) != self.num_layers or (tags is not None and len(tags) != self.num_layers):
            raise ShapeError(f"expected emissions (and tags) for each of the {self.num_layers} layers")
        parts: list[PaddedBatch] = []
        for k, layer in enumerate(self.crfs):
            if isinstance(emissions[k], torch.Tensor):
                uses_kernel(self.engine, emissions[k].device)
            layer_tags = None if tags is None else tags[k]
            score_dtype = layer.transitions.dtype
            part = read_batch(emissions[k], layer.num_tags, self.batch_first, layer_tags, mask, score_dtype=score_dtype)
            if parts and part.emissions.shape[:2] != parts[0].emissions.shape[:2]:
                raise ShapeError(
                    f"layer {k}'s emissions cover {tuple(part.emissions.shape[:2])} (batch, steps), "
                    f"layer 0's {tuple(parts[0].emissions.shape[:2])}"
                )
            if part.tags is not None:
                check_tags(part.tags, part.mask, layer.num_tags)
            parts.append(part)
        return parts

    # -- the interface -------------------------------------------------------------------------
    def forward(self, emissions, tags, mask=None, reduction: str = "sum") -> torch.Tensor:
        """The joint log-likelihood of the gold tags of every layer (lists of N
        tensors [T, B, L_k] and [T, B]); reductions as :meth:`CRF.forward`."""
        parts = self.checked(emissions, tags, mask)
        if reduction not in REDUCTIONS:
            raise FstcrfError(f"invalid reduction: {reduction}")
        joint_emissions, start, final, transitions = self.joint_scores(parts)
        gold = self.gold_score(parts, transitions)
        llh = gold - self.partition(parts[0], joint_emissions, start, final, transitions)
        return reduced(llh, reduction, parts[0].mask)

    def log_partition(self, emissions, mask=None) -> torch.Tensor:
        """log Z [B] of the joint model, differentiable."""
        parts = self.checked(emissions, None, mask)
        return self.partition(parts[0], *self.joint_scores(parts))

    def decode(self, emissions, mask=None) -> list[list[list[int]]]:
        """The best joint tag sequences: one list per layer of one list per sequence."""
        parts = self.checked(emissions, None, mask)
        joint_emissions, start, final, transitions = self.joint_scores(parts)
        batch = parts[0]
        if runs_kernel(self.engine, batch):
            jp = self.potentials(batch.lengths, joint_emissions, start, final, transitions)
            states = joint_viterbi(jp, thread_count(self.threads)).paths
        else:
            with torch.no_grad():
                paths, _ = vectorised.viterbi(*self.chain_inputs(batch, joint_emissions, start, final, transitions))
            states = batch.pack(paths).cpu().numpy()
        per_layer = self.space.component_states(states)  # [N, layers]
        return [batch.split(layer.structure.state_label[per_layer[:, k]]) for k, layer in enumerate(self.crfs)]

    def marginals(self, emissions, mask=None) -> list[torch.Tensor]:
        """Each layer's p(tag l at step t | x) under the joint model, shaped as its emissions."""
        parts = self.checked(emissions, None, mask)
        with torch.enable_grad():
            leaves = [part.emissions.detach().requires_grad_(True) for part in parts]
            for part, leaf in zip(parts, leaves):
                part.emissions = leaf
            joint_emissions, start, final, transitions = self.joint_scores(parts)
            log_z = self.partition(
                parts[0], joint_emissions, start.detach(), final.detach(), [t.detach() for t in transitions]
            )
            gradients = torch.autograd.grad(log_z.sum(), leaves)
        return [part.unpack(part.pack(gradient), 0.0) for part, gradient in zip(parts, gradients)]

    # -- the two terms of the likelihood ---------------------------------------------------------
    def potentials(self, lengths: np.ndarray, joint_emissions, start, final, transitions) -> JointPotentials:
        """The kernel's joint potentials of packed joint emissions [N, P] of sequences of ``lengths``."""
        return JointPotentials(
            self.space,
            as_float64(joint_emissions),
            lengths,
            [as_float64(t[0] if t.shape[0] == 1 else t) for t in transitions],
            as_float64(start),
            as_float64(final),
        )

    def chain_inputs(self, batch: PaddedBatch, joint_emissions, start, final, transitions) -> ChainInputs:
        """The arguments of the vectorised programs over the dense product topology."""
        return (
            self.product().tensors(batch.device),
            batch.padded(joint_emissions, 0.0),
            batch.lengths_tensor(),
            self.product_transitions(transitions),
            start,
            final,
        )

    def partition(self, batch: PaddedBatch, joint_emissions, start, final, transitions) -> torch.Tensor:
        """log Z [B]."""
        if runs_kernel(self.engine, batch):
            return JointLogPartition.apply(self, batch, joint_emissions, start, final, *transitions)
        return vectorised.log_partition(*self.chain_inputs(batch, joint_emissions, start, final, transitions))

    def gold_score(self, parts: list[PaddedBatch], transitions: list[torch.Tensor]) -> torch.Tensor:
        """[B]: the joint score of the gold tags (LabelError where a layer's topology or
        the compatibility relation rejects them)."""
        batch = parts[0]
        tags = [part.pack(gold_tags(part)) for part in parts]
        states = [layer.structure.gold_states(t.cpu().numpy(), batch.offsets) for layer, t in zip(self.crfs, tags)]
        if self.space.allowed is not None:
            joint = self.space.joint_state(np.stack(states, -1))
            refused = np.flatnonzero(~self.space.allowed[joint])
            if len(refused):
                row = int(refused[0])
                b = int(np.searchsorted(batch.offsets, row, side="right") - 1)
                raise LabelError(
                    f"the gold tags of sequence {b} at step {row - int(batch.offsets[b])} form a label tuple "
                    "the compatibility relation does not allow"
                )
        rows = batch.inner_rows
        device = batch.device
        scores = []
        for k, (layer, part) in enumerate(zip(self.crfs, parts)):
            _, start, final = layer.edge_scores()
            edges = layer.structure.edge_id[states[k][rows - 1], states[k][rows]]
            lower = states[k - 1][rows] if transitions[k].shape[0] > 1 else np.zeros(len(rows), dtype=np.int64)
            moves = transitions[k][torch.as_tensor(lower, device=device), torch.as_tensor(edges, device=device)]
            scores.append(path_scores(part, tags[k], states[k], moves, start, final))
        return torch.stack(scores).sum(0)


def broadcast_sum(tensors: list[torch.Tensor], leading: int) -> torch.Tensor:
    """[..., prod S_k]: the sum of N tensors [..., S_k] over the product of their
    last axes (row-major: the last tensor's axis varies fastest); ``leading`` is the
    number of leading axes they share."""
    count = len(tensors)
    terms = []
    for k, tensor in enumerate(tensors):
        shape = list(tensor.shape[:leading]) + [1] * count
        shape[leading + k] = tensor.shape[-1]
        terms.append(tensor.reshape(shape))
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return total.flatten(leading)


class JointLogPartition(torch.autograd.Function):
    """log Z [B] of a joint batch through the kernel's factorised forward-backward;
    the backward weights the joint marginals and component edge counts by the
    incoming gradient per sequence."""

    @staticmethod
    def forward(ctx, module: JointCRF, batch: PaddedBatch, joint_emissions, start, final, *transitions):
        jp = module.potentials(batch.lengths, joint_emissions, start, final, transitions)
        needed = any(ctx.needs_input_grad[2:])
        result = joint_posteriors(jp, marginals=needed, edge_counts=needed, threads=thread_count(module.threads))
        ctx.module, ctx.batch, ctx.result = module, batch, result
        ctx.scores = (joint_emissions.detach(), start.detach(), final.detach(), [t.detach() for t in transitions])
        return torch.from_numpy(result.log_z).to(joint_emissions.dtype)

    @staticmethod
    def backward(ctx, grad):
        refuse_higher_order("JointCRF")
        weight = as_float64(grad)
        module, batch, result = ctx.module, ctx.batch, ctx.result
        offsets = batch.offsets
        d_emissions, d_start, d_final = node_gradients(result.node_marginals, weight, offsets)
        if np.all(weight == weight[0]):
            counts = [weight[0] * c for c in cast(list, result.edge_counts)]
        else:  # sequences weighted differently: the counts of each group of equal weights
            joint_emissions, start, final, transitions = ctx.scores
            counts = [np.zeros_like(c) for c in cast(list, result.edge_counts)]
            for value in np.unique(weight):
                group = np.flatnonzero(weight == value)
                rows = np.concatenate([np.arange(offsets[b], offsets[b + 1]) for b in group])
                part = module.potentials(batch.lengths[group], joint_emissions[rows], start, final, transitions)
                edge_counts = joint_posteriors(part, marginals=False, threads=thread_count(module.threads)).edge_counts
                for total, count in zip(counts, cast(list, edge_counts)):
                    total += value * count
        # a layer that reads no other has one row of transition scores: its counts summed over the lower states
        counts = [c.sum(0, keepdims=True) if t.shape[0] == 1 else c for c, t in zip(counts, ctx.scores[3])]
        return (None, None, *as_tensors((d_emissions, d_start, d_final, *counts), grad.dtype))
