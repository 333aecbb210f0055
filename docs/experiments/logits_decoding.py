"""decode_logits on logits from no model at all: its throughput on random logits
[1000 sentences, 30 tokens, 9 IOB2 labels] (best of 5, 1 and 2 threads, against
numpy's argmax, and with entity probabilities), and, on noisy logits of
constructed gold IOB2 sequences, how often the argmax is not valid IOB2 and the
entity F1 of argmax and of decode_logits.  Usage: python docs/experiments/logits_decoding.py
"""

import time

import numpy as np

from fstcrf.corpus.schemes import convert, read_chunks, write_chunks
from fstcrf.logits import decode_logits

types = ["PER", "LOC", "ORG", "MISC"]
labels = ["O"] + [f"{p}-{t}" for t in types for p in "BI"]
rng = np.random.default_rng(0)
B, T, L = 1000, 30, len(labels)
logits = rng.normal(size=(B, T, L))
decode_logits(logits[:10], labels, scheme="iob2")  # warm-up


def best_of_5(work) -> float:
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        work()
        times.append(time.perf_counter() - t0)
    return min(times)


for threads in (1, 2):
    seconds = best_of_5(lambda: decode_logits(logits, labels, scheme="iob2", threads=threads))
    print(f"decode_logits iob2 threads={threads}: {seconds * 1e3:.1f} ms, {B * T / seconds:,.0f} tokens/s")
seconds = best_of_5(lambda: logits.argmax(axis=2))
print(f"numpy argmax: {B * T / seconds:,.0f} tokens/s")
t0 = time.perf_counter()
decode_logits(logits, labels, scheme="iob2").entities
print(f"decode_logits + entity probabilities: {B * T / (time.perf_counter() - t0):,.0f} tokens/s")

# gold: 2-3 entities of 1-3 tokens per sentence; logits: margin on the gold label plus Gaussian noise
gold = []
for _ in range(B):
    starts = sorted(rng.choice(np.arange(0, T - 3, 4), size=rng.integers(2, 4), replace=False))
    chunks = [(int(s), int(s + rng.integers(0, 3)), str(rng.choice(types))) for s in starts]
    gold.append(write_chunks(chunks, T, "iob2"))
index = np.array([[labels.index(x) for x in s] for s in gold])
for margin, noise in ((3.0, 1.0), (2.0, 1.0), (2.0, 1.5)):
    noisy = rng.normal(scale=noise, size=(B, T, L))
    noisy[np.arange(B)[:, None], np.arange(T)[None, :], index] += margin
    argmax = [[labels[i] for i in row] for row in noisy.argmax(axis=2)]
    decoded = decode_logits(noisy, labels, scheme="iob2").labels

    def invalid(sequences):
        return np.mean([convert(s, "iob2") != s for s in sequences])

    def entity_f1(sequences):
        found = {(b, c) for b, s in enumerate(sequences) for c in read_chunks(s)}
        true = {(b, c) for b, s in enumerate(gold) for c in read_chunks(s)}
        return 2 * len(found & true) / (len(found) + len(true))

    print(
        f"margin {margin} noise {noise}: invalid sentences argmax {invalid(argmax):.1%}, "
        f"decode_logits {invalid(decoded):.1%}; entity F1 (conlleval chunks) argmax {entity_f1(argmax):.3f}, "
        f"decode_logits {entity_f1(decoded):.3f}"
    )
