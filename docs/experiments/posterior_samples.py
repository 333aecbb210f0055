"""Training data for a chunker that reads POS, with the POS column replaced by
exact draws from a held-out POS CRF's posterior (k-fold, like `fstcrf jackknife`,
but several sampled POS sequences per sentence instead of the 1-best one).

    python posterior_samples.py TRAIN OUT SAMPLES [FOLDS]

Each training sentence appears SAMPLES times in OUT, once per draw.  A chunker
trained on OUT sees POS tags as uncertain as the POS CRF is about them.
"""
import sys

import numpy as np
from fstcrf.corpus.conll import Corpus, Sentence, read_conll, write_conll
from fstcrf.engine.inference import sample
from fstcrf.model import ChainCRF

from common import with_lower_labels

train = read_conll(sys.argv[1])
num_samples = int(sys.argv[3])
folds = int(sys.argv[4]) if len(sys.argv) > 4 else 5
sentences = train.sentences
cuts = np.linspace(0, len(sentences), folds + 1).round().astype(int)
copies: list[list[Sentence]] = [[] for _ in range(num_samples)]
for fold, (first, last) in enumerate(zip(cuts[:-1], cuts[1:])):
    rest = Corpus(train.column_names, sentences[:first] + sentences[last:])
    pos = ChainCRF(template="pos", max_iter=100).fit(rest, target="pos")
    held_out = sentences[first:last]
    draws = sample(pos.potentials(held_out), num_samples, seed=fold)      # [R, N] POS states
    for r in range(num_samples):
        copies[r] += with_lower_labels(held_out, pos, draws[r])
    print(f"fold {fold + 1}/{folds}: {last - first} sentences, {num_samples} POS draws each", flush=True)
write_conll(Corpus(train.column_names, [s for copy in copies for s in copy]), sys.argv[2])
