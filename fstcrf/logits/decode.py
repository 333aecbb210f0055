"""Any model's per-token logits decoded under a tagging scheme or a grammar, with
numpy and the C kernel only (no torch).

Each token's logits become its labels' log-probabilities (``log_softmax``), lifted
to the states of the declared topology (:func:`fstcrf.grammar.label_topology`);
optional label transition, start and end scores are added, and the kernel's
Viterbi returns the best label sequence the topology accepts:

    logits       float [T, L] (one sentence) or [B, T, L] (padded, with lengths [B])
    rows         float [N, L]  the tokens of the batch, concatenated
    emissions    float [N, S]  log_softmax(rows)[:, state_label]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from fstcrf.corpus.labels import split_labels
from fstcrf.engine.constrained import constrain
from fstcrf.engine.constraints import SentenceRules, resolve_batch
from fstcrf.engine.inference import Potentials, as_float_array, lengths_to_offsets, numeric_array, viterbi
from fstcrf.engine.spans import Entity, decoded_entities, state_labels
from fstcrf.engine.topology import Topology
from fstcrf.errors import EmptySequenceError, ScoreError, ShapeError
from fstcrf.grammar.declaration import label_topology


def as_numpy(values):
    """``values`` as numpy sees them; a torch tensor (anything with ``detach``) is
    detached and moved to the CPU first."""
    if hasattr(values, "detach"):
        return values.detach().cpu().numpy()
    return values


def logit_rows(logits, lengths, num_labels: int) -> tuple[np.ndarray, np.ndarray]:
    """float64 [N, L] rows of the tokens that ``lengths`` [B] keep of ``logits``
    [T, L] or [B, T, L] (padding may hold anything), and int64 lengths [B];
    ShapeError or ScoreError naming the sentence, token and label."""
    logits = numeric_array("logits", as_numpy(logits))
    if logits.ndim not in (2, 3) or logits.shape[-1] != num_labels:
        raise ShapeError(
            f"logits must be [tokens, {num_labels} labels] or [sentences, tokens, {num_labels} labels], "
            f"got shape {logits.shape}"
        )
    padded = logits if logits.ndim == 3 else logits[None]
    B, T = padded.shape[:2]
    if lengths is None and T:  # every token kept: the rows as they are
        rows = np.ascontiguousarray(padded.reshape(B * T, num_labels), dtype=np.float64)
        if not math.isfinite(float(np.add.reduce(rows, axis=None))):  # else a NaN or an infinity (or a huge sum)
            _check_finite(rows, np.ones((B, T), dtype=bool))
        return rows, np.full(B, T, dtype=np.int64)
    if lengths is None:
        lengths = np.full(B, T)
    lengths = np.asarray(as_numpy(lengths))
    if lengths.shape != (B,) or not np.issubdtype(lengths.dtype, np.integer):
        raise ShapeError(f"lengths must be {B} integers, one per sentence of the logits, got {lengths!r}")
    if T == 0 or np.any(lengths < 1):
        raise EmptySequenceError(f"sentence {int(np.flatnonzero(lengths < 1)[0]) if T else 0} has no tokens")
    if np.any(lengths > T):
        b = int(np.flatnonzero(lengths > T)[0])
        raise ShapeError(f"sentence {b} has length {int(lengths[b])}, but the logits have {T} tokens per sentence")
    kept = np.arange(T)[None, :] < lengths[:, None]
    rows = np.asarray(padded[kept], dtype=np.float64)
    _check_finite(rows, kept)
    return rows, lengths.astype(np.int64)


def _check_finite(rows: np.ndarray, kept: np.ndarray) -> None:
    """ScoreError naming the sentence, token and label of the first value of rows
    float [N, L] that is not finite, the rows being the tokens kept bool [B, T] keeps."""
    bad = ~np.isfinite(rows)
    if bad.any():
        row, label = (int(i) for i in np.argwhere(bad)[0])
        sentence, token = (int(i) for i in np.argwhere(kept)[row])
        raise ScoreError(
            f"logits of sentence {sentence}, token {token}, label {label} are {rows[row, label]}; "
            "logits must be finite within each sentence's length"
        )


def log_softmax(rows: np.ndarray) -> np.ndarray:
    """float [N, L]: each row's log-probabilities."""
    shifted = rows - rows.max(axis=1, keepdims=True)
    total = np.exp(shifted).sum(axis=1, keepdims=True)
    shifted -= np.log(total, out=total)
    return shifted


@dataclass
class DecodedLogits:
    """The best allowed label sequence of each sentence.

    Attributes:
        labels: each sentence's labels, one per token.
        scores: float [B], each sequence's score: the sum of its labels'
            log-probabilities plus its transition, start and end scores.
        paths: int32 [N], the states of the sequences (of ``potentials.topology``),
            concatenated.
        potentials: the scores decoded (emissions [N, S] = the log-probabilities
            lifted to the states; under constraints, the lattice they constrain).
        entities: each sentence's entities (the chunks of its labels, as
            fstcrf.corpus.schemes.read_chunks reads them), each with its exact
            probability under the CRF of the potentials; computed on first access,
            and only for chunk labels (O, B-, I-, E-, S-; LabelError otherwise).
    """

    labels: list[list[str]]
    scores: np.ndarray
    paths: np.ndarray
    potentials: Potentials

    @cached_property
    def entities(self) -> list[list[Entity]]:
        return decoded_entities(self.potentials, state_labels(self.potentials.topology), self.paths)


def decode_potentials(
    pot: Potentials, threads: int = 1, rules: Sequence[SentenceRules | None] | None = None
) -> DecodedLogits:
    """Viterbi over ``pot`` (under the sentences' ``rules``, from
    :func:`~fstcrf.engine.constraints.resolve_batch`, when given), read back as labels."""
    if rules is not None:
        pot = constrain(pot, rules, threads=threads).potentials
    best = viterbi(pot, threads=threads)
    return DecodedLogits(split_labels(pot.topology, best.paths, pot.offsets), best.scores, best.paths, pot)


def label_potentials(
    topology: Topology, log_probs: np.ndarray, lengths: np.ndarray, transitions=None, start=None, end=None
) -> Potentials:
    """The potentials of label log-probabilities [N, L] under ``topology``, with label
    ``transitions`` [L, L] (previous, next), ``start`` [L] and ``end`` [L] scores
    (each 0 when None) lifted to its edges and states."""
    L, state_label = topology.num_labels, topology.state_label
    if transitions is None and start is None and end is None:  # the scores are the log-probabilities alone
        topology.check_lengths(lengths)
        emissions = log_probs.take(state_label, axis=1)  # C-contiguous, as the kernel reads it
        return Potentials.of_checked(topology, emissions, lengths, lengths_to_offsets(lengths), topology.no_transitions)
    source, target = state_label[topology.edge_src], state_label[topology.edge_dst]
    return Potentials(
        topology,
        log_probs[:, state_label],
        lengths,
        None if transitions is None else as_float_array("transitions", as_numpy(transitions), (L, L))[source, target],
        None if start is None else as_float_array("start", as_numpy(start), (L,))[state_label],
        None if end is None else as_float_array("end", as_numpy(end), (L,))[state_label],
    )


def decode_logits(
    logits,
    labels: Sequence[str],
    scheme: str | None = None,
    grammar=None,
    transitions=None,
    start=None,
    end=None,
    lengths=None,
    rule: str = "start",
    params: Mapping[str, str] | None = None,
    threads: int = 1,
    constraints=None,
) -> DecodedLogits:
    """The best label sequence of each sentence that ``scheme`` (``"iob1"``,
    ``"iob2"``, ``"bioes"``) and ``grammar`` (as :func:`fstcrf.grammar.label_topology`
    takes it: a shipped name, a file, text, a Grammar, an Acceptor or a pynini
    acceptor) allow, given float ``logits`` [T, L] or [B, T, L] with ``lengths`` [B]
    over ``labels`` [L] (numpy arrays or torch tensors).

    The logits are not used raw: each token's are turned into log-probabilities
    (log_softmax), so that a sequence's score is the sum of its labels'
    log-probabilities.  ``transitions`` [L, L] (previous label, next label),
    ``start`` [L] and ``end`` [L] add finite scores; with none of them (the
    default) the result is the most probable sequence, under independent
    per-token probabilities, among those the scheme or grammar accepts: the
    argmax whenever the argmax is allowed.  ``constraints``: one
    :class:`~fstcrf.engine.constraints.Constraints` (or None) per sentence, which
    the sequences keep to (and the entities' probabilities are conditional on)."""
    topology = label_topology(labels, scheme=scheme, grammar=grammar, rule=rule, params=params)
    rows, lengths = logit_rows(logits, lengths, topology.num_labels)
    rules = resolve_batch(constraints, lengths, topology.labels, "decode_logits")
    pot = label_potentials(topology, log_softmax(rows), lengths, transitions, start, end)
    return decode_potentials(pot, threads, rules)
