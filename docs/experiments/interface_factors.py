"""Learn a score B[a, c] for each (POS tag a, chunk label c) pair of a composed
POS x chunk model on held-out data, by maximising the joint conditional
log-likelihood log p(y, z | x) of the composed model with B added at every
token (the component weights stay fixed).  B can absorb per-tag
miscalibration such as the chunker's POS-dependent normaliser.

    python interface_factors.py JOINT_MODEL FIT_FILE EVAL_FILE [SIGMA]

Prints chunk F1 and POS accuracy on EVAL_FILE for the cascade, plain joint
decoding and joint decoding with the learned B.
"""
import sys

import numpy as np
import scipy.optimize
from fstcrf.model.compose import load_joint
from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.evaluate import score_chunks
from fstcrf.engine.joint import JointPotentials, joint_forward_backward, joint_viterbi

from common import joint_labels, token_accuracy

joint = load_joint(sys.argv[1])
fit, held_out = read_conll(sys.argv[2]), read_conll(sys.argv[3])
sigma = float(sys.argv[4]) if len(sys.argv) > 4 else 1.0
pos, chunk = joint.components
space = joint.space
L_pos, L_chunk = len(pos.labels_), len(chunk.labels_)
# first-order components: state = label
label_pair = space.component_states(np.arange(space.num_states))            # [P, 2]
pair_of_state = label_pair[:, 0] * L_chunk + label_pair[:, 1]               # [P] -> index into B


def with_interface(jp: JointPotentials, B: np.ndarray) -> JointPotentials:
    return JointPotentials(space, jp.emissions + B.ravel()[pair_of_state], jp.lengths, jp.transitions)


blocks = []
for first in range(0, len(fit), 200):
    sentences = fit.sentences[first:first + 200]
    jp = joint.potentials(sentences)
    pos_index = {label: i for i, label in enumerate(pos.labels_)}
    chunk_index = {label: i for i, label in enumerate(chunk.labels_)}
    gold = np.zeros(L_pos * L_chunk)
    for sentence in sentences:
        for a, c in zip(sentence["pos"], sentence["chunk"]):
            gold[pos_index[a] * L_chunk + chunk_index[c]] += 1
    blocks.append((jp, gold))


def objective(flat: np.ndarray) -> tuple[float, np.ndarray]:
    """-sum log p(y, z | x) over the fit data + |B|^2 / (2 sigma^2), and its gradient."""
    B = flat.reshape(L_pos, L_chunk)
    value, grad = flat @ flat / (2 * sigma ** 2), flat / sigma ** 2
    for jp, gold in blocks:
        log_z, node = joint_forward_backward(with_interface(jp, B))
        expected = np.bincount(pair_of_state, weights=node.sum(axis=0), minlength=L_pos * L_chunk)
        value += log_z.sum() - gold @ flat            # the rest of the gold score does not depend on B
        grad += expected - gold
    return value, grad


result = scipy.optimize.minimize(objective, np.zeros(L_pos * L_chunk), jac=True, method="L-BFGS-B",
                                 options={"maxiter": 100})
B = result.x.reshape(L_pos, L_chunk)
print(f"fit: {result.nit} iterations, objective {result.fun:.1f}; |B| max {np.abs(B).max():.2f}")


def decode(B):
    tags, chunks = [], []
    for first in range(0, len(held_out), 200):
        sentences = held_out.sentences[first:first + 200]
        paths = joint_viterbi(with_interface(joint.potentials(sentences), B)).paths
        block_tags, block_chunks = joint_labels(joint, paths, sentences)
        tags += block_tags
        chunks += block_chunks
    return tags, chunks


def report(name, tags, chunks):
    print(f"{name}: chunk F1 {score_chunks(held_out.column('chunk'), chunks).f1:.2f}, "
          f"POS accuracy {token_accuracy(held_out.column('pos'), tags):.2f}")


report("cascade", *joint.predict(held_out, mode="cascade"))
report("joint", *decode(np.zeros_like(B)))
report(f"joint + learned B (sigma {sigma})", *decode(B))
