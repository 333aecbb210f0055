"""Feature extraction in bulk (``fstcrf bench features``): tokens per second of
``transform_rows`` for the shipped chunking templates, and for the token
dicts of sklearn-crfsuite's tutorial.

Each template's extractor is fitted on CoNLL-2000 train.txt; the timed work is
the transform of ``copies`` copies of test.txt held as one list of sentences
(reading the file is not timed), the best of ``repeats`` runs.  With
conll2002 beside conll2000 (``--data`` holding both), the tutorial's token
dicts of esp.train fit an attribute extractor and those of esp.testb, built
beforehand, are transformed the same way.  With conll2003 there too, the
default template of ``fstcrf train --target ner`` (ner-rich, value lists) is
fitted on eng.train and transforms ``copies`` copies of eng.testa; its lists of
prefixes, suffixes and n-grams come from the per-word cache after the first
pass, as they do when ``fstcrf tag`` reads batch after batch.  A
kernel-and-Python figure, not a whole process: ``fstcrf bench tag`` times
extraction as a user meets it.
"""

from __future__ import annotations

from pathlib import Path

from fstcrf.bench.harness import best_time

#: The templates measured: the default of ``fstcrf train --target chunk`` first.
TEMPLATE_NAMES = ("chunking-extended", "sha-pereira", "crfpp")
#: The CoNLL-2003 columns, and the NER template measured on them.
NER_COLUMNS, NER_TEMPLATE = "word,pos,chunk,ner", "ner-rich"


def bench_features(
    conll2000: Path,
    copies: int = 10,
    repeats: int = 5,
    conll2002: Path | None = None,
    conll2003: Path | None = None,
) -> list[dict]:
    """Per template (for the tutorial's dicts when ``conll2002`` is given, for the NER
    template when ``conll2003`` is): its name, predicates P, tokens N and predicates
    per token, best seconds and tokens/s."""
    from fstcrf.features.attributes import AttributeExtractor
    from fstcrf.corpus.conll import Sentence, read_conll
    from fstcrf.features.extractor import FeatureExtractor
    from fstcrf.features.template import TEMPLATES

    train = read_conll(conll2000 / "train.txt")
    test = list(read_conll(conll2000 / "test.txt").sentences) * copies
    jobs = [(name, FeatureExtractor(TEMPLATES[name]).fit(train), test) for name in TEMPLATE_NAMES]
    if conll2002 is not None:
        from fstcrf.bench.sklearn import read_sentences, sent2features

        def dicts(path: Path) -> list[Sentence]:
            return [Sentence({"attributes": sent2features(sentence)}) for sentence in read_sentences(path)]

        jobs.append(
            (
                "sklearn tutorial dicts",
                AttributeExtractor().fit(dicts(conll2002 / "esp.train")),
                dicts(conll2002 / "esp.testb"),
            )
        )
    if conll2003 is not None:
        jobs.append(
            (
                f"{NER_TEMPLATE} (eng.testa)",
                FeatureExtractor(TEMPLATES[NER_TEMPLATE], target="ner").fit(
                    read_conll(conll2003 / "eng.train", NER_COLUMNS)
                ),
                list(read_conll(conll2003 / "eng.testa", NER_COLUMNS).sentences) * copies,
            )
        )
    rows = []
    for name, extractor, sentences in jobs:
        num_tokens = sum(len(sentence) for sentence in sentences)
        nnz = extractor.transform_rows(sentences).nnz
        seconds = best_time(lambda: extractor.transform_rows(sentences), repeats)
        rows.append(
            {
                "input": name,
                "predicates": extractor.num_predicates,
                "tokens": num_tokens,
                "per_token": nnz / num_tokens,
                "seconds": seconds,
                "tokens_per_second": num_tokens / seconds,
            }
        )
    return rows


def format_features(rows: list[dict]) -> str:
    """The table of :func:`bench_features`."""
    lines = [
        "feature extraction (transform_rows, best of the repeats; file reading not timed)",
        f"{'input':<24}{'predicates':>12}{'tokens':>10}{'known/token':>13}{'seconds':>10}{'tokens/s':>12}",
    ]
    for row in rows:
        lines.append(
            f"{row['input']:<24}{row['predicates']:>12,}{row['tokens']:>10,}{row['per_token']:>13.1f}"
            f"{row['seconds']:>10.3f}{row['tokens_per_second'] / 1e6:>11.2f}M"
        )
    return "\n".join(lines)
