"""Hugging Face token classification decoded into valid word-level (or token-level)
spans with exact probabilities, from plain arrays and lists: transformers is not
imported.

Two inputs:

- :func:`decode_subwords`: the model's subword logits [T_sub, L] (or [B, T_sub, L]),
  the tokenizer's ``word_ids()`` (None for special and padding tokens) and the
  model's ``id2label``; each word's scores come from its first subtoken or the
  mean of its subtokens' log-probabilities, then :func:`~fstcrf.logits.decode_logits`.
- :func:`decode_pipeline_output`: the token-classification pipeline's output with
  ``aggregation_strategy="none"`` (a list of dicts with ``entity``, ``score``,
  ``index``, ``word``, ``start``, ``end`` per token), decoded at the token level.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from fstcrf.errors import ArgumentTypeError, EmptySequenceError, LabelError, ScoreError, ShapeError
from fstcrf.engine.inference import numeric_array
from fstcrf.logits.decode import as_numpy, decode_logits, log_softmax

AGGREGATIONS = ("first", "mean")
#: The least probability a label gets from a pipeline's top score (log 0 is not a score).
PROBABILITY_FLOOR = 1e-9


class TextEntity(NamedTuple):
    """An entity of words (or tokens) ``first`` .. ``last`` (inclusive), with its
    probability and, when offsets were given, its characters ``start`` .. ``end``
    (end exclusive, as the tokenizer's offsets)."""

    first: int
    last: int
    type: str
    probability: float
    start: int | None
    end: int | None


@dataclass
class DecodedText:
    """Decoded sentences.

    Attributes:
        positions: each sentence's units: word ids (:func:`decode_subwords`) or
            token indices (:func:`decode_pipeline_output`).
        labels: the label of each unit.
        entities: each sentence's entities, over those positions.
        scores: float [B], each label sequence's score (its log-probability under
            independent per-unit probabilities, plus any transition scores).
    """

    positions: list[list[int]]
    labels: list[list[str]]
    entities: list[list[TextEntity]]
    scores: np.ndarray


def label_list(id2label, num_labels: int | None = None) -> list[str]:
    """The labels [L] of a model's ``id2label`` (a dict from index, or its string,
    to label, or a list); LabelError naming a missing index."""
    if isinstance(id2label, Mapping):
        try:
            table = {int(index): label for index, label in id2label.items()}
        except (TypeError, ValueError):
            raise LabelError(f"id2label must map label indices to labels, got keys {list(id2label)}") from None
    elif isinstance(id2label, Sequence) and not isinstance(id2label, str):
        table = dict(enumerate(id2label))
    else:
        raise ArgumentTypeError(f"id2label must be a dict or a list of labels, got {type(id2label).__name__}")
    count = len(table) if num_labels is None else num_labels
    for index in range(count):
        if index not in table:
            raise LabelError(f"id2label has no label for index {index} (the model has {count} labels)")
    extra = sorted(set(table) - set(range(count)))
    if extra:
        raise ShapeError(f"id2label has label index {extra[0]}, but the logits have {count} labels")
    return [table[index] for index in range(count)]


def word_spans(word_ids: Sequence[int | None], num_subtokens: int, sentence: int) -> tuple[list[int], np.ndarray]:
    """The word ids of a sentence in order, and each word's first and one-past-last
    subtoken, int [W, 2]; ShapeError when the word ids do not fit the logits or a
    word's subtokens are not consecutive."""
    if isinstance(word_ids, str) or not isinstance(word_ids, Sequence) or len(word_ids) != num_subtokens:
        count = len(word_ids) if isinstance(word_ids, Sequence) else type(word_ids).__name__
        raise ShapeError(f"sentence {sentence}: the logits have {num_subtokens} subtokens but word_ids has {count}")
    words: list[int] = []
    bounds: list[list[int]] = []
    for subtoken, word in enumerate(word_ids):
        if word is None:
            continue
        if isinstance(word, bool) or not isinstance(word, (int, np.integer)) or word < 0:
            raise ShapeError(f"sentence {sentence}: word id {word!r} of subtoken {subtoken} is not None or an index")
        if words and words[-1] == word and bounds[-1][1] == subtoken:
            bounds[-1][1] = subtoken + 1
            continue
        if words and word <= words[-1]:
            raise ShapeError(
                f"sentence {sentence}: subtoken {subtoken} belongs to word {word}, which is not after word "
                f"{words[-1]} of the subtoken before; each word's subtokens must be consecutive and in order"
            )
        words.append(int(word))
        bounds.append([subtoken, subtoken + 1])
    if not words:
        raise EmptySequenceError(f"sentence {sentence} has no words: every word id is None")
    return words, np.asarray(bounds, dtype=np.int64)


def word_log_probs(log_probs: np.ndarray, bounds: np.ndarray, aggregation: str) -> np.ndarray:
    """float [W, L]: each word's scores from its subtokens' log-probabilities
    [T_sub, L]: its first subtoken's, or their mean."""
    if aggregation == "first":
        return log_probs[bounds[:, 0]]
    sums = np.add.reduceat(log_probs, bounds[:, 0], axis=0)
    return sums / (bounds[:, 1] - bounds[:, 0])[:, None]


def padded_rows(rows: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """float [B, T, L]: sentences' rows [T_b, L] padded with zeros; and their lengths [B]."""
    lengths = np.asarray([len(row) for row in rows])
    padded = np.zeros((len(rows), int(lengths.max()), rows[0].shape[1]))
    for b, row in enumerate(rows):
        padded[b, : len(row)] = row
    return padded, lengths


def text_entities(decoded, positions, starts, ends) -> list[list[TextEntity]]:
    """The decoded entities (over units) of each sentence with their positions and
    character offsets (None where unknown)."""
    return [
        [
            TextEntity(where[e.first], where[e.last], e.type, e.probability, start[e.first], end[e.last])
            for e in entities
        ]
        for entities, where, start, end in zip(decoded.entities, positions, starts, ends)
    ]


def decode_subwords(
    logits,
    word_ids,
    id2label,
    scheme: str | None = "iob2",
    grammar=None,
    aggregation: str = "first",
    offsets=None,
    transitions=None,
    start=None,
    end=None,
    threads: int = 1,
) -> DecodedText:
    """Word-level labels and entities of a token-classification model's output.

    ``logits`` float [T_sub, L] with ``word_ids`` (the tokenizer's ``word_ids()``: a
    word index or None per subtoken), or [B, T_sub, L] with one such list per
    sentence (padding subtokens have None); ``id2label`` the model's labels (a dict
    or a list); ``offsets`` the tokenizer's ``offset_mapping`` [T_sub, 2] (or
    [B, T_sub, 2]) for character offsets.  Special tokens are skipped; a word's
    scores are its first subtoken's log-probabilities (``aggregation="first"``) or
    the mean of its subtokens' (``"mean"``).  The words are then decoded by
    :func:`~fstcrf.logits.decode_logits` under ``scheme`` and ``grammar`` (with
    optional ``transitions`` [L, L], ``start``, ``end`` [L]), so an argmax such as
    ``I-PER`` after ``O`` comes out as a valid span."""
    if aggregation not in AGGREGATIONS:
        raise ArgumentTypeError(f"aggregation must be one of {', '.join(AGGREGATIONS)}, got {aggregation!r}")
    logits = numeric_array("logits", as_numpy(logits))
    if logits.ndim not in (2, 3):
        raise ShapeError(f"logits must be [subtokens, labels] or [sentences, subtokens, labels], got {logits.shape}")
    batch = logits if logits.ndim == 3 else logits[None]
    sentences_word_ids = word_ids if logits.ndim == 3 else [word_ids]
    if len(sentences_word_ids) != len(batch):
        raise ShapeError(f"the logits hold {len(batch)} sentences but word_ids has {len(sentences_word_ids)} lists")
    labels = label_list(id2label, batch.shape[-1])
    if offsets is not None:
        offsets = numeric_array("offsets", as_numpy(offsets))
        if offsets.shape != (*logits.shape[:-1], 2):
            raise ShapeError(
                f"offsets must be (start, end) per subtoken, shaped as the logits' tokens, got {offsets.shape}"
            )
        offsets = offsets.reshape(len(batch), batch.shape[1], 2)
    positions, rows, starts, ends = [], [], [], []
    for b, (sentence, ids) in enumerate(zip(batch, sentences_word_ids)):
        words, bounds = word_spans(ids, len(sentence), b)
        used = np.zeros(len(sentence), dtype=bool)
        for first, after in bounds:
            used[first:after] = True
        bad = np.argwhere(used[:, None] & ~np.isfinite(sentence))
        if len(bad):
            subtoken, label = (int(i) for i in bad[0])
            raise ScoreError(
                f"logits of sentence {b}, subtoken {subtoken}, label {label} are {sentence[subtoken, label]}; "
                "the logits of every word's subtokens must be finite"
            )
        log_probs = log_softmax(np.where(used[:, None], sentence, 0.0).astype(np.float64))
        positions.append(words)
        rows.append(word_log_probs(log_probs, bounds, aggregation))
        starts.append([None] * len(words) if offsets is None else [int(offsets[b, i, 0]) for i in bounds[:, 0]])
        ends.append([None] * len(words) if offsets is None else [int(offsets[b, i - 1, 1]) for i in bounds[:, 1]])
    padded, lengths = padded_rows(rows)
    decoded = decode_logits(padded, labels, scheme, grammar, transitions, start, end, lengths, threads=threads)
    return DecodedText(positions, decoded.labels, text_entities(decoded, positions, starts, ends), decoded.scores)


def token_log_probs(token: Mapping, index: Mapping[str, int], sentence: int) -> np.ndarray:
    """float [L]: one pipeline token's label log-probabilities: its ``scores`` when it
    has them (all L), else its ``score`` on its ``entity`` and the rest spread evenly."""
    for field in ("entity", "score"):
        if field not in token:
            raise ShapeError(f"sentence {sentence}: a pipeline token has no {field!r} field: {dict(token)!r}")
    if "scores" in token:
        probabilities = np.asarray(as_numpy(token["scores"]), dtype=np.float64)
        if probabilities.shape != (len(index),):
            raise ShapeError(f"sentence {sentence}, token {token['index']}: scores must hold {len(index)} numbers")
    else:
        label, score = token["entity"], float(token["score"])
        if label not in index:
            raise LabelError(f"sentence {sentence}, token {token['index']}: label {label!r} is not in id2label")
        if not 0 <= score <= 1:
            raise ScoreError(f"sentence {sentence}, token {token['index']}: score {score} is not a probability")
        probabilities = np.full(len(index), (1 - score) / max(len(index) - 1, 1))
        probabilities[index[label]] = score
    if not np.all(np.isfinite(probabilities)) or np.any(probabilities < 0):
        raise ScoreError(f"sentence {sentence}, token {token['index']}: scores must be probabilities")
    return np.log(np.maximum(probabilities, PROBABILITY_FLOOR))


def decode_pipeline_output(
    tokens,
    id2label,
    scheme: str | None = "iob2",
    grammar=None,
    outside: str = "O",
    ignored_score: float = 1.0,
    threads: int = 1,
) -> DecodedText:
    """Valid token-level spans from the token-classification pipeline's output with
    ``aggregation_strategy="none"``: one list of token dicts (``entity``, ``score``,
    ``index``, ``word``, ``start``, ``end``), or a list of such lists.

    What is recoverable: the pipeline keeps only each token's top label and its
    probability, so each token's distribution is taken as ``score`` on that label
    and ``1 - score`` spread evenly over the others (floored at 1e-9); a dict with a
    ``scores`` list (all L probabilities, as the pipeline's pre-entities hold
    them) is used as it is.  The pipeline drops the tokens whose top label is in
    its ``ignore_labels`` (``["O"]`` by default): the gaps in ``index`` are filled
    with ``outside`` tokens of probability ``ignored_score`` and no offsets.
    Positions are the pipeline's ``index`` values (subtokens, special tokens
    counted); entities carry the characters ``start`` .. ``end`` of their tokens."""
    if isinstance(tokens, Mapping) or not isinstance(tokens, Sequence):
        raise ArgumentTypeError(f"tokens must be a list of the pipeline's token dicts, got {type(tokens).__name__}")
    sentences = tokens if tokens and not isinstance(tokens[0], Mapping) else [tokens]
    labels = label_list(id2label)
    index = {label: i for i, label in enumerate(labels)}
    if outside not in index:
        raise LabelError(f"the outside label {outside!r} is not in id2label")
    ignored = {"entity": outside, "score": ignored_score}
    positions, rows, starts, ends = [], [], [], []
    for b, sentence in enumerate(sentences):
        if not sentence:
            raise EmptySequenceError(f"sentence {b} has no tokens")
        by_index: dict[int, Mapping] = {}
        for token in sentence:
            if not isinstance(token, Mapping) or "index" not in token:
                raise ShapeError(f"sentence {b}: a pipeline token is a dict with an 'index' field, got {token!r}")
            if int(token["index"]) in by_index:
                raise ShapeError(f"sentence {b}: two tokens have index {token['index']}")
            by_index[int(token["index"])] = token
        filled = [by_index.get(i, {**ignored, "index": i}) for i in range(min(by_index), max(by_index) + 1)]
        positions.append([int(token["index"]) for token in filled])
        rows.append(np.stack([token_log_probs(token, index, b) for token in filled]))
        starts.append([token.get("start") for token in filled])
        ends.append([token.get("end") for token in filled])
    padded, lengths = padded_rows(rows)
    decoded = decode_logits(padded, labels, scheme, grammar, lengths=lengths, threads=threads)
    return DecodedText(positions, decoded.labels, text_entities(decoded, positions, starts, ends), decoded.scores)
