"""A vectorised numpy implementation of the chain dynamic programs.

Log-space throughout (a max shift per destination state, so it is exact for
any finite scores), vectorised over states, one Python step per token.  It is
the baseline of ``fstcrf bench kernel`` and the log-space reference the C
kernel is tested against on long sentences with extreme scores; it is not
used for real work.
"""

from __future__ import annotations

import numpy as np

from fstcrf.engine.inference import Potentials


def dense_transitions(pot: Potentials, sentence: int) -> np.ndarray:
    """float [T, S, S]: the transition scores into each token of a sentence, with -inf
    for disallowed pairs (row 0, into the first token, is unused)."""
    S = pot.topology.num_states
    rows = pot.transitions_into(pot.sentence(sentence))
    table = np.full((len(rows), S, S), -np.inf)
    table[:, pot.topology.edge_src, pot.topology.edge_dst] = rows
    return table


def _log_matvec(vector: np.ndarray, table: np.ndarray, axis: int) -> np.ndarray:
    """log sum over ``axis`` of exp(vector broadcast + table), -inf safe."""
    scores = (vector[:, None] if axis == 0 else vector[None, :]) + table
    peak = scores.max(axis=axis)
    safe = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(divide="ignore"):
        return safe + np.log(np.exp(scores - np.expand_dims(safe, axis)).sum(axis=axis))


def _log_sum(vector: np.ndarray) -> float:
    peak = vector.max()
    if not np.isfinite(peak):
        return -np.inf
    return float(peak + np.log(np.exp(vector - peak).sum()))


def forward_backward(pot: Potentials, sentence: int = 0):
    """(log Z, node marginals [T, S], expected edge counts [S, S], summed over the
    token classes) of one sentence."""
    emit = pot.emissions[pot.sentence(sentence)]
    table = dense_transitions(pot, sentence)
    T, S = emit.shape
    alpha = np.empty((T, S))
    beta = np.empty((T, S))
    alpha[0] = pot.start + emit[0]
    for t in range(1, T):
        alpha[t] = emit[t] + _log_matvec(alpha[t - 1], table[t], axis=0)
    beta[T - 1] = pot.final
    for t in range(T - 2, -1, -1):
        beta[t] = _log_matvec(emit[t + 1] + beta[t + 1], table[t + 1], axis=1)
    log_z = _log_sum(alpha[T - 1] + pot.final)
    # normalise each token by its own log-sum (= log Z up to the rounding
    # that alpha and beta accumulate over long sentences)
    joint = alpha + beta
    log_z_t = np.array([_log_sum(row) for row in joint])
    marginals = np.exp(joint - log_z_t[:, None])
    edges = np.zeros((S, S))
    for t in range(1, T):
        edges += np.exp(alpha[t - 1][:, None] + table[t] + (emit[t] + beta[t])[None, :] - log_z_t[t])
    return log_z, marginals, edges


def viterbi(pot: Potentials, sentence: int = 0):
    """(best state path [T], its score) of one sentence."""
    emit = pot.emissions[pot.sentence(sentence)]
    table = dense_transitions(pot, sentence)
    T, S = emit.shape
    score = pot.start + emit[0]
    back = np.empty((T, S), dtype=np.int64)
    for t in range(1, T):
        candidates = score[:, None] + table[t]
        back[t] = candidates.argmax(axis=0)
        score = candidates[back[t], np.arange(S)] + emit[t]
    score = score + pot.final
    path = np.empty(T, dtype=np.int64)
    path[-1] = int(score.argmax())
    for t in range(T - 1, 0, -1):
        path[t - 1] = back[t, path[t]]
    return path, float(score.max())
