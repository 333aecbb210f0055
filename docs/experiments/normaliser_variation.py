"""How much does a reading chunker's log Z(x, y_pos) vary over POS sequences drawn
exactly from the POS CRF, and how much of that is a constant per POS tag?

    python normaliser_variation.py POS_MODEL CHUNK_MODEL CONLL_FILE
"""
import sys

import numpy as np
from fstcrf.model import load_model
from fstcrf.corpus.conll import read_conll
from fstcrf.engine.inference import kbest, log_partition, sample

from common import with_lower_labels

pos, chunk = load_model(sys.argv[1]), load_model(sys.argv[2])
dev = read_conll(sys.argv[3])
sentences = dev.sentences
lengths = np.array([len(s) for s in sentences])
draws = sample(pos.potentials(sentences), 30, seed=0)                      # [R, N] POS states
log_z = []
tag_counts = []
for r in range(len(draws)):
    log_z.append(log_partition(chunk.potentials(with_lower_labels(sentences, pos, draws[r]))))
    counts = np.zeros((len(sentences), len(pos.labels_)))
    np.add.at(counts, (np.repeat(np.arange(len(sentences)), lengths), pos.topology_.state_label[draws[r]]), 1)
    tag_counts.append(counts)
log_z = np.array(log_z)                       # [R, B]
centered = log_z - log_z.mean(axis=0)
print("std over POS draws of log Z_chunk, per sentence: median %.3f, mean %.3f, 90%% %.3f nats"
      % (np.median(centered.std(axis=0)), centered.std(axis=0).mean(), np.quantile(centered.std(axis=0), 0.9)))
# how much of that variation is a per-tag constant: regress centred log Z on centred tag counts
counts = np.array(tag_counts)                 # [R, B, L]
X = (counts - counts.mean(axis=0)).reshape(-1, counts.shape[2])
y = centered.reshape(-1)
coef, *_ = np.linalg.lstsq(X, y, rcond=None)
residual = y - X @ coef
print("variance explained by per-tag constants: %.3f" % (1 - residual.var() / y.var()))
print("per-tag constants (nats), largest magnitude:",
      sorted(zip(np.round(coef, 2), pos.labels_), key=lambda t: -abs(t[0]))[:8])
# against the score gap between the two best POS sequences of each sentence
two_best = kbest(pos.potentials(sentences), 2).scores
gap = (two_best[:, 0] - two_best[:, 1])[np.isfinite(two_best[:, 1])]
print("gap between the best and second-best POS sequence: median %.2f, 10%% %.2f, 90%% %.2f nats"
      % (np.median(gap), np.quantile(gap, 0.1), np.quantile(gap, 0.9)))
