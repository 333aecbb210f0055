"""A BiLSTM-CRF trained here on CoNLL-2003 English NER (IOB2): a softmax head, the
CRF layer ``fstcrf.torch.CRF``, and the same CRF under the IOB2 scheme.

The encoder follows Lample et al. (2016) without pretrained vectors: word
embeddings (lower-cased, digits as 0) and a character BiLSTM, both learned from
eng.train alone, and a word-level BiLSTM.  Every head sees the same encoder,
batches, optimiser and epochs; the epoch with the best dev (eng.testa) F1 is
kept and scored once on eng.testb.  docs/torch.md reports the figures::

    python -m fstcrf.experiments.bilstm_crf --head softmax crf crf-iob2 --out results.json

torch is needed (``pip install 'fstcrf[torch]'``).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path


from fstcrf.corpus.evaluate import score_chunks
from fstcrf.experiments.transfer import read_conll2003
from fstcrf.extras import require

HEADS = ("softmax", "crf", "crf-iob2")
PAD, UNKNOWN = 0, 1
#: Token shapes the encoder sees besides the lower-cased word.
CASINGS = ("other", "lower", "title", "upper", "mixed", "digits", "has-digit")


def normalise(word: str) -> str:
    return re.sub(r"\d", "0", word.lower())


def casing(word: str) -> int:
    if word.isdigit():
        return CASINGS.index("digits")
    if any(c.isdigit() for c in word):
        return CASINGS.index("has-digit")
    if word.islower():
        return CASINGS.index("lower")
    if word.isupper():
        return CASINGS.index("upper")
    if word[:1].isupper() and word[1:].islower():
        return CASINGS.index("title")
    return CASINGS.index("mixed") if any(c.isalpha() for c in word) else CASINGS.index("other")


def is_valid_iob2(tags) -> bool:
    """Whether every I-t follows B-t or I-t."""
    previous = "O"
    for tag in tags:
        if tag.startswith("I-") and previous[2:] != tag[2:]:
            return False
        previous = tag
    return True


class Vocabulary:
    """Words (with their counts), characters and tags of the training data."""

    def __init__(self, sentences: list[tuple[list[str], list[str]]]):
        counts = Counter(normalise(w) for words, _ in sentences for w in words)
        self.words = ["<pad>", "<unk>"] + sorted(counts)
        self.word_index = {w: i for i, w in enumerate(self.words)}
        self.singletons = {self.word_index[w] for w, n in counts.items() if n == 1}
        chars = sorted({c for words, _ in sentences for w in words for c in w})
        self.char_index = {c: i + 2 for i, c in enumerate(chars)}
        self.tags = sorted({t for _, tags in sentences for t in tags}, key=lambda t: (t != "O", t[2:], t))

    def encode(self, words: list[str]):
        return (
            [self.word_index.get(normalise(w), UNKNOWN) for w in words],
            [[self.char_index.get(c, UNKNOWN) for c in w] for w in words],
            [casing(w) for w in words],
        )


def build_model(torch, vocabulary: Vocabulary, head: str, word_dim=100, char_dim=25, char_hidden=25, hidden=100):
    nn = torch.nn
    from fstcrf.torch import CRF

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.word = nn.Embedding(len(vocabulary.words), word_dim, padding_idx=PAD)
            self.char = nn.Embedding(len(vocabulary.char_index) + 2, char_dim, padding_idx=PAD)
            self.case = nn.Embedding(len(CASINGS), 8)
            self.char_lstm = nn.LSTM(char_dim, char_hidden, bidirectional=True, batch_first=True)
            self.lstm = nn.LSTM(word_dim + 2 * char_hidden + 8, hidden, bidirectional=True, batch_first=True)
            self.dropout = nn.Dropout(0.5)
            self.scores = nn.Linear(2 * hidden, len(vocabulary.tags))
            if head == "crf":
                self.crf = CRF(len(vocabulary.tags), batch_first=True)
            elif head == "crf-iob2":
                self.crf = CRF.from_labels(vocabulary.tags, scheme="iob2", batch_first=True)
            else:
                self.crf = None

        def emissions(self, batch):
            words, chars, char_lengths, cases, mask = batch
            packed = nn.utils.rnn.pack_padded_sequence(
                self.char(chars), char_lengths, batch_first=True, enforce_sorted=False
            )
            _, (last, _) = self.char_lstm(packed)
            spelled = words.new_zeros((*words.shape, 2 * last.shape[-1]), dtype=last.dtype)
            spelled[mask] = torch.cat([last[0], last[1]], -1)
            inputs = self.dropout(torch.cat([self.word(words), spelled, self.case(cases)], -1))
            lengths = mask.sum(1).cpu()
            packed = nn.utils.rnn.pack_padded_sequence(inputs, lengths, batch_first=True, enforce_sorted=False)
            encoded, _ = self.lstm(packed)
            encoded, _ = nn.utils.rnn.pad_packed_sequence(encoded, batch_first=True, total_length=words.shape[1])
            return self.scores(self.dropout(encoded))

        def loss(self, batch, tags):
            emissions = self.emissions(batch)
            mask = batch[-1]
            if self.crf is None:
                return nn.functional.cross_entropy(emissions[mask], tags[mask], reduction="sum") / len(tags)
            return -self.crf(emissions, tags, mask, reduction="mean")

        def predict(self, batch) -> list[list[int]]:
            emissions = self.emissions(batch)
            mask = batch[-1]
            if self.crf is not None:
                return self.crf.decode(emissions, mask)
            best = emissions.argmax(-1)
            return [best[b, : int(n)].tolist() for b, n in enumerate(mask.sum(1))]

    return Tagger()


def tensors(torch, vocabulary: Vocabulary, sentences, train: bool, rng: random.Random):
    """One padded batch: (words [B, T], chars [N, C], char lengths [N], casings [B, T],
    mask [B, T]), tags [B, T]."""
    encoded = [vocabulary.encode(words) for words, _ in sentences]
    width = max(len(w) for w, _, _ in encoded)
    words = torch.zeros((len(encoded), width), dtype=torch.long)
    cases = torch.zeros_like(words)
    tags = torch.zeros_like(words)
    mask = torch.zeros((len(encoded), width), dtype=torch.bool)
    spellings = []
    for b, ((ids, chars, shapes), (_, labels)) in enumerate(zip(encoded, sentences)):
        if train:  # Lample et al.: a singleton becomes unknown half of the time
            ids = [UNKNOWN if i in vocabulary.singletons and rng.random() < 0.5 else i for i in ids]
        words[b, : len(ids)] = torch.tensor(ids)
        cases[b, : len(ids)] = torch.tensor(shapes)
        tags[b, : len(ids)] = torch.tensor([vocabulary.tags.index(t) if t in vocabulary.tags else 0 for t in labels])
        mask[b, : len(ids)] = True
        spellings.extend(chars)
    char_width = max(len(c) for c in spellings)
    chars = torch.zeros((len(spellings), char_width), dtype=torch.long)
    for n, spelled in enumerate(spellings):
        chars[n, : len(spelled)] = torch.tensor(spelled)
    char_lengths = torch.tensor([len(c) for c in spellings])
    return (words, chars, char_lengths, cases, mask), tags


def evaluate(torch, model, vocabulary, sentences, batch_size=128) -> dict:
    model.eval()
    predicted = []
    with torch.no_grad():
        for first in range(0, len(sentences), batch_size):
            batch, _ = tensors(torch, vocabulary, sentences[first : first + batch_size], False, random.Random(0))
            predicted.extend([[vocabulary.tags[i] for i in tags] for tags in model.predict(batch)])
    gold = [tags for _, tags in sentences]
    scores = score_chunks(gold, predicted)
    invalid = sum(not is_valid_iob2(tags) for tags in predicted)
    return {"f1": scores.f1, "precision": scores.precision, "recall": scores.recall, "invalid_sequences": invalid}


def train_head(torch, head: str, data: dict, epochs: int, batch_size: int, seed: int, log) -> dict:
    torch.manual_seed(seed)
    rng = random.Random(seed)
    vocabulary = Vocabulary(data["train"])
    model = build_model(torch, vocabulary, head)
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-3)
    best: dict = {"dev": {"f1": -1.0}}
    started = time.perf_counter()
    order = list(range(len(data["train"])))
    try:
        for epoch in range(1, epochs + 1):
            model.train()
            rng.shuffle(order)
            total = 0.0
            for first in range(0, len(order), batch_size):
                chosen = [data["train"][i] for i in order[first : first + batch_size]]
                batch, tags = tensors(torch, vocabulary, chosen, True, rng)
                optimiser.zero_grad()
                loss = model.loss(batch, tags)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
                optimiser.step()
                total += loss.item() * len(chosen)
            dev = evaluate(torch, model, vocabulary, data["dev"])
            elapsed = time.perf_counter() - started
            log(f"{head} epoch {epoch}: loss {total / len(order):.3f}, dev F1 {dev['f1']:.2f}, {elapsed:.0f} s")
            if dev["f1"] > best["dev"]["f1"]:
                best = {"dev": dev, "epoch": epoch, "state": copy.deepcopy(model.state_dict())}
    except KeyboardInterrupt:
        log(f"{head}: interrupted; scoring the best epoch so far")
    training_seconds = time.perf_counter() - started
    if "state" not in best:
        raise SystemExit(f"{head}: no epoch finished")
    model.load_state_dict(best["state"])
    test = evaluate(torch, model, vocabulary, data["test"])
    return {
        "head": head,
        "best_epoch": best["epoch"],
        "epochs": epochs,
        "dev": best["dev"],
        "test": test,
        "training_seconds": training_seconds,
        "threads": torch.get_num_threads(),
    }


def load(folder: Path, limit: int | None) -> dict:
    corpora = read_conll2003(folder)
    data = {}
    for split, name in (("train", "eng.train"), ("dev", "eng.testa"), ("test", "eng.testb")):
        sentences = [(s["word"], s["ner"]) for s in corpora[name]]
        data[split] = sentences[:limit] if limit else sentences
    return data


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fstcrf.experiments.bilstm_crf", description=__doc__.split("\n")[0])
    default_data = Path(os.environ.get("FSTCRF_DATA", "../shared/data")) / "conll2003"
    parser.add_argument("--data", type=Path, default=default_data, help="folder with eng.train, eng.testa, eng.testb")
    parser.add_argument("--head", nargs="+", choices=HEADS, default=list(HEADS))
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default torch's)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--limit", type=int, default=None, help="use the first N sentences of each file (smoke runs)")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    args = parser.parse_args(argv)
    torch = require("torch", "the BiLSTM-CRF experiment")
    if args.threads:
        torch.set_num_threads(args.threads)
    data = load(args.data, args.limit)
    results = []
    for head in args.head:
        result = train_head(torch, head, data, args.epochs, args.batch_size, args.seed, lambda m: print(m, flush=True))
        print(json.dumps(result), flush=True)
        results.append(result)
        if args.out:
            args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
