"""The feature template language: predicate templates over a token's columns.

A template lists one predicate template per line; ``#`` starts a comment::

    bias                    # true at every token
    word[0]                 # the current word
    word[-1]|word[0]        # the previous and the current word
    lower(word[+1])         # the next word, lower-cased
    pos[-2]|pos[-1]|pos[0]

An item is ``column[offset]`` or ``transform(column[offset])``; items are
joined with ``|``.  Transforms: ``lower``; ``shape`` (upper-case letters
become X, lower-case x, digits d, other characters stay, and runs of one
symbol collapse: "McDonald's" -> "XxXx'x"); ``longshape`` (the same without
collapsing: "Mc1" -> "Xxd"); ``shape2`` (the classes of the first two and the
last two characters, and between them the distinct classes of the middle,
sorted: "Washington" -> "Xxxxx", after Stanford's chris2); ``prefixN`` and
``suffixN`` for N in 1..9 (the first or last N characters).

An item may also be a value list, which gives a token any number of values
(docs/templates.md has examples); ITEM is ``column[offset]`` or
``transform(column[offset])``, COLUMN is ``column`` or ``transform(column)``:

    prefixes(ITEM,a,b)      the prefixes of lengths a..b (those the value has)
    suffixes(ITEM,a,b)      the suffixes of lengths a..b
    ngrams(ITEM,a,b)        the character n-grams of lengths a..b of "<" value ">"
    bag(COLUMN,a,b)         the distinct values at offsets a..b, without positions
    types(COLUMN,a,b)       one value: the shapes (or COLUMN's transform) at
                            offsets a..b joined by spaces, "<" / ">" outside
    seen_lower(ITEM)        "seen" if the value lower-cased was a training value
                            that equals its own lower-case form, else "unseen"
    gazetteer(ITEM,FILE)    "B" / "I" (and "B-C" / "I-C" for category C) for each
                            entry of FILE covering the token
    cluster(ITEM,FILE,k,..) the prefixes of lengths k, ... of the Brown path
    embedding(ITEM,FILE)    one real-valued predicate per dimension (alone on a line)

The files' formats are in :mod:`fstcrf.features.resources`; a fitted extractor
(and so a model) keeps copies of them.  A line that joins value lists has the
cross product of their values (with single items' values) at each token; the
most it may give one token is the template's budget, DEFAULT_BUDGET unless a
line ``budget N`` says otherwise: bounds that are negative (lengths), reversed
or wider than the budget are refused when the template is parsed, and a line
that gives a training token more than the budget when the extractor is fitted
(BudgetError).

A predicate is a template with its values, named like
``word[-1]|word[0]=the|cat``.  Positions outside the sentence take the values
``__BOS-1__``, ``__BOS-2__``, ... before it and ``__EOS+1__``, ... after it,
so ``word[-1]`` is a real predicate at the first token.  In names, ``\\``
and ``|`` within values are escaped with a backslash, and a value that looks
like a boundary value gets a leading backslash, so distinct values never
share a name.

A line ``value(column[offset])`` (alone on its line) is one real-valued
predicate, named like the line (``value(score[0])``), whose matrix entry at
a token is the column's value there read as a number (Python's ``float``);
a value of 0 or a position outside the sentence gives no entry, and a value
that is not a finite number raises FeatureValueError naming the sentence
and the token.  Every other predicate is binary.

A template is refused (TemplateError) beyond MAX_PREDICATE_TEMPLATES lines,
MAX_ITEMS items on a line, or an offset beyond MAX_OFFSET either side; an
offset's size costs nothing beyond reading the boundary values.
"""

from __future__ import annotations

import functools
import itertools
import operator
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib import resources

from fstcrf.errors import FstcrfError, TemplateError
from fstcrf.files import read_utf8

#: Limits on a template, checked when it is parsed (from a file, a string or a model
#: header): the offset of an item (any offset past the longest sentence reads only
#: boundary values, and costs no more than one that reaches just past it), the
#: items a predicate template joins, and the predicate templates of a template.
MAX_OFFSET = 1_000_000
MAX_ITEMS = 32
MAX_PREDICATE_TEMPLATES = 10_000
#: The most values a line may give one token (the product of its value lists'
#: sizes), unless a line ``budget N`` (N at most MAX_BUDGET) says otherwise.
DEFAULT_BUDGET = 1024
MAX_BUDGET = 1_000_000

_ITEM = re.compile(r"(?P<column>[A-Za-z_][A-Za-z0-9_]*)\[(?P<offset>[+-]?[0-9]+)\]")
_TRANSFORMED_ITEM = re.compile(r"(?P<transform>[A-Za-z_][A-Za-z0-9_]*)\((?P<item>[^()]*)\)")
_AFFIX = re.compile(r"(?P<kind>prefix|suffix)(?P<length>[1-9])")
_KIND_ITEM = re.compile(r"(?P<kind>[A-Za-z_][A-Za-z0-9_]*)\((?P<arguments>.*)\)")
_COLUMN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_BOUNDARY_LIKE = re.compile(r"__(?:BOS-|EOS\+)[0-9]+__")
_TRANSFORM_NAMES = "lower, shape, longshape, shape2, prefix1..prefix9, suffix1..suffix9 and value"
#: The "transform" of a real-valued predicate: the column's value read as a number.
VALUE = "value"
#: The value lists (see the module docstring): with two bounds, over a window of
#: offsets, read from a user's file, and all of them.
BOUNDED_KINDS = ("prefixes", "suffixes", "ngrams", "bag", "types")
WINDOW_KINDS = ("bag", "types")
EMBEDDING = "embedding"
RESOURCE_KINDS = ("gazetteer", "cluster", EMBEDDING)
SEEN_LOWER = "seen_lower"
KINDS = (*BOUNDED_KINDS, *RESOURCE_KINDS, SEEN_LOWER)
_KIND_USAGE = {
    "prefixes": "item,shortest,longest",
    "suffixes": "item,shortest,longest",
    "ngrams": "item,shortest,longest",
    "bag": "column,first,last",
    "types": "column,first,last",
    "gazetteer": "item,FILE",
    "cluster": "item,FILE,length,...",
    EMBEDDING: "item,FILE",
    SEEN_LOWER: "item",
}


def _character_class(character: str) -> str:
    if character.isupper():
        return "X"
    if character.islower():
        return "x"
    if character.isdigit():
        return "d"
    return character


class _ClassTable(dict):
    """str.translate's table of character classes: code point -> its class, each
    computed on first use."""

    def __missing__(self, point: int) -> str:
        symbol = self[point] = _character_class(chr(point))
        return symbol


_CLASSES = _ClassTable()


@functools.lru_cache(maxsize=1 << 16)  # words recur from batch to batch
def _word_shape(value: str) -> str:
    """The classes of ``value``'s characters, each run of one class written once (a
    third of a regular expression's time on a word)."""
    return "".join([symbol for symbol, _ in itertools.groupby(value.translate(_CLASSES))])


@functools.lru_cache(maxsize=1 << 16)
def _long_shape(value: str) -> str:
    return value.translate(_CLASSES)


@functools.lru_cache(maxsize=1 << 16)
def _shape2(value: str) -> str:
    if len(value) <= 4:
        return _long_shape(value)
    middle = "".join(sorted(set(value[2:-2].translate(_CLASSES))))
    return value[:2].translate(_CLASSES) + middle + value[-2:].translate(_CLASSES)


#: The word-shape schemes, by transform name (see the module docstring).
_SHAPES: dict[str, Callable[[str], str]] = {"shape": _word_shape, "longshape": _long_shape, "shape2": _shape2}


@functools.lru_cache(maxsize=256)  # a few names, asked for at every batch's new values
def transform_function(name: str) -> Callable[[str], str] | None:
    """The function a transform name stands for, or None if the name is unknown."""
    if name == "lower":
        return str.lower
    if name in _SHAPES:
        return _SHAPES[name]
    affix = affix_transform(name)
    if affix is None:
        return None
    kind, length = affix  # an itemgetter slices in C: no Python call per value
    return operator.itemgetter(slice(None, length) if kind == "prefix" else slice(-length, None))


def affix_transform(name: str) -> tuple[str, int] | None:
    """("prefix" or "suffix", the length) of a transform name such as ``suffix3``, or
    None for another name."""
    affix = _AFFIX.fullmatch(name)
    return None if affix is None else (affix["kind"], int(affix["length"]))


def escape_value(value: str) -> str:
    if "\\" in value or "|" in value:
        value = value.replace("\\", "\\\\").replace("|", "\\|")
    if value.startswith("_") and _BOUNDARY_LIKE.fullmatch(value):
        value = "\\" + value
    return value


def plainly_joined(values: Sequence[str]) -> str | None:
    """The values joined by newlines when :func:`escape_value` leaves each as it is
    and none holds a newline, else None: one search of the joined text tells (none
    holds a backslash or a bar or starts with an underscore).  TypeError for a value
    that is not a string."""
    text = "\n".join(values)
    if (
        "\\" in text
        or "|" in text
        or text.startswith("_")
        or "\n_" in text
        or text.count("\n") != len(values) - 1  # a value holds the separator
    ):
        return None
    return text


def escaped(values: Sequence[str]) -> list[str]:
    """[escape_value(value) for value in values], without a Python call per value when
    none needs escaping (:func:`plainly_joined`)."""
    if plainly_joined(values) is None:
        return [escape_value(value) for value in values]
    return list(values)


@dataclass(frozen=True)
class Observation:
    """One item of a predicate template: a column's value at an offset, maybe transformed,
    or (``kind`` set) one of the value lists of the module docstring: ``low`` and
    ``high`` are the lengths of prefixes, suffixes and n-grams or the window of bag
    and types, ``path`` the file of gazetteer, cluster and embedding, ``lengths``
    the prefix lengths of cluster."""

    column: str
    offset: int
    transform: str | None = None
    kind: str | None = None
    low: int = 0
    high: int = 0
    path: str = ""
    lengths: tuple[int, ...] = ()

    @property
    def inner(self) -> str:
        """The item a kind reads: ``transform(column[offset])``, or for a window
        kind ``transform(column)``."""
        if self.kind in WINDOW_KINDS:
            item = self.column
        else:
            item = f"{self.column}[{self.offset:+d}]" if self.offset else f"{self.column}[0]"
        return f"{self.transform}({item})" if self.transform else item

    @property
    def offsets(self) -> range:
        """The offsets the observation reads its column at."""
        return range(self.low, self.high + 1) if self.kind in WINDOW_KINDS else range(self.offset, self.offset + 1)

    @property
    def fan_out(self) -> int:
        """The most values it gives a token that the template alone fixes (n-grams
        and gazetteers have as many as the word or the entries give: 1 here)."""
        if self.kind in ("prefixes", "suffixes", "bag"):
            return self.high - self.low + 1
        if self.kind == "cluster":
            return len(self.lengths)
        return 1

    def __str__(self) -> str:
        if self.kind is None:
            return self.inner
        arguments = [self.inner]
        if self.kind in BOUNDED_KINDS:
            arguments += [str(self.low), str(self.high)]
        if self.path:
            arguments.append(self.path)
        arguments += map(str, self.lengths)
        return f"{self.kind}({','.join(arguments)})"


@dataclass(frozen=True)
class PredicateTemplate:
    """A conjunction of observations; with none it is the bias (always true)."""

    observations: tuple[Observation, ...]
    line: int = field(default=0, compare=False)

    @property
    def name(self) -> str:
        """The canonical text: "bias" or the observations joined by "|"."""
        return "|".join(map(str, self.observations)) if self.observations else "bias"

    @property
    def real_valued(self) -> bool:
        """Whether this is a ``value(column[offset])`` or ``embedding(...)`` predicate."""
        return bool(self.observations) and (
            self.observations[0].transform == VALUE or self.observations[0].kind == EMBEDDING
        )

    @property
    def multi_valued(self) -> bool:
        """Whether an item is a value list (a kind of the module docstring): the line
        may then give a token any number of predicates."""
        return any(observation.kind is not None for observation in self.observations)

    @property
    def num_values(self) -> int:
        """How many values follow "=" in the names of its predicates."""
        if self.real_valued:
            return 1 if self.observations[0].kind == EMBEDDING else 0
        return len(self.observations)


@dataclass(frozen=True)
class Template:
    """An ordered list of predicate templates, parsed from ``source``."""

    predicates: tuple[PredicateTemplate, ...]
    source: str = field(default="<string>", compare=False)
    budget: int = DEFAULT_BUDGET

    @property
    def text(self) -> str:
        """The canonical template text, one predicate template per line (after a
        ``budget`` line when the budget is not the default)."""
        budget = f"budget {self.budget}\n" if self.budget != DEFAULT_BUDGET else ""
        return budget + "".join(predicate.name + "\n" for predicate in self.predicates)

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns the template reads, in order of first use."""
        names = (observation.column for predicate in self.predicates for observation in predicate.observations)
        return tuple(dict.fromkeys(names))

    @property
    def multi_valued(self) -> bool:
        """Whether a line uses a value list (see the module docstring)."""
        return any(predicate.multi_valued for predicate in self.predicates)

    def offsets_of(self, column: str) -> set[int]:
        """The offsets at which the template reads ``column`` (empty if it never does)."""
        return {
            offset
            for predicate in self.predicates
            for observation in predicate.observations
            if observation.column == column
            for offset in observation.offsets
        }

    def __len__(self) -> int:
        return len(self.predicates)

    def __iter__(self) -> Iterator[PredicateTemplate]:
        return iter(self.predicates)


def _parse_offset(text: str, what: str, where: str) -> int:
    """The integer ``text`` (``what`` names it in errors), at most MAX_OFFSET either side."""
    if not _INTEGER.fullmatch(text):
        raise TemplateError(f"{where}: {what} is not an integer")
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > len(str(MAX_OFFSET)) or abs(int(text)) > MAX_OFFSET:
        raise TemplateError(f"{where}: {what} is beyond the limit of {MAX_OFFSET:,} tokens either side")
    return int(text)


def _parse_observation(text: str, where: str) -> Observation:
    kind = _KIND_ITEM.fullmatch(text)
    if kind is not None and kind["kind"] in KINDS:
        return _parse_kind(kind["kind"], kind["arguments"].split(","), where)
    transformed = _TRANSFORMED_ITEM.fullmatch(text)
    item = _ITEM.fullmatch(transformed["item"] if transformed else text)
    if item is None:
        raise TemplateError(
            f"{where}: cannot parse {text!r}; expected column[offset] such "
            f"as word[-1], transform(column[offset]) such as lower(word[0]), or a "
            f"value list such as ngrams(word[0],1,6) (the kinds are {', '.join(KINDS)})"
        )
    transform = transformed["transform"] if transformed else None
    if transform not in (None, VALUE) and transform_function(transform) is None:
        raise TemplateError(f"{where}: unknown transform {transform!r}; the transforms are {_TRANSFORM_NAMES}")
    return Observation(item["column"], _parse_offset(item["offset"], f"the offset of {text!r}", where), transform)


def _parse_kind(kind: str, arguments: list[str], where: str) -> Observation:
    """The observation ``kind(arguments)`` (see the module docstring)."""
    usage = _KIND_USAGE[kind]
    if len(arguments) < len(_KIND_USAGE[kind].split(",")) - (kind == "cluster") or (
        kind != "cluster" and len(arguments) != len(usage.split(","))
    ):
        raise TemplateError(f"{where}: {kind}({','.join(arguments)}) has the wrong arguments; expected {kind}({usage})")
    if kind in WINDOW_KINDS:
        transformed = _TRANSFORMED_ITEM.fullmatch(arguments[0])
        column = transformed["item"] if transformed else arguments[0]
        if not _COLUMN.fullmatch(column):
            raise TemplateError(
                f"{where}: {kind} reads a column without an offset, such as {kind}(lower(word),-2,2); "
                f"got {arguments[0]!r}"
            )
        inner = Observation(column, 0, transformed["transform"] if transformed else None)
    else:
        inner = _parse_observation(arguments[0], where)
    if inner.kind is not None or inner.transform == VALUE:
        raise TemplateError(f"{where}: {kind} reads a column or a transformed column, not {arguments[0]!r}")
    if inner.transform is not None and transform_function(inner.transform) is None:
        raise TemplateError(f"{where}: unknown transform {inner.transform!r}; the transforms are {_TRANSFORM_NAMES}")
    observation = Observation(inner.column, inner.offset, inner.transform, kind)
    if kind in BOUNDED_KINDS:
        low, high = (_parse_offset(argument, f"the bound {argument!r} of {kind}", where) for argument in arguments[1:3])
        if kind not in WINDOW_KINDS and low < 1:
            raise TemplateError(f"{where}: {kind} lengths start at 1; got {low} (expected {kind}({usage}))")
        if low > high:
            raise TemplateError(f"{where}: {kind} bounds {low},{high} are reversed; the first is the smaller")
        return Observation(inner.column, inner.offset, inner.transform, kind, low, high)
    if kind in RESOURCE_KINDS:
        lengths = []
        for argument in arguments[2:]:
            if not argument.isdigit() or not 1 <= int(argument) <= MAX_OFFSET:
                raise TemplateError(f"{where}: cluster prefix length {argument!r} is not a positive integer")
            lengths.append(int(argument))
        if len(set(lengths)) != len(lengths):
            raise TemplateError(f"{where}: cluster prefix lengths repeat: {','.join(arguments[2:])}")
        if not arguments[1]:
            raise TemplateError(f"{where}: {kind} names no file; expected {kind}({usage})")
        return Observation(inner.column, inner.offset, inner.transform, kind, path=arguments[1], lengths=tuple(lengths))
    return observation


def _check_budget(predicate: PredicateTemplate, budget: int, where: str) -> None:
    """TemplateError if a line's value lists may give a token more values than ``budget``."""
    fan_out = 1
    for observation in predicate.observations:
        width = observation.high - observation.low + 1
        if observation.kind in BOUNDED_KINDS and width > budget:
            raise TemplateError(
                f"{where}: {observation} spans {width} "
                f"{'offsets' if observation.kind in WINDOW_KINDS else 'lengths'}, beyond the template budget "
                f"of {budget} values per token and line; raise it with a line 'budget N' in the template"
            )
        fan_out *= observation.fan_out
    if fan_out > budget:
        raise TemplateError(
            f"{where}: {predicate.name!r} gives a token up to {fan_out:,} values, beyond the template budget "
            f"of {budget} per token and line; raise it with a line 'budget N' in the template "
            f"(N at most {MAX_BUDGET:,})"
        )


def _parse_budget(words: list[str], where: str) -> int:
    if len(words) != 2 or not words[1].isdigit() or not 1 <= int(words[1]) <= MAX_BUDGET:
        raise TemplateError(f"{where}: expected 'budget N' with N in 1..{MAX_BUDGET:,}; got {' '.join(words)!r}")
    return int(words[1])


def parse_template(text: str, source: str = "<string>") -> Template:
    """Parse template text; syntax errors raise TemplateError naming ``source:line``."""
    predicates: list[PredicateTemplate] = []
    first_lines: dict[PredicateTemplate, int] = {}
    budget = DEFAULT_BUDGET
    for line_number, line in enumerate(text.splitlines(), start=1):
        words = line.partition("#")[0].split()
        content = "".join(words)
        if not content:
            continue
        where = f"{source}:{line_number}"
        if words[0] == "budget":
            budget = _parse_budget(words, where)
            continue
        if content == "bias":
            predicate = PredicateTemplate((), line_number)
        else:
            items = content.split("|")
            if len(items) > MAX_ITEMS:
                raise TemplateError(
                    f"{where}: {len(items)} items joined by '|'; a predicate template joins at most {MAX_ITEMS}"
                )
            observations = tuple(_parse_observation(item, where) for item in items)
            if len(set(observations)) != len(observations):
                raise TemplateError(f"{where}: {content!r} repeats an item")
            if len(observations) > 1 and any(
                observation.transform == VALUE or observation.kind == EMBEDDING for observation in observations
            ):
                raise TemplateError(
                    f"{where}: {content!r} joins value(...) or embedding(...) with other items; "
                    "a real-valued predicate stands alone on its line"
                )
            predicate = PredicateTemplate(observations, line_number)
        if predicate in first_lines:
            raise TemplateError(f"{where}: {predicate.name!r} repeats line {first_lines[predicate]}")
        first_lines[predicate] = line_number
        predicates.append(predicate)
        if len(predicates) > MAX_PREDICATE_TEMPLATES:
            raise TemplateError(
                f"{where}: more than {MAX_PREDICATE_TEMPLATES:,} predicate templates; "
                "a template holds at most that many"
            )
    if not predicates:
        raise TemplateError(f"{source}: the template defines no predicates")
    for predicate in predicates:
        _check_budget(predicate, budget, f"{source}:{predicate.line}")
    return Template(tuple(predicates), source, budget)


def load_template(path: str | os.PathLike) -> Template:
    """Parse a UTF-8 template file; TemplateError naming the shipped templates where
    there is no such file and ``path`` is a bare name (a shipped one mistyped)."""
    name = os.fspath(path)
    if not os.path.exists(name) and os.sep not in name and "/" not in name:
        raise TemplateError(
            f"no template file {name!r} and no shipped template of that name (shipped: {', '.join(TEMPLATES)})"
        )
    return parse_template(read_utf8(path, TemplateError), name)


def shipped_template(file_name: str) -> Template:
    """A template file shipped in fstcrf/templates, parsed."""
    text = (resources.files("fstcrf") / "templates" / file_name).read_text("utf-8")
    return parse_template(text, f"fstcrf/templates/{file_name}")


#: Sha & Pereira (2003), Table 1: words at -2..+2 and two word pairs, POS at
#: -2..+2, four POS pairs and three POS triples, and the bias.
SHA_PEREIRA_CHUNKING = shipped_template("sha_pereira_chunking.txt")
#: The CRF++ example chunking template (U00-U06 words, U10-U22 POS) plus the bias.
CRFPP_CHUNKING = shipped_template("crfpp_chunking.txt")
#: Part-of-speech tagging from words: words at -2..+2, word pairs, affixes and shapes.
POS_TAGGING = shipped_template("pos_tagging.txt")
#: Chunking for a model that reads the POS label at the same token (``reads="pos"``).
CHUNKING_READS_POS = shipped_template("chunking_reads_pos.txt")
#: Table 1 with word bigrams and word-POS pairs chosen by cross-validation on CoNLL-2000 train.
CHUNKING_EXTENDED = shipped_template("chunking_extended.txt")
#: Named-entity tagging from words, POS and chunk tags (CoNLL-2003 columns), chosen on eng.testa.
NER = shipped_template("ner.txt")
#: The same without the chunk predicates (CoNLL-2002 Dutch columns: word, pos).
NER_POS = shipped_template("ner_pos.txt")
#: ``ner`` plus value lists: word and shape bags, character n-grams, shape2, seen_lower,
#: type sequences and the suffixes of neighbouring words.
NER_RICH = shipped_template("ner_rich.txt")
#: ``ner-rich`` without the chunk lines (CoNLL-2002 columns: word, pos).
NER_POS_RICH = shipped_template("ner_pos_rich.txt")
#: ``ner-rich`` without the chunk and POS lines (a word column only).
WORDS_RICH = shipped_template("words_rich.txt")

#: Word-only tagging (named entities without POS or chunk columns, or any task with a word column).
WORDS = shipped_template("seminar_ner.txt")
#: Template names ``ChainCRF`` accepts besides Template objects and template text.
TEMPLATES = {
    "sha-pereira": SHA_PEREIRA_CHUNKING,
    "crfpp": CRFPP_CHUNKING,
    "pos": POS_TAGGING,
    "chunking-reads-pos": CHUNKING_READS_POS,
    "chunking-extended": CHUNKING_EXTENDED,
    "ner": NER,
    "ner-rich": NER_RICH,
    "ner-pos": NER_POS,
    "ner-pos-rich": NER_POS_RICH,
    "words": WORDS,
    "words-rich": WORDS_RICH,
}


def resolve_template(template, reads: str | None = None):
    """A Template, or the attribute template of token dicts (the name "attributes",
    see :mod:`fstcrf.features.attributes`), which also reads the lower labels of column
    ``reads`` when the model reads one."""
    if isinstance(template, Template) or hasattr(template, "extractor"):
        return template
    if isinstance(template, str):
        if template == "attributes":
            from fstcrf.features.attributes import AttributeTemplate

            return AttributeTemplate(reads)
        return TEMPLATES[template] if template in TEMPLATES else parse_template(template)
    raise TemplateError(
        f"template must be a Template, template text, 'attributes' or one of "
        f"{', '.join(TEMPLATES)}; got {type(template).__name__}"
    )


def check_reading_template(template: Template, reads: str, target: str, column_names: Sequence[str]) -> None:
    """A model reading a lower tagger's labels in column ``reads`` may use them at offset 0 only."""
    if reads == target:
        raise FstcrfError(f"a model cannot read the labels of the column it predicts ({target!r})")
    if reads not in column_names:
        raise TemplateError(
            f"the model reads column {reads!r}, which the training data lacks; its "
            f"columns are {', '.join(column_names)}"
        )
    offsets = template.offsets_of(reads)
    if not offsets:
        raise TemplateError(f"the model reads column {reads!r} but its template never uses it")
    if offsets != {0}:
        raise TemplateError(
            f"the template uses the lower labels {reads!r} at offsets "
            f"{', '.join(f'{o:+d}' for o in sorted(offsets - {0}))}; a model that "
            f"reads a lower tagger's labels may use them at offset 0 only (e.g. "
            f"{reads}[0]|word[-1]), because joint decoding scores each token's "
            "lower label one token at a time"
        )
