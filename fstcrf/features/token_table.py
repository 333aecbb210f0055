"""The token table of a batch: each template observation's values at every token,
coded per distinct value, and the predicate occurrences of each predicate
template (the values :class:`~fstcrf.features.extractor.FeatureExtractor` learns and
looks up)."""

from __future__ import annotations

import math
from itertools import repeat
from collections.abc import Callable, Sequence
from typing import NamedTuple, cast

import numpy as np

from fstcrf.corpus.conll import Sentence
from fstcrf.errors import (
    ArgumentTypeError,
    BudgetError,
    FeatureValueError,
    TemplateError,
)
from fstcrf.features.template import (
    Observation,
    PredicateTemplate,
    transform_function,
)
from fstcrf.features.resources import Resources
from fstcrf.features.value_lists import ValueLists, boundary_rows, escaped, factorize, observation_lists, single


def missing_column_message(column: str, available: Sequence[str]) -> str:
    return (
        f"the template reads column {column!r}, which the corpus lacks; "
        f"its columns are {', '.join(available) or 'none'}"
    )


class TokenTable:
    """The values of template observations at every token of a list of sentences."""

    def __init__(self, sentences: Sequence[Sentence], derived: dict[str, list[str]] | None = None):
        """``derived``: columns no sentence holds, by name, each its values at every
        token of the table [N] (a column of the sentences of that name is not read)."""
        self.sentences = sentences
        self.derived = derived or {}
        lengths = np.array([len(sentence) for sentence in sentences], dtype=np.int64)
        self.num_tokens = int(lengths.sum())
        starts = np.cumsum(lengths) - lengths
        self.position = np.arange(self.num_tokens) - np.repeat(starts, lengths)
        self.sentence_length = np.repeat(lengths, lengths)
        self.lengths = lengths
        self._lists: dict[Observation, ValueLists] = {}
        self._coded_columns: dict[tuple[str, str | None], tuple[np.ndarray, list[str]]] = {}
        self._value_names: dict[tuple[str, str | None], list[str]] = {}
        self._strings_checked: set[tuple[str, str | None]] = set()  # (column, transform) of string values
        self._shifts: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]] = {}
        self._observations: dict[tuple[str, str | None, int], tuple[np.ndarray, list[str]]] = {}

    def _column_values(self, column: str) -> list[str]:
        if column in self.derived:
            return self.derived[column]
        values: list[str] = []
        for sentence in self.sentences:
            if column not in sentence.columns:
                raise TemplateError(missing_column_message(column, sentence.column_names))
            values.extend(sentence.columns[column])
        return values

    def coded_column(self, column: str, transform: str | None) -> tuple[np.ndarray, list[str]]:
        """Value codes [num_tokens] of a (transformed) column and the value of each code."""
        key = (column, transform)
        if key not in self._coded_columns:
            if transform is None:
                column_values = self._column_values(column)
                try:
                    codes, values = _first_use_codes(column_values)
                except TypeError:  # an unhashable value
                    self._check_strings(column, column_values)
                    raise
            else:
                raw_codes, raw_values = self._string_column(column, None)
                function = cast(Callable[[str], str], transform_function(transform))
                recode, values = _first_use_codes(list(map(function, raw_values)))
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
            self._check_strings(column, values, codes)
            self._strings_checked.add((column, transform))
        return codes, values

    def _check_strings(self, column: str, values: Sequence, codes: np.ndarray | None = None) -> None:
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
        ends = np.cumsum([len(sentence) for sentence in self.sentences])
        return int(np.searchsorted(ends, token, side="right")), int(self.position[token])

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
        token past it, counted from 0; the boundary names): :func:`boundary_rows`, kept
        per offset."""
        if offset not in self._shifts:
            rows, names = boundary_rows(self, offset)
            inside = rows < self.num_tokens
            self._shifts[offset] = np.where(inside, rows, 0), inside, rows - self.num_tokens, names
        return self._shifts[offset]

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
                raise FeatureValueError(
                    f"sentence {sentence + 1}, token {position + 1}: "
                    f"{observation} reads {value!r} from column {observation.column!r}, "
                    "which is not a finite number"
                )
        target = self.position + observation.offset
        inside = (target >= 0) & (target < self.sentence_length)
        shifted = codes[np.clip(np.arange(self.num_tokens) + observation.offset, 0, max(self.num_tokens - 1, 0))]
        return numbers[np.where(inside, shifted, len(values))]

    def value_lists(self, observation: Observation, resources: Resources) -> ValueLists:
        """The values an item gives each token: a value list's, or a single value's."""
        if observation not in self._lists:
            if observation.kind is None:
                self._lists[observation] = single(*self.observation_codes(observation))
            else:
                self._lists[observation] = observation_lists(self, observation, resources)
        return self._lists[observation]

    def predicate_occurrences(self, predicate: PredicateTemplate, resources: Resources, budget: int) -> Occurrences:
        """The predicates a template yields, in order of first occurrence (see Occurrences);
        BudgetError if a line of value lists gives a token more than ``budget`` of them."""
        if not predicate.observations:
            names = ["bias"] if self.num_tokens else []
            return Occurrences(
                names,
                np.zeros(self.num_tokens, dtype=np.int64),
                np.full(len(names), self.num_tokens, dtype=np.int64),
                [],
            )
        if predicate.real_valued and not predicate.multi_valued:
            true_at = np.count_nonzero(self.numbers(predicate.observations[0]))
            names = [predicate.name] if true_at else []
            return Occurrences(names, np.zeros(self.num_tokens, dtype=np.int64), np.full(len(names), true_at), [])
        if predicate.multi_valued:
            return self._cross_product(predicate, resources, budget)
        coded = [self.observation_codes(observation) for observation in predicate.observations]
        key = coded[0][0]
        for codes, names in coded[1:]:
            key = factorize(key)[0] * len(names) + codes  # compact, so the product stays small
        key, first_token, counts = factorize(key)
        values = [(codes[first_token], names) for codes, names in coded]
        return Occurrences(_predicate_names(predicate, values), key, counts, values)

    def _cross_product(self, predicate: PredicateTemplate, resources: Resources, budget: int) -> Occurrences:
        lists = [self.value_lists(observation, resources) for observation in predicate.observations]
        sizes = np.ones(self.num_tokens)
        for item in lists:
            sizes *= item.counts
        if self.num_tokens and sizes.max() > budget:
            token = int(np.argmax(sizes > budget))
            sentence, position = self.place(token)
            raise BudgetError(
                f"sentence {sentence + 1}, token {position + 1}: line {predicate.line} ({predicate.name}) gives "
                f"{int(sizes[token]):,} predicates at one token, beyond the template budget of {budget} per token "
                "and line; raise it with a line 'budget N' in the template, or give the line fewer values"
            )
        tokens = np.arange(self.num_tokens, dtype=np.int64)
        key = np.zeros(self.num_tokens, dtype=np.int64)
        entry_codes: list[np.ndarray] = []
        for item in lists:
            counts = item.counts[tokens]
            parent = np.repeat(np.arange(len(tokens)), counts)
            ptr = np.zeros(len(tokens) + 1, dtype=np.int64)
            np.cumsum(counts, out=ptr[1:])
            source = np.repeat(item.ptr[tokens] - ptr[:-1], counts) + np.arange(ptr[-1], dtype=np.int64)
            codes = item.codes[source]
            entry_codes = [codes_of[parent] for codes_of in entry_codes] + [codes]
            tokens = tokens[parent]
            key = factorize(key[parent])[0] * len(item.names) + codes
        key, first, counts = factorize(key)
        values = [(codes[first], item.names) for codes, item in zip(entry_codes, lists)]
        return Occurrences(_predicate_names(predicate, values), key, counts, values)


class Occurrences(NamedTuple):
    """The predicates a predicate template yields on a token table: their names [K]; the
    index of the predicate of each entry [E]: of each token (E = N), or of each token
    and combination of values of a line of value lists; how many tokens each is true
    at [K]; per observation the code of each predicate's value [K] with the escaped
    value of each code."""

    names: list[str]
    predicate: np.ndarray
    counts: np.ndarray
    values: list[tuple[np.ndarray, list[str]]]


def _predicate_names(predicate: PredicateTemplate, values: list[tuple[np.ndarray, list[str]]]) -> list[str]:
    value_names = [[names[code] for code in codes.tolist()] for codes, names in values]
    prefix = predicate.name + "="
    return [prefix + "|".join(row) for row in zip(*value_names)]


def _first_use_codes(values: Sequence) -> tuple[np.ndarray, list]:
    """(codes int64 [n] of ``values`` [n], numbered by first occurrence; the distinct
    values in that order), the dictionary filled by one pass in C."""
    first_use: dict = {}  # value -> where it first occurs
    first = np.fromiter(map(first_use.setdefault, values, range(len(values))), dtype=np.int64, count=len(values))
    return (np.cumsum(first == np.arange(len(values))) - 1)[first], list(first_use)
