"""The counting passes of distributed training, run on each shard and reduced on
the driver: the columns and gold labels of every shard (the labels of the model
are their union), the predicates and how many tokens each is true at (the
dictionary keeps those counted ``min_count`` times or more over all shards, in
the order a single process would give them), and the supported features.

The functions that run on a worker take and return plain picklable objects."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fstcrf.corpus.conll import Corpus
from fstcrf.features.encoding import EncodedSentences, supported_pair_counts, token_classes
from fstcrf.errors import ShardError
from fstcrf.features.extractor import FeatureExtractor
from fstcrf.features.template import Template
from fstcrf.corpus.labels import gold_label_set, gold_states, parse_gold
from fstcrf.engine.topology import Topology
from fstcrf.distributed.shards import Shard, read_shard


def worker_name() -> str:
    """The address of the Dask worker running the caller, or "the driver"."""
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return "the driver"


def load_shard(shard: Shard, columns, separator: str | None) -> Corpus:
    """Worker: the sentences of a shard (see :func:`~.shards.read_shard`)."""
    return read_shard(shard, columns, separator, worker_name())


@dataclass
class ShardSummary:
    """What one shard holds: where it was read, its columns, sentence and token
    counts, its distinct gold values, the distinct lower labels of the column the
    model reads (empty when it reads none), and per template the predicates in
    order of first occurrence [K] with the tokens each is true at int64 [K]."""

    shard: str
    worker: str
    columns: tuple[str, ...]
    sentences: int
    tokens: int
    gold_values: set[str]
    lower_values: set[str]
    predicates: list[tuple[list[str], np.ndarray]]


def summarise(corpus: Corpus, shard: Shard, template: Template, target: str, reads: str | None = None) -> ShardSummary:
    """Worker: the :class:`ShardSummary` of a shard read as ``corpus``; ``reads`` is the
    column of a lower tagger's labels the model reads, or None."""
    worker = worker_name()
    for column, role in ((target, "to learn"), (reads, "of lower labels to read")):
        if column is not None and corpus.sentences and column not in corpus.column_names:
            raise ShardError(
                f"worker {worker}: {shard} has no column {column!r} {role} (its columns are "
                f"{', '.join(corpus.column_names)})"
            )
    predicates = []
    if corpus.sentences:
        _, occurrences = FeatureExtractor(template).occurrences(corpus)
        predicates = [(names, counts) for names, _, counts, _ in occurrences]
    values = {value for labels in corpus.column(target) for value in labels} if corpus.sentences else set()
    lower = (
        {value for labels in corpus.column(reads) for value in labels}
        if reads is not None and corpus.sentences
        else set()
    )
    return ShardSummary(
        str(shard), worker, corpus.column_names, len(corpus), corpus.num_tokens, values, lower, predicates
    )


def check_layouts(summaries: list[ShardSummary]) -> tuple[str, ...]:
    """The column names every non-empty shard shares; ShardError names the worker and
    the file of the first shard whose columns differ from the first one's."""
    first = summaries[0]
    for summary in summaries[1:]:
        if summary.columns != first.columns:
            raise ShardError(
                f"worker {summary.worker}: {summary.shard} has the columns "
                f"{', '.join(summary.columns)} ({len(summary.columns)} fields) but "
                f"{first.shard} (worker {first.worker}) has {', '.join(first.columns)} "
                f"({len(first.columns)} fields)"
            )
    return first.columns


def union_labels(summaries: list[ShardSummary]) -> list[str]:
    """The sorted labels the gold values of all shards mention: a label that only one
    shard holds is a label of the model like any other."""
    return gold_label_set([sorted(set().union(*(summary.gold_values for summary in summaries)))])


def merged_extractor(template: Template, min_count: int, summaries: list[ShardSummary]) -> FeatureExtractor:
    """The fitted extractor a single process would build from the shards read in
    order: the predicates true at ``min_count`` tokens or more in all, most frequent
    first, ties in template order and then in order of first occurrence."""
    names, counts = [], []
    for index in range(len(template.predicates)):
        merged: dict[str, int] = {}
        for summary in summaries:
            shard_names, shard_counts = summary.predicates[index]
            for name, count in zip(shard_names, shard_counts.tolist()):
                merged[name] = merged.get(name, 0) + count
        names.extend(merged)
        counts.extend(merged.values())
    order = FeatureExtractor(template, min_count).frequent_first(np.array(counts, dtype=np.int64))
    return FeatureExtractor.from_dict(
        {"template": template.text, "min_count": int(min_count), "predicates": [names[i] for i in order.tolist()]}
    )


@dataclass
class EncodedShard:
    """A shard encoded by the fitted extractor, with its gold states int32 [N] (-1 in
    partially labelled sentences), label ids int [N] and allowed labels bool [N, L]
    (None when every token has one label)."""

    encoded: EncodedSentences
    states: np.ndarray
    label_ids: np.ndarray
    allowed_labels: np.ndarray | None


def encode_shard(
    corpus: Corpus,
    extractor: FeatureExtractor,
    topology: Topology,
    target: str,
    reads: str | None = None,
    lower_labels: list[str] | None = None,
) -> EncodedShard:
    """Worker: a shard's predicate rows and gold states; with ``reads`` (a model whose
    transitions read that column's lower labels, ``lower_labels`` [L]) the tokens'
    transition classes too."""
    classes = None if reads is None else token_classes(corpus.sentences, reads, lower_labels)
    encoded = EncodedSentences.from_corpus(extractor, corpus, token_class=classes)
    label_ids, allowed_labels = parse_gold(topology, corpus.column(target))
    return EncodedShard(encoded, gold_states(topology, label_ids, encoded.offsets), label_ids, allowed_labels)


def shard_pair_counts(
    shard: EncodedShard, topology: Topology, order: int, feature_set: str, bias_predicate: int | None, seen_edges: bool
) -> tuple[dict, np.ndarray | None]:
    """Worker: the shard's :func:`~fstcrf.features.encoding.supported_pair_counts` and, with
    ``seen_edges``, bool [E] the edges its gold paths take."""
    counts = supported_pair_counts(
        shard.encoded,
        shard.label_ids if order == 1 else shard.states,
        shard.label_ids,
        topology,
        order,
        feature_set,
        bias_predicate,
    )
    return counts, (seen_edges(topology, shard.states, shard.encoded.offsets) if seen_edges else None)
