"""The token table of a batch, the second step of feature extraction (columns ->
token table -> values -> hashes -> rows): the columns a template reads at every
token of a list of sentences, each coded per distinct value, and where each token's
neighbours are.  It reads the sentences and the derived columns and nothing of
the steps after it: the value lists (:mod:`fstcrf.features.value_lists`), hashes
(:mod:`fstcrf.features.item_lists`) and predicate rows
(:mod:`fstcrf.features.dictionary`) read it."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import cached_property
from itertools import accumulate, repeat
from typing import cast

import numpy as np

from fstcrf.corpus.conll import Sentence
from fstcrf.errors import ArgumentTypeError, FeatureValueError, TemplateError
from fstcrf.features.template import Observation, escaped, transform_function


def missing_column_message(column: str, available: Sequence[str]) -> str:
    return (
        f"the template reads column {column!r}, which the corpus lacks; "
        f"its columns are {', '.join(available) or 'none'}"
    )


class TokenTable:
    """The values of template observations at every token of a list of sentences.

    ``lengths`` int64 [B] and ``offsets`` int64 [B+1] cut the N tokens into the
    sentences; ``position`` and ``sentence_length`` int [N] are each token's place
    in its sentence and the sentence's length (made on first use)."""

    def __init__(self, sentences: Sequence[Sentence], derived: dict[str, list[str]] | None = None):
        """``derived``: columns no sentence holds, by name, each its values at every
        token of the table [N] (a column of the sentences of that name is not read)."""
        self.sentences = sentences
        self.derived = derived or {}
        lengths = [len(sentence) for sentence in sentences]
        self.num_tokens = sum(lengths)
        self.lengths = np.array(lengths, dtype=np.int64)
        self.offsets = np.fromiter(accumulate(lengths, initial=0), dtype=np.int64, count=len(lengths) + 1)
        self._values: dict[str, list] = {}
        self._coded_columns: dict[tuple[str, str | None], tuple[np.ndarray, list[str]]] = {}
        self._value_names: dict[tuple[str, str | None], list[str]] = {}
        self._strings_checked: set[tuple[str, str | None]] = set()  # (column, transform) of string values
        self._shifts: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]] = {}
        self._observations: dict[tuple[str, str | None, int], tuple[np.ndarray, list[str]]] = {}

    @cached_property
    def position(self) -> np.ndarray:
        """int64 [N]: each token's position in its sentence, from 0."""
        return np.arange(self.num_tokens) - np.repeat(self.offsets[:-1], self.lengths)

    @cached_property
    def sentence_length(self) -> np.ndarray:
        """int64 [N]: the length of each token's sentence."""
        return np.repeat(self.lengths, self.lengths)

    def column_values(self, column: str) -> list:
        """The values [N] of ``column`` at every token, as the sentences (or the
        derived columns) hold them."""
        values = self._values.get(column)
        if values is None:
            if column in self.derived:
                values = self.derived[column]
            else:
                values = []
                for sentence in self.sentences:
                    if column not in sentence.columns:
                        raise TemplateError(missing_column_message(column, sentence.column_names))
                    values.extend(sentence.columns[column])
            self._values[column] = values
        return values

    def string_values(self, column: str) -> list[str]:
        """:meth:`column_values`, checked once to be strings (ArgumentTypeError naming
        the first token whose value is not one)."""
        values = self.column_values(column)
        if (column, None) not in self._strings_checked:
            self.check_strings(column, values)
            self._strings_checked.add((column, None))
        return values

    def coded_column(self, column: str, transform: str | None) -> tuple[np.ndarray, list[str]]:
        """Value codes [num_tokens] of a (transformed) column and the value of each code."""
        key = (column, transform)
        if key not in self._coded_columns:
            if transform is None:
                column_values = self.column_values(column)
                try:
                    codes, values = first_use_codes(column_values)
                except TypeError:  # an unhashable value
                    self.check_strings(column, column_values)
                    raise
            else:
                raw_codes, raw_values = self._string_column(column, None)
                function = cast(Callable[[str], str], transform_function(transform))
                recode, values = first_use_codes(list(map(function, raw_values)))
                codes = recode[raw_codes]
            self._coded_columns[key] = codes, values
        return self._coded_columns[key]

    def _coded_names(self, column: str, transform: str | None) -> tuple[np.ndarray, list[str]]:
        """Value codes [num_tokens] of a (transformed) column and the escaped value of each code."""
        codes, values = self._string_column(column, transform)
        key = (column, transform)
        if key not in self._value_names:
            self._value_names[key] = escaped(values)
        return codes, self._value_names[key]

    def _string_column(self, column: str, transform: str | None) -> tuple[np.ndarray, list[str]]:
        """:meth:`coded_column`, its values checked once to be strings (ArgumentTypeError)."""
        codes, values = self.coded_column(column, transform)
        if (column, transform) not in self._strings_checked:
            self.check_strings(column, values, codes)
            self._strings_checked.add((column, transform))
        return codes, values

    def check_strings(self, column: str, values: Sequence, codes: np.ndarray | None = None) -> None:
        """ArgumentTypeError naming the first token whose value in ``column`` is not a
        string; ``values`` are the column's values [N], or its distinct values when
        ``codes`` [N] gives each token's."""
        if all(map(isinstance, values, repeat(str))):
            return
        bad = next(k for k, value in enumerate(values) if not isinstance(value, str))
        token = bad if codes is None else int(np.argmax(codes == bad))
        sentence, position = self.place(token)
        raise ArgumentTypeError(
            f"sentence {sentence + 1}, token {position + 1}: column {column!r} holds "
            f"{type(values[bad]).__name__} {values[bad]!r}; token values must be strings"
        )

    def place(self, token: int) -> tuple[int, int]:
        """The sentence of a token of the table and its position there (both from 0)."""
        sentence = int(np.searchsorted(self.offsets[1:], token, side="right"))
        return sentence, token - int(self.offsets[sentence])

    def value_names(self, column: str, transform: str | None) -> list[str]:
        """The escaped value of each code of a (transformed) column; an observation at
        an offset other than 0 adds the boundary values after these."""
        return self._coded_names(column, transform)[1]

    def observation_codes(self, observation: Observation) -> tuple[np.ndarray, list[str]]:
        """Codes [num_tokens] of an observation at each token, and the name of each code."""
        key = (observation.column, observation.transform, observation.offset)
        if key not in self._observations:
            codes, boundary = self.offset_codes(observation)
            self._observations[key] = codes, self.value_names(observation.column, observation.transform) + boundary
        return self._observations[key]

    def offset_codes(self, observation: Observation) -> tuple[np.ndarray, list[str]]:
        """Codes [num_tokens] of an observation at each token: those of its (transformed)
        column's values (:meth:`coded_column`), then one code per boundary step a token
        reaches past its sentence, and the names of those boundary codes."""
        codes, values = self._string_column(observation.column, observation.transform)
        if observation.offset == 0:
            return codes, []
        source, inside, boundary, boundary_names = self._shift(observation.offset)
        return np.where(inside, codes[source], len(values) + boundary), boundary_names

    def _shift(self, offset: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
        """(the token ``offset`` away from each token int [N], 0 where it is past the
        sentence; whether it is in the sentence bool [N]; the boundary code of each
        token past it, counted from 0; the boundary names): :meth:`neighbours`, kept
        per offset."""
        if offset not in self._shifts:
            rows, names = self.neighbours(offset)
            inside = rows < self.num_tokens
            self._shifts[offset] = np.where(inside, rows, 0), inside, rows - self.num_tokens, names
        return self._shifts[offset]

    def neighbours(self, offset: int) -> tuple[np.ndarray, list[str]]:
        """(rows int64 [N], names [E]): token t's neighbour at ``offset`` is token
        rows[t] when rows[t] < N, else past its sentence the boundary value
        names[rows[t] - N] (``__BOS-1__``, ... ``__EOS+1__``, ...); offset 0 gives
        every token itself."""
        target = self.position + offset
        inside = (target >= 0) & (target < self.sentence_length)
        rows = np.clip(np.arange(self.num_tokens) + offset, 0, max(self.num_tokens - 1, 0))
        step = np.where(offset < 0, -target, target - self.sentence_length + 1)
        reached = step[~inside]
        if not len(reached):
            return rows, []
        first, last = int(reached.min()), int(reached.max())
        kind = "__BOS-{}__" if offset < 0 else "__EOS+{}__"
        return np.where(inside, rows, self.num_tokens + step - first), [kind.format(k) for k in range(first, last + 1)]

    def numbers(self, observation: Observation) -> np.ndarray:
        """float [num_tokens]: a column's value at an offset from each token read as a
        number, 0 outside the sentence; FeatureValueError names a token whose value
        is not a finite number."""
        codes, values = self.coded_column(observation.column, None)
        numbers = np.empty(len(values) + 1)  # the last one: outside the sentence
        numbers[-1] = 0.0
        for code, value in enumerate(values):
            try:
                numbers[code] = float(value)
            except (TypeError, ValueError, OverflowError):
                numbers[code] = math.nan
            if not math.isfinite(numbers[code]):
                sentence, position = self.place(int(np.argmax(codes == code)))
                lines = self.sentences[sentence].line_numbers
                line = f"input line {lines[position]}, " if lines else ""
                raise FeatureValueError(
                    f"{line}sentence {sentence + 1}, token {position + 1}: "
                    f"{observation} reads {value!r} from column {observation.column!r}, "
                    "which is not a finite number"
                )
        target = self.position + observation.offset
        inside = (target >= 0) & (target < self.sentence_length)
        shifted = codes[np.clip(np.arange(self.num_tokens) + observation.offset, 0, max(self.num_tokens - 1, 0))]
        return numbers[np.where(inside, shifted, len(values))]


def first_use_codes(values: Sequence) -> tuple[np.ndarray, list]:
    """(codes int64 [n] of ``values`` [n], numbered by first occurrence; the distinct
    values in that order): three passes in C (the distinct values, their numbers, each
    value's number), whatever the number of values."""
    distinct = list(dict.fromkeys(values))
    number = dict(zip(distinct, range(len(distinct))))
    return np.fromiter(map(number.__getitem__, values), dtype=np.int64, count=len(values)), distinct
