"""Any model's per-token logits decoded under a tagging scheme or a grammar, with
numpy and the C kernel only (no torch).

Each token's logits become its labels' log-probabilities (``log_softmax``), lifted
to the states of the declared topology (:func:`fstcrf.grammar.label_topology`);
optional label transition, start and end scores are added, and the kernel's
Viterbi returns the best label sequence the topology accepts:

    logits       float [T, L] (one sentence) or [B, T, L] (padded, with lengths [B])
    rows         float [N, L]  the tokens of the batch, concatenated
    emissions    float [N, S]  log_softmax(rows)[:, state_label]

Without transition scores or constraints the log-probabilities and the Viterbi
are one kernel call (csrc/fstcrf_logits.h), on one sentence as on a batch.
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
from fstcrf.engine.inference import (
    Potentials,
    as_float_array,
    check_count,
    check_totals,
    lengths_to_offsets,
    numeric_array,
    useful_threads,
    viterbi,
)
from fstcrf.engine.kernel import logits as kernel_logits
from fstcrf.engine.spans import Entity, decoded_entities, state_labels
from fstcrf.engine.topology import Topology
from fstcrf.errors import EmptySequenceError, ScoreError, ShapeError
from fstcrf.grammar.declaration import label_topology


def as_numpy(values):
    """``values`` as numpy sees them; a torch tensor (anything with ``detach``) is
    detached and moved to the CPU first."""
    if type(values) is np.ndarray:  # before hasattr, which raises and catches on an array
        return values
    if hasattr(values, "detach"):
        return values.detach().cpu().numpy()
    return values


#: The dtype of the logit rows the kernel reads.
FLOAT64 = np.dtype(np.float64)


def sentence_rows(logits, num_labels: int) -> np.ndarray | None:
    """The rows float64 [T, L] (C-contiguous and aligned: the array itself when it is
    so) of ``logits``, a numpy array [T, L] of real numbers with T >= 1, one
    sentence; None for any other ``logits`` (which :func:`logit_rows` reads, or names
    the error of)."""
    if (
        type(logits) is not np.ndarray
        or logits.ndim != 2
        or logits.shape[1] != num_labels
        or not len(logits)
        or logits.dtype.kind not in "biuf"
    ):
        return None
    flags = logits.flags
    if logits.dtype is not FLOAT64 or not (flags.c_contiguous and flags.aligned):
        return np.array(logits, dtype=np.float64, order="C")
    return logits


def logit_rows(logits, lengths, num_labels: int) -> tuple[np.ndarray, np.ndarray]:
    """float64 [N, L] C-contiguous rows of the tokens that ``lengths`` [B] keep of
    ``logits`` [T, L] or [B, T, L] (padding may hold anything), and int64 lengths
    [B]; ShapeError naming what does not fit.  Whether the rows are finite is
    :func:`state_log_probs`' check, as it reads them."""
    logits = numeric_array("logits", as_numpy(logits))
    if logits.ndim not in (2, 3) or logits.shape[-1] != num_labels:
        raise ShapeError(
            f"logits must be [tokens, {num_labels} labels] or [sentences, tokens, {num_labels} labels], "
            f"got shape {logits.shape}"
        )
    B, T = (len(logits), logits.shape[1]) if logits.ndim == 3 else (1, len(logits))
    if lengths is None and T:  # every token kept: the rows as they are (a view when they are float64 already)
        rows = logits.reshape(B * T, num_labels)
        if rows.dtype != np.float64 or not rows.flags.c_contiguous:
            rows = np.ascontiguousarray(rows, dtype=np.float64)
        lengths = np.empty(B, dtype=np.int64)
        lengths.fill(T)  # np.full's own work, without its two Python calls
        return rows, lengths
    padded = logits if logits.ndim == 3 else logits[None]
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
    return np.asarray(padded[kept], dtype=np.float64), lengths.astype(np.int64)


def not_finite(rows: np.ndarray, offsets: np.ndarray) -> ScoreError:
    """The ScoreError naming the sentence, token and label of the first value of
    the logit rows float [N, L] of sentences cut at offsets [B+1] that is not finite."""
    row, label = (int(i) for i in np.argwhere(~np.isfinite(rows))[0])
    sentence = int(np.searchsorted(offsets, row, side="right")) - 1
    return ScoreError(
        f"logits of sentence {sentence}, token {row - int(offsets[sentence])}, label {label} are "
        f"{rows[row, label]}; logits must be finite within each sentence's length"
    )


def state_log_probs(rows: np.ndarray, state_label: np.ndarray, offsets: np.ndarray | None = None) -> np.ndarray:
    """float [N, S]: the log-probabilities (log_softmax) of each of the logit rows
    float64 [N, L] (C-contiguous) at the label ``state_label`` int32 [S] of each
    state, in one kernel call; ScoreError naming the sentence (of those ``offsets``
    [B+1] cut, else one), token and label of a logit that is not finite."""
    emissions = np.empty((len(rows), len(state_label)))
    if not kernel_logits.label_log_probs(rows, state_label, emissions):
        raise not_finite(rows, np.array([0, len(rows)]) if offsets is None else offsets)
    return emissions


def log_softmax(rows: np.ndarray) -> np.ndarray:
    """float [N, L]: each row's log-probabilities (rows as :func:`state_log_probs` takes them)."""
    return state_log_probs(rows, np.arange(rows.shape[1], dtype=np.int32))


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
            lifted to the states; under constraints, the lattice they constrain);
            made on first access when the kernel decoded the sentences in one call.
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
    topology: Topology, emissions: np.ndarray, lengths: np.ndarray, transitions=None, start=None, end=None
) -> Potentials:
    """The potentials of the label log-probabilities lifted to the states of
    ``topology``, ``emissions`` [N, S] (from :func:`state_log_probs`), with label
    ``transitions`` [L, L] (previous, next), ``start`` [L] and ``end`` [L] scores
    (each 0 when None) lifted to its edges and states."""
    L, state_label = topology.num_labels, topology.state_label
    if transitions is None and start is None and end is None:  # the scores are the log-probabilities alone
        topology.check_lengths(lengths)
        return Potentials.of_checked(topology, emissions, lengths, lengths_to_offsets(lengths), topology.no_transitions)
    source, target = state_label[topology.edge_src], state_label[topology.edge_dst]
    return Potentials(
        topology,
        emissions,
        lengths,
        None if transitions is None else as_float_array("transitions", as_numpy(transitions), (L, L))[source, target],
        None if start is None else as_float_array("start", as_numpy(start), (L,))[state_label],
        None if end is None else as_float_array("end", as_numpy(end), (L,))[state_label],
    )


class DecodedRows(DecodedLogits):
    """The DecodedLogits of one kernel call (:func:`decode_rows`), whose potentials are
    made on first access: ``scored`` holds the topology, the emissions [N, S], the
    lengths [B] and offsets [B+1], the transitions [E], start and final [S] they are
    made of (or the potentials themselves, as ``dataclasses.replace`` gives them)."""

    def __init__(
        self,
        labels: list[list[str]],
        scores: np.ndarray,
        paths: np.ndarray,
        potentials: Potentials | None = None,
        *,
        scored: tuple = (),
    ):
        self.labels, self.scores, self.paths, self.scored = labels, scores, paths, scored
        if potentials is not None:
            self.__dict__["potentials"] = potentials  # what the cached property would have made

    @cached_property
    def potentials(self) -> Potentials:  # type: ignore[override]  # the field, made when read
        topology, emissions, lengths, offsets, transitions, start, final = self.scored
        return Potentials.of_checked(topology, emissions, lengths, offsets, transitions, None, start, final)


def decode_rows(
    parts: kernel_logits.TopologyParts, sentences: kernel_logits.Sentences, rows: np.ndarray
) -> DecodedLogits:
    """The best paths of the logit rows float64 [N, L] (C-contiguous and aligned, as
    :func:`sentence_rows` and :func:`logit_rows` make them) of ``sentences``, on the
    topology and scores of ``parts``: the log-probabilities and the paths in one
    kernel call and little else, whatever B; a sentence's results are the same alone
    as in any batch, bit for bit."""
    decoded = kernel_logits.decode(parts, sentences, rows)
    if decoded is None:
        raise not_finite(rows, sentences.offsets)
    emissions, paths, scores = decoded
    if len(scores) > 1 or not math.isfinite(scores[0]):
        check_totals(scores, "viterbi", "the best path's score")
    topology, offsets = parts.topology, sentences.offsets
    scored = (topology, emissions, sentences.lengths, offsets, parts.transitions, parts.start, parts.final)
    return DecodedRows(split_labels(topology, paths, offsets), scores, paths, scored=scored)


def decode_batch(topology: Topology, rows: np.ndarray, lengths: np.ndarray, threads: int = 1) -> DecodedLogits:
    """:func:`decode_logits` of logit rows float64 [N, L] (as :func:`logit_rows` makes
    them) of sentences of ``lengths`` [B], without transition scores or constraints:
    :func:`decode_rows`, or for a batch worth splitting over ``threads``, the
    log-probabilities, then :func:`viterbi`'s threads; the same results either way,
    bit for bit."""
    offsets = lengths_to_offsets(lengths)
    if threads != 1 and useful_threads(len(rows), topology, check_count(threads, "threads")) > 1:
        topology.check_lengths(lengths)
        emissions = state_log_probs(rows, topology.state_label, offsets)
        return decode_potentials(
            Potentials.of_checked(topology, emissions, lengths, offsets, topology.no_transitions), threads
        )
    return decode_rows(
        kernel_logits.topology_parts(topology), kernel_logits.Sentences(topology, lengths, offsets), rows
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
    if lengths is None and threads == 1 and transitions is None and start is None and end is None:
        rows = sentence_rows(as_numpy(logits), topology.num_labels) if constraints is None else None
        if rows is not None:  # one sentence, scored by its log-probabilities alone
            parts = kernel_logits.topology_parts(topology)
            return decode_rows(parts, parts.sentence(len(rows)), rows)
    rows, lengths = logit_rows(logits, lengths, topology.num_labels)
    rules = resolve_batch(constraints, lengths, topology.labels, "decode_logits")
    if rules is None and transitions is None and start is None and end is None:
        return decode_batch(topology, rows, lengths, threads)
    emissions = state_log_probs(rows, topology.state_label, lengths_to_offsets(lengths))
    pot = label_potentials(topology, emissions, lengths, transitions, start, end)
    return decode_potentials(pot, threads, rules)
