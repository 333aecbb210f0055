"""Chunk scores as the conlleval script computes them, and McNemar's test.

:func:`score_chunks` reproduces the numbers of conlleval (default mode): a
tag is split at its first dash into a prefix and a chunk type (``B-NP`` is
``B`` and ``NP``; a tag without a dash, such as ``O``, has the empty type),
and chunks begin and end by conlleval's rules, which cover IOB1, IOB2 and IOE
tags (``B``/``I``/``E``/``O``) and the bracket tags ``[`` and ``]``.  conlleval
has no rule for ``S`` tags: an ``S`` tag behaves like any other prefix (a
chunk starts at a change of type only).  Each sentence ends with an implicit
``O``, as after a blank line in conlleval's input.  Like conlleval, a chunk
type "0" counts as the empty type.  Unlike it, the report lists each chunk
type once (conlleval prints the empty type twice when both gold and predicted
chunks have it).

Precision, recall, F1 and accuracy are percentages, as conlleval prints them.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterator, Sequence

from scipy import stats

from .errors import ShapeError

_EXACT_TEST_BELOW = 25


def _split_tag(tag: str) -> tuple[str, str]:
    """A tag's prefix and chunk type, split at the first dash ("O" -> ("O", "")).

    The type "0" becomes "", as in conlleval, where Perl takes "0" for false.
    """
    prefix, _, chunk_type = tag.partition("-")
    return prefix, "" if chunk_type == "0" else chunk_type


def _chunk_end(previous: tuple[str, str], current: tuple[str, str]) -> bool:
    """conlleval's endOfChunk: did a chunk end just before the current (prefix, type)?"""
    (previous_prefix, previous_type), (prefix, chunk_type) = previous, current
    if (previous_prefix, prefix) in {("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"),
                                      ("E", "E"), ("E", "I"), ("E", "O")}:
        return True
    if previous_prefix not in ("O", ".") and previous_type != chunk_type:
        return True
    return previous_prefix in ("[", "]")


def _chunk_start(previous: tuple[str, str], current: tuple[str, str]) -> bool:
    """conlleval's startOfChunk: does a chunk start at the current (prefix, type)?"""
    (previous_prefix, previous_type), (prefix, chunk_type) = previous, current
    if (previous_prefix, prefix) in {("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"),
                                      ("E", "E"), ("E", "I"), ("O", "E")}:
        return True
    if prefix not in ("O", ".") and previous_type != chunk_type:
        return True
    return prefix in ("[", "]")


def _percentage(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole > 0 else 0.0


def _f1(precision: float, recall: float) -> float:
    total = precision + recall
    return 2.0 * precision * recall / total if total > 0 else 0.0


def _check_lengths(gold: Sequence[Sequence[str]], *predictions: Sequence[Sequence[str]]):
    for prediction in predictions:
        if len(prediction) != len(gold):
            raise ShapeError(f"{len(gold)} gold sentences but {len(prediction)} predicted")
        for index, (gold_tags, predicted_tags) in enumerate(zip(gold, prediction)):
            if len(gold_tags) != len(predicted_tags):
                raise ShapeError(f"sentence {index} has {len(gold_tags)} gold tags but "
                                 f"{len(predicted_tags)} predicted")


@dataclass(frozen=True)
class TypeScores:
    """Scores of one chunk type (percentages) and its chunk counts."""

    precision: float
    recall: float
    f1: float
    num_predicted: int
    num_gold: int
    num_correct: int


@dataclass(frozen=True)
class ChunkScores:
    """Overall chunk scores, token accuracy (percentages) and counts, and per-type scores."""

    precision: float
    recall: float
    f1: float
    accuracy: float
    num_gold_chunks: int
    num_predicted_chunks: int
    num_correct_chunks: int
    num_tokens: int
    num_correct_tokens: int
    per_type: dict[str, TypeScores] = field(default_factory=dict)

    def format(self) -> str:
        """The report in conlleval's layout."""
        lines = [f"processed {self.num_tokens} tokens with {self.num_gold_chunks} phrases; "
                 f"found: {self.num_predicted_chunks} phrases; "
                 f"correct: {self.num_correct_chunks}."]
        if self.num_tokens > 0:
            lines.append(f"accuracy: {self.accuracy:6.2f}%; precision: {self.precision:6.2f}%; "
                         f"recall: {self.recall:6.2f}%; FB1: {self.f1:6.2f}")
        for chunk_type, scores in self.per_type.items():
            lines.append(f"{chunk_type:>17}: precision: {scores.precision:6.2f}%; "
                         f"recall: {scores.recall:6.2f}%; FB1: {scores.f1:6.2f}  "
                         f"{scores.num_predicted}")
        return "\n".join(lines) + "\n"


def _tag_pairs(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]
               ) -> Iterator[tuple[tuple[str, str], tuple[str, str], bool]]:
    """Yield (gold tag, predicted tag, is a token) split into (prefix, type), sentence by sentence.

    Each sentence is followed by an ("O", "") pair that is not a token, like
    the blank line after a sentence in conlleval's input.
    """
    sentence_end = ("O", "")
    for gold_tags, predicted_tags in zip(gold, pred):
        for gold_tag, predicted_tag in zip(gold_tags, predicted_tags):
            yield _split_tag(gold_tag), _split_tag(predicted_tag), True
        yield sentence_end, sentence_end, False


def score_chunks(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> ChunkScores:
    """Score predicted tags [num_sentences][num_tokens] against gold tags, like conlleval."""
    _check_lengths(gold, pred)
    gold_found: Counter[str] = Counter()
    predicted_found: Counter[str] = Counter()
    correct_found: Counter[str] = Counter()
    num_tokens = 0
    num_correct_tokens = 0
    in_correct = False
    last_gold = last_predicted = ("O", "")
    for gold_tag, predicted_tag, is_token in _tag_pairs(gold, pred):
        gold_ends = _chunk_end(last_gold, gold_tag)
        predicted_ends = _chunk_end(last_predicted, predicted_tag)
        if in_correct:
            if gold_ends and predicted_ends and last_predicted[1] == last_gold[1]:
                in_correct = False
                correct_found[last_gold[1]] += 1
            elif gold_ends != predicted_ends or predicted_tag[1] != gold_tag[1]:
                in_correct = False
        gold_starts = _chunk_start(last_gold, gold_tag)
        predicted_starts = _chunk_start(last_predicted, predicted_tag)
        if gold_starts and predicted_starts and predicted_tag[1] == gold_tag[1]:
            in_correct = True
        if gold_starts:
            gold_found[gold_tag[1]] += 1
        if predicted_starts:
            predicted_found[predicted_tag[1]] += 1
        if is_token:
            num_tokens += 1
            num_correct_tokens += gold_tag == predicted_tag
        last_gold, last_predicted = gold_tag, predicted_tag
    if in_correct:
        correct_found[last_gold[1]] += 1

    per_type = {}
    for chunk_type in sorted(gold_found.keys() | predicted_found.keys()):
        precision = _percentage(correct_found[chunk_type], predicted_found[chunk_type])
        recall = _percentage(correct_found[chunk_type], gold_found[chunk_type])
        per_type[chunk_type] = TypeScores(precision, recall, _f1(precision, recall),
                                          predicted_found[chunk_type], gold_found[chunk_type],
                                          correct_found[chunk_type])
    num_correct = sum(correct_found.values())
    precision = _percentage(num_correct, sum(predicted_found.values()))
    recall = _percentage(num_correct, sum(gold_found.values()))
    return ChunkScores(precision=precision, recall=recall, f1=_f1(precision, recall),
                       accuracy=_percentage(num_correct_tokens, num_tokens),
                       num_gold_chunks=sum(gold_found.values()),
                       num_predicted_chunks=sum(predicted_found.values()),
                       num_correct_chunks=num_correct, num_tokens=num_tokens,
                       num_correct_tokens=num_correct_tokens, per_type=per_type)


@dataclass(frozen=True)
class McNemarResult:
    """Token-level disagreements of two labellers and McNemar's two-sided p-value.

    ``n01``: tokens A labels right and B wrong; ``n10``: A wrong and B right.
    ``method`` is "exact" (binomial test) or "chi2" (with continuity correction).
    """

    n01: int
    n10: int
    p_value: float
    method: str


def mcnemar(gold: Sequence[Sequence[str]], pred_a: Sequence[Sequence[str]],
            pred_b: Sequence[Sequence[str]]) -> McNemarResult:
    """McNemar's test on the token labelling errors of two taggers [num_sentences][num_tokens].

    Uses the exact binomial test when fewer than 25 tokens are right in just
    one of the two, else the chi-square test with continuity correction.
    """
    _check_lengths(gold, pred_a, pred_b)
    n01 = n10 = 0
    for gold_tags, tags_a, tags_b in zip(gold, pred_a, pred_b):
        for gold_tag, tag_a, tag_b in zip(gold_tags, tags_a, tags_b):
            a_right = tag_a == gold_tag
            b_right = tag_b == gold_tag
            n01 += a_right and not b_right
            n10 += b_right and not a_right
    num_discordant = n01 + n10
    if num_discordant == 0:
        return McNemarResult(0, 0, 1.0, "exact")
    if num_discordant < _EXACT_TEST_BELOW:
        p_value = stats.binomtest(n01, num_discordant, 0.5).pvalue
        return McNemarResult(n01, n10, float(min(1.0, p_value)), "exact")
    statistic = (abs(n01 - n10) - 1) ** 2 / num_discordant
    return McNemarResult(n01, n10, float(stats.chi2.sf(statistic, df=1)), "chi2")
