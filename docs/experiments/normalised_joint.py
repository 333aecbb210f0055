"""Joint decoding with a first-order estimate of the upper model's normaliser: for the
cascade POS path y^, delta(t, a) = log Z(x, y^ with tag a at t) - log Z(x, y^) is
subtracted, times a weight, from the joint score of tag a at token t.

    python normalised_joint.py JOINT_MODEL CONLL_FILE WEIGHT [WEIGHT ...]
"""
import sys
import numpy as np
from scipy.special import logsumexp
from fstcrf.model.compose import load_joint
from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.evaluate import score_chunks
from fstcrf.engine.joint import JointPotentials, joint_viterbi
from fstcrf.engine.inference import viterbi

from common import joint_labels, token_accuracy, with_lower_labels

joint = load_joint(sys.argv[1]); data = read_conll(sys.argv[2])
pos, chunk = joint.components
sentences = data.sentences
K = len(pos.labels_)

def correction(block):
    """float [n, K]: delta(t, a) per token and POS label."""
    pos_path = viterbi(pos.potentials(block)).paths
    lengths = [len(s) for s in block]
    base = chunk.potentials(with_lower_labels(block, pos, pos_path))
    by_label = chunk.reading_emissions(block, pos.labels_)          # [n, K, S]
    trans_by_label = chunk.transition_scores(pos.labels_)           # [K, E]
    topo = chunk.topology_
    S = topo.num_states
    dense = np.full((K, S, S), -np.inf)
    dense[:, topo.edge_src, topo.edge_dst] = trans_by_label
    out = np.zeros((len(pos_path), K))
    for b, rows in enumerate(np.split(np.arange(len(pos_path)), np.cumsum(lengths)[:-1])):
        emit = base.emissions[rows]
        trans = base.transitions_into(rows)
        T = len(rows)
        table = np.full((T, S, S), -np.inf)
        table[:, topo.edge_src, topo.edge_dst] = trans
        alpha = np.empty((T, S)); beta = np.empty((T, S))
        alpha[0] = base.start + emit[0]
        for t in range(1, T):
            alpha[t] = emit[t] + logsumexp(alpha[t - 1][:, None] + table[t], axis=0)
        beta[T - 1] = base.final
        for t in range(T - 2, -1, -1):
            beta[t] = logsumexp(table[t + 1] + (emit[t + 1] + beta[t + 1])[None, :], axis=1)
        log_z = logsumexp(alpha[T - 1] + base.final)
        e_alt = by_label[rows]                                       # [T, K, S]
        out[rows[0]] = logsumexp(base.start[None, :] + e_alt[0] + beta[0][None, :], axis=1) - log_z
        for t in range(1, T):
            scores = alpha[t - 1][None, :, None] + dense + (e_alt[t] + beta[t][None, :])[:, None, :]
            out[rows[t]] = logsumexp(scores.reshape(K, -1), axis=1) - log_z
    return out

gold_chunks, gold_pos = data.column("chunk"), data.column("pos")
for weight in [float(w) for w in sys.argv[3:]]:
    chunk_pred, pos_pred = [], []
    for first in range(0, len(sentences), 300):
        block = sentences[first:first + 300]
        jp = joint.potentials(block)
        delta = correction(block)[:, pos.topology_.state_label]     # [n, S_pos]
        emissions = (jp.emissions.reshape(len(delta), len(pos.topology_.state_label), -1)
                     - weight * delta[:, :, None]).reshape(len(delta), -1)
        adjusted = JointPotentials(jp.space, emissions, jp.lengths, jp.transitions)
        tags, chunks = joint_labels(joint, joint_viterbi(adjusted).paths, block)
        pos_pred += tags
        chunk_pred += chunks
    accuracy = token_accuracy(gold_pos, pos_pred)
    print(f"normaliser weight {weight}: chunk F1 {score_chunks(gold_chunks, chunk_pred).f1:.2f}, POS accuracy {accuracy:.2f}")
