"""fstcrf.pycrfsuite.ItemSequence against python-crfsuite's documented flattening
(an independent reading in this file) and, where it is installed, python-crfsuite."""

import importlib.util
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fstcrf.errors import ArgumentTypeError, FeatureTypeError, FeatureValueError
from fstcrf.pycrfsuite import ItemSequence

from strategies import oracle_settings


def flattened(item, prefix=""):
    """python-crfsuite's rules, read from its documentation: a dict's string value
    gives "key:value" = 1, a number or bool its value under "key", a nested dict,
    list or set its own pairs under "key:"; a list of names gives each name = 1."""
    pairs = []
    if not isinstance(item, dict):
        return [(prefix + name, 1.0) for name in item]
    for key, value in item.items():
        if isinstance(value, str):
            pairs.append((f"{prefix}{key}:{value}", 1.0))
        elif isinstance(value, bytes):
            pairs.append((f"{prefix}{key}:{value.decode()}", 1.0))
        elif isinstance(value, (dict, list, set)):
            pairs += flattened(value, f"{prefix}{key}:")
        else:
            pairs.append((prefix + key, float(value)))
    return pairs


NAMES = st.text("abcé:", min_size=1, max_size=3)
VALUES = st.one_of(
    NAMES,
    NAMES.map(str.encode),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(-10, 10, allow_nan=False),
)
NESTED = st.recursive(
    VALUES,
    lambda inner: st.one_of(st.dictionaries(NAMES, inner, max_size=3), st.lists(NAMES, max_size=3)),
    max_leaves=6,
)
TOKENS = st.one_of(st.dictionaries(NAMES, NESTED, max_size=4), st.lists(NAMES, max_size=4))


@oracle_settings(200)
@given(st.lists(TOKENS, max_size=4))
def test_items_are_the_documented_flattening(tokens):
    sequence = ItemSequence(tokens)
    assert len(sequence) == len(tokens)
    expected = []
    for token in tokens:
        pairs = flattened(token)
        if isinstance(token, list):  # a name listed twice counts twice
            expected.append({name: sum(value for other, value in pairs if other == name) for name, _ in pairs})
        else:
            expected.append(dict(pairs))
    assert sequence.items() == expected
    assert ItemSequence(sequence.items()).items() == sequence.items()


@pytest.mark.skipif(importlib.util.find_spec("pycrfsuite") is None, reason="python-crfsuite is not installed")
@oracle_settings(100)
@given(st.lists(st.dictionaries(NAMES, NESTED, max_size=4), max_size=4))
def test_items_equal_python_crfsuites(tokens):
    import pycrfsuite

    assert ItemSequence(tokens).items() == pycrfsuite.ItemSequence(tokens).items()


def test_any_iterable_of_names_is_an_item():
    features = {"walk": 1, "shop": 0.5}
    sequence = ItemSequence([features.keys(), ("a", "b"), {"x"}, (name for name in ["g"])])
    assert sequence.items() == [{"walk": 1.0, "shop": 1.0}, {"a": 1.0, "b": 1.0}, {"x": 1.0}, {"g": 1.0}]
    assert repr(sequence) == "<ItemSequence of size 4>"
    assert ItemSequence(iter([{"a": True, "b": False}])).items() == [{"a": 1.0, "b": 0.0}]
    assert ItemSequence([]).items() == []


@pytest.mark.parametrize(
    "tokens, error",
    [
        ([{"a": None}], FeatureTypeError),
        ([{"a": (1, 2)}], FeatureTypeError),
        ([{"a": [1, 2]}], FeatureTypeError),
        ([{5: 1.0}], FeatureTypeError),
        ([5], FeatureTypeError),
        (["ab"], FeatureTypeError),
        ([[{"a": 1}]], FeatureTypeError),
        ([{"a": math.nan}], FeatureValueError),
        ([{"a": math.inf}], FeatureValueError),
        ([{"a": b"\xff"}], FeatureValueError),
    ],
)
def test_bad_items_raise_python_crfsuites_types(tokens, error):
    with pytest.raises(error, match="token 0") as raised:
        ItemSequence(tokens)
    assert isinstance(raised.value, ValueError)
    assert isinstance(raised.value, TypeError) == (error is FeatureTypeError)


@pytest.mark.parametrize("sequence", ["foo", b"foo", {"a": 1}, None, 5])
def test_a_sequence_must_be_an_iterable_of_items(sequence):
    with pytest.raises(ArgumentTypeError, match="ItemSequence must be a sequence of items"):
        ItemSequence(sequence)
