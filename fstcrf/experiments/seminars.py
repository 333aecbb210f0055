"""The CMU seminar announcements (Freitag 1998) and the scores of the papers
that use them.

An announcement is raw e-mail text with inline SGML tags: the fields
``<speaker>``, ``<location>``, ``<stime>``, ``<etime>`` and the structure tags
``<paragraph>``, ``<sentence>``.  :func:`read_seminar` strips every tag
(any ``</?[a-z]+>``, as Freitag's page says, so the untagged text is the
original message), tokenises the text and returns its sentences with the
columns ``word`` and ``field`` (IOB2 over the four fields); the first
sentence carries a ``-DOCSTART-`` line, so :func:`fstcrf.corpus.conll.write_conll`
writes one before each message.

Tokens come from the untagged text alone (see ``_TOKEN``), so the tags
never change the input a tagger sees, except where a field edge falls
inside a token: that token is cut there (counted in ``split_tokens``).
Sentences: a ``<sentence>``, ``<paragraph>`` or ``</paragraph>`` tag starts
a new sentence; a line break ends one only outside paragraphs, sentences
and fields (so header lines are sentences, tagged prose keeps its
sentences across line breaks, and a mention never straddles two
sentences); ``</sentence>`` ends nothing, so the ``.`` that Freitag leaves
after it stays with its sentence.

Paragraphs, sentences and fields are three independent layers: tags of
different layers may cross, as Freitag's do ("<location>DH 2315
</sentence></location>").  Within a layer, malformed tags are repaired,
logged as warnings naming FILE:LINE and kept in
``SeminarDocument.repairs``: an unknown tag is dropped; a paragraph or
sentence opened again while open, or open at the end of the file, is
closed there; a field tag not closed before the next field tag or the end
of the file is dropped (its text stays unlabelled); a field closed by
another field's tag keeps its opening field; a closing tag with nothing
open is dropped, and so is a field mention without text.

Scores (percentages, as in :mod:`fstcrf.corpus.evaluate`):
:func:`document_scores` is the one-value-per-document measure of Freitag
and of Sutton & McCallum 2005, :func:`token_scores` the per-token measure
of Finkel et al. 2005; :func:`mean_f1` averages the fields, as both papers'
"overall" figure does.
"""

from __future__ import annotations

import logging
import os
import re
from bisect import bisect_left, bisect_right
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Sequence

from fstcrf.corpus.conll import DOCSTART, Corpus, Sentence, as_sentences
from fstcrf.errors import ArgumentTypeError, ConllFormatError, FstcrfError, LabelError, ShapeError
from fstcrf.corpus.evaluate import f1, percentage
from fstcrf.files import read_utf8
from fstcrf.corpus.schemes import read_chunks

logger = logging.getLogger(__name__)

#: The annotated fields.
FIELDS = ("speaker", "location", "stime", "etime")
#: Freitag's structure tags: they give sentence boundaries, never labels.
STRUCTURE_TAGS = ("paragraph", "sentence")
#: The CoNLL columns of the sentences :func:`read_seminar` returns.
COLUMNS = ("word", "field")
#: The ``-DOCSTART-`` line before each message (one field per column).
DOCSTART_LINE = f"{DOCSTART} O"
#: How :func:`document_scores` picks a document's value of a field from its predicted mentions.
PICKS = ("most_frequent", "first")

_TAG = re.compile(r"<(/?)([a-z]+)>")
_TOKEN = re.compile(
    r"""
      [\w.+-]+@\w[\w-]*(?:\.[\w-]+)*                # e-mail address: maa+@ISL1.RI.CMU.EDU
    | (?:https?|ftp)://[^\s<>"]*[\w/]               # URL
    | \d{1,2}:\d\d(?::\d\d)?                        # clock time: 3:30 (3:30pm is 3:30 pm)
    | \d+(?=(?i:[ap]\.?m)(?![^\W_]))                # the number of 5pm, 5p.m
    | \d+(?:[.,]\d+)+                               # 1,000  3.5  4.30
    | (?i:[ap]\.m)(?![^\W_])                        # a.m, p.m: the final dot is its own token
    | [^\W\d_](?:\.[^\W\d_])+\.?                    # dotted abbreviation: U.S.  T.J.  e.g.
    | (?:Dr|Mr|Mrs|Ms|Prof|St|Jr|Sr|[A-Z])\.        # title or initial: Dr.  J.
    | [^\W\d_]+(?=n't(?![^\W_]))                    # do of don't
    | (?i:n't|'(?:s|re|ve|ll|d|m))(?![^\W_])        # clitic: 's n't 're ...
    | [^\W\d_][^\W_]*(?:-[^\W\d_]+)*:(?!/)          # header word: Who:  Host:  E-mail:
    | [^\W\d_]+(?:-[^\W\d_]+)*(?![^\W_])            # word, hyphenated words: Carnegie-Mellon
    | [^\W_]+                                       # letters and digits: 4P56  WEH7500  2nd
    | ([^\w\s]|_)\1+                                # a run of one punctuation mark: --- ...
    | \S                                            # any other character
""",
    re.VERBOSE,
)


@dataclass(frozen=True)
class Mention:
    """A field mention: characters ``start:end`` of the untagged text."""

    field: str
    start: int
    end: int


@dataclass(frozen=True)
class Repair:
    """A malformed tag and what was done: ``kind`` is "unknown", "unclosed",
    "mismatched", "stray" or "empty"; ``tag`` is the tag as written."""

    path: Path
    line: int
    kind: str
    tag: str
    action: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind} {self.tag}: {self.action}"


@dataclass
class SeminarDocument:
    """One announcement.  ``text`` is the message without its tags,
    ``mentions`` the field spans in it, ``sentences`` its tokens (columns
    word and field; ``line_numbers`` are lines of the file; the first carries
    the ``-DOCSTART-`` line), ``repairs`` the malformed tags met and
    ``split_tokens`` the tokens cut at a field edge."""

    path: Path
    text: str
    mentions: list[Mention]
    sentences: list[Sentence]
    repairs: list[Repair] = field(default_factory=list)
    split_tokens: int = 0

    def mention_text(self, mention: Mention) -> str:
        """The characters of ``mention``."""
        return self.text[mention.start : mention.end]


class _Tags:
    """The tags of one file, read in order: field spans, sentence breaks and the
    spans kept together in one sentence (all in offsets of the untagged text)."""

    def __init__(self, path: Path):
        self.path = path
        self.mentions: list[Mention] = []
        self.breaks: list[int] = []
        self.joined: list[tuple[int, int]] = []  # paragraphs and sentences: their line breaks end none
        self.repairs: list[Repair] = []
        self.open_structure: dict[str, tuple[int, int]] = {}  # tag -> (offset, line) where opened
        self.open_field: tuple[str, int, int] | None = None  # (field, offset, line)

    def repair(self, line: int, kind: str, tag: str, action: str) -> None:
        repair = Repair(self.path, line, kind, tag, action)
        logger.warning("%s", repair)
        self.repairs.append(repair)

    def close_structure(self, name: str, offset: int) -> None:
        start, _ = self.open_structure.pop(name)
        self.joined.append((start, offset))

    def structure_tag(self, name: str, closing: bool, offset: int, line: int) -> None:
        if closing and name not in self.open_structure:
            self.repair(line, "stray", f"</{name}>", "nothing open; dropped")
            return
        if closing:
            self.close_structure(name, offset)
        else:
            if name in self.open_structure:
                self.repair(
                    self.open_structure[name][1], "unclosed", f"<{name}>", f"closed at the <{name}> on line {line}"
                )
                self.close_structure(name, offset)
            self.open_structure[name] = (offset, line)
        if name == "paragraph" or not closing:
            self.breaks.append(offset)

    def field_tag(self, name: str, closing: bool, offset: int, line: int) -> None:
        if closing and self.open_field is None:
            self.repair(line, "stray", f"</{name}>", "nothing open; dropped")
            return
        if closing:
            opened, start, start_line = self.open_field
            if opened != name:
                self.repair(
                    line, "mismatched", f"</{name}>", f"closes the <{opened}> of line {start_line}, kept as {opened}"
                )
            self.mentions.append(Mention(opened, start, offset))
            self.open_field = None
            return
        if self.open_field is not None:
            opened, _, start_line = self.open_field
            self.repair(
                start_line, "unclosed", f"<{opened}>", f"not closed before the <{name}> on line {line}; dropped"
            )
        self.open_field = (name, offset, line)

    def finish(self, end: int, last_line: int) -> None:
        """Repair the tags still open at the end of the file (offset ``end``)."""
        for name, (_, line) in list(self.open_structure.items()):
            self.repair(line, "unclosed", f"<{name}>", f"closed at the end of the file (line {last_line})")
            self.close_structure(name, end)
        if self.open_field is not None:
            opened, _, line = self.open_field
            self.repair(line, "unclosed", f"<{opened}>", "open at the end of the file; dropped")
            self.open_field = None


def _strip_tags(raw: str, path: Path) -> tuple[str, _Tags]:
    """The untagged text of ``raw`` and its tags."""
    tags = _Tags(path)
    pieces: list[str] = []
    length = 0
    previous_end = 0
    line = 1
    for match in _TAG.finditer(raw):
        piece = raw[previous_end : match.start()]
        pieces.append(piece)
        length += len(piece)
        line += piece.count("\n")
        previous_end = match.end()
        closing, name = bool(match.group(1)), match.group(2)
        if name in STRUCTURE_TAGS:
            tags.structure_tag(name, closing, length, line)
        elif name in FIELDS:
            tags.field_tag(name, closing, length, line)
        else:
            tags.repair(line, "unknown", match.group(0), "dropped")
    pieces.append(raw[previous_end:])
    text = "".join(pieces)
    tags.finish(len(text), text.count("\n") + 1)
    return text, tags


def _tokens(text: str, mentions: Sequence[Mention]) -> tuple[list[tuple[int, int]], int]:
    """The (start, end) offsets of the tokens of ``text``, cut at every field edge,
    and the number of tokens that were cut."""
    edges = sorted({offset for mention in mentions for offset in (mention.start, mention.end)})
    spans: list[tuple[int, int]] = []
    cut = 0
    edge = 0
    for match in _TOKEN.finditer(text):
        start, end = match.span()
        while edge < len(edges) and edges[edge] <= start:
            edge += 1
        inner = []
        while edge < len(edges) and edges[edge] < end:
            inner.append(edges[edge])
            edge += 1
        cut += bool(inner)
        bounds = [start, *inner, end]
        spans.extend(zip(bounds, bounds[1:]))
    return spans, cut


def _covered(offsets: Sequence[int], spans: Sequence[tuple[int, int]]) -> list[bool]:
    """For each offset (sorted), whether it lies strictly inside one of ``spans``."""
    depth_changes = Counter()
    for start, end in spans:
        if end > start + 1:
            depth_changes[start + 1] += 1
            depth_changes[end] -= 1
    changes = sorted(depth_changes.items())
    covered = []
    depth = 0
    change = 0
    for offset in offsets:
        while change < len(changes) and changes[change][0] <= offset:
            depth += changes[change][1]
            change += 1
        covered.append(depth > 0)
    return covered


def _sentence_breaks(newlines: Sequence[int], tags: _Tags) -> list[int]:
    """The sorted offsets where a sentence ends: structure tags outside fields,
    and the line breaks (sorted offsets ``newlines``) outside paragraphs,
    sentences and fields."""
    field_spans = [(mention.start, mention.end) for mention in tags.mentions]
    joined = _covered(newlines, tags.joined + field_spans)
    free_newlines = [offset for offset, inside in zip(newlines, joined) if not inside]
    structure = sorted(tags.breaks)
    free_structure = [offset for offset, inside in zip(structure, _covered(structure, field_spans)) if not inside]
    return sorted(free_newlines + free_structure)


def _field_labels(spans: Sequence[tuple[int, int]], mentions: Sequence[Mention]) -> list[str]:
    """The IOB2 field label of each token span (tokens never cross a field edge)."""
    labels = ["O"] * len(spans)
    starts = [start for start, _ in spans]
    for mention in mentions:
        first = bisect_left(starts, mention.start)
        last = bisect_left(starts, mention.end)
        labels[first:last] = [f"B-{mention.field}"] + [f"I-{mention.field}"] * (last - first - 1)
    return labels


def read_seminar(path: str | os.PathLike) -> SeminarDocument:
    """One tagged announcement (see the module docstring for the rules).

    A file without any token (an empty file) gives a warning and a document
    without sentences; invalid UTF-8 raises ConllFormatError naming FILE:LINE.
    """
    path = Path(path)
    text, tags = _strip_tags(read_utf8(path, ConllFormatError), path)
    newlines = [match.start() for match in re.finditer("\n", text)]
    mentions = []
    for mention in tags.mentions:
        if text[mention.start : mention.end].strip():
            mentions.append(mention)
        else:
            tags.repair(bisect_left(newlines, mention.start) + 1, "empty", f"<{mention.field}>", "no text; dropped")
    spans, split_tokens = _tokens(text, mentions)
    if not spans:
        logger.warning("%s:1: no text (an empty file); the document has no sentences", path)
        return SeminarDocument(path, text, mentions, [], tags.repairs, split_tokens)
    labels = _field_labels(spans, mentions)
    breaks = _sentence_breaks(newlines, tags)
    sentence_numbers = [bisect_right(breaks, start) for start, _ in spans]  # breaks before each token
    sentences = []
    first = 0
    for index in range(1, len(spans) + 1):
        if index == len(spans) or sentence_numbers[index] != sentence_numbers[first]:
            words = [text[start:end] for start, end in spans[first:index]]
            lines = [bisect_left(newlines, start) + 1 for start, _ in spans[first:index]]
            sentences.append(
                Sentence({"word": words, "field": labels[first:index]}, lines, () if sentences else (DOCSTART_LINE,))
            )
            first = index
    return SeminarDocument(path, text, mentions, sentences, tags.repairs, split_tokens)


def _numeric_order(path: Path) -> tuple:
    """Sort key: files named by a number first, by that number, then the others by path."""
    return (0, int(path.stem), str(path)) if path.stem.isdigit() else (1, 0, str(path))


def seminar_paths(folder: str | os.PathLike) -> list[Path]:
    """The ``*.txt`` files under ``folder`` (recursively), sorted by their numeric
    names (``training/0.txt`` ... ``test/484.txt``); FstcrfError if there are none."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FstcrfError(f"{folder}: not a folder; give the folder holding the announcements (*.txt)")
    paths = sorted((path for path in folder.rglob("*.txt") if path.is_file()), key=_numeric_order)
    if not paths:
        raise FstcrfError(f"{folder}: no *.txt files (one announcement per file) in it or below it")
    return paths


def read_seminars(folder: str | os.PathLike) -> list[SeminarDocument]:
    """Every announcement under ``folder``, in the order of :func:`seminar_paths`."""
    return [read_seminar(path) for path in seminar_paths(folder)]


def seminar_corpus(documents: Sequence[SeminarDocument]) -> Corpus:
    """The sentences of ``documents`` as one Corpus (columns word, field); documents
    without text contribute nothing."""
    return Corpus(COLUMNS, [sentence for document in documents for sentence in document.sentences])


@dataclass
class SeminarCounts:
    """What a set of announcements holds: ``mentions`` and ``documents_with``
    per field (mentions counted from the IOB2 labels), ``repairs`` per
    "kind tag" (e.g. "unclosed <paragraph>")."""

    documents: int
    empty_documents: int
    sentences: int
    tokens: int
    mentions: dict[str, int]
    documents_with: dict[str, int]
    repairs: Counter
    split_tokens: int

    def lines(self) -> list[str]:
        """A report, one line per figure."""
        fields = ", ".join(
            f"{name} {self.mentions[name]} in {self.documents_with[name]} documents" for name in self.mentions
        )
        repairs = ", ".join(f"{kind} {count}" for kind, count in sorted(self.repairs.items())) or "none"
        return [
            f"{self.documents} documents ({self.empty_documents} without text), {self.sentences} sentences, "
            f"{self.tokens} tokens",
            f"field mentions: {fields}",
            f"repaired tags: {repairs}",
            f"tokens cut at a field edge: {self.split_tokens}",
        ]


def count_seminars(documents: Sequence[SeminarDocument]) -> SeminarCounts:
    """The counts of ``documents``."""
    mentions = Counter()
    documents_with = Counter()
    for document in documents:
        starts = Counter(
            label[2:] for sentence in document.sentences for label in sentence["field"] if label.startswith("B-")
        )
        mentions.update(starts)
        documents_with.update(starts.keys())
    return SeminarCounts(
        documents=len(documents),
        empty_documents=sum(not document.sentences for document in documents),
        sentences=sum(len(document.sentences) for document in documents),
        tokens=sum(len(sentence) for document in documents for sentence in document.sentences),
        mentions={name: mentions[name] for name in FIELDS},
        documents_with={name: documents_with[name] for name in FIELDS},
        repairs=Counter(f"{repair.kind} {repair.tag}" for document in documents for repair in document.repairs),
        split_tokens=sum(document.split_tokens for document in documents),
    )


def group_documents(sentences) -> list[list[Sentence]]:
    """The sentences of a Corpus (or a list of Sentence) grouped into documents: a
    document starts at each sentence with a ``-DOCSTART-`` line (sentences before
    the first such line form a document too)."""
    documents: list[list[Sentence]] = []
    for sentence in as_sentences(sentences, "group_documents"):
        if sentence.document_start or not documents:
            documents.append([])
        documents[-1].append(sentence)
    return documents


def document_column(sentences, column: str) -> list[list[list[str]]]:
    """One column of a Corpus grouped by document: [documents][sentences][tokens]."""
    return [[sentence[column] for sentence in document] for document in group_documents(sentences)]


@dataclass(frozen=True)
class FieldScore:
    """Counts of one field: ``correct`` of ``predicted`` (documents with a value, or
    tokens) against ``gold`` (documents with a true mention, or tokens);
    precision, recall and F1 in percent."""

    correct: int
    predicted: int
    gold: int

    @property
    def precision(self) -> float:
        return percentage(self.correct, self.predicted)

    @property
    def recall(self) -> float:
        return percentage(self.correct, self.gold)

    @property
    def f1(self) -> float:
        return f1(self.precision, self.recall)


def _check_documents(name: str, documents, reference=None) -> None:
    """Raise unless ``documents`` is [documents][sentences][tokens] of strings shaped
    like ``reference`` (when given)."""
    if isinstance(documents, (str, Sentence, Corpus)):
        raise ArgumentTypeError(
            f"{name} must be lists of labels grouped as [documents][sentences][tokens] "
            f"(see document_column), got {type(documents).__name__}"
        )
    if reference is not None and len(documents) != len(reference):
        raise ShapeError(f"{name} has {len(documents)} documents, expected {len(reference)}")
    for number, document in enumerate(documents):
        if isinstance(document, str) or any(isinstance(sentence, str) for sentence in document):
            raise ArgumentTypeError(
                f"{name} document {number} must be a list of sentences, each a list of strings, got a string"
            )
        if reference is not None and len(document) != len(reference[number]):
            raise ShapeError(
                f"{name} document {number} has {len(document)} sentences, expected {len(reference[number])}"
            )
        for index, sentence in enumerate(document):
            if not all(isinstance(value, str) for value in sentence):
                raise ArgumentTypeError(f"{name} document {number} sentence {index} holds a value that is not a string")
            if reference is not None and len(sentence) != len(reference[number][index]):
                raise ShapeError(
                    f"{name} document {number} sentence {index} has {len(sentence)} tokens, "
                    f"expected {len(reference[number][index])}"
                )


def _mentions(
    words: Sequence[Sequence[str]], labels: Sequence[Sequence[str]], name: str, number: int
) -> list[tuple[str, tuple[str, ...]]]:
    """The (field, words) of each mention of one document, in text order."""
    return [
        (kind, tuple(sentence_words[first : last + 1]))
        for index, (sentence_words, sentence_labels) in enumerate(zip(words, labels))
        for first, last, kind in _chunks(sentence_labels, name, number, index)
    ]


def _chunks(labels: Sequence[str], name: str, number: int, index: int) -> list[tuple[int, int, str]]:
    """The (first token, last token, field) mentions of sentence ``index`` of document ``number``."""
    try:
        return read_chunks(labels)
    except LabelError as error:
        raise LabelError(f"{name} document {number} sentence {index}: {error}") from None


def _pick(values: list[tuple[str, ...]], pick: str) -> tuple[str, ...]:
    """The document's value among the predicted mention values (in text order)."""
    if pick == "first":
        return values[0]
    counts = Counter(values)
    return max(counts, key=lambda value: (counts[value], -values.index(value)))


def document_scores(
    words, gold, predicted, fields: Sequence[str] = FIELDS, pick: str = "most_frequent"
) -> dict[str, FieldScore]:
    """Sutton & McCallum's one-value-per-document scores of each field.

    ``words``, ``gold`` and ``predicted`` are [documents][sentences][tokens]
    (see :func:`document_column`); labels are IOB2 (any chunk scheme
    :func:`fstcrf.corpus.schemes.read_chunks` reads).  In each document the
    predicted mentions of a field give one value: the most frequent word
    sequence, ties going to the earliest (``pick="most_frequent"``), or the
    first mention (``pick="first"``).  It is correct if its words equal those
    of any gold mention of that field in the document (so white space is
    normalised, case is not).  Precision is over the documents with a
    predicted value, recall over those with a gold mention.
    """
    if pick not in PICKS:
        raise FstcrfError(f"pick must be one of {', '.join(PICKS)}, got {pick!r}")
    _check_documents("words", words)
    _check_documents("gold", gold, words)
    _check_documents("predicted", predicted, words)
    counts = {name: Counter() for name in fields}
    for number, (document_words, document_gold, document_predicted) in enumerate(zip(words, gold, predicted)):
        true_values: dict[str, set] = {name: set() for name in fields}
        for kind, value in _mentions(document_words, document_gold, "gold", number):
            if kind in true_values:
                true_values[kind].add(value)
        predicted_values: dict[str, list] = {name: [] for name in fields}
        for kind, value in _mentions(document_words, document_predicted, "predicted", number):
            if kind in predicted_values:
                predicted_values[kind].append(value)
        for name in fields:
            counts[name]["gold"] += bool(true_values[name])
            if predicted_values[name]:
                counts[name]["predicted"] += 1
                counts[name]["correct"] += _pick(predicted_values[name], pick) in true_values[name]
    return {name: FieldScore(count["correct"], count["predicted"], count["gold"]) for name, count in counts.items()}


def token_scores(gold, predicted, fields: Sequence[str] = FIELDS) -> dict[str, FieldScore]:
    """Finkel et al.'s per-token scores of each field: a token is predicted (gold)
    as a field when its predicted (gold) label lies in a mention of it.
    ``gold`` and ``predicted`` are [documents][sentences][tokens]."""
    _check_documents("gold", gold)
    _check_documents("predicted", predicted, gold)
    counts = {name: Counter() for name in fields}
    for number, (document_gold, document_predicted) in enumerate(zip(gold, predicted)):
        for index, (gold_labels, predicted_labels) in enumerate(zip(document_gold, document_predicted)):
            gold_fields = _token_fields(gold_labels, "gold", number, index)
            predicted_fields = _token_fields(predicted_labels, "predicted", number, index)
            for gold_field, predicted_field in zip(gold_fields, predicted_fields):
                if gold_field in counts:
                    counts[gold_field]["gold"] += 1
                if predicted_field in counts:
                    counts[predicted_field]["predicted"] += 1
                    counts[predicted_field]["correct"] += gold_field == predicted_field
    return {name: FieldScore(count["correct"], count["predicted"], count["gold"]) for name, count in counts.items()}


def _token_fields(labels: Sequence[str], name: str, number: int, index: int) -> list[str | None]:
    """The field of each token of one sentence (None outside mentions)."""
    fields: list[str | None] = [None] * len(labels)
    for first, last, kind in _chunks(labels, name, number, index):
        fields[first : last + 1] = [kind] * (last - first + 1)
    return fields


def mean_f1(scores: dict[str, FieldScore]) -> float:
    """The mean of the fields' F1 (the papers' "overall")."""
    if not scores:
        raise FstcrfError("mean_f1 needs the scores of at least one field")
    return sum(score.f1 for score in scores.values()) / len(scores)
