"""Decoding the product of a chain CRF and non-local factors by annealed MCMC.

The target at temperature T is π_T(y) ∝ [p_CRF(y | x) · Π_λ exp(log_score_λ(y))]^(1/T)
over the labellings y of a document; sweep k of K runs at T_k, which falls
linearly from ``t_start`` to ``t_end`` (Finkel et al.'s linear schedule; at
T = 1 the chain samples the product model).  The chain starts at the Viterbi
labelling, and the result is the labelling with the highest product score
(local path score + Σ log_score) seen at the end of any sweep, so it is never
worse than Viterbi under the model.  Two samplers:

``gibbs``  Finkel et al.'s: each token in turn is redrawn from its conditional
           given its neighbours' states and the rest of the document.  Needs a
           topology with one state per label (first order, IOB2, BIOES).
``block``  Each move redraws a block of tokens exactly from the chain CRF's
           conditional at temperature T (the kernel's sampler on tempered,
           clamped potentials) and accepts it with probability
           min(1, exp(Δ/T)), Δ the change in the factors' log score: the local
           model is the proposal, so the Metropolis-Hastings ratio needs only
           the non-local change.  With ``block_size`` 0 a block is a whole
           sentence; otherwise one token in every block_size + 1 is clamped to
           its current state, at an offset drawn per sweep, and the blocks between
           clamped tokens (conditionally independent in a chain) are drawn at once.
           Any topology.

Both leave π_T invariant at every T.  Documents are processed in batches of
about ``batch_tokens`` tokens; a batch runs all its sweeps (one kernel call per
sweep) before the next starts, so progress is reported over documents and an
interruption keeps every finished document's result.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from collections.abc import Sequence

import numpy as np

from fstcrf.errors import AnnealingError
from fstcrf.engine.inference import Potentials, sample, viterbi
from fstcrf.engine.tempering import tempered
from fstcrf.progress import Progress
from fstcrf.document.factors import DocumentFactor, LabelledDocument, call_factor, checked_score
from fstcrf.document.settings import DEFAULT_BLOCK_SIZE, DEFAULT_SWEEPS, DEFAULT_T_END, DEFAULT_T_START, SAMPLERS

logger = logging.getLogger(__name__)

#: Documents are annealed in batches of about this many tokens.
BATCH_TOKENS = 20_000
#: A document longer than this many tokens is decoded sentence by sentence (Viterbi), with a warning.
MAX_DOCUMENT_TOKENS = 200_000


def temperatures(sweeps: int, t_start: float = DEFAULT_T_START, t_end: float = DEFAULT_T_END) -> np.ndarray:
    """float [sweeps]: the linear schedule from t_start to t_end (t_start alone for one sweep)."""
    if isinstance(sweeps, bool) or not isinstance(sweeps, (int, np.integer)) or sweeps < 1:
        raise AnnealingError(f"sweeps must be a whole number >= 1, got {sweeps!r}")
    for name, value in (("t_start", t_start), ("t_end", t_end)):
        if not (isinstance(value, (int, float, np.floating)) and math.isfinite(value) and value > 0):
            raise AnnealingError(f"{name} must be a finite temperature > 0, got {value!r}")
    if t_end > t_start:
        raise AnnealingError(f"the schedule must cool: t_end {t_end} is above t_start {t_start}")
    return np.linspace(t_start, t_end, sweeps) if sweeps > 1 else np.array([float(t_start)])


@dataclass
class Annealed:
    """The result of :func:`anneal`.

    ``best``: int32 [N], the best labelling's states; ``final``: int32 [N], the chain's
    last states (samples of π_T at the last temperature); ``viterbi_score``,
    ``best_score``: float [D], each document's product score at the start and of the
    best labelling; ``accepted``, ``proposed``: moves that changed labels;
    ``interrupted``: True when Ctrl-C stopped it (unfinished documents keep Viterbi).
    """

    best: np.ndarray
    final: np.ndarray
    viterbi_score: np.ndarray
    best_score: np.ndarray
    accepted: int
    proposed: int
    interrupted: bool = False


def _batches(spans: list[tuple[int, int]], offsets: np.ndarray, batch_tokens: int) -> list[list[int]]:
    """Documents grouped into runs of about ``batch_tokens`` tokens."""
    batches: list[list[int]] = [[]]
    tokens = 0
    for d, (first, last) in enumerate(spans):
        size = int(offsets[last] - offsets[first])
        if batches[-1] and tokens + size > batch_tokens:
            batches.append([])
            tokens = 0
        batches[-1].append(d)
        tokens += size
    return [batch for batch in batches if batch]


class _Chain:
    """The current labelling of a batch of documents and the factors' states of each."""

    def __init__(
        self,
        pot: Potentials,
        states: np.ndarray,
        spans,
        words,
        label_names,
        label_of_state: np.ndarray,
        factors: Sequence[DocumentFactor],
        document_ids,
    ):
        self.pot = pot
        self.states = states
        num_sentences = pot.num_sequences
        self.label_of_state = label_of_state
        self.document_ids = document_ids
        self.document_of = np.empty(num_sentences, dtype=np.int64)  # batch document of each batch sentence
        self.sentence_in_document = np.empty(num_sentences, dtype=np.int64)
        self.factor_states, self.nonlocal_score = [], []
        first_row = 0
        for position, d in enumerate(document_ids):
            first, last = spans[d]
            count = last - first
            self.document_of[first_row : first_row + count] = position
            self.sentence_in_document[first_row : first_row + count] = np.arange(count)
            document = LabelledDocument(
                words[first:last], label_names, [self.labels_of(first_row + j) for j in range(count)], d
            )
            self.factor_states.append([factor.attach(document) for factor in factors])
            self.nonlocal_score.append(sum(checked_score(factor, document) for factor in factors))
            first_row += count
        self.factors = factors
        self.document_first = np.array([spans[d][0] for d in document_ids]) - spans[document_ids[0]][0]

    def labels_of(self, b: int, first: int = 0, last: int | None = None) -> list[int]:
        rows = self.pot.sentence(b)
        return self.label_of_state[self.states[rows][first:last]].tolist()

    def change(self, b: int, first: int, new_labels: list[int]) -> float:
        """Σ over factors of the change in log score of relabelling tokens first.. of batch sentence b."""
        position = int(self.document_of[b])
        j = int(self.sentence_in_document[b])
        total = 0.0
        for factor, state in zip(self.factors, self.factor_states[position]):
            total += call_factor(factor, self.document_ids[position], lambda: state.delta(j, first, new_labels))
        return total

    def accept(self, b: int, first: int, new_states: np.ndarray, new_labels: list[int], change: float) -> None:
        position = int(self.document_of[b])
        j = int(self.sentence_in_document[b])
        for state in self.factor_states[position]:
            state.apply(j, first, new_labels)
        start = self.pot.offsets[b]
        self.states[start + first : start + first + len(new_states)] = new_states
        self.nonlocal_score[position] += change

    def document_scores(self) -> np.ndarray:
        """float [documents of the batch]: local path scores plus non-local log scores."""
        local = self.pot.path_scores(self.states)[0]
        return np.add.reduceat(local, self.document_first) + np.array(self.nonlocal_score)


def _block_sweep(
    chain: _Chain, temperature: float, block_size: int, seed: int, rng: np.random.Generator, threads: int
) -> tuple[int, int]:
    """One sweep of block moves; (accepted, proposed) moves that change labels."""
    pot = chain.pot
    proposal_pot = tempered(pot, temperature)
    clamped = None
    if block_size:
        offset = int(rng.integers(block_size + 1))
        positions = np.arange(pot.num_tokens) - np.repeat(pot.offsets[:-1], pot.lengths)
        clamped = (positions + offset) % (block_size + 1) == block_size
        allowed = np.ones(pot.emissions.shape, dtype=bool)
        allowed[clamped] = False
        allowed[np.flatnonzero(clamped), chain.states[clamped]] = True
        proposal_pot = proposal_pot.clamp(allowed)
    draw = sample(proposal_pot, 1, seed, threads)[0]
    differs = draw != chain.states
    changed = np.flatnonzero(np.add.reduceat(differs.astype(np.int64), pot.offsets[:-1]))
    accepted = proposed = 0
    for b in changed.tolist():
        start, end = int(pot.offsets[b]), int(pot.offsets[b + 1])
        blocks = [(0, end - start)]
        if clamped is not None:
            free = ~clamped[start:end]
            edges = np.flatnonzero(np.diff(np.concatenate(([0], free.astype(np.int8), [0]))))
            blocks = list(zip(edges[::2].tolist(), edges[1::2].tolist()))
        for first, last in blocks:
            new_states = draw[start + first : start + last]
            if not differs[start + first : start + last].any():
                continue
            new_labels = chain.label_of_state[new_states].tolist()
            if new_labels == chain.labels_of(b, first, last):
                chain.accept(b, first, new_states, new_labels, 0.0)  # same labels: the factors agree
                continue
            proposed += 1
            change = chain.change(b, first, new_labels)
            if change >= 0 or rng.random() < math.exp(change / temperature):
                chain.accept(b, first, new_states, new_labels, change)
                accepted += 1
    return accepted, proposed


def _transition_tables(pot: Potentials) -> np.ndarray:
    """float [C, S, S]: the score of each transition (src, dst) per token class, -inf if forbidden."""
    topology = pot.topology
    S = topology.num_states
    table = np.full((pot.num_classes, S, S), -np.inf)
    scores = np.atleast_2d(pot.transitions)
    table[:, topology.edge_src, topology.edge_dst] = scores
    return table


def _gibbs_sweep(chain: _Chain, temperature: float, tables: np.ndarray, rng: np.random.Generator) -> tuple[int, int]:
    """One sweep of token-by-token Gibbs moves; (accepted, proposed) label changes."""
    pot = chain.pot
    token_class = pot.token_class
    states = chain.states
    accepted = proposed = 0
    for b in range(pot.num_sequences):
        start, end = int(pot.offsets[b]), int(pot.offsets[b + 1])
        for t in range(start, end):
            scores = pot.emissions[t].copy()
            if t == start:
                scores += pot.start
            else:
                scores += tables[0 if token_class is None else token_class[t], states[t - 1]]
            if t == end - 1:
                scores += pot.final
            else:
                scores += tables[0 if token_class is None else token_class[t + 1], :, states[t + 1]]
            current = int(states[t])
            candidates = np.flatnonzero(np.isfinite(scores))
            changes = np.zeros(len(scores))
            for c in candidates:
                if c != current:
                    changes[c] = chain.change(b, t - start, [int(chain.label_of_state[c])])
            logits = (scores + changes) / temperature
            weights = np.exp(logits - logits.max())
            chosen = int(np.searchsorted(np.cumsum(weights), rng.random() * weights.sum(), side="right"))
            chosen = min(chosen, len(weights) - 1)
            if chosen != current:
                proposed += 1
                accepted += 1
                chain.accept(
                    b,
                    t - start,
                    np.array([chosen], dtype=states.dtype),
                    [int(chain.label_of_state[chosen])],
                    changes[chosen],
                )
    return accepted, proposed


def anneal(
    pot: Potentials,
    spans: Sequence[tuple[int, int]],
    words: Sequence[Sequence[str]],
    label_names: Sequence[str],
    label_of_state: np.ndarray,
    factors: Sequence[DocumentFactor],
    sampler: str = "block",
    sweeps: int = DEFAULT_SWEEPS,
    t_start: float = DEFAULT_T_START,
    t_end: float = DEFAULT_T_END,
    block_size: int = DEFAULT_BLOCK_SIZE,
    seed: int = 0,
    threads: int = 1,
    batch_tokens: int = BATCH_TOKENS,
    progress: bool = False,
) -> Annealed:
    """Anneal the product of the chain scores ``pot`` (B sentences) and ``factors``.

    ``spans``: the documents, [first, last) sentence ranges covering [0, B) in order;
    ``words``: the words [T_b] of every sentence; ``label_of_state``: int [S], the
    label (index into ``label_names``) of each state of ``pot.topology``.
    """
    if sampler not in SAMPLERS:
        raise AnnealingError(f"sampler must be one of {', '.join(SAMPLERS)}, got {sampler!r}")
    schedule = temperatures(sweeps, t_start, t_end)
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 0:
        raise AnnealingError(f"block_size must be a whole number >= 0 (0: whole sentences), got {block_size!r}")
    label_of_state = np.asarray(label_of_state, dtype=np.int64)
    if sampler == "gibbs" and sorted(label_of_state.tolist()) != list(range(len(label_names))):
        raise AnnealingError(
            f"the gibbs sampler redraws one token's label at a time, so it needs one state "
            f"per label; this {pot.topology.name} topology has {pot.topology.num_states} "
            f"states for {len(label_names)} labels: use the block sampler"
        )
    spans = [(int(first), int(last)) for first, last in spans]
    if (
        not spans
        or spans[0][0] != 0
        or spans[-1][1] != pot.num_sequences
        or any(first >= last for first, last in spans)
        or any(a[1] != b[0] for a, b in zip(spans, spans[1:]))
    ):
        raise AnnealingError(f"the documents must cover the {pot.num_sequences} sentences in order")
    label_names = tuple(label_names)
    best = viterbi(pot, threads).paths.astype(np.int32)
    final = best.copy()
    viterbi_score = np.empty(len(spans))
    best_score = np.empty(len(spans))
    tables = _transition_tables(pot) if sampler == "gibbs" else None
    rng = np.random.default_rng([seed, 0x5EED])
    accepted = proposed = 0
    large = {d for d, (first, last) in enumerate(spans) if pot.offsets[last] - pot.offsets[first] > MAX_DOCUMENT_TOKENS}
    if large:
        logger.warning(
            "%d document(s) have more than %d tokens; they are decoded sentence by sentence "
            "(Viterbi) without the non-local factors",
            len(large),
            MAX_DOCUMENT_TOKENS,
        )
    interrupted = False
    done = 0
    with Progress(
        len(spans), f"non-local decoding ({sampler}, {len(schedule)} sweeps)", unit="doc", enabled=progress
    ) as bar:
        try:
            for batch in _batches(spans, pot.offsets, batch_tokens):
                todo = [d for d in batch if d not in large]
                for d in batch:
                    if d in large:
                        viterbi_score[d] = best_score[d] = np.nan
                if todo:
                    accepted_here, proposed_here = _anneal_batch(
                        pot,
                        spans,
                        todo,
                        words,
                        label_names,
                        label_of_state,
                        factors,
                        sampler,
                        schedule,
                        block_size,
                        seed,
                        rng,
                        threads,
                        tables,
                        best,
                        final,
                        viterbi_score,
                        best_score,
                    )
                    accepted += accepted_here
                    proposed += proposed_here
                done += len(batch)
                bar.update(len(batch))
        except KeyboardInterrupt:
            interrupted = True
            logger.warning(
                "non-local decoding interrupted after %d of %d documents; the others keep their Viterbi labels",
                done,
                len(spans),
            )
    return Annealed(best, final, viterbi_score, best_score, accepted, proposed, interrupted)


def _anneal_batch(
    pot,
    spans,
    documents,
    words,
    label_names,
    label_of_state,
    factors,
    sampler,
    schedule,
    block_size,
    seed,
    rng,
    threads,
    tables,
    best,
    final,
    viterbi_score,
    best_score,
):
    """Anneal one batch of consecutive documents, writing into best, final and the score arrays."""
    first_sentence, last_sentence = spans[documents[0]][0], spans[documents[-1]][1]
    batch_pot = pot.select(np.arange(first_sentence, last_sentence))
    rows = slice(int(pot.offsets[first_sentence]), int(pot.offsets[last_sentence]))
    chain = _Chain(batch_pot, best[rows].copy(), spans, words, label_names, label_of_state, factors, documents)
    scores = chain.document_scores()
    viterbi_score[documents] = scores
    best_states = chain.states.copy()
    best_of_batch = scores.copy()
    document_rows = [
        slice(
            int(batch_pot.offsets[spans[d][0] - first_sentence]), int(batch_pot.offsets[spans[d][1] - first_sentence])
        )
        for d in documents
    ]
    accepted = proposed = 0
    for k, temperature in enumerate(schedule):
        if sampler == "block":
            sweep_seed = (seed * 0x9E3779B1 + first_sentence * 0x85EBCA77 + k) % 2**64
            moved = _block_sweep(chain, float(temperature), block_size, sweep_seed, rng, threads)
        else:
            moved = _gibbs_sweep(chain, float(temperature), tables, rng)
        accepted += moved[0]
        proposed += moved[1]
        scores = chain.document_scores()
        for position in np.flatnonzero(scores > best_of_batch):
            best_of_batch[position] = scores[position]
            best_states[document_rows[position]] = chain.states[document_rows[position]]
    best[rows] = best_states
    final[rows] = chain.states
    best_score[documents] = best_of_batch
    return accepted, proposed
