"""Brute force for the torch layers: every state path of a small topology, scored."""

from __future__ import annotations

import itertools

import numpy as np

from fstcrf.engine.topology import Topology


def state_paths(topology: Topology, length: int) -> list[tuple[int, ...]]:
    """Every allowed state path of ``length`` tokens (start, edges, final)."""
    edges = set(zip(topology.edge_src.tolist(), topology.edge_dst.tolist()))
    paths = []
    for path in itertools.product(range(topology.num_states), repeat=length):
        if not topology.start[path[0]] or not topology.final[path[-1]]:
            continue
        if all((a, b) in edges for a, b in zip(path, path[1:])):
            paths.append(path)
    return paths


class Enumeration:
    """Every allowed tag sequence of one sequence and its score.

    ``emissions`` float [T, L] label scores; ``transitions`` [E], ``start`` and
    ``final`` [S] state scores (numpy float64)."""

    def __init__(self, topology: Topology, emissions, transitions, start, final):
        length = len(emissions)
        edge = {(a, b): e for e, (a, b) in enumerate(zip(topology.edge_src.tolist(), topology.edge_dst.tolist()))}
        self.paths = state_paths(topology, length)
        self.tags = [tuple(int(topology.state_label[s]) for s in path) for path in self.paths]
        assert len(set(self.tags)) == len(self.tags), "two state paths spell one tag sequence"
        scores = []
        for path, tags in zip(self.paths, self.tags):
            total = start[path[0]] + final[path[-1]] + sum(emissions[t, tags[t]] for t in range(length))
            total += sum(transitions[edge[a, b]] for a, b in zip(path, path[1:]))
            scores.append(total)
        self.scores = np.array(scores)
        self.log_z = float(np.logaddexp.reduce(self.scores))
        self.probabilities = np.exp(self.scores - self.log_z)

    def score_of(self, tags) -> float:
        return float(self.scores[self.tags.index(tuple(tags))])

    def best(self) -> tuple[int, ...]:
        return self.tags[int(np.argmax(self.scores))]

    def ranked(self, k: int) -> list[tuple[float, tuple[int, ...]]]:
        order = np.argsort(-self.scores, kind="stable")[:k]
        return [(float(self.scores[i]), self.tags[i]) for i in order]

    def marginals(self, num_labels: int) -> np.ndarray:
        """float [T, L]."""
        result = np.zeros((len(self.tags[0]), num_labels))
        for p, tags in zip(self.probabilities, self.tags):
            result[np.arange(len(tags)), tags] += p
        return result
