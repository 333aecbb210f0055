"""(y, z) maximising log p(y | x) + log p(z | y, x), the product of the two
conditionals with both normalisers kept, searched over the K best POS
sequences: for each, the chunker's best path and its exact log Z(x, y).

    python normalised_rerank.py JOINT_MODEL CONLL_FILE K
"""
import sys

import numpy as np
from fstcrf.model.compose import load_joint
from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.evaluate import score_chunks
from fstcrf.engine.inference import kbest, log_partition, viterbi

from common import labels_per_sentence, token_accuracy, with_lower_labels

joint = load_joint(sys.argv[1]); data = read_conll(sys.argv[2]); k = int(sys.argv[3])
pos, chunk = joint.components
sentences = data.sentences

pos_pot = pos.potentials(sentences)
best_pos = kbest(pos_pot, k)                                     # paths [K, N], scores [B, K]
log_z_pos = log_partition(pos_pot)                               # [B]
total = np.full((len(sentences), k), -np.inf)                   # log p(y_r | x) + log p(z_r | y_r, x)
chunk_paths, pos_paths = [], []
for r in range(k):
    states = np.maximum(best_pos.paths[r], 0)
    chunk_pot = chunk.potentials(with_lower_labels(sentences, pos, states))
    best_chunk = viterbi(chunk_pot)
    total[:, r] = best_pos.scores[:, r] - log_z_pos + best_chunk.scores - log_partition(chunk_pot)
    chunk_paths.append(labels_per_sentence(chunk, best_chunk.paths, sentences))
    pos_paths.append(labels_per_sentence(pos, states, sentences))
total[best_pos.scores == -np.inf] = -np.inf
choice = total.argmax(axis=1)
chunks = [chunk_paths[r][b] for b, r in enumerate(choice)]
tags = [pos_paths[r][b] for b, r in enumerate(choice)]
print(f"K={k}: chunk F1 {score_chunks(data.column('chunk'), chunks).f1:.2f}, "
      f"POS accuracy {token_accuracy(data.column('pos'), tags):.2f}, rank-1 POS chosen for {np.mean(choice == 0):.1%}")
