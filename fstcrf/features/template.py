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
symbol collapse: "McDonald's" -> "XxXx'x"); ``prefixN`` and ``suffixN`` for N
in 1..9 (the first or last N characters).

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

_ITEM = re.compile(r"(?P<column>[A-Za-z_][A-Za-z0-9_]*)\[(?P<offset>[+-]?[0-9]+)\]")
_TRANSFORMED_ITEM = re.compile(r"(?P<transform>[A-Za-z_][A-Za-z0-9_]*)\((?P<item>[^()]*)\)")
_AFFIX = re.compile(r"(?P<kind>prefix|suffix)(?P<length>[1-9])")
_BOUNDARY_LIKE = re.compile(r"__(?:BOS-|EOS\+)[0-9]+__")
_TRANSFORM_NAMES = "lower, shape, prefix1..prefix9, suffix1..suffix9 and value"
#: The "transform" of a real-valued predicate: the column's value read as a number.
VALUE = "value"


@functools.lru_cache(maxsize=1 << 16)  # words recur from batch to batch
def _word_shape(value: str) -> str:
    symbols: list[str] = []
    for character in value:
        if character.isupper():
            symbol = "X"
        elif character.islower():
            symbol = "x"
        elif character.isdigit():
            symbol = "d"
        else:
            symbol = character
        if not symbols or symbols[-1] != symbol:
            symbols.append(symbol)
    return "".join(symbols)


def transform_function(name: str) -> Callable[[str], str] | None:
    """The function a transform name stands for, or None if the name is unknown."""
    if name == "lower":
        return str.lower
    if name == "shape":
        return _word_shape
    affix = _AFFIX.fullmatch(name)
    if affix is None:
        return None
    length = int(affix["length"])
    if affix["kind"] == "prefix":
        return lambda value: value[:length]
    return lambda value: value[-length:]


def escape_value(value: str) -> str:
    if "\\" in value or "|" in value:
        value = value.replace("\\", "\\\\").replace("|", "\\|")
    if value.startswith("_") and _BOUNDARY_LIKE.fullmatch(value):
        value = "\\" + value
    return value


@dataclass(frozen=True)
class Observation:
    """One item of a predicate template: a column's value at an offset, maybe transformed."""

    column: str
    offset: int
    transform: str | None = None

    def __str__(self) -> str:
        item = f"{self.column}[{self.offset:+d}]" if self.offset else f"{self.column}[0]"
        return f"{self.transform}({item})" if self.transform else item


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
        """Whether this is a ``value(column[offset])`` predicate."""
        return bool(self.observations) and self.observations[0].transform == VALUE

    @property
    def num_values(self) -> int:
        """How many values follow "=" in the names of its predicates."""
        return 0 if self.real_valued else len(self.observations)


@dataclass(frozen=True)
class Template:
    """An ordered list of predicate templates, parsed from ``source``."""

    predicates: tuple[PredicateTemplate, ...]
    source: str = field(default="<string>", compare=False)

    @property
    def text(self) -> str:
        """The canonical template text, one predicate template per line."""
        return "".join(predicate.name + "\n" for predicate in self.predicates)

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns the template reads, in order of first use."""
        names = (observation.column for predicate in self.predicates for observation in predicate.observations)
        return tuple(dict.fromkeys(names))

    def offsets_of(self, column: str) -> set[int]:
        """The offsets at which the template reads ``column`` (empty if it never does)."""
        return {
            observation.offset
            for predicate in self.predicates
            for observation in predicate.observations
            if observation.column == column
        }

    def __len__(self) -> int:
        return len(self.predicates)

    def __iter__(self) -> Iterator[PredicateTemplate]:
        return iter(self.predicates)


def _parse_observation(text: str, where: str) -> Observation:
    transformed = _TRANSFORMED_ITEM.fullmatch(text)
    item = _ITEM.fullmatch(transformed["item"] if transformed else text)
    if item is None:
        raise TemplateError(
            f"{where}: cannot parse {text!r}; expected column[offset] such "
            f"as word[-1], or transform(column[offset]) such as lower(word[0])"
        )
    transform = transformed["transform"] if transformed else None
    if transform not in (None, VALUE) and transform_function(transform) is None:
        raise TemplateError(f"{where}: unknown transform {transform!r}; the transforms are {_TRANSFORM_NAMES}")
    digits = item["offset"].lstrip("+-").lstrip("0")
    if len(digits) > len(str(MAX_OFFSET)) or abs(int(item["offset"])) > MAX_OFFSET:
        raise TemplateError(f"{where}: the offset of {text!r} is beyond the limit of {MAX_OFFSET:,} tokens either side")
    return Observation(item["column"], int(item["offset"]), transform)


def parse_template(text: str, source: str = "<string>") -> Template:
    """Parse template text; syntax errors raise TemplateError naming ``source:line``."""
    predicates: list[PredicateTemplate] = []
    first_lines: dict[PredicateTemplate, int] = {}
    for line_number, line in enumerate(text.splitlines(), start=1):
        content = "".join(line.partition("#")[0].split())
        if not content:
            continue
        where = f"{source}:{line_number}"
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
            if len(observations) > 1 and any(observation.transform == VALUE for observation in observations):
                raise TemplateError(
                    f"{where}: {content!r} joins value(...) with other items; "
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
    return Template(tuple(predicates), source)


def load_template(path: str | os.PathLike) -> Template:
    """Parse a UTF-8 template file."""
    return parse_template(read_utf8(path, TemplateError), os.fspath(path))


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
    "ner-pos": NER_POS,
    "words": WORDS,
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
