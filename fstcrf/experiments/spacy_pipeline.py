"""A spaCy pipeline in which a spaCy tagger feeds an fstcrf chunker, on CoNLL-2000.

Nothing is downloaded: spaCy's ``tagger`` (its default model, on a blank English
pipeline) is trained here on the words and part-of-speech column of train.txt
(``nlp.initialize``, then ``epochs`` passes of ``nlp.update`` over shuffled
batches of 32 sentences), and fstcrf's chunker is trained on train.txt as
``fstcrf train`` trains it (the default template, chunking-extended).  The
pipeline tagger -> "fstcrf" then chunks test.txt from its words alone (one Doc per
sentence).  Reported: the spaCy tagger's accuracy on the test part-of-speech column,
the pipeline's chunk F1 (conlleval), the F1 of the same chunker on the file's own
part-of-speech column (what ``fstcrf tag`` sees), and the pipeline's tokens per
second in ``nlp.pipe``.  ``--save DIR`` writes the trained pipeline
(``nlp.to_disk``; the chunker's model is in its folder)::

    python -m fstcrf.experiments.spacy_pipeline --data $FSTCRF_DATA --out spacy_pipeline.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from fstcrf.corpus.conll import Sentence, read_conll
from fstcrf.corpus.evaluate import score_chunks
from fstcrf.corpus.schemes import write_chunks
from fstcrf.extras import require
from fstcrf.features.defaults import default_template
from fstcrf.files import write_atomically
from fstcrf.model.chain import ChainCRF

#: Sentences per ``nlp.update`` and the dropout of the tagger's training.
BATCH_SIZE = 32
DROPOUT = 0.1


def train_tagger(sentences: Sequence[Sentence], epochs: int, seed: int):
    """A blank English spaCy pipeline whose ``tagger`` is trained on the words and the
    "pos" column of ``sentences``."""
    spacy = require("spacy", "the spaCy pipeline experiment")
    from spacy.tokens import Doc
    from spacy.training import Example
    from spacy.util import fix_random_seed, minibatch

    fix_random_seed(seed)
    nlp = spacy.blank("en")
    nlp.add_pipe("tagger")
    examples = [Example.from_dict(Doc(nlp.vocab, words=s["word"]), {"tags": s["pos"]}) for s in sentences]
    optimizer = nlp.initialize(lambda: examples)
    order = random.Random(seed)
    for _ in range(epochs):
        order.shuffle(examples)
        for batch in minibatch(examples, size=BATCH_SIZE):
            nlp.update(batch, sgd=optimizer, drop=DROPOUT)
    return nlp


def run_pipeline(nlp, sentences: Sequence[Sentence], batch_size: int = 1000):
    """The Docs of ``sentences``' words (one per sentence) after ``nlp.pipe``, and its
    seconds."""
    from spacy.tokens import Doc

    docs = [Doc(nlp.vocab, words=s["word"]) for s in sentences]
    started = time.perf_counter()
    docs = list(nlp.pipe(docs, batch_size=batch_size))
    return docs, time.perf_counter() - started


def tag_accuracy(docs, sentences: Sequence[Sentence]) -> float:
    """The percentage of tokens whose ``tag_`` is the sentence's "pos" label."""
    pairs = [(token.tag_, tag) for doc, s in zip(docs, sentences) for token, tag in zip(doc, s["pos"])]
    return 100.0 * sum(found == gold for found, gold in pairs) / len(pairs)


def span_tags(docs, key: str = "chunks") -> list[list[str]]:
    """The IOB2 tags [B][T] of each Doc's span group ``key``."""
    return [
        write_chunks([(span.start, span.end - 1, span.label_) for span in doc.spans[key]], len(doc), "iob2")
        for doc in docs
    ]


def experiment(
    data: str | os.PathLike,
    epochs: int = 10,
    max_iter: int = 100,
    threads: int = 2,
    seed: int = 0,
    train_sentences: int | None = None,
    test_sentences: int | None = None,
    save: str | os.PathLike | None = None,
) -> dict:
    """Train both taggers on ``data``/conll2000/train.txt (its first ``train_sentences``)
    and run the pipeline on test.txt (its first ``test_sentences``); the figures of the
    module doc, JSON-able.  ``save``: a folder for the trained pipeline."""
    folder = Path(data) / "conll2000"
    train = read_conll(folder / "train.txt", columns="word,pos,chunk").sentences[:train_sentences]
    test = read_conll(folder / "test.txt", columns="word,pos,chunk").sentences[:test_sentences]
    started = time.perf_counter()
    nlp = train_tagger(train, epochs, seed)
    tagger_seconds = time.perf_counter() - started
    started = time.perf_counter()
    chunker = ChainCRF(template=default_template("chunk", ("word", "pos", "chunk")), max_iter=max_iter, threads=threads)
    chunker.fit(train, target="chunk")
    chunker_seconds = time.perf_counter() - started
    from fstcrf.spacy.factory import FACTORY  # registers the factory, as the installed entry point does

    gold = [s["chunk"] for s in test]
    with tempfile.TemporaryDirectory(prefix="fstcrf-spacy-pipeline-") as scratch:
        model_path = Path(scratch) / "chunker.model"
        chunker.save(model_path)
        nlp.add_pipe(FACTORY, config={"model": str(model_path), "threads": threads})
        if save is not None:
            nlp.to_disk(save)
    docs, seconds = run_pipeline(nlp, test)
    tokens = sum(len(s) for s in test)
    return {
        "train": str(folder / "train.txt"),
        "test": str(folder / "test.txt"),
        "train_sentences": len(train),
        "test_sentences": len(test),
        "test_tokens": tokens,
        "spacy_version": sys.modules["spacy"].__version__,
        "tagger_epochs": epochs,
        "tagger_training_seconds": tagger_seconds,
        "chunker_template": chunker.template,
        "chunker_iterations": chunker.n_iter_,
        "chunker_training_seconds": chunker_seconds,
        "spacy_tagger_accuracy": tag_accuracy(docs, test),
        "pipeline_chunk_f1": score_chunks(gold, span_tags(docs)).f1,
        "file_pos_chunk_f1": score_chunks(gold, chunker.predict(test)).f1,
        "pipeline_seconds": seconds,
        "pipeline_tokens_per_second": tokens / seconds,
        "threads": threads,
    }


def format_experiment(result: dict) -> str:
    """A readable summary of :func:`experiment`'s result."""
    return "\n".join(
        [
            f"CoNLL-2000: {result['train_sentences']} training sentences, {result['test_sentences']} test "
            f"sentences ({result['test_tokens']:,} tokens); spaCy {result['spacy_version']}",
            f"spaCy tagger: {result['tagger_epochs']} epochs in {result['tagger_training_seconds']:.0f} s, "
            f"test accuracy {result['spacy_tagger_accuracy']:.2f}%",
            f"fstcrf chunker ({result['chunker_template']}, {result['chunker_iterations']} L-BFGS iterations "
            f"in {result['chunker_training_seconds']:.0f} s):",
            f"  chunk F1 on spaCy's tags (the pipeline)  {result['pipeline_chunk_f1']:.2f}",
            f"  chunk F1 on the file's POS column         {result['file_pos_chunk_f1']:.2f}",
            f"pipeline (tagger + fstcrf) in nlp.pipe: {result['pipeline_tokens_per_second']:,.0f} tokens/s "
            f"on {result['threads']} threads",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m fstcrf.experiments.spacy_pipeline", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--data", required=True, help="folder holding conll2000/ (train.txt, test.txt)")
    parser.add_argument("--epochs", type=int, default=10, help="spaCy tagger epochs (default %(default)s)")
    parser.add_argument("--max-iter", type=int, default=100, help="chunker L-BFGS iterations (default %(default)s)")
    parser.add_argument("--threads", type=int, default=2, help="fstcrf threads (default %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="spaCy's seed and the shuffling's (default %(default)s)")
    parser.add_argument("--train-sentences", type=int, default=None, help="first N training sentences (default all)")
    parser.add_argument("--test-sentences", type=int, default=None, help="first N test sentences (default all)")
    parser.add_argument("--save", default=None, help="write the trained pipeline to this folder (default: not saved)")
    parser.add_argument("--out", default=None, help="write the result as JSON to this file (default: not written)")
    args = parser.parse_args(argv)
    result = experiment(
        args.data,
        args.epochs,
        args.max_iter,
        args.threads,
        args.seed,
        args.train_sentences,
        args.test_sentences,
        args.save,
    )
    print(format_experiment(result))
    if args.out:
        write_atomically(args.out, lambda stream: stream.write(json.dumps(result, indent=2).encode("utf-8")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
