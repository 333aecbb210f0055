"""Chunk scores (conlleval's for IOB tags, by the scheme's rules for BIOES
tags), token accuracy for labels without chunk structure, and McNemar's test.

:func:`score_labels` is the entry point: chunk scores when the gold labels
are chunk labels (``O`` and ``B-``, ``I-``, ``E-``, ``S-`` followed by a
type), else token accuracy with per-tag figures (:class:`TagScores`).

:func:`score_chunks` reproduces the numbers of conlleval (default mode) on
IOB1 and IOB2 tags: a tag is split at its first dash into a prefix and a
chunk type (``B-NP`` is ``B`` and ``NP``; a tag without a dash, such as
``O``, has the empty type), and chunks begin and end by conlleval's rules,
which cover IOB1, IOB2 and IOE tags (``B``/``I``/``E``/``O``) and the bracket
tags ``[`` and ``]``.  Each sentence ends with an implicit ``O``, as after a
blank line in conlleval's input.  Like conlleval, a chunk type "0" counts as
the empty type.  Unlike it, the report lists each chunk type once (conlleval
prints the empty type twice when both gold and predicted chunks have it).

conlleval has no rule for ``S`` tags, so when gold or predicted tags hold an
``E-`` or ``S-`` tag (BIOES, or IOE) each side's chunks are read by
:func:`fstcrf.corpus.schemes.read_chunks` (a chunk ends at E or S) and a chunk is
correct when the other side has the same (first token, last token, type).
Gold and prediction may then be in different schemes; for token accuracy
the prediction is rewritten in the gold's scheme.

Precision, recall, F1 and accuracy are percentages, as conlleval prints them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import ClassVar, cast
from collections.abc import Iterator, Sequence

from fstcrf.errors import ArgumentTypeError, LabelError, ShapeError
from fstcrf.corpus.schemes import (
    LABEL_SET_SEPARATOR,
    UNKNOWN_LABEL,
    chunk_end,
    chunk_start,
    read_chunks,
    split_tag,
    write_chunks,
)

#: The schemes ``scheme=`` accepts; ``None`` detects each side's scheme from its tags.
SCHEMES = ("iob1", "iob2", "bioes")
_CHUNK_PREFIXES = ("B", "I", "E", "S")
_EXACT_TEST_BELOW = 25


def percentage(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole > 0 else 0.0


def f1(precision: float, recall: float) -> float:
    total = precision + recall
    return 2.0 * precision * recall / total if total > 0 else 0.0


def _check_sentences(sentences, name: str):
    """Raise ArgumentTypeError unless ``sentences`` is a sequence of sequences of strings."""
    if isinstance(sentences, str):
        raise ArgumentTypeError(f"{name} must be sentences (lists of labels), got the string {sentences[:30]!r}")
    for index, labels in enumerate(sentences):
        if isinstance(labels, str):
            raise ArgumentTypeError(f"{name} sentence {index} is the string {labels[:30]!r}, not a list of labels")
        for position, label in enumerate(labels):
            if not isinstance(label, str):
                raise ArgumentTypeError(
                    f"{name} sentence {index} token {position}: labels must "
                    f"be strings, got {type(label).__name__} {label!r}"
                )


def _check_lengths(gold: Sequence[Sequence[str]], *predictions: Sequence[Sequence[str]]):
    _check_sentences(gold, "gold")
    for prediction in predictions:
        _check_sentences(prediction, "predicted")
        if len(prediction) != len(gold):
            raise ShapeError(f"{len(gold)} gold sentences but {len(prediction)} predicted")
        for index, (gold_tags, predicted_tags) in enumerate(zip(gold, prediction)):
            if len(gold_tags) != len(predicted_tags):
                raise ShapeError(f"sentence {index} has {len(gold_tags)} gold tags but {len(predicted_tags)} predicted")


def _is_single(label: str) -> bool:
    """Is a gold value one label (not ``?`` nor a label set ``A|B``)?"""
    return label != UNKNOWN_LABEL and LABEL_SET_SEPARATOR not in label


def check_single_labels(gold: Sequence[Sequence[str]]):
    """Raise LabelError at the first partial label (``?`` or ``A|B``) of the gold column.

    The error's ``sentence`` and ``position`` attributes locate the token.
    """
    for index, labels in enumerate(gold):
        for position, label in enumerate(labels):
            if not _is_single(label):
                error = LabelError(
                    f"gold labels must be single labels: sentence {index} token {position} has "
                    f"{label!r} (the unknown label {UNKNOWN_LABEL!r} and label sets such as "
                    f"'B-NP{LABEL_SET_SEPARATOR}I-NP' are partial labels, for training only)"
                )
                error.sentence, error.position = index, position
                raise error


def _label_members(label: str) -> list[str]:
    """The single labels a gold value stands for: none for ``?``, the members of ``A|B``."""
    return [] if label == UNKNOWN_LABEL else label.split(LABEL_SET_SEPARATOR)


def _chunk_prefix(label: str) -> str | None:
    """The prefix B, I, E or S of a chunk label ``P-TYPE``, "" for ``O``, else None."""
    if label == "O":
        return ""
    prefix, dash, chunk_type = label.partition("-")
    return prefix if dash and chunk_type and prefix in _CHUNK_PREFIXES else None


def _chunk_prefixes(sentences: Sequence[Sequence[str]]) -> set[str] | None:
    """The prefixes (B, I, E, S) of chunk labels [num_sentences][num_tokens], or None
    when they are not chunk labels.  Partial labels count by their members."""
    distinct = {label for labels in sentences for label in labels}
    prefixes = {_chunk_prefix(member) for label in distinct for member in _label_members(label)} - {""}
    return cast("set[str]", prefixes) if prefixes and None not in prefixes else None


def is_chunk_labels(sentences: Sequence[Sequence[str]]) -> bool:
    """True when labels [num_sentences][num_tokens] have chunk structure.

    Some label is ``B-``, ``I-``, ``E-`` or ``S-`` followed by a type and every
    other label is ``O``.  Partial labels count by their members (``?`` by none).
    """
    _check_sentences(sentences, "labels")
    return _chunk_prefixes(sentences) is not None


def _starts_inside(sentences: Sequence[Sequence[str]]) -> bool:
    """Does some chunk start with I- (after O, another type or the sentence start)?

    Only single labels are looked at: a partial label hides what is before it.
    """
    for labels in sentences:
        previous = "O"
        for label in labels:
            if (
                label.startswith("I-")
                and _is_single(label)
                and _is_single(previous)
                and previous.partition("-")[2] != label[2:]
            ):
                return True
            previous = label
    return False


def detect_scheme(sentences: Sequence[Sequence[str]]) -> str | None:
    """The chunk scheme of labels [num_sentences][num_tokens]: "iob1", "iob2",
    "bioes", or None when they are not chunk labels (:func:`is_chunk_labels`).

    BIOES: some E- or S- label (IOE tags are read by the same rules).  IOB1:
    some chunk starts with I- after O, after another type or at the sentence
    start.  Else IOB2.
    """
    _check_sentences(sentences, "labels")
    return _detect_checked_scheme(sentences)


def _detect_checked_scheme(sentences: Sequence[Sequence[str]]) -> str | None:
    """:func:`detect_scheme` of labels already checked."""
    prefixes = _chunk_prefixes(sentences)
    if prefixes is None:
        return None
    if prefixes & {"E", "S"}:
        return "bioes"
    return "iob1" if _starts_inside(sentences) else "iob2"


@dataclass(frozen=True)
class TypeScores:
    """Scores of one chunk type or tag (percentages) and its chunk or token counts."""

    precision: float
    recall: float
    f1: float
    num_predicted: int
    num_gold: int
    num_correct: int


def _per_type_scores(
    gold_found: Counter[str], predicted_found: Counter[str], correct_found: Counter[str]
) -> dict[str, TypeScores]:
    """Scores of each chunk type or tag, in sorted order, from its counts."""
    per_type = {}
    for name in sorted(gold_found.keys() | predicted_found.keys()):
        precision = percentage(correct_found[name], predicted_found[name])
        recall = percentage(correct_found[name], gold_found[name])
        per_type[name] = TypeScores(
            precision, recall, f1(precision, recall), predicted_found[name], gold_found[name], correct_found[name]
        )
    return per_type


def _per_type_lines(per_type: dict[str, TypeScores]) -> list[str]:
    """conlleval's per-type lines: precision, recall, F1 and the number predicted."""
    return [
        f"{name:>17}: precision: {scores.precision:6.2f}%; recall: {scores.recall:6.2f}%; "
        f"FB1: {scores.f1:6.2f}  {scores.num_predicted}"
        for name, scores in per_type.items()
    ]


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
    #: The name of :attr:`primary`.
    metric: ClassVar[str] = "F1"

    @property
    def primary(self) -> float:
        """The figure to select models by: chunk F1 (percent)."""
        return self.f1

    def format(self) -> str:
        """The report in conlleval's layout."""
        lines = [
            f"processed {self.num_tokens} tokens with {self.num_gold_chunks} phrases; "
            f"found: {self.num_predicted_chunks} phrases; "
            f"correct: {self.num_correct_chunks}."
        ]
        if self.num_tokens > 0:
            lines.append(
                f"accuracy: {self.accuracy:6.2f}%; precision: {self.precision:6.2f}%; "
                f"recall: {self.recall:6.2f}%; FB1: {self.f1:6.2f}"
            )
        return "\n".join(lines + _per_type_lines(self.per_type)) + "\n"


@dataclass(frozen=True)
class TagScores:
    """Token accuracy (percent) and counts of labels without chunk structure, and
    per-tag precision, recall and F1 (a tag's tokens in place of a type's chunks)."""

    accuracy: float
    num_tokens: int
    num_correct_tokens: int
    per_tag: dict[str, TypeScores] = field(default_factory=dict)
    #: The name of :attr:`primary`.
    metric: ClassVar[str] = "accuracy"

    @property
    def primary(self) -> float:
        """The figure to select models by: token accuracy (percent)."""
        return self.accuracy

    def format(self) -> str:
        """The report: tokens and accuracy, then one conlleval-style line per tag."""
        first = f"processed {self.num_tokens} tokens; accuracy: {self.accuracy:6.2f}%"
        return "\n".join([first] + _per_type_lines(self.per_tag)) + "\n"


def _chunk_scores(
    gold_found: Counter[str],
    predicted_found: Counter[str],
    correct_found: Counter[str],
    num_tokens: int,
    num_correct_tokens: int,
) -> ChunkScores:
    num_correct = sum(correct_found.values())
    precision = percentage(num_correct, sum(predicted_found.values()))
    recall = percentage(num_correct, sum(gold_found.values()))
    return ChunkScores(
        precision=precision,
        recall=recall,
        f1=f1(precision, recall),
        accuracy=percentage(num_correct_tokens, num_tokens),
        num_gold_chunks=sum(gold_found.values()),
        num_predicted_chunks=sum(predicted_found.values()),
        num_correct_chunks=num_correct,
        num_tokens=num_tokens,
        num_correct_tokens=num_correct_tokens,
        per_type=_per_type_scores(gold_found, predicted_found, correct_found),
    )


def _tag_pairs(
    gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]
) -> Iterator[tuple[tuple[str, str], tuple[str, str], bool]]:
    """Yield (gold tag, predicted tag, is a token) split into (prefix, type), sentence by sentence.

    Each sentence is followed by an ("O", "") pair that is not a token, like
    the blank line after a sentence in conlleval's input.
    """
    sentence_end = ("O", "")
    for gold_tags, predicted_tags in zip(gold, pred):
        for gold_tag, predicted_tag in zip(gold_tags, predicted_tags):
            yield split_tag(gold_tag), split_tag(predicted_tag), True
        yield sentence_end, sentence_end, False


def _score_conlleval(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> ChunkScores:
    """Chunk scores of checked tags [num_sentences][num_tokens], as conlleval computes them."""
    gold_found: Counter[str] = Counter()
    predicted_found: Counter[str] = Counter()
    correct_found: Counter[str] = Counter()
    num_tokens = 0
    num_correct_tokens = 0
    in_correct = False
    last_gold = last_predicted = ("O", "")
    for gold_tag, predicted_tag, is_token in _tag_pairs(gold, pred):
        gold_ends = chunk_end(last_gold, gold_tag)
        predicted_ends = chunk_end(last_predicted, predicted_tag)
        if in_correct:
            if gold_ends and predicted_ends and last_predicted[1] == last_gold[1]:
                in_correct = False
                correct_found[last_gold[1]] += 1
            elif gold_ends != predicted_ends or predicted_tag[1] != gold_tag[1]:
                in_correct = False
        gold_starts = chunk_start(last_gold, gold_tag)
        predicted_starts = chunk_start(last_predicted, predicted_tag)
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
    return _chunk_scores(gold_found, predicted_found, correct_found, num_tokens, num_correct_tokens)


def _read_sentence_chunks(tags: Sequence[str], index: int, side: str) -> list[tuple[int, int, str]]:
    """The chunks (first token, last token, type) of sentence ``index``; a bad tag's
    LabelError names the side, the sentence and the token (``sentence``, ``position``)."""
    try:
        return read_chunks(tags)
    except LabelError as error:
        located = LabelError(f"{side} sentence {index}: {error}")
        located.sentence, located.position = index, error.position
        raise located from None


def _score_chunk_spans(
    gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], gold_scheme: str | None, pred_scheme: str | None
) -> ChunkScores:
    """Chunk scores of checked tags [num_sentences][num_tokens] read by
    :func:`fstcrf.corpus.schemes.read_chunks`: a chunk is correct when both sides have it.

    When one side is BIOES and the other IOB, the predicted tags are rewritten
    in the gold's scheme before tokens are compared.
    """
    rewrite = None not in (gold_scheme, pred_scheme) and (gold_scheme == "bioes") != (pred_scheme == "bioes")
    gold_found: Counter[str] = Counter()
    predicted_found: Counter[str] = Counter()
    correct_found: Counter[str] = Counter()
    num_tokens = num_correct_tokens = 0
    for index, (gold_tags, predicted_tags) in enumerate(zip(gold, pred)):
        gold_chunks = _read_sentence_chunks(gold_tags, index, "gold")
        predicted_chunks = _read_sentence_chunks(predicted_tags, index, "predicted")
        gold_found.update(chunk_type for _, _, chunk_type in gold_chunks)
        predicted_found.update(chunk_type for _, _, chunk_type in predicted_chunks)
        correct_found.update(chunk_type for _, _, chunk_type in set(gold_chunks) & set(predicted_chunks))
        if rewrite and gold_scheme is not None:
            predicted_tags = write_chunks(predicted_chunks, len(predicted_tags), gold_scheme)
        num_tokens += len(gold_tags)
        num_correct_tokens += sum(map(str.__eq__, gold_tags, predicted_tags))
    return _chunk_scores(gold_found, predicted_found, correct_found, num_tokens, num_correct_tokens)


def score_chunks(
    gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], scheme: str | None = None
) -> ChunkScores:
    """Score predicted tags [num_sentences][num_tokens] against gold tags.

    ``scheme`` is "iob1", "iob2", "bioes" or None (detect each side's scheme).
    IOB tags on both sides are scored exactly as conlleval scores them; when
    either side is BIOES (some E- or S- tag), or ``scheme="bioes"``, each
    side's chunks are read by the BIOES rules, which also read IOB tags.
    Declaring an IOB scheme for tags with E- or S- tags raises LabelError, as
    do partial labels (``?``, ``A|B``) in the gold column.
    """
    _check_lengths(gold, pred)
    check_single_labels(gold)
    return _score_checked_chunks(gold, pred, scheme)


def _score_checked_chunks(
    gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], scheme: str | None
) -> ChunkScores:
    """:func:`score_chunks` of tags [num_sentences][num_tokens] already checked."""
    if scheme is not None and scheme not in SCHEMES:
        raise LabelError(f"scheme must be one of {', '.join(SCHEMES)} or None, got {scheme!r}")
    if scheme in ("iob1", "iob2"):
        for side, tags in (("gold", gold), ("predicted", pred)):
            if any(_chunk_prefix(tag) in ("E", "S") for labels in tags for tag in labels):
                raise LabelError(
                    f"the {side} tags have E- or S- tags, which {scheme.upper()} has "
                    "not; declare scheme='bioes' or leave scheme=None to detect it"
                )
        return _score_conlleval(gold, pred)
    gold_scheme, pred_scheme = _detect_checked_scheme(gold), _detect_checked_scheme(pred)
    if scheme == "bioes" or "bioes" in (gold_scheme, pred_scheme):
        return _score_chunk_spans(gold, pred, gold_scheme, pred_scheme)
    return _score_conlleval(gold, pred)


def _score_tags(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> TagScores:
    """Token accuracy and per-tag scores of checked labels [num_sentences][num_tokens]."""
    gold_found = Counter(label for labels in gold for label in labels)
    predicted_found = Counter(label for labels in pred for label in labels)
    correct_found = Counter(
        gold_label
        for gold_labels, predicted_labels in zip(gold, pred)
        for gold_label, predicted_label in zip(gold_labels, predicted_labels)
        if gold_label == predicted_label
    )
    num_tokens, num_correct = sum(gold_found.values()), sum(correct_found.values())
    return TagScores(
        percentage(num_correct, num_tokens),
        num_tokens,
        num_correct,
        _per_type_scores(gold_found, predicted_found, correct_found),
    )


def score_labels(
    gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], scheme: str | None = None
) -> ChunkScores | TagScores:
    """Score predicted labels [num_sentences][num_tokens] against gold labels.

    Chunk scores (:func:`score_chunks`) when ``scheme`` is given or the gold
    labels are chunk labels (or all O, with chunk labels predicted), else
    token accuracy and per-tag scores (:class:`TagScores`).  Both results give
    ``.metric`` ("F1" or "accuracy") and ``.primary`` (that figure, percent).
    """
    _check_lengths(gold, pred)
    check_single_labels(gold)
    only_outside = all(label == "O" for labels in gold for label in labels)
    if scheme is not None or _chunk_prefixes(gold) or (only_outside and _chunk_prefixes(pred)):
        return _score_checked_chunks(gold, pred, scheme)
    return _score_tags(gold, pred)


def _scheme_family(scheme: str) -> str:
    """The family of a scheme: "BIOES" for "bioes", "IOB" for "iob1" and "iob2"."""
    return "BIOES" if scheme == "bioes" else "IOB"


def scheme_mismatch(model_labels: Sequence[str], file_sentences: Sequence[Sequence[str]]) -> str | None:
    """A one-line warning when a model's labels [L] and a file's gold labels
    [num_sentences][num_tokens] are in different schemes (BIOES against IOB,
    or chunk labels against labels without chunk structure), else None.

    IOB1 and IOB2 are one family here: a label set cannot tell them apart.
    A file whose gold labels are all O (or unknown) matches every model.
    """
    if isinstance(model_labels, str):
        raise ArgumentTypeError(f"model_labels must be a list of labels, got the string {model_labels[:30]!r}")
    model_scheme, file_scheme = detect_scheme([model_labels]), detect_scheme(file_sentences)
    if all(label in ("O", UNKNOWN_LABEL) for labels in file_sentences for label in labels):
        return None
    model_name = None if model_scheme is None else _scheme_family(model_scheme)
    file_name = None if file_scheme is None else file_scheme.upper()
    if model_name is None and file_name is None:
        return None
    if model_name is None or file_name is None:
        model_text = f"{model_name} chunk labels" if model_name else "labels without chunk structure"
        file_text = f"{file_name} chunk labels" if file_name else "labels without chunk structure"
        return f"the model has {model_text} but the file's gold labels are {file_text}"
    if file_scheme is not None and model_name == _scheme_family(file_scheme):
        return None
    return (
        f"the model's labels are {model_name} but the file's gold labels are {file_name}: chunks "
        f"are matched by each scheme's rules, and predicted tags are rewritten in {file_name} "
        "for token accuracy"
    )


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


def mcnemar(
    gold: Sequence[Sequence[str]], pred_a: Sequence[Sequence[str]], pred_b: Sequence[Sequence[str]]
) -> McNemarResult:
    """McNemar's test on the token labelling errors of two taggers [num_sentences][num_tokens].

    Uses the exact binomial test when fewer than 25 tokens are right in just
    one of the two, else the chi-square test with continuity correction.
    """
    from scipy import stats

    _check_lengths(gold, pred_a, pred_b)
    check_single_labels(gold)
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
