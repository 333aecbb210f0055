"""(y, z) maximising log p(y | x) + log p(z | y, x), the product of the two
conditionals with both normalisers kept, searched over the K best POS
sequences: for each, the chunker's best path and its exact log Z(x, y).

    python normalised_rerank.py JOINT_MODEL CONLL_FILE K
"""
import sys

import numpy as np
from fstcrf.compose import load_joint
from fstcrf.conll import Sentence, read_conll
from fstcrf.evaluate import score_chunks
from fstcrf.inference import kbest, log_partition, viterbi

joint = load_joint(sys.argv[1]); data = read_conll(sys.argv[2]); k = int(sys.argv[3])
pos, chunk = joint.components
sentences = data.sentences
lengths = np.array([len(s) for s in sentences]); cuts = np.cumsum(lengths)[:-1]
pos_names = np.array(pos.labels_, dtype=object)
chunk_names = np.array(chunk.labels_, dtype=object)

pos_pot = pos.potentials(sentences)
best_pos = kbest(pos_pot, k)                                     # paths [K, N], scores [B, K]
log_z_pos = log_partition(pos_pot)                               # [B]
total = np.full((len(sentences), k), -np.inf)                   # log p(y_r | x) + log p(z_r | y_r, x)
chunk_paths, pos_paths = [], []
for r in range(k):
    states = np.maximum(best_pos.paths[r], 0)
    tags = np.split(pos_names[pos.topology_.state_label[states]], cuts)
    reading = [Sentence({**s.columns, "pos": list(t)}) for s, t in zip(sentences, tags)]
    chunk_pot = chunk.potentials(reading)
    best_chunk = viterbi(chunk_pot)
    total[:, r] = best_pos.scores[:, r] - log_z_pos + best_chunk.scores - log_partition(chunk_pot)
    chunk_paths.append(np.split(chunk_names[chunk.topology_.state_label[best_chunk.paths]], cuts))
    pos_paths.append(tags)
total[best_pos.scores == -np.inf] = -np.inf
choice = total.argmax(axis=1)
chunks = [list(chunk_paths[r][b]) for b, r in enumerate(choice)]
tags = [list(pos_paths[r][b]) for b, r in enumerate(choice)]
gold_pos = data.column("pos")
agree = sum(int(np.sum(np.array(t) == np.array(g))) for t, g in zip(tags, gold_pos))
print(f"K={k}: chunk F1 {score_chunks(data.column('chunk'), chunks).f1:.2f}, "
      f"POS accuracy {100 * agree / lengths.sum():.2f}, rank-1 POS chosen for {np.mean(choice == 0):.1%}")
