"""fstcrf.sklearn CRFs composed: a POS tagger and a chunker that reads its tags,
decoded as a cascade and jointly, on CoNLL-2000 (docs/sklearn.md).

    python docs/experiments/sklearn_joint.py TRAIN TEST [ITERATIONS]
    python docs/experiments/sklearn_joint.py TRAIN TEST ITERATIONS scales

With "scales", the chunker's score weight in joint decoding is chosen from
0.25, 0.5, 0.75 and 1 on the last 936 training sentences (CRFs trained on
the others), then the CRFs trained on all of TRAIN decode TEST jointly with
that weight, against the cascade.

Both CRFs see the same token dicts (the word, its affixes and shape, and the
neighbouring words, in the style of sklearn-crfsuite's tutorial); the chunker
also reads the tag of its own token from the key "pos", trained on the gold
tags or (``folds=5``) on 5-fold held-out predicted tags.  Prints chunk F1
(conlleval) and POS accuracy for the chunker without tags, with the gold
tags, the cascade (the tagger's 1-best tags) and joint decoding, with
McNemar's test between cascade and joint.
"""
import sys
import time

from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.evaluate import mcnemar, score_chunks
from fstcrf.sklearn import CRF, JointCRF, metrics


def word_features(words: list[str], i: int) -> dict:
    """Token i's dict: the word lower-cased, its affixes and shape; words at -2..+2."""
    word = words[i]
    features = {"bias": 1.0, "word.lower()": word.lower(), "word[-3:]": word[-3:], "word[-2:]": word[-2:],
                "word[:3]": word[:3], "word.isupper()": word.isupper(), "word.istitle()": word.istitle(),
                "word.isdigit()": word.isdigit(), "hyphen": "-" in word}
    for offset in (-2, -1, 1, 2):
        j = i + offset
        features[f"{offset:+d}:word.lower()"] = words[j].lower() if 0 <= j < len(words) else "<none>"
    features["-1:word[-3:]"] = words[i - 1][-3:] if i else "<none>"
    features["+1:word[-3:]"] = words[i + 1][-3:] if i + 1 < len(words) else "<none>"
    return features


def dicts(corpus) -> list[list[dict]]:
    return [[word_features(s["word"], i) for i in range(len(s))] for s in corpus.sentences]


def with_tags(X: list, tags: list) -> list:
    return [[{**token, "pos": tag} for token, tag in zip(xseq, sequence)] for xseq, sequence in zip(X, tags)]


def main(train_path: str, test_path: str, iterations: int = 100) -> None:
    train, test = read_conll(train_path), read_conll(test_path)
    X, X_test = dicts(train), dicts(test)
    tags, chunks = train.column("pos"), train.column("chunk")
    gold_tags, gold_chunks = test.column("pos"), test.column("chunk")
    settings = {"c1": 0.1, "c2": 0.1, "max_iterations": iterations, "all_possible_transitions": True}
    rows, seconds = {"chunker without tags": (None, CRF(**settings).fit(X, chunks).predict(X_test))}, {}
    for training, folds in (("gold", None), ("held-out", 5)):
        started = time.perf_counter()
        joint = JointCRF([CRF(**settings), CRF(reads="pos", **settings)], folds=folds).fit(X, [tags, chunks])
        seconds[f"fit, {training} tags"] = time.perf_counter() - started
        chunker = joint.crfs_[1]
        rows[f"chunker trained on {training} tags, given gold tags"] = \
            (gold_tags, chunker.predict(with_tags(X_test, gold_tags)))
        for mode in ("cascade", "joint"):
            started = time.perf_counter()
            rows[f"chunker trained on {training} tags, {mode}"] = tuple(joint.set_params(mode=mode).predict(X_test))
            seconds[f"{mode}, {training} tags"] = time.perf_counter() - started
    print(f"{len(train)} training sentences, {len(test)} test sentences, {iterations} iterations; seconds: "
          + ", ".join(f"{name} {value:.1f}" for name, value in seconds.items()))
    print("| decoding | chunk F1 | POS accuracy |")
    print("|---|---|---|")
    for name, (predicted_tags, predicted_chunks) in rows.items():
        f1 = score_chunks(gold_chunks, [list(c) for c in predicted_chunks]).f1
        accuracy = "–" if predicted_tags is None else \
            f"{100 * metrics.flat_accuracy_score(gold_tags, [list(t) for t in predicted_tags]):.2f}"
        print(f"| {name} | {f1:.2f} | {accuracy} |")
    for training in ("gold", "held-out"):
        cascade, joint = (rows[f"chunker trained on {training} tags, {mode}"][1] for mode in ("cascade", "joint"))
        result = mcnemar(gold_chunks, [list(c) for c in cascade], [list(c) for c in joint])
        print(f"McNemar, chunk labels, cascade vs joint ({training} tags): tokens only cascade right "
              f"{result.n01}, only joint right {result.n10}, p = {result.p_value:.3g}")


#: Chunker score weights tried on the held-out part, and its size in sentences.
SCALES, DEV_SENTENCES = (0.25, 0.5, 0.75, 1.0), 936


def chunk_f1(gold, predicted) -> float:
    return score_chunks(gold, [list(c) for c in predicted]).f1


def choose_scale(train_path: str, test_path: str, iterations: int) -> None:
    """The chunker's score weight chosen on held-out training sentences, then test F1."""
    train, test = read_conll(train_path), read_conll(test_path)
    X, X_test = dicts(train), dicts(test)
    tags, chunks = train.column("pos"), train.column("chunk")
    settings = {"c1": 0.1, "c2": 0.1, "max_iterations": iterations, "all_possible_transitions": True}
    cut = len(X) - DEV_SENTENCES
    held = JointCRF([CRF(**settings), CRF(reads="pos", **settings)]).fit(X[:cut], [tags[:cut], chunks[:cut]])
    dev_f1 = {scale: chunk_f1(chunks[cut:], held.set_params(scales=[1.0, scale]).predict(X[cut:])[1])
              for scale in SCALES}
    dev_f1["cascade"] = chunk_f1(chunks[cut:], held.set_params(mode="cascade", scales=None).predict(X[cut:])[1])
    chosen = max(SCALES, key=lambda scale: dev_f1[scale])
    print("dev chunk F1 (train", cut, "-> dev", DEV_SENTENCES, "sentences):",
          ", ".join(f"{key}: {value:.2f}" for key, value in dev_f1.items()), "; chosen scale", chosen)
    full = JointCRF([CRF(**settings), CRF(reads="pos", **settings)]).fit(X, [tags, chunks])
    gold = test.column("chunk")
    joint = full.set_params(scales=[1.0, chosen]).predict(X_test)[1]
    cascade = full.set_params(mode="cascade", scales=None).predict(X_test)[1]
    result = mcnemar(gold, [list(c) for c in cascade], [list(c) for c in joint])
    print(f"test chunk F1: cascade {chunk_f1(gold, cascade):.2f}, joint with scale {chosen} "
          f"{chunk_f1(gold, joint):.2f}; McNemar tokens only cascade right {result.n01}, only joint right "
          f"{result.n10}, p = {result.p_value:.3g}")


if __name__ == "__main__":
    if sys.argv[4:5] == ["scales"]:
        choose_scale(sys.argv[1], sys.argv[2], int(sys.argv[3]))
    else:
        main(sys.argv[1], sys.argv[2], *(int(arg) for arg in sys.argv[3:4]))
