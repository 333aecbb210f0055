"""Feature scoring (csrc/fstcrf_features.h), hashing (csrc/fstcrf_hashing.h) and token
dicts (the extension ``fstcrf._attributes``)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import fstcrf._attributes as attributes_extension
from fstcrf._kernel import ffi, lib
from fstcrf.engine.kernel.buffers import (
    KernelBuffers,
    check_status,
    input_pointer,
    optional_input,
    optional_output,
    output_pointer,
)
from fstcrf.engine.kernel.chain import Graph, Scores, Workspace
from fstcrf.errors import ShapeError

#: The place of a predicate in a compact layout whose counts go straight to the [F]
#: counts (FeatureDictionary.compact_layout, ff_accumulate_at's FF_DIRECT).
DIRECT: int = lib.FF_DIRECT


# -- feature scoring (csrc/fstcrf_features.h) ---------------------------------


class PredicateRows(KernelBuffers):
    """The predicate rows of N tokens in CSR form, cut into ff_tokens blocks by
    :meth:`tokens`: indptr int64 [N+1], indices int32 [nnz], and values float [nnz]
    or None when every value is 1 (the loops then read no values)."""

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, values: np.ndarray | None):
        super().__init__()
        self._indptr = self.pin(indptr)
        self._indices = self.pin(indices)
        self._values = ffi.NULL if values is None else self.pin(values)

    def tokens(self, first: int, last: int) -> Tokens:
        """The ff_tokens of rows first .. last-1."""
        return Tokens(self, first, last)


class Tokens:
    """ff_tokens: rows first .. last-1 of a :class:`PredicateRows`, which it keeps alive."""

    def __init__(self, rows: PredicateRows, first: int, last: int):
        self.rows = rows
        self.num_tokens = last - first
        tokens = self.struct = ffi.new("ff_tokens *")
        tokens.num_tokens = self.num_tokens
        tokens.indptr = rows._indptr + first
        tokens.indices = rows._indices
        tokens.values = rows._values


class FeatureDictionary(KernelBuffers):
    """ff_dictionary: the features of predicate p are ptr[p] .. ptr[p+1]-1 (int64
    [P+1]), feature f pairing it with output[f] (int32 [F]), state s or label S + c;
    state s has label state_label[s] (int32 [S]) of num_labels (0 in order 1)."""

    def __init__(self, state_label: np.ndarray, num_labels: int, ptr: np.ndarray, output: np.ndarray):
        super().__init__()
        dictionary = self.struct = ffi.new("ff_dictionary *")
        dictionary.num_states = len(state_label)
        dictionary.num_labels = num_labels
        dictionary.state_label = self.pin(state_label)
        dictionary.num_predicates = len(ptr) - 1
        dictionary.ptr = self.pin(ptr)
        self._ptr_array = ptr
        dictionary.output = self.pin(output)
        #: Whether every predicate's outputs ascend (the loops then take their fast path).
        self.outputs_ascending = bool(lib.ff_outputs_ascending(dictionary))
        dictionary.outputs_ascending = self.outputs_ascending
        self._work_size = int(lib.ff_work_doubles(dictionary))

    def emissions(self, tokens: Tokens, theta: np.ndarray, scale: float, emit: np.ndarray) -> None:
        """ff_emissions: emit float [n, S] = scale * the state scores of the tokens under
        feature weights theta float [F] (ShapeError for another shape of emit)."""
        if emit.shape != (tokens.num_tokens, self.struct.num_states):
            raise ShapeError(f"emit has shape {emit.shape}, expected ({tokens.num_tokens}, {self.struct.num_states})")
        status = lib.ff_emissions(
            self.struct,
            tokens.struct,
            input_pointer(theta),
            scale,
            output_pointer(emit),
            output_pointer(np.empty(self._work_size)),
        )
        check_status(status, "ff_emissions")

    def best_paths(
        self,
        tokens: Tokens,
        theta: np.ndarray,
        graph: Graph,
        scores: Scores,
        offsets: np.ndarray,
        token_class: np.ndarray | None,
        emit: np.ndarray,
        workspace: Workspace,
        path: np.ndarray,
        score: np.ndarray,
    ) -> None:
        """ft_best_paths: the best state path int32 [n] and its score float [b] of each
        sentence of the tokens (offsets int64 [b+1] from 0, token classes int32 [n] or
        None), emit float [n, S] their state scores under theta float [F], on the
        model's graph; InfeasibleError if a sentence has no path."""
        if emit.shape != (tokens.num_tokens, self.struct.num_states):
            raise ShapeError(f"emit has shape {emit.shape}, expected ({tokens.num_tokens}, {self.struct.num_states})")
        status = lib.ft_best_paths(
            self.struct,
            tokens.struct,
            input_pointer(theta),
            graph.struct,
            scores.struct,
            len(offsets) - 1,
            input_pointer(offsets),
            optional_input(token_class),
            output_pointer(emit),
            output_pointer(np.empty(self._work_size)),
            workspace.struct,
            output_pointer(path),
            output_pointer(score),
        )
        check_status(status, "ft_best_paths")

    def accumulate(
        self,
        tokens: Tokens,
        marginals: np.ndarray,
        scale: float,
        out: np.ndarray,
        at: np.ndarray | None = None,
        direct: np.ndarray | None = None,
    ) -> None:
        """ff_accumulate_at: add scale * the expected feature counts under state marginals
        float [n, S] to out float [F], or to out laid out by ``at`` int64 [P] (see
        :meth:`compact_layout`), the predicates marked DIRECT there to direct float [F]
        (RuntimeError, nothing written, if a token's predicate has no place in it;
        ShapeError for marginals of another shape, or an out or direct of another length
        than F where it takes every feature)."""
        F = int(self._ptr_array[-1])
        if (
            marginals.shape != (tokens.num_tokens, self.struct.num_states)
            or (at is None and len(out) != F)
            or (direct is not None and len(direct) != F)
        ):
            raise ShapeError("accumulate: the marginals or counts do not fit the tokens or the dictionary")
        status = lib.ff_accumulate_at(
            self.struct,
            tokens.struct,
            input_pointer(marginals),
            scale,
            optional_input(at),
            output_pointer(out),
            optional_output(direct),
            output_pointer(np.empty(self._work_size)),
        )
        check_status(status, "ff_accumulate_at")

    def compact_layout(self, used: np.ndarray, direct: np.ndarray | None = None) -> tuple[np.ndarray, int]:
        """(at int64 [P], size): a buffer of ``size`` counts holding the features of the
        predicates marked in used bool [P] only, predicate p's from at[p] (-1 where
        unused; see ``ff_accumulate_at``), except those also marked in direct bool [P]:
        at[p] is DIRECT there, and their counts go straight to the [F] counts (for a
        thread that alone writes them)."""
        lengths = np.diff(self._ptr_array)
        at = np.full(len(lengths), -1, dtype=np.int64)
        buffered = used if direct is None else used & ~direct
        kept = lengths[buffered]
        at[buffered] = np.cumsum(kept) - kept
        if direct is not None:
            at[used & direct] = DIRECT
        return at, int(kept.sum())

    def add_compact(self, at: np.ndarray, counts: np.ndarray, out: np.ndarray) -> None:
        """ff_add_rows_at: out float [F] += counts float [size] laid out by ``at`` (from
        :meth:`compact_layout`)."""
        lengths = np.diff(self._ptr_array)
        used = at >= 0
        if (
            at.shape != lengths.shape
            or at.dtype != np.int64
            or len(out) != self._ptr_array[-1]
            or (used.any() and int((at[used] + lengths[used]).max()) > len(counts))
        ):
            raise ShapeError("add_compact: the layout does not fit the counts or the dictionary")
        lib.ff_add_rows_at(self.struct, input_pointer(at), input_pointer(counts), output_pointer(out))

    def add_paths(
        self, tokens: Tokens, plus: np.ndarray, minus: np.ndarray | None, scale: float, out: np.ndarray
    ) -> None:
        """ff_add_paths: add scale * (the feature counts along state path plus int32 [n],
        minus those along minus int32 [n] if given) to out float [F] (ShapeError for
        other shapes)."""
        n = tokens.num_tokens
        if plus.shape != (n,) or (minus is not None and minus.shape != (n,)) or len(out) != self._ptr_array[-1]:
            raise ShapeError("add_paths: the paths or counts do not fit the tokens or the dictionary")
        status = lib.ff_add_paths(
            self.struct, tokens.struct, input_pointer(plus), optional_input(minus), scale, output_pointer(out)
        )
        check_status(status, "ff_add_paths")


# -- hashing (csrc/fstcrf_hashing.h) -------------------------------------------
# A key table is slots uint64 [2 * capacity], capacity a power of two (the layout
# is in the header).


def checksum(data: np.ndarray, digest: np.ndarray) -> None:
    """fh_checksum: digest uint64 [4] = the four lanes of the checksum of bytes uint8 [n]."""
    lib.fh_checksum(input_pointer(data), len(data), output_pointer(digest))


def string_hashes(blob: np.ndarray, offsets: np.ndarray, salt: int, hashes: np.ndarray) -> None:
    """fh_string_hashes: hashes uint64 [n] of the n strings blob[offsets[i] ..
    offsets[i+1]-1] (blob uint8 [offsets[n]], offsets int64 [n+1]) under ``salt``."""
    lib.fh_string_hashes(input_pointer(blob), input_pointer(offsets), len(hashes), salt, output_pointer(hashes))


def line_hashes(text: bytes, salt: int, hashes: np.ndarray) -> bool:
    """fh_line_hashes: hashes (uint64, C-contiguous, n entries) of the n lines of
    ``text`` (joined by newlines), as :func:`string_hashes` hashes them; False, having
    written nothing, unless the text holds n lines."""
    return lib.fh_line_hashes(text, len(text), hashes.size, salt, output_pointer(hashes)) == lib.FC_OK


#: The kinds of substring_hashes: prefixes, suffixes or n-grams, by name.
SUBSTRING_KINDS = {"prefixes": lib.FH_PREFIXES, "suffixes": lib.FH_SUFFIXES, "ngrams": lib.FH_SUBSTRINGS}
#: The longest string substring_hashes takes, in code points.
MAX_SUBSTRING_SOURCE = lib.FH_MAX_CODE_POINTS


def substring_hashes(
    blob: np.ndarray,
    offsets: np.ndarray,
    kind: str,
    low: int,
    high: int,
    salt: int,
    ptr: np.ndarray,
    hashes: np.ndarray,
) -> None:
    """fh_substring_hashes: the hashes of the distinct prefixes, suffixes or n-grams
    (``kind`` of SUBSTRING_KINDS) of lengths low..high of the n strings of blob uint8
    (offsets int64 [n+1], each string at most MAX_SUBSTRING_SOURCE code points):
    string i's are hashes[ptr[i] .. ptr[i+1]-1] (ptr int64 [n+1], hashes uint64
    [capacity], both written)."""
    status = lib.fh_substring_hashes(
        input_pointer(blob),
        input_pointer(offsets),
        len(offsets) - 1,
        SUBSTRING_KINDS[kind],
        low,
        high,
        salt,
        len(hashes),
        output_pointer(ptr),
        output_pointer(hashes),
    )
    check_status(status, "substring hashes")


#: The transforms of StoreWriter, by name (prefix and suffix take a length).
TRANSFORM_KINDS = {
    "lower": lib.FH_LOWER,
    "shape": lib.FH_SHAPE,
    "longshape": lib.FH_LONG_SHAPE,
    "shape2": lib.FH_SHAPE2,
    "prefix": lib.FH_PREFIX,
    "suffix": lib.FH_SUFFIX,
}
#: The transform of StoreWriter that keeps a string as it is.
IDENTITY = lib.FH_IDENTITY


#: The fields of a table of StoreWriter (csrc/fstcrf_hashing.h).
STORE_FIELDS = lib.FH_STORE_FIELDS
#: The categories of a table of StoreWriter, by name.
STORE_CATEGORIES = {
    "single": lib.FH_STORE_SINGLE,
    "list": lib.FH_STORE_LIST,
    "text": lib.FH_STORE_TEXT,
    "seen": lib.FH_STORE_SEEN,
}


class StoreWriter:
    """fh_store_values for one value store, which calls it under its lock: what the
    store keeps of new strings, written into its arrays.  The pointer of each array is
    made at the first call that gives it (an array the store replaces gets its own),
    not at every call."""

    def __init__(self) -> None:
        self.written = np.zeros(2, dtype=np.int64)
        self._pointers: dict[str, tuple[np.ndarray, object]] = {"written": (self.written, output_pointer(self.written))}

    def _pointer(self, role: str, array: np.ndarray, made: Callable = output_pointer):
        """The pointer of ``array`` given as ``role``, made by ``made`` unless it is the
        array given last in that role."""
        held = self._pointers.get(role)
        if held is None or held[0] is not array:
            held = self._pointers[role] = (array, made(array))
        return held[1]

    def __call__(
        self,
        text: bytes,
        count: int,
        tables: np.ndarray,
        salt: int,
        first: int,
        single: np.ndarray,
        list_span: np.ndarray,
        list_base: int,
        list_hashes: np.ndarray,
        text_span: np.ndarray,
        text_base: int,
        text_bytes: np.ndarray,
        seen: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> tuple[int, int] | None:
        """What the store keeps of the ``count`` strings of ``text`` (each but the last
        followed by a newline; ASCII but backslash, bar and underscore), written at
        columns first .. first+count-1 of its arrays: for each table of tables int64 [J,
        STORE_FIELDS] (category of STORE_CATEGORIES, transform kind and length of
        TRANSFORM_KINDS or IDENTITY, marked, kind of SUBSTRING_KINDS, low, high, place),
        the hash of each string's transform into single uint64 [R, stride], the hashes of
        its substrings into list_hashes uint64 from list_base on (spans into list_span
        int64 [R', stride, 2]), or its bytes into text_bytes uint8 from text_base on
        likewise, or for a seen table (into single) marks[0] where the table of
        ``seen`` = (slots uint64 [2 * capacity] of :func:`build_table`, marks uint64 [2])
        holds the hash of its transform lower-cased, else marks[1]; (list hashes, text
        bytes) written, or None where the kernel does not take a string, there are not
        ``count`` of them, a seen table has no ``seen`` or a buffer has no room."""
        stride = single.shape[1]
        if (
            tables.ndim != 2
            or tables.shape[1] != STORE_FIELDS
            or single.ndim != 2
            or list_span.shape[1:] != (stride, 2)
            or text_span.shape[1:] != (stride, 2)
        ):
            raise ShapeError("StoreWriter: the tables or the store's arrays do not fit")
        if seen is None:
            seen_capacity, seen_slots, seen_marks = 0, ffi.NULL, ffi.NULL
        else:
            slots, marks = seen
            if len(slots) % 2 or marks.shape != (2,):
                raise ShapeError("StoreWriter: a seen table is slots [2 * capacity] and two marks")
            seen_capacity = len(slots) // 2
            seen_slots, seen_marks = (
                self._pointer("seen_slots", slots, input_pointer),
                self._pointer("seen_marks", marks, input_pointer),
            )
        status = lib.fh_store_values(
            text,
            len(text),
            count,
            salt,
            len(tables),
            self._pointer("tables", tables, input_pointer),
            first,
            stride,
            single.shape[0],
            self._pointer("single", single),
            list_span.shape[0],
            self._pointer("list_span", list_span),
            list_base,
            len(list_hashes),
            self._pointer("list_hashes", list_hashes),
            text_span.shape[0],
            self._pointer("text_span", text_span),
            text_base,
            len(text_bytes),
            self._pointer("text_bytes", text_bytes),
            seen_capacity,
            seen_slots,
            seen_marks,
            self._pointers["written"][1],
        )
        if status != lib.FC_OK:
            return None
        list_written, text_written = self.written.tolist()
        return list_written, text_written


def chain_keys(keys: np.ndarray, values: np.ndarray) -> None:
    """fh_chain: keys uint64 [n] <- mix(keys ^ values) with values uint64 [n], in place."""
    lib.fh_chain(output_pointer(keys), input_pointer(values), len(keys))


def build_table(keys: np.ndarray, slots: np.ndarray, what: str) -> None:
    """fh_build_table: fill the table ``slots`` with keys uint64 [n] -> their columns;
    HashCollisionError naming ``what`` (the keys) if two are equal."""
    check_status(lib.fh_build_table(input_pointer(keys), len(keys), len(slots) // 2, output_pointer(slots)), what)


def key_table(keys: np.ndarray, what: str) -> np.ndarray:
    """The slots uint64 [2 * capacity] of a table of keys uint64 [n] -> their columns
    (:func:`build_table`), its capacity a power of two at least 4/3 of n (a load
    factor of at most 3/4); HashCollisionError naming ``what`` if two keys are equal."""
    capacity = 1 << max(4, int(4 * len(keys) // 3).bit_length())
    slots = np.empty(2 * capacity, dtype=np.uint64)
    build_table(keys, slots, what)
    return slots


def lookup(keys: np.ndarray, slots: np.ndarray, columns: np.ndarray) -> None:
    """fh_lookup: columns int64 [n] = the column of each key uint64 [n] in the table, -1 if none."""
    lib.fh_lookup(input_pointer(keys), len(keys), len(slots) // 2, input_pointer(slots), output_pointer(columns))


def factorize(keys: np.ndarray, slots: np.ndarray, codes: np.ndarray, first: np.ndarray, counts: np.ndarray) -> int:
    """fh_factorize: K, the number of distinct keys uint64 [n]; codes int64 [n] numbers
    the keys by first occurrence, first and counts int64 [n] hold in their first K
    entries where each code first occurs and how often; ``slots`` is scratch."""
    return lib.fh_factorize(
        input_pointer(keys),
        len(keys),
        len(slots) // 2,
        output_pointer(slots),
        output_pointer(codes),
        output_pointer(first),
        output_pointer(counts),
    )


def canonical_rows(
    starts: np.ndarray, columns: np.ndarray, values: np.ndarray, width: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """ff_canonical_rows: (indptr int64 [N+1], indices int32 [nnz], data float [nnz], or
    None when every value is 1) of the rows of entries columns int64 [M] (in [0,
    width)) with values float [M], row t being entries starts[t] .. starts[t+1]-1
    (int64 [N+1]): columns ascending in each row, a repeated column's values added in
    order, zeros dropped."""
    indptr = np.empty(len(starts), dtype=np.int64)
    indices = np.empty(len(columns), dtype=np.int32)
    data = np.empty(len(columns), dtype=np.float64)
    ones = ffi.new("int32_t *")
    status = lib.ff_canonical_rows(
        len(starts) - 1,
        input_pointer(starts),
        input_pointer(columns),
        input_pointer(values),
        width,
        ffi.from_buffer("int64_t[]", indptr),  # the outputs, made here, need no checking
        ffi.from_buffer("int32_t[]", indices),
        ffi.from_buffer("double[]", data),
        ones,
    )
    check_status(status, "ff_canonical_rows")
    nnz = int(indptr[-1])
    return indptr, indices[:nnz], None if ones[0] else data[:nnz]


def window_hashes(
    sentence_offsets: np.ndarray,
    sources: np.ndarray,
    source: np.ndarray,
    offset: np.ndarray,
    salt: int,
    out: np.ndarray,
) -> None:
    """fh_window_hashes: out uint64 [J, N], the value hash of observation j at each token:
    row source[j] (int32 [J]) of sources uint64 [G, N] at offset[j] (int64 [J]) from the
    token within its sentence (sentence_offsets int64 [B+1]), a boundary value's hash
    past either end."""
    status = lib.fh_window_hashes(
        sources.shape[1],
        len(sentence_offsets) - 1,
        input_pointer(sentence_offsets),
        len(sources),
        input_pointer(sources),
        len(source),
        input_pointer(source),
        input_pointer(offset),
        salt,
        output_pointer(out),
    )
    check_status(status, "fh_window_hashes")


#: The kinds of item_values' items (csrc/fstcrf_values.h), by name.
ITEM_KINDS = {"single": lib.FV_SINGLE, "list": lib.FV_LIST, "bag": lib.FV_BAG, "types": lib.FV_TYPES}
#: The fields of an item of item_values: kind, column, table, low, high, masked.
ITEM_FIELDS: int = lib.FV_FIELDS


def item_values(
    sentence_offsets: np.ndarray,
    token_rows: np.ndarray,
    num_rows: int,
    single: np.ndarray,
    list_span: np.ndarray,
    list_hashes: np.ndarray,
    text_span: np.ndarray,
    text_bytes: np.ndarray,
    items: np.ndarray,
    mask: np.ndarray | None,
    salt: int,
    value_ptr: np.ndarray,
    hashes: np.ndarray,
) -> int | None:
    """fv_item_values: the value hashes of J items (items int64 [J, ITEM_FIELDS]) at the
    N tokens of sentences cut by sentence_offsets int64 [B+1], read from a store's tables
    (single uint64 [Ts, stride], list_span int64 [Tl, stride, 2] into list_hashes uint64,
    text_span int64 [Tx, stride, 2] into text_bytes uint8, rows 0 .. num_rows-1 filled)
    at the store row of each token's value of each column, token_rows int64 [C, N];
    masked items only where mask uint8 [N] is set.  Item j's values at token t are
    hashes[value_ptr[j, t] .. value_ptr[j, t+1]-1] (int64 [J, N+1]).  Returns None
    when they fit in hashes uint64, else the room they need (nothing written)."""
    stride = single.shape[1]
    if list_span.shape[1:] != (stride, 2) or text_span.shape[1:] != (stride, 2) or token_rows.ndim != 2:
        raise ShapeError("item_values: the store's tables do not share one row stride")
    num_tokens = token_rows.shape[1]
    if (
        items.shape[1:] != (ITEM_FIELDS,)
        or value_ptr.shape != (len(items), num_tokens + 1)
        or (mask is not None and mask.shape != (num_tokens,))
    ):
        raise ShapeError("item_values: items, value_ptr or mask do not fit the tokens")
    needed = ffi.new("int64_t *")
    status = lib.fv_item_values(
        token_rows.shape[1],
        len(sentence_offsets) - 1,
        input_pointer(sentence_offsets),
        len(token_rows),
        input_pointer(token_rows),
        num_rows,
        stride,
        len(single),
        input_pointer(single),
        len(list_span),
        input_pointer(list_span),
        len(list_hashes),
        input_pointer(list_hashes),
        len(text_span),
        input_pointer(text_span),
        len(text_bytes),
        input_pointer(text_bytes),
        len(items),
        input_pointer(items),
        optional_input(mask),
        salt,
        output_pointer(value_ptr),
        len(hashes),
        output_pointer(hashes),
        needed,
    )
    if status == lib.FV_SHORT:
        return int(needed[0])
    check_status(status, "fv_item_values")
    return None


def predicate_rows(
    value_hashes: np.ndarray,
    seeds: np.ndarray,
    item_ptr: np.ndarray,
    items: np.ndarray,
    slots: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
) -> None:
    """fh_predicate_rows: the known predicates of N tokens in CSR form, indptr int64
    [N+1] and the first indptr[N] entries of indices int32 [N * T], each row's columns
    ascending.  Template k, of key seed seeds[k] (uint64 [T]), reads the observations
    items[item_ptr[k] .. item_ptr[k+1]-1] (int32 [T+1], int32 [I]), whose value hash
    at token t is value_hashes[j, t] (uint64 [J, N])."""
    status = lib.fh_predicate_rows(
        value_hashes.shape[1],
        len(value_hashes),
        input_pointer(value_hashes),
        len(seeds),
        input_pointer(seeds),
        input_pointer(item_ptr),
        input_pointer(items),
        len(slots) // 2,
        input_pointer(slots),
        output_pointer(np.empty((lib.FH_BLOCK, len(seeds)), dtype=np.int32)),
        output_pointer(indptr),
        output_pointer(indices),
    )
    check_status(status, "fh_predicate_rows")


class ReadingLines(KernelBuffers):
    """Lines that read a column's value at the token, under each of its K values, as
    fh_reading_rows reads them, checked and pinned once: line r, of key seed seeds[r]
    (uint64 [R]), reads the observations items[item_ptr[r] .. item_ptr[r+1]-1] (int32
    [R+1], int32 [I]): j < J (``num_observations``) the value hash of observation j at
    the token, else read_hashes[j - J, k] (uint64 [V, K]) under value k; the keys are
    looked up in ``slots`` (uint64 [2 * capacity]).  ShapeError for arrays that do not
    fit together."""

    def __init__(
        self,
        num_observations: int,
        read_hashes: np.ndarray,
        seeds: np.ndarray,
        item_ptr: np.ndarray,
        items: np.ndarray,
        slots: np.ndarray,
    ):
        super().__init__()
        num_read = read_hashes.shape[0] if read_hashes.ndim == 2 else 0
        if (
            read_hashes.ndim != 2
            or read_hashes.dtype != np.uint64
            or seeds.dtype != np.uint64
            or item_ptr.dtype != np.int32
            or items.dtype != np.int32
            or item_ptr.shape != (len(seeds) + 1,)
            or item_ptr[0] != 0
            or item_ptr[-1] != len(items)
            or np.any(np.diff(item_ptr) < 0)
            or (len(items) and (items.min() < 0 or items.max() >= num_observations + num_read))
            or slots.dtype != np.uint64
            or len(slots) < 2
            or len(slots) & (len(slots) - 1)
        ):
            raise ShapeError("reading_rows: the hashes, lines or table do not fit together")
        self.num_observations, self.num_read = num_observations, num_read
        self.num_values, self.num_lines, self.capacity = read_hashes.shape[1], len(seeds), len(slots) // 2
        self.read_hashes, self.seeds = self.pin(read_hashes), self.pin(seeds)
        self.item_ptr, self.items, self.slots = self.pin(item_ptr), self.pin(items), self.pin(slots)


def reading_rows(lines: ReadingLines, value_hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """fh_reading_rows: (indptr int64 [N*K+1], indices int32 [nnz]), the known predicates
    of N tokens in CSR form under each of the K values of ``lines``, row t * K + k for
    token t under value k, each row's columns ascending; value_hashes uint64 [J, N]
    holds the hash of each observation at each token (ShapeError for another shape)."""
    if value_hashes.dtype != np.uint64 or value_hashes.ndim != 2 or len(value_hashes) != lines.num_observations:
        raise ShapeError(f"reading_rows: value hashes must be uint64 [{lines.num_observations}, N]")
    num_tokens = value_hashes.shape[1]
    num_rows = num_tokens * lines.num_values
    indptr = np.empty(num_rows + 1, dtype=np.int64)
    indices = np.empty(num_rows * lines.num_lines, dtype=np.int32)
    status = lib.fh_reading_rows(
        num_tokens,
        lines.num_values,
        lines.num_observations,
        input_pointer(value_hashes),
        lines.num_read,
        lines.read_hashes,
        lines.num_lines,
        lines.seeds,
        lines.item_ptr,
        lines.items,
        lines.capacity,
        lines.slots,
        output_pointer(np.empty(max(1, lines.num_lines * lines.num_values), dtype=np.uint64)),
        output_pointer(np.empty(max(1, lines.num_lines), dtype=np.int32)),
        output_pointer(indptr),
        output_pointer(indices),
    )
    check_status(status, "fh_reading_rows")
    return indptr, indices[: indptr[-1]]


def list_rows(
    value_ptr: np.ndarray,
    value_hashes: np.ndarray,
    seeds: np.ndarray,
    item_ptr: np.ndarray,
    items: np.ndarray,
    slots: np.ndarray,
    scratch_size: int,
    indptr: np.ndarray,
    indices: np.ndarray,
    grouped: tuple[int, np.ndarray, np.ndarray] | None = None,
) -> None:
    """ff_list_rows: the known predicates of N tokens whose items give lists of values,
    in CSR form: indptr int64 [N+1] and the first indptr[N] entries of indices int32
    [max entries], each row's columns ascending.  Item j's values at token t are
    value_hashes[value_ptr[j, t] .. value_ptr[j, t+1]-1] (int64 [J, N+1], uint64 [V]);
    line k, of key seed seeds[k] (uint64 [T]), crosses the items items[item_ptr[k] ..
    item_ptr[k+1]-1] (int32 [T+1], int32 [I]); no token has more than scratch_size keys.
    ``grouped`` (num_grouped, group, memo_ptr): the first num_grouped lines give every
    token of a group (group int64 [N], in [0, G)) the same keys, so they are looked up
    once per group, group g's known columns kept in room memo_ptr[g] ..
    memo_ptr[g+1]-1 (int64 [G+1]); None: no groups."""
    num_grouped, group, memo_ptr = grouped or (0, np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64))
    status = lib.ff_list_rows(
        value_ptr.shape[1] - 1,
        len(value_ptr),
        input_pointer(value_ptr),
        len(value_hashes),
        input_pointer(value_hashes),
        len(seeds),
        input_pointer(seeds),
        input_pointer(item_ptr),
        input_pointer(items),
        len(slots) // 2,
        input_pointer(slots),
        scratch_size,
        output_pointer(np.empty(max(scratch_size, 1), dtype=np.uint64)),
        output_pointer(np.empty(max(scratch_size, 1), dtype=np.int64)),
        num_grouped,
        len(memo_ptr) - 1,
        input_pointer(group),
        input_pointer(memo_ptr),
        output_pointer(np.empty(max(int(memo_ptr[-1]), 1), dtype=np.int32)),
        output_pointer(np.empty(max(len(memo_ptr) - 1, 1), dtype=np.int64)),
        output_pointer(indptr),
        len(indices),
        output_pointer(indices),
    )
    check_status(status, "ff_list_rows")


def line_sizes(
    value_ptr: np.ndarray, item_ptr: np.ndarray, items: np.ndarray, lines: range, at: np.ndarray | None = None
) -> np.ndarray:
    """ff_line_sizes: int64 [M], how many keys the lines ``lines`` (of item_ptr int32
    [T+1] and items int32 [I], as list_rows takes them) give each token of at int64 [M]
    (every token when None), the items' lists cut by value_ptr int64 [J, N+1]."""
    num_tokens = value_ptr.shape[1] - 1
    sizes = np.empty(num_tokens if at is None else len(at), dtype=np.int64)
    status = lib.ff_line_sizes(
        num_tokens,
        len(value_ptr),
        input_pointer(value_ptr),
        lines.start,
        lines.stop,
        input_pointer(item_ptr),
        input_pointer(items),
        len(sizes),
        optional_input(at),
        output_pointer(sizes),
    )
    check_status(status, "ff_line_sizes")
    return sizes


# -- token dicts (fstcrf._attributes) ------------------------------------------


def read_columns(
    token_lists: list,
    lower_lists: list | None,
    reads: str | None,
    by_name: dict[str, int],
    by_key: dict[str, dict[str, int]],
    names: list[str] | None,
    fallback: Callable[[object, int, int], tuple[list, list]],
) -> tuple[bytearray, bytearray, bytearray]:
    """The attributes of the token dicts of B sentences (token_lists [B] of lists) in
    the columns of a vocabulary, as bytearrays: columns int64 [M], values float64
    [M] and where each token's entries start, int64 [N+1].  lower_lists [B] of lists
    of lower labels (or None) give each token the attribute "reads:label";
    ``by_name`` maps names to columns and ``by_key`` is :func:`values_by_key` of it;
    ``names`` None drops unknown names, else (the names in column order) they take
    the next columns.  fallback(token, sentence, position) -> (names, values) reads a
    token the C code hands back (anything but a dict of str, bool, int or float)."""
    return attributes_extension.read_columns(token_lists, lower_lists, reads, by_name, by_key, names, fallback)


def values_by_key(vocabulary: dict[str, int], separator: str) -> dict[str, dict[str, int]]:
    """key -> {value: column} for every name "key<separator>value" of a vocabulary
    (name -> column), split at each of its separators in turn."""
    return attributes_extension.values_by_key(vocabulary, separator)
