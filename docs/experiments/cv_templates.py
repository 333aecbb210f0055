"""5-fold cross-validation on a training file of the templates that led to
`chunking-extended` (order 1, sigma 10, 100 L-BFGS iterations per fold).

    python cv_templates.py TRAIN
"""
import sys

import numpy as np
from fstcrf.corpus.conll import Corpus, read_conll
from fstcrf.features import SHA_PEREIRA_CHUNKING, parse_template
from fstcrf.model import ChainCRF

train = read_conll(sys.argv[1])
bigrams = SHA_PEREIRA_CHUNKING.text + "\nword[-2]|word[-1]\nword[+1]|word[+2]\n"
word_pos = "word[0]|pos[0]\nword[-1]|pos[0]\nword[0]|pos[+1]\nword[+1]|pos[0]\nword[0]|pos[-1]\n"
affixes = "lower(word[0])\nsuffix2(word[0])\nsuffix3(word[0])\nprefix2(word[0])\nshape(word[0])\n"
templates = {"Table 1 (sha-pereira)": SHA_PEREIRA_CHUNKING,
             "+ word pairs (-2,-1), (+1,+2)": parse_template(bigrams),
             "+ word pairs + word-POS pairs (chunking-extended)": parse_template(bigrams + word_pos),
             "+ word pairs + affixes and shape": parse_template(bigrams + affixes)}
folds = np.array_split(np.random.default_rng(0).permutation(len(train)), 5)
for name, template in templates.items():
    scores = []
    for held in folds:
        held_set = set(held.tolist())
        fit = Corpus(train.column_names, [s for i, s in enumerate(train.sentences) if i not in held_set])
        dev = Corpus(train.column_names, [train.sentences[i] for i in sorted(held_set)])
        scores.append(ChainCRF(template, max_iter=100).fit(fit).score(dev).f1)
    print(f"{name}: folds {' '.join(f'{s:.2f}' for s in scores)}; mean {np.mean(scores):.3f}", flush=True)
