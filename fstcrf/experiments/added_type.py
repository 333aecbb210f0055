"""Adding an entity type without retraining (python-crfsuite issue #60): compose a tagger
of the old types with a tagger of the new type under a joint grammar.

On CoNLL-2003 English (NER column in IOB2): (a) a tagger of PER, LOC and ORG
(MISC relabelled O), (b) a MISC tagger (the other types relabelled O) and (c)
one tagger of all four types, each trained as ``fstcrf train --target ner``
does (default template and settings).  (a) and (b) read nothing from each
other; they are composed under ``no_overlap`` (no token inside entities of
both) and decoded jointly.  The baseline is the naive merge of their Viterbi
outputs: every entity of either, and where an entity of (b) overlaps one of
(a), (a)'s is kept.  Test F1 (conlleval) overall and per type of the three
systems, and McNemar's test on the token labels of composition and merge::

    python -m fstcrf.experiments.added_type --data $FSTCRF_DATA/conll2003 --out added_type.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path
from collections.abc import Callable, Sequence

from fstcrf.corpus.conll import Corpus
from fstcrf.corpus.evaluate import mcnemar, score_chunks
from fstcrf.corpus.schemes import read_chunks, restrict_types, write_chunks
from fstcrf.experiments.transfer import read_conll2003
from fstcrf.features.defaults import default_template, template_sigma
from fstcrf.learn.settings import DEFAULT_SIGMA
from fstcrf.files import write_atomically
from fstcrf.model.chain import ChainCRF
from fstcrf.model.compose import compose

#: The types of the tagger that exists, and the type added.
OLD_TYPES = ("PER", "LOC", "ORG")
NEW_TYPE = "MISC"
SYSTEMS = ("composition", "naive merge", "single model")


def ner_model(columns: Sequence[str], threads: int, max_iter: int) -> ChainCRF:
    """An untrained NER tagger as ``fstcrf train --target ner`` makes it (default template
    and its sigma)."""
    template = default_template("ner", columns)
    return ChainCRF(
        template=template, sigma=template_sigma(template, DEFAULT_SIGMA), max_iter=max_iter, threads=threads
    )


def naive_merge(old: Sequence[Sequence[str]], new: Sequence[Sequence[str]]) -> list[list[str]]:
    """IOB2 labels [B][T]: the entities of ``old``, and those of ``new`` that overlap none of them."""
    merged = []
    for old_tags, new_tags in zip(old, new):
        kept = read_chunks(old_tags)
        taken = {position for first, last, _ in kept for position in range(first, last + 1)}
        added = [c for c in read_chunks(new_tags) if not taken & set(range(c[0], c[1] + 1))]
        merged.append(write_chunks(sorted(kept + added), len(old_tags), "iob2"))
    return merged


def token_union(old: Sequence[Sequence[str]], new: Sequence[Sequence[str]]) -> list[list[str]]:
    """Labels [B][T] of two labellings that never both leave O at a token: the non-O one."""
    return [[b if a == "O" else a for a, b in zip(x, y)] for x, y in zip(old, new)]


def run(corpora: dict[str, Corpus], threads: int = 2, max_iter: int = 100, log: Callable[[str], None] = print) -> dict:
    """Train the three taggers on eng.train and score the three systems on eng.testb."""
    train, test = corpora["eng.train"], corpora["eng.testb"].sentences
    models, seconds = {}, {}
    for name, types in (("old", set(OLD_TYPES)), ("new", {NEW_TYPE}), ("single", None)):
        started = time.perf_counter()
        models[name] = ner_model(train.column_names, threads, max_iter).fit(
            restrict_types(train, "ner", types), target="ner"
        )
        seconds[f"train {name}"] = time.perf_counter() - started
        log(f"trained the {name} tagger ({len(models[name].labels_)} labels) in {seconds[f'train {name}']:.0f} s")
    joint = compose([models["old"], models["new"]], threads=threads, joint="no_overlap")
    started = time.perf_counter()
    joint_old, joint_new = joint.predict(test)
    seconds["decode composition"] = time.perf_counter() - started
    started = time.perf_counter()
    old_labels, new_labels = models["old"].predict(test), models["new"].predict(test)
    merged = naive_merge(old_labels, new_labels)
    seconds["decode both and merge"] = time.perf_counter() - started
    overlapping = sum(a != "O" != b for x, y in zip(old_labels, new_labels) for a, b in zip(x, y))
    gold = [sentence["ner"] for sentence in test]
    predictions = {
        "composition": token_union(joint_old, joint_new),
        "naive merge": merged,
        "single model": models["single"].predict(test),
    }
    scores = {name: score_chunks(gold, labels, "iob2") for name, labels in predictions.items()}
    test_result = mcnemar(gold, predictions["composition"], predictions["naive merge"])
    return {
        "decoder": joint.space.decoder,
        "joint_states": joint.space.num_states,
        "allowed_joint_states": int(joint.space.allowed.sum()) if joint.space.allowed is not None else None,
        "f1": {name: round(s.f1, 2) for name, s in scores.items()},
        "per_type_f1": {name: {t: round(v.f1, 2) for t, v in s.per_type.items()} for name, s in scores.items()},
        "precision": {name: round(s.precision, 2) for name, s in scores.items()},
        "recall": {name: round(s.recall, 2) for name, s in scores.items()},
        "mcnemar_composition_vs_merge": asdict(test_result),
        "overlapping_tokens": overlapping,
        "sentences_changed_by_composition": sum(a != b for a, b in zip(predictions["composition"], merged)),
        "seconds": {name: round(value, 1) for name, value in seconds.items()},
        "train_sentences": len(train),
        "test_sentences": len(test),
    }


def markdown(result: dict) -> str:
    """The result as a markdown table (F1 overall and per type) and a McNemar line."""
    types = sorted({t for per_type in result["per_type_f1"].values() for t in per_type})
    lines = [
        "| system | " + " | ".join(["F1", "P", "R"] + types) + " |",
        "|---|" + "---:|" * (3 + len(types)),
    ]
    for name in SYSTEMS:
        cells = [result["f1"][name], result["precision"][name], result["recall"][name]]
        cells += [result["per_type_f1"][name].get(t, 0.0) for t in types]
        lines.append(f"| {name} | " + " | ".join(f"{value:.2f}" for value in cells) + " |")
    test = result["mcnemar_composition_vs_merge"]
    lines.append("")
    lines.append(
        f"McNemar, composition against naive merge (token labels): composition right and merge wrong "
        f"{test['n01']}, the reverse {test['n10']}, p = {test['p_value']:.3g} ({test['method']}). "
        f"Decoder: {result['decoder']} ({result['joint_states']} joint states). Tokens inside entities "
        f"of both separate Viterbi outputs: {result['overlapping_tokens']}; sentences whose labels "
        f"composition and merge disagree on: {result['sentences_changed_by_composition']}."
    )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fstcrf.experiments.added_type", description=__doc__.split("\n")[0])
    default_data = Path(os.environ.get("FSTCRF_DATA", "../shared/data")) / "conll2003"
    parser.add_argument(
        "--data", type=Path, default=default_data, help="folder with eng.train and eng.testb (default %(default)s)"
    )
    parser.add_argument("--threads", type=int, default=2, help="training and decoding threads (default %(default)s)")
    parser.add_argument("--max-iter", type=int, default=100, help="L-BFGS iterations (default %(default)s)")
    parser.add_argument("--out", type=Path, default=None, help="write the result as JSON (default: none)")
    parser.add_argument("--markdown", type=Path, default=None, help="write the table as markdown (default: none)")
    args = parser.parse_args(argv)
    result = run(read_conll2003(args.data), args.threads, args.max_iter, lambda message: print(message, flush=True))
    table = markdown(result)
    print(table, end="")
    if args.out:
        text = json.dumps(result, indent=2) + "\n"
        write_atomically(args.out, lambda stream: stream.write(text.encode()))
    if args.markdown:
        write_atomically(args.markdown, lambda stream: stream.write(table.encode()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
