"""CRFsuite-style token attributes: each token is a dict of features, as
python-crfsuite's ``ItemSequence`` takes them, turned into a real-valued
predicate matrix.

A token is flattened into (attribute name, value) pairs exactly as
python-crfsuite does:

    {"word": "Paris"}            "word:Paris" = 1.0      (str and bytes values)
    {"title": True}              "title" = 1.0           (False gives 0.0)
    {"length": 5}                "length" = 5.0          (int, float, Decimal, ... values)
    {"w": {"-1": "the"}}         "w:-1:the" = 1.0        (nested dicts: "outer:inner")
    {"tags": ["a", "b"]}         "tags:a" = 1.0, "tags:b" = 1.0   (lists and sets of names)
    ["a", "b"]                   "a" = 1.0, "b" = 1.0    (a token given as a list of names)

A value of another type (None, a tuple, ...), a key that is not a string, or a
whole token that is a string raises :class:`FeatureTypeError` (a
FeatureValueError and a TypeError, as python-crfsuite raises), a NaN or
infinite number :class:`FeatureValueError`, each naming the sentence, the token
and the attribute.
Sentences carry their tokens in the column named ``"attributes"``; the model
template of the same name is :data:`ATTRIBUTES`.

A model that reads a lower tagger's labels (``ChainCRF(template="attributes",
reads="pos")``, for composition) takes them from their own column of the
Sentence, not from the dicts: a token whose lower label is "NN" gets the
attribute "pos:NN" = 1.0, the name python-crfsuite gives ``{"pos": "NN"}``.
Joint decoding varies that one attribute over the lower tagger's labels
(:meth:`AttributeExtractor.transform_reading`).  The dicts of such a model
must not hold the key "pos" themselves.
"""

from __future__ import annotations

import math
import numbers
from decimal import Decimal
from typing import cast
from collections.abc import Callable, Sequence

import numpy as np

from fstcrf.corpus.conll import Corpus, Sentence
from fstcrf.engine import kernel
from fstcrf.errors import FeatureTypeError, FeatureValueError, FstcrfError, ModelFileError, TemplateError
from fstcrf.features.sparse_rows import SparseRows, met_columns

#: The column of a Sentence that holds the token dicts.
COLUMN = "attributes"
#: What joins a key to a string value or to the names of a nested dict or list.
SEPARATOR = ":"

_NESTED_TYPES = (dict, list, set)
_NAME_LIST_TYPES = (list, tuple, set, frozenset)
#: The values read as numbers, with float() as python-crfsuite reads them (bools as 0 and 1).
_NUMBER_TYPES = (numbers.Real, np.bool_, Decimal)


class _BadItem(Exception):
    """Raised inside flattening with what is wrong; the caller adds the position and
    raises ``error``."""

    error: type[FeatureValueError] = FeatureValueError


class _WrongType(_BadItem):
    """A key, value or token of a type that cannot be read (FeatureTypeError)."""

    error = FeatureTypeError


def _key(key, prefix: str) -> str:
    if isinstance(key, str):
        return prefix + key
    if isinstance(key, bytes):
        return prefix + _decode(key, prefix)
    raise _WrongType(
        f"the key {key!r} under {prefix[:-1] or 'the token'!r} is {type(key).__name__}; "
        "feature names must be str (or UTF-8 bytes)"
    )


def _decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _BadItem(f"{name or 'a name'!r}: the bytes {data[:20]!r} are not UTF-8") from None


def _number(name: str, value) -> float:
    try:
        number = float(value)
    except OverflowError:
        raise _BadItem(f"attribute {name!r} has the value {value!r}, too large for a float") from None
    except ValueError:  # a signalling NaN Decimal
        number = math.nan
    if not math.isfinite(number):
        raise _BadItem(f"attribute {name!r} has the value {number!r}; values must be finite")
    return number


def _flatten_into(item, prefix: str, names: list, values: list) -> None:
    """Append the (name, value) pairs of a dict, or of a list or set of names,
    each name prefixed by ``prefix``, to names [M] and values [M]."""
    add_name, add_value = names.append, values.append
    if not isinstance(item, dict):
        for key in item:
            add_name(prefix + key if type(key) is str else _key(key, prefix))
            add_value(1.0)
        return
    for key, value in item.items():
        name = prefix + key if type(key) is str else _key(key, prefix)
        kind = type(value)
        if kind is str:
            add_name(name + SEPARATOR + value)
            add_value(1.0)
        elif kind is bool:
            add_name(name)
            add_value(1.0 if value else 0.0)
        elif kind is float and value - value == 0.0:  # finite (inf - inf and nan are nan)
            add_name(name)
            add_value(value)
        elif isinstance(value, str):
            add_name(name + SEPARATOR + value)
            add_value(1.0)
        elif isinstance(value, _NUMBER_TYPES):
            add_name(name)
            add_value(_number(name, value))
        elif isinstance(value, _NESTED_TYPES):
            _flatten_into(value, name + SEPARATOR, names, values)
        elif isinstance(value, bytes):
            add_name(name + SEPARATOR + _decode(value, name))
            add_value(1.0)
        else:
            raise _WrongType(
                f"attribute {name!r} has a value of type {type(value).__name__} ({value!r:.40}); "
                "values must be str, bytes, bool, numbers (int, float, Decimal), or a dict, list or set of them"
            )


def _check_token(token) -> None:
    if not isinstance(token, (dict, *_NAME_LIST_TYPES)):
        raise _WrongType(
            f"the token is {type(token).__name__} ({token!r:.40}); a token is a dict of "
            "features or a list of feature names"
        )


def attribute_pairs(token) -> list[tuple[str, float]]:
    """The (attribute name, value) pairs [M] of one token, in python-crfsuite's
    order (a name may repeat; CRFsuite adds the values of a repeated name)."""
    names: list[str] = []
    values: list[float] = []
    try:
        _check_token(token)
        _flatten_into(token, "", names, values)
    except _BadItem as error:
        raise error.error(str(error)) from None
    return list(zip(names, values))


def _read_token(token, lower: list | None, position: int, reads: str | None, names: list, values: list) -> None:
    """Append the (name, value) pairs of one token to names and values: its dict's
    (which may not hold the key ``reads``), then the attribute "reads:label" of
    its lower label lower[position] when ``lower`` is given."""
    if not isinstance(token, dict):
        _check_token(token)
    elif reads is not None and reads in token:
        raise _BadItem(
            f"the token dict holds the key {reads!r}, the lower labels this model "
            f"reads from column {reads!r}; leave it out of the dicts"
        )
    _flatten_into(token, "", names, values)
    if lower is not None:
        label = lower[position]
        if not isinstance(label, str):
            raise _BadItem(f"the lower label in column {reads!r} is {label!r}; labels are strings")
        names.append(cast(str, reads) + SEPARATOR + label)
        values.append(1.0)


def token_reader(lower_lists: list | None, reads: str | None, first: int) -> Callable[[object, int, int], tuple]:
    """The fallback of fstcrf._attributes: read(token, sentence, position) -> (names,
    values), the pairs of a token the C reader hands back, read in Python (with its
    lower label lower_lists[sentence][position] when ``lower_lists`` is given); a bad
    token raises FeatureValueError or FeatureTypeError naming its position and its
    sentence, numbered from ``first``."""

    def read_in_python(token, number: int, position: int) -> tuple[list, list]:
        token_names: list[str] = []
        values: list[float] = []
        try:
            _read_token(
                token, None if lower_lists is None else lower_lists[number], position, reads, token_names, values
            )
        except _BadItem as error:
            raise error.error(f"sentence {first + number}, token {position}: {error}") from None
        return token_names, values

    return read_in_python


#: How a sentence read alone, without lower labels, has its tokens read in Python.
READ_ALONE = token_reader(None, None, 0)


def read_token_lists(
    token_lists: list,
    lower_lists: list | None,
    by_name: dict[str, int],
    by_key: dict[str, dict[str, int]],
    names: list[str] | None = None,
    reads: str | None = None,
    first: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`read_entries` of the tokens of B sentences, token_lists [B] of lists of
    tokens (and their lower labels, lower_lists [B] of lists, or None)."""
    columns, values, starts = kernel.read_columns(
        token_lists, lower_lists, reads, by_name, by_key, names, token_reader(lower_lists, reads, first)
    )
    return (
        np.frombuffer(columns, dtype=np.int64),
        np.frombuffer(values, dtype=np.float64),
        np.frombuffer(starts, dtype=np.int64),
    )


def read_entries(
    sentences: Sequence[Sentence],
    by_name: dict[str, int],
    by_key: dict[str, dict[str, int]],
    names: list[str] | None = None,
    reads: str | None = None,
    read_labels: bool = True,
    first: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The attributes of the tokens of ``sentences`` in the columns of a vocabulary,
    read in C (fstcrf._attributes): columns int64 [M], values float64 [M] and
    where each token's entries start, int64 [N+1].  ``by_name`` maps names to
    columns and ``by_key`` is ``fstcrf.engine.kernel.values_by_key(by_name, ":")``.
    With ``names`` None unknown names are left out; else ``names`` lists the
    names in column order and an unknown name takes the next column (all three
    grow).  With ``reads`` (a column of lower labels) each token also has the
    attribute "reads:label" unless ``read_labels`` is False, and the dicts may
    not hold the key ``reads``.  A bad token raises FeatureValueError (FeatureTypeError
    for a value of the wrong type) naming its position and its sentence, numbered
    from ``first``."""
    tokens = [
        sentence.values_of(COLUMN, number, why="attribute models read the token dicts from it")
        for number, sentence in enumerate(sentences)
    ]
    lower = (
        [
            sentence.values_of(reads, number, why="the model reads a lower tagger's labels from it")
            for number, sentence in enumerate(sentences)
        ]
        if reads is not None and read_labels
        else None
    )
    return read_token_lists(tokens, lower, by_name, by_key, names, reads, first)


def check_sentences(sentences: Sequence[Sentence], first: int = 0) -> None:
    """Raise FeatureValueError (naming sentence and token; sentences numbered from
    ``first``) if a token cannot be read."""
    read_entries(sentences, {}, {}, first=first)


def _reads_problem(reads) -> str | None:
    """What is wrong with ``reads`` as the column of lower labels, or None."""
    if not (reads is None or isinstance(reads, str) and reads):
        return f"reads must be a column name or None, got {reads!r}"
    if reads == COLUMN:
        return f"column {COLUMN!r} holds the token dicts; the lower labels need a column of their own"
    return None


class AttributeTemplate:
    """The template of models over token dicts: it reads column "attributes" (and
    the lower labels of column ``reads`` at offset 0, when given) and has no
    predicate templates; its extractor is an :class:`AttributeExtractor`."""

    text = COLUMN
    predicates = ()

    def __init__(self, reads: str | None = None):
        problem = _reads_problem(reads)
        if problem:
            raise FstcrfError(problem)
        self.reads = reads

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns read: the token dicts, then the lower labels if any."""
        return (COLUMN,) if self.reads is None else (COLUMN, self.reads)

    def offsets_of(self, column: str) -> set[int]:
        """{0} for the column of lower labels, else empty (dicts are per token)."""
        return {0} if column == self.reads else set()

    def __iter__(self):
        return iter(self.predicates)

    def __len__(self) -> int:
        return 0

    def __eq__(self, other) -> bool:
        return isinstance(other, AttributeTemplate) and other.reads == self.reads

    def __hash__(self) -> int:
        return hash((AttributeTemplate, self.reads))

    def __repr__(self) -> str:
        return "AttributeTemplate()" if self.reads is None else f"AttributeTemplate(reads={self.reads!r})"

    def extractor(self, min_count: int = 1) -> AttributeExtractor:
        """A new, unfitted extractor."""
        return AttributeExtractor(min_count, self.reads)


#: The template that ``ChainCRF(template="attributes")`` resolves to.
ATTRIBUTES = AttributeTemplate()


def _check_min_count(min_count) -> None:
    if isinstance(min_count, bool) or not isinstance(min_count, (int, np.integer)) or min_count < 1:
        raise FstcrfError(f"min_count must be a positive integer, got {min_count!r}")


class AttributeExtractor:
    """Turns token dicts into a real-valued matrix [num_tokens, num_attributes]
    holding each attribute's value (the values of a repeated name are added).

    ``fit`` keeps the attributes with a nonzero value at ``min_count`` tokens
    or more, numbered most frequent first (ties in order of first occurrence).
    With ``reads``, each token also has the attribute "reads:label" of its
    label in that column (see the module doc).
    Learned attributes: ``vocabulary_`` (name -> column) and ``predicate_names_``.
    """

    def __init__(self, min_count: int = 1, reads: str | None = None):
        self.min_count = min_count
        self.reads = reads

    def parsed_template(self) -> AttributeTemplate:
        """The attribute template: every token attribute, and the "reads" labels if any."""
        return ATTRIBUTES if self.reads is None else AttributeTemplate(self.reads)

    def _check_fitted(self) -> None:
        if not hasattr(self, "vocabulary_"):
            raise FstcrfError("this AttributeExtractor is not fitted; call fit first")

    @staticmethod
    def _sentences(corpus: Corpus | Sequence[Sentence]) -> list[Sentence]:
        return list(corpus.sentences if isinstance(corpus, Corpus) else corpus)

    def _fit_matrix(self, corpus) -> SparseRows:
        """Learn the vocabulary; return the matrix of the corpus in its columns."""
        _check_min_count(self.min_count)
        first_seen: list[str] = []  # the names in order of first occurrence, numbered so
        codes, values, starts = read_entries(self._sentences(corpus), {}, {}, first_seen, self.reads)
        seen = _csr(values, codes, starts, len(first_seen))
        counts = np.bincount(seen.indices, minlength=len(first_seen))
        kept = np.flatnonzero(counts >= self.min_count)
        kept = kept[np.argsort(-counts[kept], kind="stable")]
        self.predicate_names_ = [first_seen[code] for code in kept.tolist()]
        self.vocabulary_ = {name: column for column, name in enumerate(self.predicate_names_)}
        column_of = np.full(len(first_seen) + 1, -1, dtype=np.int64)
        column_of[kept] = np.arange(len(kept))
        return _renumbered(seen, column_of, len(kept))

    def fit(self, corpus: Corpus | Sequence[Sentence]) -> AttributeExtractor:
        """Build the attribute dictionary from a corpus or a list of sentences."""
        self._fit_matrix(corpus)
        return self

    def fit_transform(self, corpus: Corpus | Sequence[Sentence]):
        """``fit`` then ``transform``, flattening the tokens once (a scipy.sparse.csr_matrix)."""
        return self._fit_matrix(corpus).to_scipy()

    def fit_transform_rows(self, corpus: Corpus | Sequence[Sentence]) -> SparseRows:
        """:meth:`fit_transform`'s matrix as :class:`SparseRows` (what the encoder takes)."""
        return self._fit_matrix(corpus)

    def transform_rows(self, corpus: Corpus | Sequence[Sentence]) -> SparseRows:
        """:meth:`transform`'s matrix as :class:`SparseRows` (without importing scipy)."""
        return self._known_matrix(corpus, read_labels=True)

    def window_rows(self) -> None:
        """None: this extractor makes the rows (real values, not lines the kernel looks
        up; see :meth:`fstcrf.features.extractor.FeatureExtractor.window_rows`)."""
        return None

    def column_of(self, name: str) -> int | None:
        """The column of the attribute named ``name`` (None if it was not seen in fit)."""
        self._check_fitted()
        return self.vocabulary_.get(name)

    def transform(self, corpus: Corpus | Sequence[Sentence]):
        """float64 [num_tokens, num_attributes] (a scipy.sparse.csr_matrix); attributes
        unseen in fit are dropped."""
        return self.transform_rows(corpus).to_scipy()

    def _known_matrix(self, corpus, read_labels: bool) -> SparseRows:
        """:meth:`transform`, with or without the attributes of the lower labels."""
        columns, values, starts = self.entries(corpus, read_labels)
        return _csr(values, columns, starts, len(self.predicate_names_))

    def entries(
        self, corpus: Corpus | Sequence[Sentence], read_labels: bool = True
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The attributes of a corpus's tokens in the columns of ``vocabulary_`` as they are
        read, before :meth:`transform_rows` makes them rows (see :func:`read_entries`):
        columns int64 [M], values float64 [M], starts int64 [N+1]."""
        self._check_fitted()
        return read_entries(
            self._sentences(corpus), self.vocabulary_, self._values_by_key(), reads=self.reads, read_labels=read_labels
        )

    def item_entries(self, tokens: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`entries` of one sentence given as its tokens [T] (dicts or lists of names,
        as the column "attributes" holds them), for an extractor that reads no lower
        labels."""
        by_name, by_key = self.item_columns()
        return read_token_lists([tokens], None, by_name, by_key)

    def item_columns(self) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
        """The fitted vocabulary (name -> column) and its values by key, what
        fstcrf._attributes reads one sentence's tokens with (:meth:`item_entries`;
        their fallback is :data:`READ_ALONE`), for an extractor that reads no lower
        labels."""
        if self.reads is not None:
            raise TemplateError(f"this extractor reads lower labels from column {self.reads!r}: give sentences")
        self._check_fitted()
        return self.vocabulary_, self._values_by_key()

    def _values_by_key(self) -> dict[str, dict[str, int]]:
        """key -> {value: column} for the names "key:value" of ``vocabulary_``, split at
        each separator in turn, built once per vocabulary (see fstcrf._attributes)."""
        cached = self.__dict__.get("_by_key")
        if cached is None or cached[0] is not self.vocabulary_:
            cached = self._by_key = (self.vocabulary_, kernel.values_by_key(self.vocabulary_, SEPARATOR))
        return cached[1]

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_by_key", None)  # rebuilt on first use
        return state

    @property
    def num_predicates(self) -> int:
        """P, the number of attributes kept."""
        self._check_fitted()
        return len(self.predicate_names_)

    def subset(self, keep: np.ndarray) -> AttributeExtractor:
        """A fitted extractor of the attributes ``keep`` bool [P] selects, in their order."""
        self._check_fitted()
        extractor = type(self)(self.min_count, self.reads)
        extractor.predicate_names_ = [self.predicate_names_[i] for i in np.flatnonzero(keep).tolist()]
        extractor.vocabulary_ = {name: column for column, name in enumerate(extractor.predicate_names_)}
        return extractor

    def transform_reading(
        self, corpus: Corpus | Sequence[Sentence], column: str, values: Sequence[str]
    ) -> tuple[SparseRows, SparseRows, np.ndarray]:
        """The attribute matrices of a corpus whose lower labels (column ``column``, the
        one this extractor reads) are not known but may take each of ``values`` (K
        labels) at each token: the token dicts' attributes [N, P]; the lower label's
        attribute [N * K, M], row n * K + k for token n with label values[k], over
        the M attributes "column:value" seen in fit; and their columns int64 [M] in
        the full matrix, ascending (see FeatureExtractor.transform_reading)."""
        base, full = self.transform_reading_rows(corpus, column, values)
        return (base, *met_columns(full))

    def transform_reading_rows(
        self, corpus: Corpus | Sequence[Sentence], column: str, values: Sequence[str]
    ) -> tuple[SparseRows, SparseRows]:
        """:meth:`transform_reading`'s matrices, the second over all P attributes [N * K, P]."""
        self._check_fitted()
        if column != self.reads:
            raise TemplateError(
                f"this extractor reads the lower labels of column {self.reads!r}, not {column!r}"
                if self.reads
                else "this extractor reads no lower tagger's labels (train with reads=...)"
            )
        base = self._known_matrix(corpus, read_labels=False)
        code = np.array(
            [self.vocabulary_.get(column + SEPARATOR + value, -1) for value in values], dtype=np.int64
        )  # [K]
        known = code >= 0
        num_rows = base.shape[0] * len(values)
        indptr = np.zeros(num_rows + 1, dtype=np.int64)
        np.cumsum(np.tile(known, base.shape[0]), out=indptr[1:])
        indices = np.tile(code[known].astype(np.int32), base.shape[0])
        return base, SparseRows.binary(indptr, indices, (num_rows, len(self.predicate_names_)))

    def to_dict(self) -> dict:
        """Plain JSON-able data: kind "attributes", min_count, the attribute names and
        (for a model reading lower labels) the column ``reads``."""
        self._check_fitted()
        data = {"kind": "attributes", "min_count": int(self.min_count), "predicates": list(self.predicate_names_)}
        if self.reads is not None:
            data["reads"] = self.reads
        return data

    @classmethod
    def from_dict(cls, data: dict) -> AttributeExtractor:
        """A fitted extractor from :meth:`to_dict` data; bad data raises ModelFileError."""
        if (
            not isinstance(data, dict)
            or data.get("kind") != "attributes"
            or not {"min_count", "predicates"} <= set(data)
        ):
            raise ModelFileError(
                "attribute extractor data must be a dict with kind 'attributes', min_count and predicates"
            )
        min_count, names = data["min_count"], data["predicates"]
        if (
            not isinstance(names, list)
            or not all(isinstance(name, str) for name in names)
            or isinstance(min_count, bool)
            or not isinstance(min_count, int)
            or min_count < 1
        ):
            raise ModelFileError("attribute extractor data has fields of the wrong type")
        if len(set(names)) != len(names):
            raise ModelFileError("attribute extractor names repeat")
        reads = data.get("reads")
        problem = _reads_problem(reads)
        if problem:
            raise ModelFileError(f"attribute extractor data: {problem}")
        extractor = cls(min_count, reads)
        extractor.predicate_names_ = list(names)
        extractor.vocabulary_ = {name: column for column, name in enumerate(names)}
        return extractor


def _csr(values: np.ndarray, codes: np.ndarray, starts: np.ndarray, width: int) -> SparseRows:
    """Canonical float64 rows [N, width] of entries codes int64 [M] with values [M], token
    n's entries at starts[n]..starts[n+1]-1: repeated columns summed, zeros dropped."""
    indptr, indices, data = kernel.canonical_rows(starts, codes, np.asarray(values, dtype=np.float64), width)
    if data is None:  # every value 1: the rows are binary
        return SparseRows.binary(indptr, indices, (len(starts) - 1, width))
    return SparseRows(indptr, indices, data, (len(starts) - 1, width))


def _renumbered(rows: SparseRows, column_of: np.ndarray, width: int) -> SparseRows:
    """The rows with column c moved to column_of[c] (-1: dropped), canonical again."""
    columns = column_of[rows.indices]
    kept = columns >= 0
    return _csr(rows.data[kept], columns[kept], _starts_kept(rows.indptr, kept), width)


def _starts_kept(starts: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """int64 [N+1]: where each token's entries start once only those with kept
    bool [M] true remain, from where they start now, starts [N+1]."""
    before = np.zeros(len(kept) + 1, dtype=np.int64)
    np.cumsum(kept, out=before[1:])
    return before[starts]
