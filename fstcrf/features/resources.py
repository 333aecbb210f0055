"""The user files some template items read: gazetteer lists, Brown clusters and
word embeddings (the items ``gazetteer``, ``cluster`` and ``embedding`` of
:mod:`fstcrf.features.template`), parsed and checked.

A :class:`Resource` keeps the file's text, so that a model stores a copy of each
file it was trained with and tags with that copy, never with whatever the path
holds later.  Formats:

* gazetteer: one entry per line, its tokens separated by spaces, optionally
  preceded by a category and a tab (``LOC<TAB>New York``); blank lines are skipped.
* cluster: the ``paths`` file of Brown clustering (Liang's wcluster): per line a
  bit string, a tab, the word, a tab and its count.
* embedding: word2vec's text format: an optional header line "COUNT DIMENSION",
  then per line a word and its DIMENSION numbers, separated by spaces.

A file that is missing, unreadable, not UTF-8 or holds no entries, and a line
that does not parse (named FILE:LINE, quoting at most its first 100 characters),
raise :class:`~fstcrf.errors.ResourceFileError`.  A file larger than the budget's
``max_resource_bytes`` (:mod:`fstcrf.engine.budget`, 256 MiB unless raised:
``--max-resource-bytes`` on the command line) raises
:class:`~fstcrf.errors.BudgetError` before it is read.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from fstcrf.engine import budget
from fstcrf.errors import ModelFileError, ResourceFileError
from fstcrf.features.seen_entities import SeenEntities
from fstcrf.features.template import RESOURCE_KINDS, SEEN_LOWER, Observation, Template
from fstcrf.files import read_utf8

_BITS = re.compile(r"[01]+")


@dataclass(frozen=True)
class Gazetteer:
    """Entries by their first token: first token -> [(tokens, category or "")]."""

    entries: dict[str, list[tuple[tuple[str, ...], str]]]
    longest: int


@dataclass(frozen=True)
class Clusters:
    """Brown clusters: word -> bit string of its cluster."""

    paths: dict[str, str]


@dataclass(frozen=True)
class Embeddings:
    """Word vectors: word -> row of ``vectors`` float [V, D]."""

    rows: dict[str, int]
    vectors: np.ndarray = field(repr=False)


@dataclass(frozen=True)
class Resource:
    """A user file of ``kind`` ("gazetteer", "cluster" or "embedding") as the
    template names it (``path``), its text and its parsed content."""

    kind: str
    path: str
    text: str = field(repr=False)
    content: Gazetteer | Clusters | Embeddings = field(repr=False)


#: Error messages quote at most this many characters of a line or word of a file.
SHOWN_CHARACTERS = 100


def _shown(text: str) -> str:
    """``text`` quoted for an error message: its first SHOWN_CHARACTERS characters,
    and its length when it is longer."""
    if len(text) <= SHOWN_CHARACTERS:
        return repr(text)
    return f"{text[:SHOWN_CHARACTERS]!r}... ({len(text):,} characters)"


def _lines(text: str):
    """(line number, line) of the non-blank lines of a text."""
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if line.strip():
            yield number, line


def _gazetteer(text: str, where: str) -> Gazetteer:
    entries: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    longest = 0
    for number, line in _lines(text):
        category, tab, words = line.rpartition("\t") if "\t" in line else ("", "", line)
        tokens = tuple(words.split())
        if (tab and (not category.strip() or "\t" in category)) or not tokens:
            raise ResourceFileError(
                f"{where}:{number}: expected an entry's tokens, optionally after a category and a tab; "
                f"got {_shown(line)}"
            )
        entries.setdefault(tokens[0], []).append((tokens, category.strip()))
        longest = max(longest, len(tokens))
    if not entries:
        raise ResourceFileError(f"{where}: the gazetteer holds no entries")
    return Gazetteer(entries, longest)


def _clusters(text: str, where: str) -> Clusters:
    paths: dict[str, str] = {}
    first_line: dict[str, int] = {}
    for number, line in _lines(text):
        fields = line.split("\t")
        if len(fields) != 3 or not _BITS.fullmatch(fields[0]) or not fields[1] or not fields[2].strip().isdigit():
            raise ResourceFileError(
                f"{where}:{number}: expected a Brown cluster line 'BITS<TAB>WORD<TAB>COUNT' "
                f"(BITS of 0 and 1); got {_shown(line)}"
            )
        if fields[1] in paths:
            raise ResourceFileError(
                f"{where}:{number}: the word {_shown(fields[1])} repeats line {first_line[fields[1]]}"
            )
        paths[fields[1]] = fields[0]
        first_line[fields[1]] = number
    if not paths:
        raise ResourceFileError(f"{where}: the cluster file holds no words")
    return Clusters(paths)


def _embeddings(text: str, where: str) -> Embeddings:
    lines = list(_lines(text))
    declared = None
    if lines and len(parts := lines[0][1].split()) == 2 and all(part.isdigit() for part in parts):
        declared = int(parts[0]), int(parts[1])
        lines = lines[1:]
    rows: dict[str, int] = {}
    vectors: list[list[float]] = []
    dimension = declared[1] if declared else None
    for number, line in lines:
        word, *numbers = line.split()
        if dimension is None:
            dimension = len(numbers)
        if len(numbers) != dimension or not numbers:
            raise ResourceFileError(
                f"{where}:{number}: {_shown(word)} has {len(numbers)} numbers; expected {dimension or 'at least 1'} "
                f"({'as the header says' if declared else 'as the first vector has'})"
            )
        try:
            vector = [float(value) for value in numbers]
        except ValueError:
            raise ResourceFileError(
                f"{where}:{number}: the vector of {_shown(word)} holds a value that is not a number"
            ) from None
        if not all(map(math.isfinite, vector)):
            raise ResourceFileError(f"{where}:{number}: the vector of {_shown(word)} holds a NaN or infinite value")
        if word in rows:
            raise ResourceFileError(f"{where}:{number}: the word {_shown(word)} repeats")
        rows[word] = len(vectors)
        vectors.append(vector)
    if not vectors:
        raise ResourceFileError(f"{where}: the embedding file holds no vectors")
    if declared is not None and declared[0] != len(vectors):
        raise ResourceFileError(f"{where}:1: the header declares {declared[0]} vectors; the file holds {len(vectors)}")
    return Embeddings(rows, np.array(vectors, dtype=np.float64))


_PARSERS: dict[str, Callable[[str, str], Gazetteer | Clusters | Embeddings]] = {
    "gazetteer": _gazetteer,
    "cluster": _clusters,
    "embedding": _embeddings,
}


def parse_resource(kind: str, path: str, text: str, where: str) -> Resource:
    """The resource of ``kind`` named ``path`` whose file holds ``text``; errors name ``where``."""
    return Resource(kind, path, text, _PARSERS[kind](text, where))


class Resources:
    """The files a template's items read, by (kind, path), per column the values
    seen lower-cased (equal to their lower-case form) in the training data, which
    ``seen_lower`` reads, and the training labels' entities, whose marks the
    derived column ``seen_entity`` holds (:mod:`fstcrf.features.seen_entities`), or None."""

    #: none for Resources pickled before they kept entities
    entities: SeenEntities | None = None

    def __init__(
        self,
        files: dict[tuple[str, str], Resource],
        seen: dict[str, frozenset[str]],
        entities: SeenEntities | None = None,
    ):
        self.files, self.seen, self.entities = files, seen, entities

    @classmethod
    def load(cls, template: Template, column_values: Mapping[str, Sequence[str]]) -> Resources:
        """The files of ``template``'s items read from disk, and the lower-cased values of
        each column ``seen_lower`` reads (:func:`seen_lower_columns`), its distinct
        values given by column_values[column]."""
        files: dict[tuple[str, str], Resource] = {}
        seen: dict[str, frozenset[str]] = {}
        for predicate in template:
            for observation in predicate.observations:
                if observation.kind in RESOURCE_KINDS and (observation.kind, observation.path) not in files:
                    where = f"{template.source}:{predicate.line}"
                    files[observation.kind, observation.path] = load_resource(observation.kind, observation.path, where)
                if observation.kind == SEEN_LOWER and observation.column not in seen:
                    values = column_values[observation.column]
                    seen[observation.column] = frozenset(value for value in values if value == value.lower())
        return cls(files, seen)

    def resource(self, observation: Observation) -> Resource:
        """The file an item reads; ResourceFileError if it is not among these."""
        key = (cast(str, observation.kind), observation.path)
        if key not in self.files:
            raise ResourceFileError(
                f"{observation}: the model keeps no copy of the {observation.kind} file {observation.path!r}"
            )
        return self.files[key]

    def seen_lower(self, column: str) -> frozenset[str]:
        """The values of ``column`` seen lower-cased in training (empty if none were kept)."""
        return self.seen.get(column, frozenset())

    def to_payload(self) -> tuple[dict, dict[str, np.ndarray]]:
        """JSON-able data (each file's kind and path, the seen columns) and arrays: each
        file's UTF-8 text ("resource.K") and each column's seen values joined by NUL
        ("seen.K"), as uint8."""
        arrays = {
            f"resource.{k}": np.frombuffer(resource.text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
            for k, resource in enumerate(self.files.values())
        }
        arrays.update(
            {
                f"seen.{k}": np.frombuffer("\0".join(sorted(values)).encode("utf-8", "surrogatepass"), dtype=np.uint8)
                for k, values in enumerate(self.seen.values())
            }
        )
        data: dict = {"files": [[kind, path] for kind, path in self.files], "seen": list(self.seen)}
        if self.entities is not None:
            data["entities"] = self.entities.to_payload()
        return data, arrays

    @classmethod
    def from_payload(cls, data, arrays: dict[str, np.ndarray]) -> Resources:
        """The resources :meth:`to_payload` stored; ModelFileError if they are inconsistent."""
        if data is None:
            return cls({}, {})
        try:
            files = {}
            for k, (kind, path) in enumerate(data["files"]):
                text = arrays[f"resource.{k}"].tobytes().decode("utf-8", "surrogatepass")
                files[kind, path] = parse_resource(kind, path, text, f"<model file>:{path}")
            seen = {}
            for k, column in enumerate(data["seen"]):
                text = arrays[f"seen.{k}"].tobytes().decode("utf-8", "surrogatepass")
                seen[column] = frozenset(text.split("\0")) if text else frozenset()
        except (KeyError, TypeError, ValueError, UnicodeDecodeError) as error:
            raise ModelFileError(f"the model's copies of the template's files are corrupt: {error}") from None
        entities = None if data.get("entities") is None else SeenEntities.from_payload(data["entities"])
        return cls(files, seen, entities)


def seen_lower_columns(template: Template) -> list[str]:
    """The columns whose training words a ``seen_lower`` item of ``template`` reads."""
    columns = (
        observation.column
        for predicate in template
        for observation in predicate.observations
        if observation.kind == SEEN_LOWER
    )
    return list(dict.fromkeys(columns))


def load_resource(kind: str, path: str, where: str) -> Resource:
    """Read and parse the file ``path`` of a template item of ``kind`` (the item at
    ``where``, which a missing file's error names).  A file larger than the budget's
    max_resource_bytes (256 MiB unless raised) is refused before it is read
    (BudgetError), as the model would keep a copy of it."""
    if not os.path.isfile(path):
        raise ResourceFileError(f"{where}: the {kind} file {path!r} does not exist or is not a file")
    limit = budget.current("max_resource_bytes")
    budget.check_resource_bytes(os.path.getsize(path), f"{where}: the {kind} file {path!r}")
    return parse_resource(kind, path, read_utf8(path, ResourceFileError, max_bytes=limit), path)
