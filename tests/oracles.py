"""Brute-force oracles for the chain kernel (plain numpy, no dynamic programming).

Every allowed state sequence of a sentence is enumerated (itertools.product
over S^T, meant for T <= 6 and S <= 5) and scored in exactly the order the
kernel adds:

    ((((start[y1] + emit[0, y1]) + trans[e12]) + emit[1, y2]) + trans[e23]) ... + final[yT]

so with the same inputs the kernel's Viterbi and k-best scores must agree with
the oracle's bit for bit (rounding is monotone, so max-then-add equals
add-then-max), and with small-integer scores every sum is exact, which makes
ties exact too.  From the enumeration come log Z, node marginals, expected edge
counts, max-marginals and the full ranked list, ties ordered by the kernel's
rule: equal scores rank by the state sequence read from the LAST token
backwards, lexicographically smallest first.

The "topology-like spec" is anything with ``num_states``, ``edge_src``,
``edge_dst``, ``start`` and ``final`` attributes (a :class:`fstcrf.Topology`
is one); edge scores are given in the spec's edge order.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np


def edge_index_table(spec) -> np.ndarray:
    """int64 [S, S]: the edge id of each allowed pair (src, dst), -1 elsewhere."""
    S = int(spec.num_states)
    table = np.full((S, S), -1, dtype=np.int64)
    table[np.asarray(spec.edge_src, dtype=np.int64), np.asarray(spec.edge_dst, dtype=np.int64)] = np.arange(
        len(spec.edge_src)
    )
    return table


def all_sequences(num_states: int, length: int) -> np.ndarray:
    """int64 [S^T, T]: every state sequence of ``length`` tokens (itertools.product order)."""
    return np.array(list(itertools.product(range(num_states), repeat=length)), dtype=np.int64).reshape(-1, length)


def allowed_mask(spec, paths: np.ndarray) -> np.ndarray:
    """bool [M]: which rows of ``paths`` [M, T] the spec allows."""
    start = np.asarray(spec.start, dtype=bool)
    final = np.asarray(spec.final, dtype=bool)
    edges = edge_index_table(spec)
    ok = start[paths[:, 0]] & final[paths[:, -1]]
    for t in range(1, paths.shape[1]):
        ok &= edges[paths[:, t - 1], paths[:, t]] >= 0
    return ok


def allowed_sequences(spec, length: int) -> np.ndarray:
    """int64 [M, T]: the allowed state sequences of ``length`` tokens, by brute force."""
    paths = all_sequences(int(spec.num_states), length)
    return paths[allowed_mask(spec, paths)]


def count_sequences_by_matrix_power(spec, length: int) -> int:
    """Number of allowed sequences of ``length`` tokens, start^T A^(T-1) final in
    exact integer arithmetic (a second, enumeration-free count for longer T)."""
    S = int(spec.num_states)
    adjacency = np.zeros((S, S), dtype=object)
    for a, b in zip(np.asarray(spec.edge_src).tolist(), np.asarray(spec.edge_dst).tolist()):
        adjacency[a, b] = 1
    vector = np.array([int(x) for x in np.asarray(spec.start, dtype=bool)], dtype=object)
    for _ in range(length - 1):
        vector = vector.dot(adjacency) if S else vector
    final = np.array([int(x) for x in np.asarray(spec.final, dtype=bool)], dtype=object)
    return int(vector.dot(final))


def enumerate_state_paths(spec, length: int) -> list[tuple[int, ...]]:
    """The allowed state sequences of ``length`` tokens by depth-first extension
    of allowed prefixes (for topologies too large for S^T enumeration)."""
    succ: dict[int, list[int]] = {}
    for a, b in zip(np.asarray(spec.edge_src).tolist(), np.asarray(spec.edge_dst).tolist()):
        succ.setdefault(a, []).append(b)
    final = np.asarray(spec.final, dtype=bool)
    prefixes = [(int(s),) for s in np.flatnonzero(np.asarray(spec.start, dtype=bool))]
    for _ in range(length - 1):
        prefixes = [p + (b,) for p in prefixes for b in succ.get(p[-1], ())]
    return [p for p in prefixes if final[p[-1]]]


@dataclass
class BruteForce:
    """Exhaustive inference for one sentence.

    Args:
        spec: topology-like (num_states, edge_src, edge_dst, start, final).
        emissions: float [T, S].
        transitions: float [E] in the spec's edge order (default 0), or [C, E] with
            token_class: int [T], the row scoring the transition into each token.
        start_scores, final_scores: float [S] (default 0); masked by spec.start / spec.final.
    """

    spec: object
    emissions: np.ndarray
    transitions: np.ndarray | None = None
    start_scores: np.ndarray | None = None
    final_scores: np.ndarray | None = None
    token_class: np.ndarray | None = None

    def __post_init__(self):
        self.emissions = np.asarray(self.emissions, dtype=np.float64)
        self.T, self.S = self.emissions.shape
        assert self.S == int(self.spec.num_states)
        E = len(self.spec.edge_src)
        self.transitions = np.zeros(E) if self.transitions is None else np.asarray(self.transitions, np.float64)
        self.start_scores = np.zeros(self.S) if self.start_scores is None else np.asarray(self.start_scores, np.float64)
        self.final_scores = np.zeros(self.S) if self.final_scores is None else np.asarray(self.final_scores, np.float64)
        self.edges = edge_index_table(self.spec)
        # [T, E]: the scores of the transitions into each token
        self.token_transitions = (
            np.broadcast_to(self.transitions, (self.T, E))
            if self.transitions.ndim == 1
            else self.transitions[np.asarray(self.token_class)]
        )
        self.paths = allowed_sequences(self.spec, self.T)  # [M, T]
        self.scores = self._score(self.paths)  # [M]

    # -- scoring ---------------------------------------------------------------
    def _score(self, paths: np.ndarray) -> np.ndarray:
        """Scores of allowed paths [M, T], in the kernel's addition order."""
        if len(paths) == 0:
            return np.zeros(0)
        emit = self.emissions
        score = self.start_scores[paths[:, 0]] + emit[0, paths[:, 0]]
        for t in range(1, self.T):
            score = score + self.token_transitions[t][self.edges[paths[:, t - 1], paths[:, t]]]
            score = score + emit[t, paths[:, t]]
        return score + self.final_scores[paths[:, -1]]

    def score_of(self, path) -> float:
        """Score of one state sequence, -inf if the spec forbids it (pure Python floats)."""
        path = [int(s) for s in path]
        if len(path) != self.T or not self.spec.start[path[0]] or not self.spec.final[path[-1]]:
            return -math.inf
        total = float(self.start_scores[path[0]]) + float(self.emissions[0, path[0]])
        for t in range(1, self.T):
            e = int(self.edges[path[t - 1], path[t]])
            if e < 0:
                return -math.inf
            total = total + float(self.token_transitions[t][e])
            total = total + float(self.emissions[t, path[t]])
        return total + float(self.final_scores[path[-1]])

    # -- results -----------------------------------------------------------------
    @property
    def num_paths(self) -> int:
        return len(self.paths)

    @property
    def feasible(self) -> bool:
        return self.num_paths > 0

    @cached_property
    def log_z(self) -> float:
        if not self.feasible:
            return -math.inf
        peak = float(self.scores.max())
        return peak + math.log(math.fsum(np.exp(self.scores - peak).tolist()))

    @cached_property
    def probabilities(self) -> np.ndarray:
        """[M] p(path | x) in the order of ``self.paths``."""
        return np.exp(self.scores - self.log_z)

    @cached_property
    def node_marginals(self) -> np.ndarray:
        """[T, S] p(y_t = s)."""
        out = np.zeros((self.T, self.S))
        for t in range(self.T):
            out[t] = np.bincount(self.paths[:, t], weights=self.probabilities, minlength=self.S)
        return out

    @cached_property
    def edge_counts(self) -> np.ndarray:
        """[E] expected number of uses of each edge ([C, E]: of each edge into a token
        of each class)."""
        C, E = (1,) + self.transitions.shape if self.transitions.ndim == 1 else self.transitions.shape
        out = np.zeros(C * E)
        for t in range(1, self.T):
            ids = self.edges[self.paths[:, t - 1], self.paths[:, t]]
            row = 0 if self.transitions.ndim == 1 else int(self.token_class[t]) * E
            out += np.bincount(row + ids, weights=self.probabilities, minlength=C * E)
        return out.reshape(self.transitions.shape)

    @cached_property
    def max_marginals(self) -> np.ndarray:
        """[T, S] best score of any allowed path through (t, s), -inf if none."""
        out = np.full((self.T, self.S), -np.inf)
        for t in range(self.T):
            np.maximum.at(out[t], self.paths[:, t], self.scores)
        return out

    @cached_property
    def order(self) -> np.ndarray:
        """Indices of ``self.paths`` sorted by the kernel's rule: score descending,
        ties by the state sequence read backwards, smallest first."""
        # np.lexsort: the LAST key is the primary one
        keys = [self.paths[:, t] for t in range(self.T)] + [-self.scores]
        return np.lexsort(keys)

    def ranked(self) -> list[tuple[float, tuple[int, ...]]]:
        """All (score, path) pairs, best first; sort key (-score, reversed path)."""
        ranked = [(float(self.scores[i]), tuple(int(s) for s in self.paths[i])) for i in self.order]
        # the same order by an independent Python sort
        assert ranked == sorted(ranked, key=lambda item: (-item[0], tuple(reversed(item[1]))))
        return ranked

    @property
    def best_score(self) -> float:
        return float(self.scores.max()) if self.feasible else -math.inf

    @property
    def best_path(self) -> tuple[int, ...]:
        return tuple(int(s) for s in self.paths[self.order[0]])

    def paths_scoring(self, value: float) -> list[tuple[int, ...]]:
        """The allowed paths whose score equals ``value`` exactly."""
        return [tuple(int(s) for s in p) for p in self.paths[self.scores == value]]

    def gap(self) -> float:
        """best score minus the second-best distinct path's score (inf if one path)."""
        if self.num_paths < 2:
            return math.inf
        top = np.sort(self.scores)[::-1]
        return float(top[0] - top[1])


def check_finite_differences(
    loss_and_gradient,
    theta: np.ndarray,
    num_features: int,
    seed: int,
    num_coordinates: int = 12,
    step: float = 1e-5,
    relative: float = 1e-6,
    absolute: float | None = None,
) -> None:
    """Assert that central differences of loss_and_gradient(theta)[0] match its gradient
    [D] on random feature weights (index < num_features) and transition weights (the
    rest); the tolerance is ``absolute``, or ``relative`` times max(1, |loss|)."""
    rng = np.random.default_rng(seed)
    loss, gradient = loss_and_gradient(theta)
    E = len(theta) - num_features
    coordinates = np.unique(
        np.concatenate(
            [
                rng.choice(num_features, min(num_features, num_coordinates), replace=False),
                num_features + rng.choice(E, min(E, max(1, num_coordinates // 2)), replace=False),
            ]
        )
    )
    tolerance = absolute if absolute is not None else relative * max(1.0, abs(loss))
    for i in coordinates:
        delta = np.zeros_like(theta)
        delta[i] = step
        numeric = (loss_and_gradient(theta + delta)[0] - loss_and_gradient(theta - delta)[0]) / (2 * step)
        assert abs(numeric - gradient[i]) <= tolerance, f"weight {i}: {numeric} vs {gradient[i]}"
