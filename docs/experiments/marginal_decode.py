"""Chunks by p(z | x) = sum_y p(y | x) p(z | y, x): exact POS samples, the chunker's exact
marginals per sample, averaged, then the best IOB2-valid path of summed log-marginals;
beside the cascade's and the composed model's marginals, decoded the same way.

    python marginal_decode.py JOINT_MODEL CONLL_FILE NUM_SAMPLES
"""
import sys
import numpy as np
from fstcrf.model.compose import load_joint
from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.evaluate import score_chunks
from fstcrf.engine.inference import Potentials, sample, viterbi
from fstcrf.grammar import constrain, load_grammar, restrict_to
from fstcrf.engine.topology import first_order

from common import with_lower_labels

joint = load_joint(sys.argv[1]); data = read_conll(sys.argv[2]); draws = int(sys.argv[3])
pos, chunk = joint.components
sentences = data.sentences
lengths = np.array([len(s) for s in sentences]); cuts = np.cumsum(lengths)[:-1]

def chunk_marginals(pos_states):
    return np.concatenate(chunk.predict_marginals(with_lower_labels(sentences, pos, pos_states)))  # [N, L]

def decode(marginals):
    labels = chunk.labels_
    topo = first_order(labels)
    pot = Potentials(topo, np.log(np.maximum(marginals, 1e-300)), lengths)
    restriction = restrict_to(pot, constrain(topo, load_grammar("iob2")))
    path = restriction.state_map[viterbi(restriction.potentials).paths]
    return [list(p) for p in np.split(np.array(labels, dtype=object)[path], cuts)]

gold = data.column("chunk")
cascade_states = viterbi(pos.potentials(sentences)).paths
cascade = chunk_marginals(cascade_states)
print(f"cascade, posterior decoding: {score_chunks(gold, decode(cascade)).f1:.2f}")
samples = sample(pos.potentials(sentences), draws, seed=0)
average = np.mean([chunk_marginals(samples[r]) for r in range(draws)], axis=0)
print(f"p(z|x) from {draws} POS samples, posterior decoding: {score_chunks(gold, decode(average)).f1:.2f}")
_, joint_marginals = joint.predict_marginals(sentences)
print(f"composed model's joint marginals, posterior decoding: {score_chunks(gold, decode(np.concatenate(joint_marginals))).f1:.2f}")
