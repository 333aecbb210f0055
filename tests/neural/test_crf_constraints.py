"""fstcrf.torch.CRF.decode under per-sentence constraints: the kernel's best path on
the constrained lattice, against enumeration, whatever the engine."""

from needs_torch import torch

import numpy as np
import pytest

from fstcrf.engine.constraints import Constraints, Span
from fstcrf.errors import ConstraintError
from fstcrf.torch import CRF

from constraint_oracles import constraint_score


def test_decode_keeps_to_the_constraints_on_both_engines():
    torch.manual_seed(0)
    labels = ["O", "B-A", "I-A"]
    emissions = torch.randn(4, 2, 3, dtype=torch.float64)  # [T, B, L]
    mask = torch.tensor([[1, 1], [1, 1], [1, 1], [1, 0]], dtype=torch.bool)
    constraints = [Constraints(forbidden=[Span(0, 1, "A")], fixed={3: "I-A"}), Constraints(spans=[Span(1, 2, "A")])]
    for engine in ("kernel", "torch"):
        layer = CRF.from_labels(labels, scheme="iob2", engine=engine)
        decoded = layer.decode(emissions, mask, constraints=constraints)
        transitions = layer.transition_matrix().detach().numpy()
        start, final = (t.detach().numpy() for t in layer.edge_scores()[1:])
        for b, (tags, given) in enumerate(zip(decoded, constraints)):
            T = len(tags)
            best, best_score = None, -np.inf
            for path in np.ndindex(*(3,) * T):
                names = tuple(labels[k] for k in path)
                score = constraint_score(given, names) + start[path[0]] + final[path[-1]]
                score += sum(float(emissions[t, b, k]) for t, k in enumerate(path))
                score += sum(transitions[a, c] for a, c in zip(path, path[1:]))
                if score > best_score:
                    best, best_score = list(path), score
            assert tags == best


def test_constraints_name_the_layers_labels():
    layer = CRF(3)
    emissions = torch.randn(2, 1, 3)
    assert layer.decode(emissions, constraints=[Constraints(fixed={0: "2", 1: "0"})]) == [[2, 0]]
    with pytest.raises(ConstraintError, match="CRF.decode: sentence 0: fixed names token 2"):
        layer.decode(emissions, constraints=[Constraints(fixed={2: "0"})])
