"""A label topology as the torch layers read it: index arrays for lifting label
scores to states, for the vectorised dynamic programs and for gold paths.

A topology (:mod:`fstcrf.engine.topology`) has S states, each carrying one of
L labels, and E allowed transitions.  :func:`fstcrf.grammar.label_topology` builds the one a
layer is declared over (an order, a tagging scheme, a grammar);
:class:`LabelStructure` adds what torch code needs:

    state_label          int64 [S]      label of each state (emissions are lifted by it)
    edge_src, edge_dst   int64 [E]      the allowed transitions, destination-major
    start_states         int64 [S0]     states a path may start in
    final_states         int64 [SF]     states a path may end in
    in_src, in_edge      int64 [S, D]   the edges entering each state, padded to the
    in_valid             bool  [S, D]   largest in-degree D (in_valid marks real ones);
                                        made when the vectorised programs first ask
    step                 int64 [S+1, L] the state reached by reading label l from state s
                                        (row S: before the first token), -1 if not allowed
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from fstcrf.engine import budget
from fstcrf.engine.topology import Topology
from fstcrf.errors import ArgumentTypeError, LabelError, TopologyError


class LabelStructure:
    """Index arrays of a topology for the torch layers (see the module docstring)."""

    def __init__(self, topology: Topology):
        if not isinstance(topology, Topology):
            raise ArgumentTypeError(f"expected a Topology, got {type(topology).__name__}")
        self.topology = topology
        S, L = topology.num_states, topology.num_labels
        self.state_label = topology.state_label.astype(np.int64)
        self.edge_src = topology.edge_src.astype(np.int64)
        self.edge_dst = topology.edge_dst.astype(np.int64)
        self.start_states = np.flatnonzero(topology.start)
        self.final_states = np.flatnonzero(topology.final)
        what = f"topology {topology.name!r}'s"
        budget.check_table((S, self._in_width), f"{what} padded table of the edges entering each state:")
        budget.check_table((S + 1, L), f"{what} table of the state each label leads to:")
        budget.check_table((S, S), f"{what} edge ids:")
        self.step = self._step_table()
        self.edge_id = topology.edge_ids
        #: whether state i is label i (so that tags are their own state path)
        self.is_identity = S == L and bool(np.all(self.state_label == np.arange(L)))
        self._tensors: dict[str, dict[str, object]] = {}

    def _step_table(self) -> np.ndarray:
        """The step table int64 [S+1, L], filled from the start states and the edges in
        one pass; TopologyError if two moves from one state reach states of one label
        (one overwrites the other, so fewer cells are filled than there are moves)."""
        S, L = self.num_states, self.num_labels
        step = np.full((S + 1, L), -1, dtype=np.int64)
        step[S, self.state_label[self.start_states]] = self.start_states
        step[self.edge_src, self.state_label[self.edge_dst]] = self.edge_dst
        if np.count_nonzero(step >= 0) < len(self.start_states) + self.num_edges:
            raise TopologyError(
                f"topology {self.topology.name!r} is not deterministic in its labels: two states with "
                "one label follow the same state, so a tag sequence would not fix its state path"
            )
        return step

    @property
    def _in_width(self) -> int:
        """D: the largest in-degree (at least 1)."""
        return max(int(np.diff(self.topology.in_ptr).max()), 1)

    # the padded incoming edges, for the vectorised programs only: made on first use
    @cached_property
    def in_valid(self) -> np.ndarray:
        return np.arange(self._in_width)[None, :] < np.diff(self.topology.in_ptr)[:, None]

    @cached_property
    def in_edge(self) -> np.ndarray:
        first = self.topology.in_ptr[:-1, None].astype(np.int64)
        return np.where(self.in_valid, first + np.arange(self._in_width)[None, :], 0)

    @cached_property
    def in_src(self) -> np.ndarray:
        return np.where(self.in_valid, self.edge_src[self.in_edge], 0)

    @property
    def labels(self) -> tuple[str, ...]:
        return self.topology.labels

    @property
    def num_states(self) -> int:
        return self.topology.num_states

    @property
    def num_edges(self) -> int:
        return self.topology.num_edges

    @property
    def num_labels(self) -> int:
        return self.topology.num_labels

    def tensors(self, device) -> dict:
        """The index arrays as torch tensors on ``device`` (made once per device)."""
        import torch

        key = str(device)
        if key not in self._tensors:
            names = ("state_label", "edge_src", "edge_dst", "start_states", "final_states", "in_src", "in_edge")
            made: dict[str, object] = {name: torch.as_tensor(getattr(self, name), device=device) for name in names}
            made["in_valid"] = torch.as_tensor(self.in_valid, device=device)
            made["start_mask"] = torch.as_tensor(self.topology.start, device=device)
            made["final_mask"] = torch.as_tensor(self.topology.final, device=device)
            self._tensors[key] = made
        return self._tensors[key]

    def gold_states(self, tags: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """int64 [N]: the state path that gold tags int [N] (sentences cut at
        ``offsets`` [B+1]) fix; LabelError naming the sentence and token where the
        topology rejects them."""
        states = self._gold_label_states(tags, offsets) if self.is_identity else self._walk(tags, offsets)
        last = states[offsets[1:] - 1]
        unfinished = np.flatnonzero(~self.topology.final[last])
        if len(unfinished):
            b = int(unfinished[0])
            label = self.labels[int(self.state_label[last[b]])]
            raise LabelError(
                f"gold tags of sequence {b} end in {label!r}, where topology {self.topology.name!r} "
                "allows no sequence to end"
            )
        return states

    def _walk(self, tags: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """The state path of tags [N], read token by token through the step table."""
        lengths = np.diff(offsets)
        states = np.empty(len(tags), dtype=np.int64)
        previous = np.full(len(lengths), self.num_states, dtype=np.int64)
        for t in range(int(lengths.max(initial=0))):
            alive = np.flatnonzero(lengths > t)
            rows = offsets[alive] + t
            reached = self.step[previous[alive], tags[rows]]
            rejected = np.flatnonzero(reached < 0)
            if len(rejected):
                b = int(alive[rejected[0]])
                raise LabelError(self._rejection(b, t, tags[offsets[b] : offsets[b + 1]]))
            states[rows] = reached
            previous[alive] = reached
        return states

    def _gold_label_states(self, tags: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """gold_states where state i is label i: the tags, checked at once."""
        firsts = offsets[:-1]
        allowed = np.ones(len(tags), dtype=bool)
        allowed[firsts] = self.topology.start[tags[firsts]]
        inner = np.ones(len(tags), dtype=bool)
        inner[firsts] = False
        rows = np.flatnonzero(inner)
        allowed[rows] = self.edge_id[tags[rows - 1], tags[rows]] >= 0
        if not allowed.all():
            row = int(np.flatnonzero(~allowed)[0])
            b = int(np.searchsorted(offsets, row, side="right") - 1)
            raise LabelError(self._rejection(b, row - int(offsets[b]), tags[offsets[b] : offsets[b + 1]]))
        return tags.astype(np.int64, copy=False)

    def _rejection(self, sentence: int, token: int, tags: np.ndarray) -> str:
        shown = " ".join(self.labels[int(t)] for t in tags[max(0, token - 3) : token + 1])
        return (
            f"gold tags of sequence {sentence} are not allowed by topology {self.topology.name!r}: "
            f"tag {self.labels[int(tags[token])]!r} at position {token} (... {shown}) cannot follow; "
            "fix the tags or declare the layer without that constraint"
        )
