"""The chain dynamic programs through fstcrf's C kernel, for CPU tensors.

Scores arrive packed: the B sentences' tokens concatenated (N rows), as the
kernel reads them (:mod:`fstcrf.engine.inference`):

    emissions    [N, S]   state scores of each token
    transitions  [E]      score of each allowed edge
    start, final [S]      finite; the topology masks forbidden states
    lengths      int64 [B] (numpy)

:class:`LogPartition` is the differentiable log Z: its backward is the node
marginals and expected edge counts the kernel's forward-backward returns (the
gradient of log Z), weighted per sentence.  The kernel computes in float64,
releases the GIL and splits a batch over ``threads`` Python threads; the
layers run its Viterbi, k-best and sampling on :func:`potentials` directly.
That gradient is computed outside autograd, so it has no gradient of its own:
a backward that builds a graph (``create_graph=True``) raises
(:func:`refuse_higher_order`) rather than return a gradient that is silently
constant.
"""

from __future__ import annotations

import numpy as np
import torch

from fstcrf.engine.inference import Potentials, forward_backward
from fstcrf.engine.topology import Topology
from fstcrf.errors import FstcrfError


def as_float64(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().to(torch.float64).contiguous().numpy()


def potentials(topology: Topology, emissions, transitions, start, final, lengths: np.ndarray) -> Potentials:
    """The kernel's Potentials of packed torch scores."""
    return Potentials(
        topology, as_float64(emissions), lengths, as_float64(transitions), as_float64(start), as_float64(final)
    )


class LogPartition(torch.autograd.Function):
    """log Z [B] of packed scores; differentiable in emissions, transitions, start, final."""

    @staticmethod
    def forward(ctx, emissions, transitions, start, final, topology: Topology, lengths: np.ndarray, threads: int):
        pot = potentials(topology, emissions, transitions, start, final, lengths)
        needed = any(ctx.needs_input_grad[:4])
        result = forward_backward(pot, marginals=needed, edge_counts=needed, threads=threads, each_sentence=True)
        ctx.result, ctx.offsets = result, pot.offsets
        return torch.from_numpy(result.log_z).to(emissions.dtype)

    @staticmethod
    def backward(ctx, grad):
        refuse_higher_order("CRF")
        weight = as_float64(grad)  # [B]
        d_emissions, d_start, d_final = node_gradients(ctx.result.node_marginals, weight, ctx.offsets)
        d_transitions = weight @ ctx.result.edge_counts
        return (*as_tensors((d_emissions, d_transitions, d_start, d_final), grad.dtype), None, None, None)


def refuse_higher_order(layer: str) -> None:
    """FstcrfError if a backward through the kernel runs with ``create_graph=True``
    (autograd then enables grad mode inside backward)."""
    if torch.is_grad_enabled():
        raise FstcrfError(
            f"the kernel engine's log Z is differentiable once: its gradient comes from the C kernel, "
            f"outside autograd, and would have no gradient of its own (create_graph=True, a gradient "
            f"penalty, Hessian-vector products); build the layer with {layer}(..., engine='torch') "
            "for higher-order gradients"
        )


def node_gradients(node: np.ndarray, weight: np.ndarray, offsets: np.ndarray):
    """The gradients of sum_b weight[b] log Z_b in the emissions [N, S], start [S]
    and final [S] scores, from the node marginals [N, S] of sentences cut at offsets."""
    d_emissions = node * np.repeat(weight, np.diff(offsets))[:, None]
    return d_emissions, weight @ node[offsets[:-1]], weight @ node[offsets[1:] - 1]


def as_tensors(arrays, dtype) -> list[torch.Tensor]:
    return [torch.from_numpy(np.ascontiguousarray(array)).to(dtype) for array in arrays]
