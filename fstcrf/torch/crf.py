"""``fstcrf.torch.CRF``: a linear-chain CRF layer with pytorch-crf's interface,
declared over any label topology.

``CRF(num_tags, batch_first=False)`` is a drop-in for ``torchcrf.CRF`` (0.7.2):
the same parameters, initialisation, methods, shapes and messages.
``CRF.from_labels(labels, scheme=..., grammar=..., order=...)`` builds the layer
over a topology instead: forbidden transitions are absent from the state graph,
emissions stay per label and are lifted to states, and the transition, start
and end scores are parameters over the allowed edges and states only.

Two engines compute the same numbers: ``"kernel"`` (fstcrf's C kernel, CPU
tensors, float64 inside, the GIL released, gradients of the first order only)
and ``"torch"`` (plain torch, any device, gradients of any order); ``"auto"``
takes the kernel for CPU tensors.  Both score in the emissions' and the
parameters' dtypes promoted together (float32 for half-precision emissions of a
float32 layer), as pytorch-crf does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

import numpy as np
import torch
from torch import nn

from fstcrf.engine import inference
from fstcrf.engine.constrained import constrain
from fstcrf.engine.constraints import resolve_batch
from fstcrf.engine.inference import Potentials
from fstcrf.engine.topology import Topology, first_order
from fstcrf.errors import ArgumentTypeError, FstcrfError, ShapeError
from fstcrf.torch import compiled, vectorised
from fstcrf.torch.batch import PaddedBatch, gold_tags, read_batch
from fstcrf.grammar.declaration import label_topology
from fstcrf.torch.structure import LabelStructure

ENGINES = ("auto", "kernel", "torch")
#: The arguments of the vectorised programs: (index, emissions, lengths, transitions, start, final).
ChainInputs = tuple[dict, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]
REDUCTIONS = ("none", "sum", "mean", "token_mean")


def check_engine(engine: str) -> str:
    if engine not in ENGINES:
        raise FstcrfError(f"invalid engine: {engine!r}; choose one of {', '.join(ENGINES)}")
    return engine


def uses_kernel(engine: str, device: torch.device) -> bool:
    """Whether a layer with ``engine`` runs the C kernel on tensors on ``device``
    (FstcrfError for the kernel engine on another device than the CPU)."""
    if engine == "torch":
        return False
    if device.type != "cpu":
        if engine == "kernel":
            raise FstcrfError(f"the kernel engine runs on CPU tensors; these are on {device} (use engine='torch')")
        return False
    return True


def runs_kernel(engine: str, batch: PaddedBatch) -> bool:
    """Whether a layer with ``engine`` runs the C kernel on a checked batch: as
    :func:`uses_kernel` says, unless the batch holds no sequence (the kernel needs
    one; the vectorised programs take B = 0 as it comes)."""
    return uses_kernel(engine, batch.device) and batch.num_sequences > 0


def thread_count(threads: int | None) -> int:
    """The kernel's threads: those given, else torch's."""
    return threads or max(1, torch.get_num_threads())


def reduced(llh: torch.Tensor, reduction: str, mask: torch.Tensor) -> torch.Tensor:
    """Log-likelihoods [B] reduced as pytorch-crf reduces them."""
    if reduction == "none":
        return llh
    if reduction == "sum":
        return llh.sum()
    if reduction == "mean":
        return llh.mean()
    return llh.sum() / mask.sum()


def path_scores(batch: PaddedBatch, tags: torch.Tensor, states: np.ndarray, moves: torch.Tensor, start, final):
    """[B]: the scores of packed tag paths: tags int64 [N] and their states [N], the
    score ``moves`` [N - B] of the transition into each of ``batch.inner_rows``,
    and the start and final scores [S]."""
    device = batch.device
    sequence = batch.sequence_of_rows()
    emitted = batch.pack(batch.emissions).gather(1, tags[:, None]).squeeze(1)
    total = emitted.new_zeros(batch.num_sequences).index_add(0, sequence, emitted)
    total = total.index_add(0, sequence[torch.as_tensor(batch.inner_rows, device=device)], moves.to(total.dtype))
    firsts = torch.as_tensor(states[batch.offsets[:-1]], device=device)
    lasts = torch.as_tensor(states[batch.offsets[1:] - 1], device=device)
    return total + start[firsts] + final[lasts]


def check_positive(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ArgumentTypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value <= 0:
        raise ShapeError(f"{name} must be at least 1, got {value}")
    return int(value)


class CRF(nn.Module):
    """Conditional random field over tag sequences.

    Args:
        num_tags: number of tags L.
        batch_first: whether tensors are [B, T, ...] instead of [T, B, ...].
        topology: the label topology (default: every tag may follow every tag);
            prefer :meth:`from_labels`.
        engine: ``"auto"``, ``"kernel"`` (the C kernel, CPU only) or ``"torch"``.
        threads: threads the kernel splits a batch over (default torch's).

    Attributes:
        start_transitions, end_transitions, transitions: ``nn.Parameter``.
            Without a topology, [L], [L] and [L, L] as in pytorch-crf; with one,
            [S0] (each start state), [SF] (each final state) and [E] (each
            allowed edge) of :attr:`structure`.
        structure: the :class:`~fstcrf.torch.structure.LabelStructure`.
    """

    def __init__(
        self,
        num_tags: int,
        batch_first: bool = False,
        *,
        topology: Topology | None = None,
        engine: str = "auto",
        threads: int | None = None,
    ) -> None:
        if isinstance(num_tags, bool) or not isinstance(num_tags, (int, np.integer)):
            raise ArgumentTypeError(f"num_tags must be an integer, got {type(num_tags).__name__}")
        if num_tags <= 0:
            raise ShapeError(f"invalid number of tags: {num_tags}")
        super().__init__()
        self.num_tags = int(num_tags)
        self.batch_first = batch_first
        self.engine = check_engine(engine)
        self.threads = None if threads is None else check_positive(threads, "threads")
        self.over_edges = topology is not None
        if topology is None:
            topology = first_order([str(i) for i in range(self.num_tags)])
        elif not isinstance(topology, Topology):
            raise ArgumentTypeError(f"topology must be a Topology, got {type(topology).__name__}")
        elif topology.num_labels != self.num_tags:
            raise ShapeError(f"the topology has {topology.num_labels} labels but num_tags is {self.num_tags}")
        self.structure = LabelStructure(topology)
        if self.over_edges:
            self.start_transitions = nn.Parameter(torch.empty(len(self.structure.start_states)))
            self.end_transitions = nn.Parameter(torch.empty(len(self.structure.final_states)))
            self.transitions = nn.Parameter(torch.empty(self.structure.num_edges))
        else:
            self.start_transitions = nn.Parameter(torch.empty(num_tags))
            self.end_transitions = nn.Parameter(torch.empty(num_tags))
            self.transitions = nn.Parameter(torch.empty(num_tags, num_tags))
        self.reset_parameters()

    @classmethod
    def from_labels(
        cls,
        labels: Sequence[str],
        scheme: str | None = None,
        grammar=None,
        order: int = 1,
        batch_first: bool = False,
        *,
        rule: str = "start",
        params: Mapping[str, str] | None = None,
        engine: str = "auto",
        threads: int | None = None,
    ) -> CRF:
        """The layer over ``labels`` (tag i is ``labels[i]``) restricted to a scheme
        (``"iob1"``, ``"iob2"``, ``"bioes"``) and/or a grammar (see
        :func:`~fstcrf.grammar.label_topology`), with states that remember
        the last ``order`` labels."""
        topology = label_topology(labels, scheme=scheme, grammar=grammar, order=order, rule=rule, params=params)
        return cls(len(topology.labels), batch_first, topology=topology, engine=engine, threads=threads)

    @property
    def labels(self) -> tuple[str, ...]:
        return self.structure.labels

    def reset_parameters(self) -> None:
        """Draw every score uniformly from [-0.1, 0.1], as pytorch-crf does."""
        for parameter in (self.start_transitions, self.end_transitions, self.transitions):
            nn.init.uniform_(parameter, -0.1, 0.1)

    def __repr__(self) -> str:
        if not self.over_edges:
            return f"{self.__class__.__name__}(num_tags={self.num_tags})"
        topology = self.structure.topology
        return (
            f"{self.__class__.__name__}(num_tags={self.num_tags}, topology={topology.name!r}, "
            f"states={topology.num_states}, edges={topology.num_edges})"
        )

    # -- scores ------------------------------------------------------------------
    def edge_scores(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(transitions [E], start [S], final [S]) over the structure's edges and
        states, zero at states where a path may not start or end."""
        index = self.structure.tensors(self.transitions.device)
        if not self.over_edges:
            return self.transitions[index["edge_src"], index["edge_dst"]], self.start_transitions, self.end_transitions
        zeros = self.transitions.new_zeros(self.structure.num_states)
        start = zeros.scatter(0, index["start_states"], self.start_transitions)
        final = zeros.scatter(0, index["final_states"], self.end_transitions)
        return self.transitions, start, final

    def transition_matrix(self) -> torch.Tensor:
        """[S, S]: the score of each transition between states, -inf where none exists."""
        transitions, _, _ = self.edge_scores()
        index = self.structure.tensors(transitions.device)
        S = self.structure.num_states
        matrix = transitions.new_full((S, S), -torch.inf)
        return matrix.index_put((index["edge_src"], index["edge_dst"]), transitions)

    def lift(self, label_scores: torch.Tensor) -> torch.Tensor:
        """[..., S] state scores from label scores [..., L]."""
        if self.structure.is_identity:
            return label_scores
        return label_scores.index_select(-1, self.structure.tensors(label_scores.device)["state_label"])

    def checked(self, emissions, tags=None, mask=None) -> PaddedBatch:
        """The batch, checked (see :func:`~fstcrf.torch.batch.read_batch`), after the
        engine is checked against its device; InfeasibleError, whatever the engine,
        for a sequence of a length the layer's structure allows no tags of."""
        if isinstance(emissions, torch.Tensor):
            uses_kernel(self.engine, emissions.device)
        batch = read_batch(
            emissions, self.num_tags, self.batch_first, tags=tags, mask=mask, score_dtype=self.transitions.dtype
        )
        self.structure.topology.check_lengths(batch.lengths)
        return batch

    def scores_on(self, batch: PaddedBatch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The edge scores [E] and the start and final scores [S] on the batch's device
        and in its dtype."""
        transitions, start, final = self.edge_scores()
        device, dtype = batch.device, batch.emissions.dtype
        return transitions.to(device, dtype), start.to(device, dtype), final.to(device, dtype)

    def kernel_potentials(self, batch: PaddedBatch, transitions, start, final) -> Potentials:
        """The kernel's potentials of a checked batch."""
        return compiled.potentials(
            self.structure.topology, self.lift(batch.pack(batch.emissions)), transitions, start, final, batch.lengths
        )

    def chain_inputs(self, batch: PaddedBatch, transitions, start, final, label_scores=None) -> ChainInputs:
        """The arguments of the vectorised programs: (index, state emissions [B, T, S],
        lengths [B], transitions, start, final); the state emissions are lifted from
        ``label_scores`` [B, T, L], else from the batch's, zero at padding."""
        if label_scores is None:
            label_scores = batch.emissions.masked_fill(~batch.mask[..., None], 0)
        index = self.structure.tensors(batch.device)
        return index, self.lift(label_scores), batch.lengths_tensor(), transitions, start, final

    # -- the pytorch-crf interface ---------------------------------------------------
    def forward(
        self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor | None = None, reduction: str = "sum"
    ) -> torch.Tensor:
        """The log-likelihood of gold ``tags`` [T, B] given ``emissions`` [T, B, L]
        ([B, T, ...] with batch_first): [B] with ``reduction="none"``, else a
        scalar (``sum``, ``mean`` over sequences, ``token_mean`` over tokens)."""
        batch = self.checked(emissions, tags=tags, mask=mask)
        if reduction not in REDUCTIONS:
            raise FstcrfError(f"invalid reduction: {reduction}")
        transitions, start, final = self.scores_on(batch)
        llh = self.gold_score(batch, transitions, start, final) - self.partition(batch, transitions, start, final)
        return reduced(llh, reduction, batch.mask)

    def decode(self, emissions: torch.Tensor, mask: torch.Tensor | None = None, constraints=None) -> list[list[int]]:
        """The best tag sequence of each sequence (Viterbi), as lists of tag indices.
        ``constraints``: one :class:`~fstcrf.engine.constraints.Constraints` (or None)
        per sequence, naming tags by :attr:`labels` ("0", "1", ... for a layer made
        with ``num_tags``); the kernel decodes under them (the scores are copied to
        the CPU first)."""
        if constraints is not None and isinstance(emissions, torch.Tensor):
            emissions, mask = emissions.cpu(), None if mask is None else mask.cpu()
        batch = self.checked(emissions, mask=mask)
        rules = resolve_batch(constraints, batch.lengths, self.labels, "CRF.decode")
        transitions, start, final = self.scores_on(batch)
        if rules is not None:
            pot = constrain(self.kernel_potentials(batch, transitions, start, final), rules).potentials
            states = inference.viterbi(pot, threads=thread_count(self.threads)).paths
            return batch.split(pot.topology.state_label[states])
        if runs_kernel(self.engine, batch):
            pot = self.kernel_potentials(batch, transitions, start, final)
            states = inference.viterbi(pot, threads=thread_count(self.threads)).paths
            return batch.split(self.structure.state_label[states])
        with torch.no_grad():
            paths, _ = vectorised.viterbi(*self.chain_inputs(batch, transitions, start, final))
        labels = self.structure.state_label[batch.pack(paths).cpu().numpy()]
        return batch.split(labels)

    # -- beyond Viterbi ----------------------------------------------------------------
    def log_partition(self, emissions: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """log Z [B], differentiable."""
        batch = self.checked(emissions, mask=mask)
        return self.partition(batch, *self.scores_on(batch))

    def marginals(self, emissions: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """p(tag l at step t | x), shaped as ``emissions``; 0 where the mask is off."""
        batch = self.checked(emissions, mask=mask)
        transitions, start, final = self.scores_on(batch)
        if runs_kernel(self.engine, batch):
            pot = self.kernel_potentials(batch, transitions, start, final)
            node = inference.forward_backward(pot, edge_counts=False, threads=thread_count(self.threads)).node_marginals
            per_label = np.zeros((pot.num_tokens, self.num_tags))
            np.add.at(per_label.T, self.structure.state_label, cast(np.ndarray, node).T)
            rows = torch.from_numpy(per_label).to(batch.emissions.dtype)
            return batch.unpack(rows, 0.0)
        with torch.enable_grad():
            label_scores = batch.emissions.detach().masked_fill(~batch.mask[..., None], 0).requires_grad_(True)
            scores = (transitions.detach(), start.detach(), final.detach())
            log_z = vectorised.log_partition(*self.chain_inputs(batch, *scores, label_scores=label_scores))
            (gradient,) = torch.autograd.grad(log_z.sum(), label_scores)
        return batch.unpack(batch.pack(gradient), 0.0)

    def kbest(
        self, emissions: torch.Tensor, k: int, mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The k best tag sequences, exactly: (tags int64 [k, T, B] ([k, B, T] with
        batch_first), -1 where masked and where a sequence has fewer than k paths;
        their scores [B, k], best first, -inf for paths that do not exist)."""
        k = check_positive(k, "k")
        batch = self.checked(emissions, mask=mask)
        transitions, start, final = self.scores_on(batch)
        state_label = torch.as_tensor(self.structure.state_label, device=batch.device)
        if runs_kernel(self.engine, batch):
            pot = self.kernel_potentials(batch, transitions, start, final)
            result = inference.kbest(pot, k, threads=thread_count(self.threads))
            rows = torch.from_numpy(result.paths.T.astype(np.int64))  # [N, k]
            tags = torch.where(rows >= 0, state_label[rows.clamp_min(0)], -1)
            return batch.unpack(tags, -1).movedim(-1, 0), torch.from_numpy(result.scores).to(batch.emissions.dtype)
        with torch.no_grad():
            paths, scores = vectorised.kbest(*self.chain_inputs(batch, transitions, start, final), k)
        tags = torch.where(paths >= 0, state_label[paths.clamp_min(0)], -1)  # [B, k, T]
        tags = tags.permute(1, 0, 2) if self.batch_first else tags.permute(1, 2, 0)
        return tags, scores

    def sample(
        self, emissions: torch.Tensor, num_samples: int, mask: torch.Tensor | None = None, seed: int | None = None
    ) -> torch.Tensor:
        """Exact draws from p(tags | emissions): int64 [num_samples, T, B] ([num_samples,
        B, T] with batch_first), -1 where masked.  ``seed`` makes them reproducible;
        without it the seed is drawn from torch's generator."""
        num_samples = check_positive(num_samples, "num_samples")
        batch = self.checked(emissions, mask=mask)
        if seed is None:
            seed = int(torch.randint(0, 2**62, (1,)).item())
        elif isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**63:
            raise ArgumentTypeError(f"seed must be an integer in [0, 2**63), got {seed!r}")
        transitions, start, final = self.scores_on(batch)
        state_label = torch.as_tensor(self.structure.state_label, device=batch.device)
        if runs_kernel(self.engine, batch):
            pot = self.kernel_potentials(batch, transitions, start, final)
            states = inference.sample(pot, num_samples, seed=int(seed), threads=thread_count(self.threads))
            rows = state_label[torch.from_numpy(states.T.astype(np.int64))]  # [N, M]
            return batch.unpack(rows, -1).movedim(-1, 0)
        generator = torch.Generator(device=batch.device).manual_seed(int(seed))
        scores = (transitions.detach(), start.detach(), final.detach())
        paths = vectorised.sample(*self.chain_inputs(batch, *scores), num_samples, generator)
        tags = torch.where(paths >= 0, state_label[paths.clamp_min(0)], -1)  # [M, B, T]
        return tags if self.batch_first else tags.transpose(1, 2)

    # -- the two terms of the likelihood ---------------------------------------------------
    def partition(self, batch: PaddedBatch, transitions, start, final) -> torch.Tensor:
        """log Z [B] of a checked batch."""
        if runs_kernel(self.engine, batch):
            return compiled.LogPartition.apply(
                self.lift(batch.pack(batch.emissions)),
                transitions,
                start,
                final,
                self.structure.topology,
                batch.lengths,
                thread_count(self.threads),
            )
        return vectorised.log_partition(*self.chain_inputs(batch, transitions, start, final))

    def gold_score(self, batch: PaddedBatch, transitions, start, final) -> torch.Tensor:
        """[B]: the score of the gold tags of a checked batch (LabelError if the
        topology rejects them)."""
        tags = batch.pack(gold_tags(batch))  # [N]
        states = self.structure.gold_states(tags.cpu().numpy(), batch.offsets)
        rows = batch.inner_rows
        edges = torch.as_tensor(self.structure.edge_id[states[rows - 1], states[rows]], device=batch.device)
        return path_scores(batch, tags, states, transitions[edges], start, final)
