"""The fitted :class:`FeatureExtractor`: observation predicates of tokens as a sparse
matrix, extracted in one direction (the template language is
:mod:`fstcrf.features.template`):

    columns      the sentences' columns, and the derived ones (:mod:`~fstcrf.features.seen_entities`)
    token table  each column coded per distinct value, each token's neighbours
                 (:mod:`~fstcrf.features.token_table`)
    values       the items' value lists (:mod:`~fstcrf.features.value_lists`); at fit,
                 the predicates they yield (:mod:`~fstcrf.features.occurrences`)
    hashes       the values' hashes (:mod:`~fstcrf.features.item_lists`, :mod:`~fstcrf.features.hashing`)
    rows         the known predicates at every token (:mod:`~fstcrf.features.dictionary`)

Each step reads the steps before it and none after it; this module drives them."""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Sequence
from typing import cast

import numpy as np

from fstcrf.corpus.conll import Corpus, Sentence
from fstcrf.engine import kernel
from fstcrf.errors import (
    FstcrfError,
    HashCollisionError,
    ModelFileError,
    TemplateError,
)
from fstcrf.features.template import Template, parse_template
from fstcrf.features.dictionary import HashedDictionary, column_rows, occurrence_keys, predicate_keys
from fstcrf.features.hashing import pack_names, utf8_hashes
from fstcrf.features.item_lists import ItemPlan
from fstcrf.features.occurrences import Occurrences, predicate_occurrences
from fstcrf.features import seen_entities
from fstcrf.features.resources import Resources, seen_lower_columns
from fstcrf.features.sparse_rows import SparseRows, met_columns
from fstcrf.features.token_table import TokenTable, missing_column_message
from fstcrf.features.value_list_rows import ListInputs, ValueListRows
from fstcrf.features.value_lists import ItemValues
from fstcrf.features.window_rows import WindowRows

logger = logging.getLogger(__name__)

#: ``FeatureExtractor.fit`` warns when min_count keeps fewer predicates than this share of
#: those seen, or fewer than FEW_PREDICATES and than half of them, and names a min_count
#: that would keep enough.
FEW_PREDICATES = 200
FEW_PREDICATES_SHARE = 0.01


class TemplateLines:
    """Some lines of a template as extraction reads them: those of binary predicates
    (``binary``, their indices), whether one of them reads a value list (``lists``),
    the real-valued lines (``real``, their predicate templates), and the columns the
    whole template reads (``columns``)."""

    def __init__(self, template: Template, chosen: Sequence[int] | None):
        chosen = range(len(template)) if chosen is None else chosen
        predicates = [template.predicates[k] for k in chosen]
        self.binary = [k for k, predicate in zip(chosen, predicates) if not predicate.real_valued]
        self.lists = any(template.predicates[k].multi_valued for k in self.binary)
        self.real = [predicate for predicate in predicates if predicate.real_valued]
        self.columns = template.columns


class FeatureExtractor:
    """Turns the tokens of a corpus into a binary predicate matrix [num_tokens, num_predicates].

    ``template`` is a :class:`Template` or template text; ``fit`` keeps the
    predicates true at ``min_count`` tokens or more, numbered most frequent
    first.  Learned attributes: ``vocabulary_`` (predicate name -> column
    index) and ``predicate_names_``, both built on first use from the names
    (which a loaded model keeps as one string and offsets); ``transform``
    needs neither, only the hashed dictionary.
    """

    # fitted state (see _set_dictionary)
    _names: list[str] | None
    _packed_names: tuple[str, np.ndarray] | None
    _vocabulary: dict[str, int] | None
    #: the TemplateLines of each choice of lines, with the template they are of
    _kept_lines: dict[tuple[int, ...] | None, tuple[Template, TemplateLines]]
    #: the lines that do not read and that read each column varied, with their template
    _kept_reading_lines: dict[str, tuple[Template, tuple[list[int], list[int]]]]
    #: no files and no training words: what extractors pickled before value lists read
    _resources: Resources = Resources({}, {})

    def __init__(self, template: Template | str, min_count: int = 1, target: str | None = None):
        self.template = template
        self.min_count = min_count
        #: the column of chunk labels whose entities a template reading the derived
        #: column ``seen_entity`` learns (:mod:`fstcrf.features.seen_entities`)
        self.target = target

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_window_rows", None)  # made again on first use (its cache holds a lock)
        return state

    def parsed_template(self) -> Template:
        """The template as a parsed Template (the one given, or its text parsed)."""
        if isinstance(self.template, Template):
            return self.template
        if isinstance(self.template, str):
            return parse_template(self.template)
        raise TemplateError(f"template must be a Template or template text, got {type(self.template).__name__}")

    def occurrences(self, corpus: Corpus | Sequence[Sentence]) -> tuple[ItemValues, list[Occurrences]]:
        """The values the template's items give the corpus's tokens (its token table,
        and the files and training words the items read, from disk and from this
        corpus), and the predicate_occurrences of each predicate template."""
        template = self.parsed_template()
        derived, entities = seen_entities.at_fit(template.columns, list(corpus), self.target)
        table = self._token_table(corpus, derived)
        column_values = {column: table.coded_column(column, None)[1] for column in seen_lower_columns(template)}
        resources = Resources.load(template, column_values)
        resources.entities = entities
        values = ItemValues(table, resources)
        return values, [predicate_occurrences(values, predicate, template.budget) for predicate in template]

    def _token_table(
        self, corpus: Corpus | Sequence[Sentence], derived: dict[str, list[str]] | None = None
    ) -> TokenTable:
        """The token table of ``corpus``; the column ``seen_entity`` is derived: the marks
        ``derived`` gives (at fit), or those of the training entities kept."""
        columns = self._lines().columns
        if isinstance(corpus, Corpus):
            for column in columns:
                if column not in corpus.column_names and column != seen_entities.COLUMN:
                    raise TemplateError(missing_column_message(column, corpus.column_names))
        sentences = list(corpus)
        if derived is None:
            derived = seen_entities.at_extraction(columns, sentences, self._resources.entities)
        return TokenTable(sentences, derived)

    @property
    def predicate_names_(self) -> list[str]:
        """The name of each predicate column [P]."""
        self._check_fitted()
        if self._names is None:
            text, offsets = cast("tuple[str, np.ndarray]", self._packed_names)
            bounds = offsets.tolist()
            self._names = [text[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
        return self._names

    @property
    def dictionary(self) -> HashedDictionary:
        """The fitted hashed dictionary: predicate keys uint64 [P] and their salt."""
        self._check_fitted()
        return self._dictionary

    @property
    def num_predicates(self) -> int:
        """P, the number of predicate columns."""
        return len(self.dictionary.keys)

    def column_of(self, name: str) -> int | None:
        """The column of the predicate named ``name`` (None if it is not fitted), found by
        its hashed key: no name table is built."""
        self._check_fitted()
        try:
            key = predicate_keys(self.parsed_template(), [name], self._dictionary.salt)
        except TemplateError:
            return None
        column = int(self._dictionary.lookup(key)[0])
        return None if column < 0 else column

    @property
    def vocabulary_(self) -> dict[str, int]:
        """Predicate name -> column index."""
        vocabulary = getattr(self, "_vocabulary", None)
        if vocabulary is None:
            vocabulary = self._vocabulary = {name: index for index, name in enumerate(self.predicate_names_)}
        return vocabulary

    def _set_dictionary(
        self,
        names: list[str] | None,
        packed_names: tuple[str, np.ndarray] | None,
        dictionary: HashedDictionary,
        resources: Resources | None = None,
    ) -> None:
        """Fitted state: the names [P] as a list or as (one string, offsets int64 [P + 1]),
        and the files and training words the items read."""
        self._names, self._packed_names, self._dictionary = names, packed_names, dictionary
        self._resources = resources if resources is not None else Resources({}, {})
        self._vocabulary = None

    @property
    def resources_(self) -> Resources:
        """The files the template's items read, as they were at fit (a model keeps
        copies), and the words seen lower-cased in the training data."""
        self._check_fitted()
        return self._resources

    def _learn(self, occurrences: list[Occurrences], resources: Resources) -> list[np.ndarray]:
        """Keep the predicates of ``occurrences`` true at min_count tokens or more as the
        fitted dictionary; returns per template the column int64 [K_t] of each predicate
        it yields (-1 for those dropped)."""
        if isinstance(self.min_count, bool) or not isinstance(self.min_count, (int, np.integer)) or self.min_count < 1:
            raise FstcrfError(f"min_count must be a positive integer, got {self.min_count!r}")
        all_counts = [occurrence.counts for occurrence in occurrences]
        starts = np.cumsum([0] + [len(counts) for counts in all_counts]).tolist()
        chosen = self.frequent_first(np.concatenate([np.zeros(0, dtype=np.int64)] + all_counts))
        seen_names = [name for occurrence in occurrences for name in occurrence.names]
        names = [seen_names[i] for i in chosen.tolist()]
        column = np.full(starts[-1], -1, dtype=np.int64)
        column[chosen] = np.arange(len(chosen))
        columns = [column[a:b] for a, b in zip(starts[:-1], starts[1:])]  # per template (-1: dropped)

        # packed: the names are read again only to save the model or encode unseen text
        keys = functools.partial(occurrence_keys, self.parsed_template(), occurrences, chosen)
        self._set_dictionary(None, pack_names(names), HashedDictionary.fit(keys, len(names)), resources)
        return columns

    def frequent_first(self, counts: np.ndarray) -> np.ndarray:
        """int64 [P]: the indices of the predicates true at counts int [P_seen] tokens that
        min_count keeps, most frequent first (ties in the order of ``counts``: template,
        then first occurrence), so that the weights of the predicates true at most
        tokens share a few cache lines; warns when that keeps too few."""
        kept = np.flatnonzero(counts >= self.min_count)
        self._warn_if_few_kept(counts, len(kept))
        return kept[np.argsort(-counts[kept], kind="stable")]

    def _warn_if_few_kept(self, counts: np.ndarray, kept: int) -> None:
        """Log a warning when min_count keeps ``kept`` of the predicates true at counts
        int [P_seen] tokens and that is too few (see FEW_PREDICATES)."""
        seen = len(counts)
        enough = max(math.ceil(FEW_PREDICATES_SHARE * seen), min(FEW_PREDICATES, math.ceil(seen / 2)))
        if kept >= enough:
            return
        lower = int(np.sort(counts)[::-1][enough - 1])  # keeps at least ``enough`` predicates
        logger.warning(
            "min_count=%d keeps %d of the %d predicates seen in training (%.2g%%); lower it (--min-count %d keeps %d)",
            self.min_count,
            kept,
            seen,
            100 * kept / seen,
            lower,
            int(np.count_nonzero(counts >= lower)),
        )

    def _check_fitted(self):
        if getattr(self, "_dictionary", None) is None:
            raise FstcrfError("this FeatureExtractor is not fitted; call fit first")

    def _matrix(
        self, values: ItemValues, occurrences: list[Occurrences], template_columns: list[np.ndarray]
    ) -> SparseRows:
        """The predicate matrix [N, P] of ``occurrences`` whose predicates have the columns
        that :meth:`_learn` gave (fit_transform)."""
        template = self.parsed_template()
        if template.multi_valued:  # the value lists are made already: transform's path
            return self._hashed_matrix(values)
        columns = np.full((values.table.num_tokens, len(occurrences)), -1, dtype=np.int64)
        for index, (predicate, occurrence, predicate_column) in enumerate(zip(template, occurrences, template_columns)):
            if not predicate.real_valued:
                columns[:, index] = predicate_column[occurrence.predicate]
        return self._with_numbers(self._csr(columns), values, self._lines(range(len(occurrences))))

    def _with_numbers(self, binary: SparseRows, values: ItemValues, lines: TemplateLines) -> SparseRows:
        """The binary matrix [N, P] plus the entries of the real-valued lines of ``lines``."""
        if not lines.real:
            return binary
        table, salt = values.table, self._dictionary.salt
        columns = self._dictionary.lookup(utf8_hashes([predicate.name for predicate in lines.real], salt))
        rows, entry_columns, numbers_at = [], [], []
        for predicate, column in zip(lines.real, columns.tolist()):
            if predicate.multi_valued:  # an embedding: a predicate per dimension
                lists = values.lists(predicate.observations[0])
                keys = np.full(len(lists.names), utf8_hashes([predicate.name], salt)[0], dtype=np.uint64)
                kernel.chain_keys(keys, utf8_hashes(lists.names, salt))
                entry_column = self._dictionary.lookup(keys)[lists.codes]
                known = entry_column >= 0
                rows.append(np.repeat(np.arange(table.num_tokens), lists.counts)[known])
                entry_columns.append(entry_column[known])
                numbers_at.append(cast(np.ndarray, lists.numbers)[known])
                continue
            if column < 0:
                continue
            numbers = table.numbers(predicate.observations[0])
            nonzero = np.flatnonzero(numbers)
            rows.append(nonzero)
            entry_columns.append(np.full(len(nonzero), column, dtype=np.int64))
            numbers_at.append(numbers[nonzero])
        if not rows:
            return binary
        return binary.with_entries(np.concatenate(rows), np.concatenate(entry_columns), np.concatenate(numbers_at))

    def _reading_lines(self, column: str) -> tuple[list[int], list[int]]:
        """(the template's lines that do not read ``column``, those that do), checked
        to vary it at offset 0 in single values only (TemplateError otherwise); made
        once per template object and column."""
        template = self.parsed_template()
        kept = self.__dict__.setdefault("_kept_reading_lines", {}).get(column)
        if kept is None or kept[0] is not template:
            kept = self._kept_reading_lines[column] = (template, self._split_reading_lines(template, column))
        return kept[1]

    @staticmethod
    def _split_reading_lines(template: Template, column: str) -> tuple[list[int], list[int]]:
        """:meth:`_reading_lines` of ``template``, made."""
        predicates = template.predicates
        offsets = sorted(
            {
                observation.offset
                for predicate in predicates
                for observation in predicate.observations
                if observation.column == column
            }
            - {0}
        )
        if offsets:
            raise TemplateError(
                f"the template reads column {column!r} at offsets "
                f"{', '.join(f'{offset:+d}' for offset in offsets)}; its values can be "
                "varied at offset 0 only"
            )
        numeric = [
            predicate.name
            for predicate in predicates
            if predicate.real_valued and predicate.observations[0].column == column
        ]
        if numeric:
            raise TemplateError(
                f"the template reads column {column!r} as a number ({', '.join(numeric)}); "
                "its values can be varied only in binary predicates"
            )
        lists = [
            predicate.name
            for predicate in predicates
            if predicate.multi_valued and any(observation.column == column for observation in predicate.observations)
        ]
        if lists:
            raise TemplateError(
                f"the template reads column {column!r} in value lists ({', '.join(lists)}); "
                "its values can be varied only in single-valued items"
            )
        reads = [
            any(observation.column == column for observation in predicate.observations) for predicate in predicates
        ]
        return [i for i, read in enumerate(reads) if not read], [i for i, read in enumerate(reads) if read]

    def _csr(self, columns: np.ndarray) -> SparseRows:
        """The binary matrix of per-template predicate columns int [N, templates] (-1: none)."""
        return self._binary(*column_rows(columns))  # canonical CSR: ascending predicates in each row

    def _binary(self, indptr: np.ndarray, indices: np.ndarray) -> SparseRows:
        """The binary matrix [N, P] of rows indptr int [N + 1] over columns indices int [nnz]."""
        return SparseRows.binary(indptr, indices, (len(indptr) - 1, len(self._dictionary.keys)))

    def _lines(self, chosen: Sequence[int] | None = None) -> TemplateLines:
        """The :class:`TemplateLines` of the template's lines ``chosen`` (all by default),
        made once per template object and lines."""
        template = self.parsed_template()
        key = None if chosen is None else tuple(chosen)
        kept = self.__dict__.setdefault("_kept_lines", {}).get(key)
        if kept is None or kept[0] is not template:
            kept = self._kept_lines[key] = (template, TemplateLines(template, chosen))
        return kept[1]

    def window_rows(self) -> WindowRows | None:
        """The :class:`~fstcrf.features.window_rows.WindowRows` of the whole template when
        every line reads single values of the sentences' columns (no value lists,
        numbers or derived columns), so that the kernel can look a batch's rows up
        from its columns' value hashes; None otherwise.  Made once per fitted
        dictionary and template."""
        self._check_fitted()
        template = self.parsed_template()
        kept = self.__dict__.get("_window_rows")
        if kept is None or kept[0] is not self._dictionary or kept[1] is not template:
            lines = self._lines()
            simple = not (lines.lists or lines.real or seen_entities.COLUMN in lines.columns)
            rows = WindowRows(self._dictionary, template, lines.binary) if simple else None
            kept = self._window_rows = (self._dictionary, template, rows)
        return kept[2]

    def value_list_rows(self) -> ValueListRows | None:
        """The :class:`~fstcrf.features.value_list_rows.ValueListRows` of the whole
        template when its lines read value lists, each item one the value store
        computes, and none is real-valued, so that the kernel can tag a batch from its
        store rows (:meth:`list_inputs`); None otherwise.  Made once per fitted
        dictionary and template."""
        self._check_fitted()
        template = self.parsed_template()
        kept = self.__dict__.get("_value_list_rows")
        if kept is None or kept[0] is not self._dictionary or kept[1] is not template:
            lines = self._lines()
            plan = self._dictionary.plan(template, lines.binary, lists=True) if lines.lists else None
            taken = plan is not None and not lines.real and not cast(ItemPlan, plan.values).named
            rows = ValueListRows(self._dictionary, template, lines.binary) if taken else None
            kept = self._value_list_rows = (self._dictionary, template, rows)
        return kept[2]

    def list_inputs(self, corpus: Corpus | Sequence[Sentence]) -> ListInputs:
        """What the kernel reads of ``corpus`` to tag it on :meth:`value_list_rows` (not
        None): its token table's store rows (the token table's typed errors for a
        missing column or a value that is not a string)."""
        rows = cast(ValueListRows, self.value_list_rows())
        return rows.inputs(self._token_table(corpus), self._resources)

    def _hashed_matrix(self, values: ItemValues, templates: Sequence[int] | None = None) -> SparseRows:
        """The predicate matrix [N, P] of the templates listed (all by default)."""
        lines = self._lines(templates)
        template = self.parsed_template()
        if lines.lists:
            rows = self._dictionary.list_rows(values, template, lines.binary)
        else:
            rows = self._dictionary.rows(values.table, template, lines.binary)
        return self._with_numbers(self._binary(*rows), values, lines)

    def fit(self, corpus: Corpus | Sequence[Sentence]) -> FeatureExtractor:
        """Build the predicate dictionary from a corpus or a list of sentences."""
        values, occurrences = self.occurrences(corpus)
        self._learn(occurrences, values.resources)
        return self

    def transform(self, corpus: Corpus | Sequence[Sentence]):
        """The predicate matrix [num_tokens, num_predicates] as a scipy.sparse.csr_matrix;
        unknown predicates are dropped."""
        return self.transform_rows(corpus).to_scipy()

    def transform_rows(self, corpus: Corpus | Sequence[Sentence]) -> SparseRows:
        """:meth:`transform`'s matrix as :class:`SparseRows` (without importing scipy)."""
        self._check_fitted()
        return self._hashed_matrix(ItemValues(self._token_table(corpus), self._resources))

    def transform_reading(
        self, corpus: Corpus | Sequence[Sentence], column: str, values: Sequence[str]
    ) -> tuple[SparseRows, SparseRows, np.ndarray]:
        """The predicate matrices of a corpus whose ``column`` is not known but may take
        each of ``values`` (a lower tagger's K labels) at each token.

        Returns the matrix of the predicates that do not read ``column`` [N, P];
        the matrix of those that do [N * K, M], row n * K + k for token n with
        ``column`` = values[k] there, over the M predicates that read one of
        ``values``; and their columns int64 [M] in the full matrix: the predicates
        met in this corpus, in the full matrix's order.  Within a row the entries
        follow the full matrix's column order, so that sums over a row run in the
        same order as over the full matrix.  The template may
        read ``column`` at offset 0 only (TemplateError otherwise)."""
        base, full = self.transform_reading_rows(corpus, column, values)
        return (base, *met_columns(full))

    def transform_reading_rows(
        self, corpus: Corpus | Sequence[Sentence], column: str, values: Sequence[str]
    ) -> tuple[SparseRows, SparseRows]:
        """:meth:`transform_reading`'s matrices, the second over the full matrix's P
        columns [N * K, P] (what a few sentences' scores read as they are)."""
        self._check_fitted()
        others, readers = self._reading_lines(column)
        table = self._token_table(list(corpus))  # ``column`` itself may be missing (a list is not checked)
        base = self._hashed_matrix(ItemValues(table, self._resources), others)
        rows = self._dictionary.reading_rows(table, self.parsed_template(), readers, column, values)
        return base, self._binary(*rows)

    def fit_transform(self, corpus: Corpus | Sequence[Sentence]):
        """``fit`` then ``transform`` on the same corpus, extracting the observations once
        (a scipy.sparse.csr_matrix [num_tokens, num_predicates])."""
        return self.fit_transform_rows(corpus).to_scipy()

    def fit_transform_rows(self, corpus: Corpus | Sequence[Sentence]) -> SparseRows:
        """:meth:`fit_transform`'s matrix as :class:`SparseRows`."""
        values, occurrences = self.occurrences(corpus)
        return self._matrix(values, occurrences, self._learn(occurrences, values.resources))

    def to_dict(self) -> dict:
        """Plain JSON-able data: the template text, min_count and the predicate names."""
        self._check_fitted()
        return {
            "template": self.parsed_template().text,
            "min_count": int(self.min_count),
            "predicates": list(self.predicate_names_),
        }

    @classmethod
    def from_dict(cls, data: dict) -> FeatureExtractor:
        """A fitted extractor from :meth:`to_dict` data; bad data raises ModelFileError."""
        if not isinstance(data, dict) or not {"template", "min_count", "predicates"} <= set(data):
            raise ModelFileError("feature extractor data must be a dict with template, min_count and predicates")
        names = data["predicates"]
        if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
            raise ModelFileError("feature extractor data has fields of the wrong type")
        if len(set(names)) != len(names):
            raise ModelFileError("feature extractor predicate names repeat")
        extractor = cls._unfitted(data)
        try:
            dictionary = HashedDictionary.fit(
                functools.partial(predicate_keys, extractor.parsed_template(), names), len(names)
            )
        except TemplateError as error:
            raise ModelFileError(f"feature extractor data is inconsistent: {error}") from None
        extractor._set_dictionary(list(names), None, dictionary)
        return extractor

    @classmethod
    def _unfitted(cls, data: dict) -> FeatureExtractor:
        """An extractor of the template and min_count in ``data``; ModelFileError if they are bad."""
        template_text, min_count = data["template"], data["min_count"]
        if not isinstance(template_text, str) or not isinstance(min_count, int) or isinstance(min_count, bool):
            raise ModelFileError("feature extractor data has fields of the wrong type")
        try:
            template = parse_template(template_text, "<model file>")
        except TemplateError as error:
            raise ModelFileError(f"feature extractor template is corrupt: {error}") from None
        return cls(template, min_count)

    def subset(self, keep: np.ndarray) -> FeatureExtractor:
        """A fitted extractor of the predicates ``keep`` bool [P] selects, in their
        order (their columns renumbered 0 .., the keys and salt unchanged)."""
        self._check_fitted()
        names = self.predicate_names_
        extractor = type(self)(self.template, self.min_count)
        extractor._set_dictionary(
            [names[i] for i in np.flatnonzero(keep).tolist()],
            None,
            HashedDictionary(self._dictionary.keys[keep], self._dictionary.salt),
            self._resources,
        )
        return extractor

    def to_payload(self) -> tuple[dict, dict[str, np.ndarray]]:
        """JSON-able data (template text, min_count, salt) and flat arrays: the key
        of each predicate uint64 [P] ("keys"), and their names as one UTF-8 text
        uint8 [bytes] ("names") split at character offsets int64 [P + 1] ("name_offsets")."""
        self._check_fitted()
        if self._packed_names is None:
            self._packed_names = pack_names(cast("list[str]", self._names))
        text, offsets = self._packed_names
        data = {
            "template": self.parsed_template().text,
            "min_count": int(self.min_count),
            "salt": self._dictionary.salt,
        }
        names = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
        arrays = {"keys": self._dictionary.keys, "names": names, "name_offsets": offsets}
        if self._resources.files or self._resources.seen or self._resources.entities is not None:
            data["resources"], resource_arrays = self._resources.to_payload()
            arrays.update(resource_arrays)
        return data, arrays

    @classmethod
    def from_payload(cls, data: dict, arrays: dict[str, np.ndarray]) -> FeatureExtractor:
        """A fitted extractor from :meth:`to_payload` output without building a
        Python object per predicate (the names are decoded on first use);
        inconsistent data raises ModelFileError."""
        if not isinstance(data, dict) or not {"template", "min_count", "salt"} <= set(data):
            raise ModelFileError("feature extractor data must be a dict with template, min_count and salt")
        extractor = cls._unfitted(data)
        salt = data["salt"]
        keys, names, offsets = (arrays.get(name) for name in ("keys", "names", "name_offsets"))
        if not isinstance(salt, int) or isinstance(salt, bool) or not 0 <= salt < 2**64:
            raise ModelFileError(f"feature extractor salt {salt!r} is not a 64-bit unsigned integer")
        if (
            keys is None
            or keys.dtype != np.uint64
            or names is None
            or names.dtype != np.uint8
            or offsets is None
            or offsets.dtype != np.int64
            or len(offsets) != len(keys) + 1
        ):
            raise ModelFileError(
                "feature extractor arrays keys, names and name_offsets are missing or do not fit together"
            )
        try:
            text = names.tobytes().decode("utf-8", "surrogatepass")
        except UnicodeDecodeError as error:
            raise ModelFileError(f"feature extractor names are not UTF-8: {error}") from None
        if offsets[0] != 0 or offsets[-1] != len(text) or np.any(np.diff(offsets) < 0):
            raise ModelFileError("feature extractor name offsets do not split the names")
        try:
            dictionary = HashedDictionary(keys, salt)
        except HashCollisionError as error:
            raise ModelFileError(f"feature extractor dictionary is corrupt: {error}") from None
        extractor._set_dictionary(
            None, (text, offsets), dictionary, Resources.from_payload(data.get("resources"), arrays)
        )
        return extractor
