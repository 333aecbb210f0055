"""``fstcrf bench train --in-memory``: training and tagging inside one process,
fstcrf against python-crfsuite with the same predicates on CoNLL-2000 (without
start-up, reading or writing: ``fstcrf bench train`` times the whole processes,
:mod:`fstcrf.bench.process`)."""

from __future__ import annotations

import numpy as np

from fstcrf.bench.harness import best_time
from fstcrf.errors import FstcrfError
from fstcrf.progress import Progress


def _train_side(which: str, folder: str, iterations: int, threads: int) -> dict:
    """Train and tag with one toolkit; run in a fresh process so that its
    peak resident memory is its own.  Both use the CRF++ chunking template's
    predicates (fstcrf's extractor names them; CRFsuite gets them as
    attributes), first order, L-BFGS, Gaussian prior c2 = 1 / (2 sigma^2)."""
    import resource
    from pathlib import Path

    from fstcrf.corpus.conll import read_conll
    from fstcrf.corpus.evaluate import score_chunks

    train = read_conll(Path(folder) / "train.txt")
    test = read_conll(Path(folder) / "test.txt")
    result: dict = {"toolkit": which}
    if which == "fstcrf":
        from fstcrf.model.chain import ChainCRF

        model = ChainCRF("crfpp", order=1, max_iter=iterations, threads=threads, sigma=0.5**0.5, tol=1e-12).fit(train)
        seconds = [record["seconds"] for record in model.history_]
        predicted = model.predict(test)
        tag_seconds = best_time(lambda: model.predict(test), 3)
        result["features"] = int(len(model.weights_))
    else:
        import tempfile

        import pycrfsuite

        from fstcrf.features.extractor import FeatureExtractor
        from fstcrf.features.template import CRFPP_CHUNKING

        extractor = FeatureExtractor(CRFPP_CHUNKING).fit(train)
        names = extractor.predicate_names_

        def attributes(corpus):
            """Per sentence, per token: the names of the true predicates."""
            matrix = extractor.transform(corpus)
            tokens = [
                [names[j] for j in matrix.indices[matrix.indptr[r] : matrix.indptr[r + 1]]]
                for r in range(matrix.shape[0])
            ]
            ends = np.cumsum([len(sentence) for sentence in corpus])
            return [tokens[end - len(sentence) : end] for sentence, end in zip(corpus, ends)]

        trainer = pycrfsuite.Trainer(verbose=False)
        for xseq, sentence in zip(attributes(train), train):
            trainer.append(xseq, sentence["chunk"])
        trainer.select("lbfgs")
        trainer.set_params({"c1": 0.0, "c2": 1.0, "max_iterations": iterations, "epsilon": 0.0, "delta": 0.0})
        with tempfile.TemporaryDirectory() as scratch:
            path = str(Path(scratch) / "model.crfsuite")
            trainer.train(path)
            seconds = [it["time"] for it in trainer.logparser.iterations]
            tagger = pycrfsuite.Tagger()
            tagger.open(path)
            test_attributes = attributes(test)
            predicted = [tagger.tag(xseq) for xseq in test_attributes]
            tag_seconds = best_time(lambda: [tagger.tag(xseq) for xseq in test_attributes], 3)
        result["features"] = int(trainer.logparser.last_iteration["active_features"])
    result["iterations"] = len(seconds)
    result["seconds_per_iteration"] = float(np.median(seconds))
    result["tag_tokens_per_s"] = test.num_tokens / tag_seconds
    result["f1"] = score_chunks(test.column("chunk"), predicted).f1
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return result


def bench_train(folder, peer: str = "crfsuite", iterations: int = 50, threads: int = 2) -> list[dict]:
    """fstcrf against python-crfsuite on CoNLL-2000, one after the other in one run.

    Both train a first-order chunker with the same predicates for
    ``iterations`` L-BFGS iterations (sigma^2 = 0.5 matches CRFsuite's c2 = 1)
    and tag the test set.  fstcrf's tagging time includes its own feature
    extraction; CRFsuite's does not include building its attribute lists."""
    import multiprocessing

    if peer != "crfsuite":
        raise FstcrfError(f"unknown peer {peer!r} (expected crfsuite)")
    try:
        import pycrfsuite  # noqa: F401
    except ImportError:
        raise FstcrfError("bench train --vs crfsuite needs python-crfsuite: pip install 'fstcrf[bench]'") from None
    context = multiprocessing.get_context("spawn")
    rows = []
    with Progress(2, "bench train", unit="toolkit") as bar:
        for which in ("fstcrf", "crfsuite"):
            with context.Pool(1) as pool:
                rows.append(pool.apply(_train_side, (which, str(folder), iterations, threads)))
            bar.update()
    return rows


def format_train(rows: list[dict]) -> str:
    """fstcrf's row and python-crfsuite's of :func:`bench_train` as a Markdown table."""
    ours, peer = rows
    lines = [
        "| toolkit | features | L-BFGS iterations | s / iteration (median) | tagging tok/s | test F1 | peak RSS MiB |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['toolkit']} | {r['features']:,} | {r['iterations']} | {r['seconds_per_iteration']:.3f} | "
            f"{r['tag_tokens_per_s']:,.0f} | {r['f1']:.2f} | {r['peak_rss_mib']:,.0f} |"
        )
    lines.append("")
    lines.append(
        f"s / iteration, fstcrf / CRFsuite: {ours['seconds_per_iteration'] / peer['seconds_per_iteration']:.2f}; "
        f"tagging throughput, fstcrf / CRFsuite: {ours['tag_tokens_per_s'] / peer['tag_tokens_per_s']:.2f}"
    )
    return "\n".join(lines)
