"""The predicates a predicate template yields on a batch, what fitting counts: after
the values (columns -> token table -> values), each line's combinations of its
items' values at every token, numbered by first occurrence and named
(``template=value|value``), with how many tokens each is true at."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fstcrf.errors import BudgetError
from fstcrf.features.template import PredicateTemplate
from fstcrf.features.token_table import TokenTable
from fstcrf.features.value_lists import ItemValues, factorize


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


def predicate_occurrences(values: ItemValues, predicate: PredicateTemplate, budget: int) -> Occurrences:
    """The predicates a template yields on the table of ``values``, in order of first
    occurrence (see Occurrences); BudgetError if a line of value lists gives a token
    more than ``budget`` of them."""
    table = values.table
    if not predicate.observations:
        names = ["bias"] if table.num_tokens else []
        return Occurrences(
            names,
            np.zeros(table.num_tokens, dtype=np.int64),
            np.full(len(names), table.num_tokens, dtype=np.int64),
            [],
        )
    if predicate.real_valued and not predicate.multi_valued:
        true_at = np.count_nonzero(table.numbers(predicate.observations[0]))
        names = [predicate.name] if true_at else []
        return Occurrences(names, np.zeros(table.num_tokens, dtype=np.int64), np.full(len(names), true_at), [])
    if predicate.multi_valued:
        return _cross_product(values, predicate, budget)
    coded = [table.observation_codes(observation) for observation in predicate.observations]
    key = coded[0][0]
    for codes, names in coded[1:]:
        key = factorize(key)[0] * len(names) + codes  # compact, so the product stays small
    key, first_token, counts = factorize(key)
    named = [(codes[first_token], names) for codes, names in coded]
    return Occurrences(_predicate_names(predicate, named), key, counts, named)


def _cross_product(values: ItemValues, predicate: PredicateTemplate, budget: int) -> Occurrences:
    table: TokenTable = values.table
    lists = [values.lists(observation) for observation in predicate.observations]
    sizes = np.ones(table.num_tokens)
    for item in lists:
        sizes *= item.counts
    if table.num_tokens and sizes.max() > budget:
        token = int(np.argmax(sizes > budget))
        sentence, position = table.place(token)
        raise BudgetError(
            f"sentence {sentence + 1}, token {position + 1}: line {predicate.line} ({predicate.name}) gives "
            f"{int(sizes[token]):,} predicates at one token, beyond the template budget of {budget} per token "
            "and line; raise it with a line 'budget N' in the template, or give the line fewer values"
        )
    tokens = np.arange(table.num_tokens, dtype=np.int64)
    key = np.zeros(table.num_tokens, dtype=np.int64)
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
    named = [(codes[first], item.names) for codes, item in zip(entry_codes, lists)]
    return Occurrences(_predicate_names(predicate, named), key, counts, named)


def _predicate_names(predicate: PredicateTemplate, values: list[tuple[np.ndarray, list[str]]]) -> list[str]:
    value_names = [[names[code] for code in codes.tolist()] for codes, names in values]
    prefix = predicate.name + "="
    return [prefix + "|".join(row) for row in zip(*value_names)]
