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
releases the GIL and splits a batch over ``threads`` Python threads.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import torch

from fstcrf.engine.inference import Potentials, forward_backward, kbest, sample, viterbi
from fstcrf.engine.topology import Topology


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
        weight = as_float64(grad)  # [B]
        node, counts, offsets = ctx.result.node_marginals, ctx.result.edge_counts, ctx.offsets
        firsts, lasts = offsets[:-1], offsets[1:] - 1
        d_emissions = node * np.repeat(weight, np.diff(offsets))[:, None]
        d_transitions = weight @ counts
        d_start = weight @ node[firsts]
        d_final = weight @ node[lasts]
        dtype = grad.dtype
        return (
            *(
                torch.from_numpy(np.ascontiguousarray(d)).to(dtype)
                for d in (d_emissions, d_transitions, d_start, d_final)
            ),
            None,
            None,
            None,
        )


def node_marginals(topology: Topology, emissions, transitions, start, final, lengths, threads: int) -> np.ndarray:
    """float64 [N, S]: p(state s at token n | x)."""
    pot = potentials(topology, emissions, transitions, start, final, lengths)
    return cast(np.ndarray, forward_backward(pot, marginals=True, edge_counts=False, threads=threads).node_marginals)


def best_paths(topology: Topology, emissions, transitions, start, final, lengths, threads: int):
    """(best states int32 [N], their scores float64 [B])."""
    result = viterbi(potentials(topology, emissions, transitions, start, final, lengths), threads=threads)
    return result.paths, result.scores


def k_best_paths(topology: Topology, emissions, transitions, start, final, lengths, k: int, threads: int):
    """(the k best state paths int32 [k, N], -1 where one does not exist; scores [B, k])."""
    result = kbest(potentials(topology, emissions, transitions, start, final, lengths), k, threads=threads)
    return result.paths, result.scores


def sampled_paths(topology: Topology, emissions, transitions, start, final, lengths, num_samples, seed, threads):
    """int32 [num_samples, N]: exact draws of state paths."""
    pot = potentials(topology, emissions, transitions, start, final, lengths)
    return sample(pot, num_samples, seed=seed, threads=threads)
