"""Chunkers combined as a product of experts: the best chunking under the sum of
several models' scores, searched exactly on the lattice of the first model.

    python docs/experiments/product_of_experts.py FILE FIRST [FIRST_FILE] -- MODEL...

FIRST is the model whose lattice is searched; it must be the finest: of the
highest order, and in BIOES when any model is (then FIRST_FILE holds FILE
converted to BIOES, ``fstcrf convert FILE --scheme bioes``).  Every other
MODEL is an IOB2 chunker of order 1 or of FIRST's order.  Each lattice state
of FIRST maps to the state of another model with the same label history read
in IOB2 (S-X as B-X, E-X as I-X), so every label sequence of FIRST is scored
by every model on the IOB2 sequence it stands for, and Viterbi on FIRST's
lattice finds the best such sequence exactly.  Prints chunk F1 on FILE of each
model alone (its scale 1, the others 1e-9, i.e. ties broken by the others)
and of the product with FIRST's score weighted 0.5, 1 and 2 and the others 1.
"""
import sys

import numpy as np

from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.evaluate import score_chunks
from fstcrf.engine.inference import Potentials, viterbi
from fstcrf.corpus.labels import split_labels
from fstcrf.model import load_model

FORBIDDEN = -1e30   # a finite stand-in for -inf, so that scaled sums stay defined


def as_iob2(label: str) -> str:
    prefix, _, kind = label.partition("-")
    return {"S": "B-" + kind, "E": "I-" + kind}.get(prefix, label)


def state_map(fine, coarse) -> np.ndarray:
    """int [S_fine]: the coarse state of each fine state (label history read in IOB2)."""
    if fine is coarse:
        return np.arange(fine.num_states)
    index = {name: s for s, name in enumerate(coarse.state_names)}
    mapped = []
    for name in fine.state_names:
        history = " ".join(as_iob2(label) for label in name.split(" "))
        mapped.append(index[history] if history in index else index[history.split(" ")[-1]])
    return np.array(mapped)


def lifted(pot, fine):
    """(emissions [N, S], transitions [E], start [S], final [S]) of ``pot`` on ``fine``."""
    states = state_map(fine, pot.topology)
    edges = pot.topology.edge_ids[states[fine.edge_src], states[fine.edge_dst]]
    transitions = np.where(edges >= 0, pot.transitions[np.maximum(edges, 0)], FORBIDDEN)
    finite = lambda scores: np.where(np.isfinite(scores), scores, FORBIDDEN)
    return pot.emissions[:, states], transitions, finite(pot.start[states]), finite(pot.final[states])


def main(argv):
    split = argv.index("--")
    path, first_path = argv[0], argv[1]
    first_file = argv[2] if split == 3 else path
    others = argv[split + 1:]
    gold = read_conll(path).column("chunk")
    first = load_model(first_path)
    pots = [first.potentials(read_conll(first_file))]
    pots += [load_model(other).potentials(read_conll(path)) for other in others]
    fine = pots[0].topology
    parts = [lifted(pot, fine) for pot in pots]

    def f1(scales):
        total = [sum(scale * part[i] for scale, part in zip(scales, parts)) for i in range(4)]
        pot = Potentials(fine, total[0], pots[0].lengths, total[1], total[2], total[3])
        predicted = split_labels(fine, viterbi(pot).paths, pot.offsets)
        return score_chunks(gold, [[as_iob2(label) for label in sentence] for sentence in predicted]).f1

    names = [first_path] + others
    for k, name in enumerate(names):
        print(f"{name} alone: {f1([1.0 if j == k else 1e-9 for j in range(len(names))]):.2f}")
    for weight in (0.5, 1.0, 2.0):
        print(f"product, {first_path} weighted {weight}: {f1([weight] + [1.0] * len(others)):.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
