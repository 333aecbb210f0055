"""A batch as the torch layers take it, checked once: emissions [T, B, L] (or
[B, T, L] with ``batch_first``), gold tags [T, B] and a mask [T, B] whose on
steps form a prefix of each sequence.  The checks and their messages follow
pytorch-crf 0.7.2 where it has one; the rest raise fstcrf's typed errors.

Emissions are brought to the dtype the layer computes in,
``torch.promote_types(emissions' dtype, the scores' dtype)``: float16 or
bfloat16 emissions of a float32 layer (under ``torch.autocast``, say) are
scored in float32, as pytorch-crf's type promotion scores them.  A batch may
hold no sequence (B = 0), as in pytorch-crf; a sequence may not be empty."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch

from fstcrf.errors import ArgumentTypeError, EmptySequenceError, LabelError, ScoreError, ShapeError


@dataclass
class PaddedBatch:
    """emissions float [B, T, L] (the computing dtype); tags int64 [B, T] or None; mask bool [B, T];
    lengths int64 [B] and offsets int64 [B+1] (numpy) of the packed rows."""

    emissions: torch.Tensor
    tags: torch.Tensor | None
    mask: torch.Tensor
    lengths: np.ndarray
    offsets: np.ndarray
    batch_first: bool

    @property
    def num_sequences(self) -> int:
        return len(self.lengths)

    @property
    def device(self) -> torch.device:
        return self.emissions.device

    def lengths_tensor(self) -> torch.Tensor:
        return torch.as_tensor(self.lengths, device=self.device)

    @cached_property
    def flat_rows(self) -> torch.Tensor:
        """int64 [N]: the index b * T + t of each packed row in a flattened [B * T] axis."""
        steps = self.mask.shape[1]
        starts = np.arange(self.num_sequences, dtype=np.int64) * steps
        within = np.arange(int(self.offsets[-1]), dtype=np.int64) - np.repeat(self.offsets[:-1], self.lengths)
        return torch.from_numpy(np.repeat(starts, self.lengths) + within).to(self.device)

    @cached_property
    def inner_rows(self) -> np.ndarray:
        """int64 [N - B]: the packed rows that are not a sequence's first (each entered by a transition)."""
        inner = np.ones(int(self.offsets[-1]), dtype=bool)
        inner[self.offsets[:-1]] = False
        return np.flatnonzero(inner)

    def pack(self, padded: torch.Tensor) -> torch.Tensor:
        """[N, ...]: the rows of a [B, T, ...] tensor that the mask keeps, sentence after sentence."""
        return padded.reshape(-1, *padded.shape[2:]).index_select(0, self.flat_rows)

    def padded(self, rows: torch.Tensor, fill) -> torch.Tensor:
        """[B, T, ...] from packed rows [N, ...], ``fill`` where the mask is off."""
        flat = rows.new_full((self.mask.numel(), *rows.shape[1:]), fill)
        return flat.index_copy(0, self.flat_rows, rows).reshape(*self.mask.shape, *rows.shape[1:])

    def unpack(self, rows: torch.Tensor, fill) -> torch.Tensor:
        """:meth:`padded`, in the caller's layout ([T, B, ...] unless batch_first)."""
        padded = self.padded(rows, fill)
        return padded if self.batch_first else padded.transpose(0, 1)

    def sequence_of_rows(self) -> torch.Tensor:
        """int64 [N]: the sequence each packed row belongs to."""
        return torch.from_numpy(np.repeat(np.arange(self.num_sequences), self.lengths)).to(self.device)

    def split(self, rows: np.ndarray) -> list[list[int]]:
        """Packed integer rows [N] cut into one list per sequence (none for B = 0)."""
        rows = np.asarray(rows)
        return [rows[begin:end].tolist() for begin, end in zip(self.offsets[:-1], self.offsets[1:])]


def read_batch(
    emissions, num_tags: int, batch_first: bool, tags=None, mask=None, *, score_dtype: torch.dtype
) -> PaddedBatch:
    """Check a batch and bring it to the batch-first layout and to the dtype of
    emissions and scores ``score_dtype`` promoted together."""
    if not isinstance(emissions, torch.Tensor):
        raise ArgumentTypeError(f"emissions must be a torch.Tensor, got {type(emissions).__name__}")
    if emissions.dim() != 3:
        raise ShapeError(f"emissions must have dimension of 3, got {emissions.dim()}")
    if emissions.size(2) != num_tags:
        raise ShapeError(f"expected last dimension of emissions is {num_tags}, got {emissions.size(2)}")
    if not emissions.is_floating_point():
        raise ArgumentTypeError(f"emissions must be a floating-point tensor, got {emissions.dtype}")
    if tags is not None:
        _check_beside_emissions("tags", tags, emissions)
        if tags.is_floating_point() or tags.is_complex() or tags.dtype == torch.bool:
            raise ArgumentTypeError(f"tags must be an integer tensor (torch.long), got {tags.dtype}")
    if mask is not None:
        _check_beside_emissions("mask", mask, emissions)
        if mask.is_floating_point() or mask.is_complex():
            raise ArgumentTypeError(f"mask must be a bool or integer tensor, got {mask.dtype}")
    if emissions.size(1 if batch_first else 0) == 0:
        raise EmptySequenceError(
            f"emissions of shape {tuple(emissions.shape)} have no step; every sequence needs at least one token"
        )
    if not batch_first:
        emissions = emissions.transpose(0, 1)
        tags = None if tags is None else tags.transpose(0, 1)
        mask = None if mask is None else mask.transpose(0, 1)
    if mask is None:
        mask = torch.ones(emissions.shape[:2], dtype=torch.bool, device=emissions.device)
        lengths = np.full(mask.shape[0], mask.shape[1], dtype=np.int64)
    else:
        mask = mask.to(device=emissions.device) != 0
        lengths = checked_lengths(mask.cpu().numpy())
    emissions = emissions.to(torch.promote_types(emissions.dtype, score_dtype))
    batch = PaddedBatch(emissions, None, mask, lengths, np.concatenate([[0], np.cumsum(lengths)]), batch_first)
    check_finite(batch)
    if tags is not None:
        batch.tags = tags.to(device=emissions.device, dtype=torch.long)
        check_tags(batch.tags, batch.mask, num_tags)
    return batch


def _check_beside_emissions(name: str, tensor, emissions: torch.Tensor) -> None:
    """``tags`` or ``mask`` must be a tensor of the emissions' first two dimensions."""
    if not isinstance(tensor, torch.Tensor):
        raise ArgumentTypeError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
    if emissions.shape[:2] != tensor.shape:
        raise ShapeError(
            f"the first two dimensions of emissions and {name} must match, "
            f"got {tuple(emissions.shape[:2])} and {tuple(tensor.shape)}"
        )


def checked_lengths(mask: np.ndarray) -> np.ndarray:
    """int64 [B]: the length of each sequence of a mask bool [B, T] that is on for a
    prefix of each sequence (ShapeError otherwise)."""
    if not mask[:, 0].all():
        raise ShapeError("mask of the first timestep must all be on")
    on_again = mask & (np.cumsum(~mask, axis=1) > 0)
    if on_again.any():
        b, t = (int(i) for i in np.argwhere(on_again)[0])
        raise ShapeError(
            f"the mask of sequence {b} turns on again at step {t} after it was off: the on steps of each "
            "sequence must come first (pad at the end)"
        )
    return mask.sum(1).astype(np.int64)


def gold_tags(batch: PaddedBatch) -> torch.Tensor:
    """The batch's gold tags [B, T]; ArgumentTypeError if it was read without them."""
    if batch.tags is None:
        raise ArgumentTypeError("this needs gold tags, and the batch was given none")
    return batch.tags


def check_finite(batch: PaddedBatch) -> None:
    """ScoreError naming the first NaN or infinite emission the mask keeps."""
    if bool(torch.isfinite(batch.emissions.sum(dtype=torch.float64))):
        return  # a NaN or an infinity makes the sum one; float32 scores cannot overflow it
    finite = torch.isfinite(batch.emissions).all(-1) | ~batch.mask
    if not bool(finite.all()):
        b, t = (int(i) for i in torch.nonzero(~finite)[0])
        raise ScoreError(
            f"emissions of sequence {b} at step {t} are not finite "
            f"({batch.emissions[b, t].detach().cpu().tolist()[:8]}); scores must be finite numbers"
        )


def check_tags(tags: torch.Tensor, mask: torch.Tensor, num_tags: int) -> None:
    """LabelError naming the first gold tag int64 [B, T] outside [0, num_tags) that
    the mask [B, T] keeps."""
    bad = ((tags < 0) | (tags >= num_tags)) & mask
    if bool(bad.any()):
        b, t = (int(i) for i in torch.nonzero(bad)[0])
        raise LabelError(f"tag {int(tags[b, t])} of sequence {b} at step {t} is outside [0, {num_tags})")
