"""The chain dynamic programs in plain torch, vectorised over the batch: any device
(CUDA included), any floating dtype, gradients by autograd.  They are also the
second oracle of the C kernel's path (:mod:`fstcrf.torch.compiled`).

Every function reads a :class:`~fstcrf.torch.structure.LabelStructure`'s tensors
``index`` and the scores of a padded batch:

    emissions    [B, T, S]  state scores (label scores lifted to states; padding rows
                            are ignored)
    lengths      [B]        int64, every length >= 1
    transitions  [E]        score of each allowed edge
    start, final [S]        finite; states the topology forbids are masked here

One pass per semiring: :func:`log_partition` (log), :func:`viterbi` (max),
:func:`kbest` (top-k), and :func:`sample` (forward filtering, backward sampling).
"""

from __future__ import annotations

import math

import torch


def log_sum_exp(scores: torch.Tensor, dim: int) -> torch.Tensor:
    """log sum exp along ``dim``; -inf where every entry is -inf, with zero (not
    NaN) gradients there."""
    peak = scores.detach().amax(dim=dim, keepdim=True)
    peak = torch.where(torch.isfinite(peak), peak, torch.zeros_like(peak))
    total = (scores - peak).exp().sum(dim)
    positive = total > 0
    logged = torch.log(torch.where(positive, total, torch.ones_like(total)))
    return torch.where(positive, logged, torch.full_like(total, -torch.inf)) + peak.squeeze(dim)


def masked_scores(index: dict, transitions: torch.Tensor, start: torch.Tensor, final: torch.Tensor):
    """(incoming edge scores [S, D] with -inf padding, start [S], final [S] with -inf
    where the topology forbids)."""
    incoming = torch.where(index["in_valid"], transitions[index["in_edge"]], -torch.inf)
    start = torch.where(index["start_mask"], start, -torch.inf)
    final = torch.where(index["final_mask"], final, -torch.inf)
    return incoming, start, final


def forward_table(index: dict, emissions, lengths, transitions, start, final) -> list[torch.Tensor]:
    """log alpha of every token, T tensors [B, S]; after a sentence's end its row stays
    that of its last token."""
    incoming, start, _ = masked_scores(index, transitions, start, final)
    alpha = start + emissions[:, 0]
    table = [alpha]
    for t in range(1, emissions.shape[1]):
        reached = log_sum_exp(alpha[:, index["in_src"]] + incoming, -1) + emissions[:, t]
        alpha = torch.where((lengths > t)[:, None], reached, alpha)
        table.append(alpha)
    return table


def log_partition(index: dict, emissions, lengths, transitions, start, final) -> torch.Tensor:
    """log Z [B]."""
    _, _, final_scores = masked_scores(index, transitions, start, final)
    alpha = forward_table(index, emissions, lengths, transitions, start, final)[-1]
    return log_sum_exp(alpha + final_scores, -1)


def viterbi(index: dict, emissions, lengths, transitions, start, final) -> tuple[torch.Tensor, torch.Tensor]:
    """(best state paths int64 [B, T], -1 after each end; their scores [B])."""
    incoming, start, final = masked_scores(index, transitions, start, final)
    batch, steps, num_states = emissions.shape
    alpha = start + emissions[:, 0]
    sources = index["in_src"].expand(batch, num_states, -1)
    pointers = []
    for t in range(1, steps):
        best, slot = (alpha[:, index["in_src"]] + incoming).max(-1)
        alpha = torch.where((lengths > t)[:, None], best + emissions[:, t], alpha)
        pointers.append(sources.gather(2, slot[..., None]).squeeze(2))
    scores, current = (alpha + final).max(-1)
    return backtrace(pointers, current, lengths), scores


def backtrace(pointers: list[torch.Tensor], current: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Paths int64 [..., T] from back pointers (T - 1 tensors [..., S] of predecessor
    states) and the last states [...]; -1 after each sentence's end."""
    steps = len(pointers) + 1
    path = torch.full((*current.shape, steps), -1, dtype=torch.long, device=current.device)
    for t in range(steps - 1, -1, -1):
        alive = lengths > t
        path[..., t] = torch.where(alive, current, -1)
        if t:
            flat = current.reshape(current.shape[0], math.prod(current.shape[1:]))
            previous = pointers[t - 1].gather(-1, flat).reshape(current.shape)
            current = torch.where(alive, previous, current)
    return path


def kbest(index: dict, emissions, lengths, transitions, start, final, k: int):
    """(the k best state paths int64 [B, k, T], -1 after each end and for paths that
    do not exist; their scores [B, k], -inf for those)."""
    incoming, start, final = masked_scores(index, transitions, start, final)
    batch, steps, num_states = emissions.shape
    first = torch.full((k,), -torch.inf, dtype=emissions.dtype, device=emissions.device)
    first[0] = 0
    alpha = (start + emissions[:, 0])[..., None] + first  # [B, S, k]: the r-th best prefix ending in s
    width = incoming.shape[1]
    sources = index["in_src"].expand(batch, num_states, -1)
    pointers = []  # T - 1 tensors [B, S * k]: the (state, rank) each prefix extends, as state * k + rank
    for t in range(1, steps):
        candidates = (alpha[:, index["in_src"], :] + incoming[..., None]).reshape(batch, num_states, width * k)
        best, chosen = top(candidates, k)
        alpha = torch.where((lengths > t)[:, None, None], best + emissions[:, t, :, None], alpha)
        previous = sources.gather(2, chosen // k) * k + chosen % k
        pointers.append(previous.reshape(batch, num_states * k))
    scores, ends = top((alpha + final[:, None]).reshape(batch, num_states * k), k)
    paths = backtrace(pointers, ends, lengths[:, None].expand(batch, k))
    paths = torch.where(paths >= 0, paths // k, paths)
    return torch.where(torch.isfinite(scores)[..., None], paths, -1), scores


def top(scores: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The k largest entries along the last axis and their indices, padded with -inf
    (index 0) where the axis is shorter than k."""
    best, chosen = scores.topk(min(k, scores.shape[-1]), dim=-1)
    missing = k - best.shape[-1]
    if missing:
        best = torch.nn.functional.pad(best, (0, missing), value=-torch.inf)
        chosen = torch.nn.functional.pad(chosen, (0, missing), value=0)
    return best, chosen


def sample(index: dict, emissions, lengths, transitions, start, final, num_samples: int, generator=None):
    """int64 [num_samples, B, T]: exact draws from p(y | x), -1 after each end."""
    incoming, _, final_scores = masked_scores(index, transitions, start, final)
    with torch.no_grad():
        table = forward_table(index, emissions, lengths, transitions, start, final)
        batch, num_states = table[0].shape
        current = gumbel_argmax((table[-1] + final_scores).expand(num_samples, batch, num_states), generator)
        steps = len(table)
        path = torch.full((num_samples, batch, steps), -1, dtype=torch.long, device=emissions.device)
        for t in range(steps - 1, -1, -1):
            alive = lengths > t
            path[..., t] = torch.where(alive, current, -1)
            if t:
                sources = index["in_src"][current]  # [M, B, D]
                previous = table[t - 1].expand(num_samples, batch, num_states).gather(2, sources)
                slot = gumbel_argmax(previous + incoming[current], generator)
                current = torch.where(alive, sources.gather(2, slot[..., None]).squeeze(2), current)
    return path


def gumbel_argmax(logits: torch.Tensor, generator=None) -> torch.Tensor:
    """int64 [...]: one draw from softmax(logits [..., K]) per row (the Gumbel-max trick)."""
    uniform = torch.rand(logits.shape, dtype=torch.float64, device=logits.device, generator=generator)
    noise = -torch.log(-torch.log(uniform.clamp_min(torch.finfo(torch.float64).tiny)))
    return (logits.double() + noise).argmax(-1)
