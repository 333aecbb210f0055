"""A batch tagged in one call (csrc/fstcrf_tagging.h): the model's part made once
(:class:`Tagger`), a thread's buffers (:class:`TagBuffers`, and :class:`ListBuffers`
for value lists) and the call, on the batch's column hashes or rows (:func:`tag`), on
its rows in a value store (:func:`tag_lists`), on its token entries
(:func:`tag_entries`), or on one sentence's token dicts read in the same call
(:func:`tag_items`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

import fstcrf._attributes as attributes_extension
from fstcrf._kernel import ffi, lib
from fstcrf.engine.kernel.buffers import KernelBuffers, check_status, input_pointer, own_lines
from fstcrf.engine.kernel.chain import Graph, Scores, Workspace, chain_workspace
from fstcrf.engine.kernel.features import FeatureDictionary, Tokens


#: The known columns :class:`ListBuffers` keeps across calls, at most (16 MiB a thread).
KEPT_POOL = 1 << 22
#: ft_tag_entries, which fstcrf._attributes.tag_tokens calls (see :func:`tag_items`).
TAG_ENTRIES = ffi.addressof(lib, "ft_tag_entries")


class WindowLines(NamedTuple):
    """The single values and lines whose rows ft_tag looks up (see fh_window_hashes and
    fh_predicate_rows): observation j reads source row source[j] (int32 [J]) of G
    sources at offset[j] (int64 [J]); line k, of key seed seeds[k] (uint64 [T]), reads
    the observations items[item_ptr[k] .. item_ptr[k+1]-1] (int32 [T+1], [I]); the
    keys under ``salt`` are looked up in ``slots`` (uint64 [2 * capacity])."""

    num_sources: int
    source: np.ndarray
    offset: np.ndarray
    salt: int
    seeds: np.ndarray
    item_ptr: np.ndarray
    items: np.ndarray
    slots: np.ndarray


class ListLines(NamedTuple):
    """The lines whose rows ft_tag_lists looks up: line k, of key seed seeds[k] (uint64
    [T]), crosses the value lists of items items[item_ptr[k] .. item_ptr[k+1]-1] (int32
    [T+1], [I]), the items of a value store's call (see :func:`tag_lists`); the keys
    under ``salt`` are looked up in ``slots`` (uint64 [2 * capacity])."""

    salt: int
    seeds: np.ndarray
    item_ptr: np.ndarray
    items: np.ndarray
    slots: np.ndarray


class Tagger(KernelBuffers):
    """ft_tagger: what tagging needs of a model, kept alive with it: its lines (window
    lines, value-list lines, or None when the caller gives rows), its feature
    dictionary and weights theta float [F], the graph searched, and state_map int32
    [S'] (the model state of each state of a restricted graph, or None: the graph is
    the model's)."""

    def __init__(
        self,
        lines: WindowLines | ListLines | None,
        dictionary: FeatureDictionary,
        theta: np.ndarray,
        graph: Graph,
        state_map: np.ndarray | None,
    ):
        super().__init__()
        self.parts = (dictionary, graph)  # the structs the fields point into
        tagger = self.struct = ffi.new("ft_tagger *")
        if isinstance(lines, WindowLines):
            tagger.num_sources = lines.num_sources
            tagger.num_observations = len(lines.source)
            tagger.source = self.pin(lines.source)
            tagger.offset = self.pin(lines.offset)
        if lines is not None:
            tagger.salt = lines.salt
            tagger.num_lines = len(lines.seeds)
            tagger.seeds = self.pin(lines.seeds)
            tagger.item_ptr = self.pin(lines.item_ptr)
            tagger.items = self.pin(lines.items)
            tagger.capacity = len(lines.slots) // 2
            tagger.slots = self.pin(lines.slots)
        tagger.dictionary = dictionary.struct
        tagger.theta = self.pin(theta)
        tagger.graph = graph.struct
        if state_map is not None:
            tagger.state_map = self.pin(state_map)
        self.num_states = int(dictionary.struct.num_states)
        self.search_states = int(graph.struct.num_states)
        self.work_doubles = int(lib.ff_work_doubles(dictionary.struct))


class TagBuffers(KernelBuffers):
    """ft_tag_buffers: a thread's buffers for batches of up to ``max_tokens`` tokens (and
    ``max_entries`` token entries) and sentences of up to ``t_max``, and the path int32
    [max_tokens] and emissions float [max_tokens * S] (``emit``, flat) each call writes."""

    def __init__(self, tagger: Tagger, topology, num_classes: int, max_tokens: int, t_max: int, max_entries: int):
        super().__init__()
        struct = tagger.struct
        buffers = self.struct = ffi.new("ft_tag_buffers *")
        buffers.max_tokens = max_tokens
        buffers.max_entries = max_entries
        buffers.window = self.pin(own_lines(max(struct.num_observations * max_tokens, 1), np.uint64))
        buffers.line_scratch = self.pin(own_lines(max(lib.FH_BLOCK * struct.num_lines, 1), np.int32))
        buffers.indptr = self.pin(own_lines(max_tokens + 1, np.int64))
        buffers.indices = self.pin(own_lines(max(max_tokens * struct.num_lines, max_entries, 1), np.int32))
        buffers.values = self.pin(own_lines(max(max_entries, 1)))
        self.emit = own_lines(max_tokens * tagger.num_states)  # each call's emissions [n, S], flat
        buffers.emit = self.pin(self.emit)
        search = max_tokens * tagger.search_states if struct.state_map != ffi.NULL else 1
        buffers.search_emit = self.pin(own_lines(search))
        buffers.work = self.pin(own_lines(tagger.work_doubles))
        self.workspace: Workspace = chain_workspace(topology, num_classes, t_max)
        buffers.workspace = self.workspace.struct
        self.max_tokens, self.t_max, self.max_entries = max_tokens, t_max, max_entries
        self.path = own_lines(max_tokens, np.int32)
        #: the path's cffi view, which kernel calls after a tagging call read
        self.path_view = ffi.from_buffer("int32_t[]", self.path)
        self.score = own_lines(max_tokens)  # a sentence per score: no more than tokens
        self._score = ffi.from_buffer("double[]", self.score)
        self._addresses: tuple = (None, None, ())  # tag_items' (tagger, scores, addresses), made on first use

    def addresses(self, tagger: Tagger, scores: Scores) -> tuple[int, ...]:
        """What fstcrf._attributes.tag_tokens calls with these buffers: the addresses of
        ft_tag_entries, the structs of ``tagger``, ``scores`` and these buffers, and the
        path and score arrays (kept while the tagger and scores are the same objects)."""
        kept_tagger, kept_scores, addresses = self._addresses
        if kept_tagger is not tagger or kept_scores is not scores:
            structs = (TAG_ENTRIES, tagger.struct, scores.struct, self.struct, self.path_view, self._score)
            addresses = tuple(int(ffi.cast("uintptr_t", struct)) for struct in structs)
            self._addresses = (tagger, scores, addresses)
        return addresses


class ListBuffers(KernelBuffers):
    """ft_list_buffers: a thread's room for :func:`tag_lists` on batches of up to
    ``max_tokens`` tokens and ``max_items`` items, ``max_hashes`` item values,
    ``max_keys`` keys of one token and ``max_entries`` known predicates."""

    def __init__(self, max_tokens: int, max_items: int, max_hashes: int, max_keys: int, max_entries: int):
        super().__init__()
        buffers = self.struct = ffi.new("ft_list_buffers *")
        buffers.max_tokens, buffers.max_items = max_tokens, max_items
        buffers.value_ptr = self.pin(own_lines(max_items * (max_tokens + 1), np.int64))
        buffers.sizes = self.pin(own_lines(max_tokens, np.int64))
        buffers.max_hashes = max_hashes
        buffers.hashes = self.pin(own_lines(max_hashes, np.uint64))
        buffers.max_keys = max_keys
        buffers.scratch_keys = self.pin(own_lines(max_keys, np.uint64))
        buffers.scratch_columns = self.pin(own_lines(max_keys, np.int64))
        buffers.max_entries = max_entries
        buffers.indices = self.pin(own_lines(max_entries, np.int32))
        self.sizes = (max_tokens, max_items, max_hashes, max_keys, max_entries)
        self.needed = ffi.new("int64_t[3]")
        #: the kept columns' store generation, arrays (start int64 [G], count int32 [G], pool
        #: int32 [KEPT_POOL]) and their views; none kept until :meth:`keep`
        self.generation: int | None = None
        self.kept: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._kept_views: tuple = ()

    def keep(self, generation: int, num_rows: int) -> None:
        """Keep the grouped lines' columns of store rows 0 .. num_rows-1 of the value
        store's ``generation``: those kept so far while it is the same generation (the
        arrays widened for new rows), none after the store started afresh."""
        kept = self.struct.kept
        if self.kept is not None and self.generation == generation and len(self.kept[0]) >= num_rows:
            return
        size = max(2 * num_rows, 1024)
        start, count = np.full(size, -1, dtype=np.int64), np.zeros(size, dtype=np.int32)
        if self.kept is not None and self.generation == generation:  # widened: the kept columns stay
            old_start, old_count, pool = self.kept
            start[: len(old_start)], count[: len(old_count)] = old_start, old_count
        else:
            pool = np.empty(KEPT_POOL, dtype=np.int32)
            kept.used = 0
        self.kept, self.generation = (start, count, pool), generation
        self._kept_views = tuple(input_pointer(array) for array in self.kept)
        kept.num_groups, kept.pool_size = size, len(pool)
        kept.start, kept.count, kept.pool = self._kept_views

    def grown(self, num_tokens: int, num_items: int) -> ListBuffers:
        """Buffers that hold what the last call said it needed and a batch of
        ``num_tokens`` tokens and ``num_items`` items, each at least doubled when short;
        the columns kept go with them."""
        wanted = (num_tokens, num_items, *(int(self.needed[k]) for k in range(3)))
        grown = ListBuffers(*(have if want <= have else max(want, 2 * have) for have, want in zip(self.sizes, wanted)))
        if self.kept is not None:
            grown.kept, grown.generation, grown._kept_views = self.kept, self.generation, self._kept_views
            grown.struct.kept = self.struct.kept
        return grown

    def fits(self, num_tokens: int, num_items: int) -> bool:
        """Whether a batch of ``num_tokens`` tokens and ``num_items`` items may be tried."""
        return num_tokens <= self.sizes[0] and num_items <= self.sizes[1]


def tag_lists(
    tagger: Tagger,
    scores: Scores,
    buffers: TagBuffers,
    lists: ListBuffers,
    store,
    items: np.ndarray,
    offsets: np.ndarray | None,
    token_rows: np.ndarray,
    grouped: tuple[int, int],
    token_class: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray] | None:
    """ft_tag_lists: :func:`tag` of a batch whose tagger reads value lists (ListLines),
    the values of its J ``items`` (int64 [J, ITEM_FIELDS]) read from ``store`` (a
    :class:`~fstcrf.features.hashing.StoreTables`) at each token's row of each column,
    token_rows int64 [C, n]; ``offsets`` int64 [b+1] (None: one sentence); ``grouped``
    (the lines that read a column's own value alone, first among the tagger's, and
    that column's row of token_rows): their columns are kept in ``lists`` across
    calls once its :meth:`ListBuffers.keep` was called.  None when ``lists`` is too
    small (its ``grown`` is not); the caller checked that the batch fits ``buffers``
    and ``lists.fits`` it."""
    num_tokens = token_rows.shape[1]
    num_sequences = 1 if offsets is None else len(offsets) - 1
    single, list_span, text_span = store.single, store.list_span, store.text_span
    table = ffi.new(
        "ft_value_store *",
        (
            store.num_rows,
            single.shape[1],
            len(single),
            input_pointer(single),
            len(list_span),
            input_pointer(list_span),
            len(store.list_hashes),
            input_pointer(store.list_hashes),
            len(text_span),
            input_pointer(text_span),
            len(store.text_bytes),
            input_pointer(store.text_bytes),
        ),
    )
    status = lib.ft_tag_lists(
        tagger.struct,
        scores.struct,
        buffers.struct,
        lists.struct,
        table,
        len(items),
        ffi.from_buffer("int64_t[]", items),
        num_tokens,
        num_sequences,
        ffi.NULL if offsets is None else ffi.from_buffer("int64_t[]", offsets),
        len(token_rows),
        ffi.from_buffer("int64_t[]", token_rows),
        *grouped,
        ffi.NULL if token_class is None else ffi.from_buffer("int32_t[]", token_class),
        buffers.path_view,
        buffers._score,
        lists.needed,
    )
    if status == lib.FV_SHORT:
        return None
    check_status(status, "ft_tag_lists")
    return buffers.path[:num_tokens], buffers.score[:num_sequences]


def tag(
    tagger: Tagger,
    scores: Scores,
    buffers: TagBuffers,
    num_tokens: int,
    offsets: np.ndarray | None,
    sources: np.ndarray | None,
    rows: Tokens | None,
    token_class: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """ft_tag: the best model state at each of the batch's ``num_tokens`` tokens, int32
    [n], and each sentence's best score, float [b] (views of the buffers' own, which
    the next call on them overwrites), under the transition ``scores`` of the tagger's
    graph.  ``offsets`` int64 [b+1] (None: one sentence), ``sources`` uint64 [G, n]
    (None when ``rows`` are given) and ``token_class`` int32 [n] (or None) are
    C-contiguous; the caller checked that the batch fits the buffers and its lengths
    the graph.  InfeasibleError if a sentence has no path."""
    num_sequences = 1 if offsets is None else len(offsets) - 1
    status = lib.ft_tag(
        tagger.struct,
        scores.struct,
        buffers.struct,
        num_tokens,
        num_sequences,
        ffi.NULL if offsets is None else ffi.from_buffer("int64_t[]", offsets),
        ffi.NULL if sources is None else ffi.from_buffer("uint64_t[]", sources),
        ffi.NULL if rows is None else rows.struct,
        ffi.NULL if token_class is None else ffi.from_buffer("int32_t[]", token_class),
        buffers.path_view,
        buffers._score,
    )
    check_status(status, "ft_tag")
    return buffers.path[:num_tokens], buffers.score[:num_sequences]


def tag_entries(
    tagger: Tagger,
    scores: Scores,
    buffers: TagBuffers,
    offsets: np.ndarray,
    starts,
    columns,
    values,
    token_class: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """ft_tag_entries: :func:`tag` of a batch given as its tokens' entries, unsorted
    (fstcrf._attributes' reading of token dicts): token n's are columns int64 /
    values float64 [starts[n] .. starts[n+1]-1] (starts int64 [n+1]), each a C-contiguous
    array or bytearray; the kernel makes them canonical rows, as the batch path does.
    The caller checked that the batch and its entries fit the buffers."""
    num_tokens = int(offsets[-1])
    status = lib.ft_tag_entries(
        tagger.struct,
        scores.struct,
        buffers.struct,
        num_tokens,
        len(offsets) - 1,
        ffi.from_buffer("int64_t[]", offsets),
        ffi.from_buffer("int64_t[]", starts),
        ffi.from_buffer("int64_t[]", columns),
        ffi.from_buffer("double[]", values),
        ffi.NULL if token_class is None else ffi.from_buffer("int32_t[]", token_class),
        buffers.path_view,
        buffers._score,
    )
    check_status(status, "ft_tag_entries")
    return buffers.path[:num_tokens], buffers.score[: len(offsets) - 1]


def tag_items(
    tokens: list,
    by_name: dict[str, int],
    by_key: dict[str, dict[str, int]],
    fallback: Callable[[object, int, int], tuple[list, list]],
    state_names: list[str],
    tagger: Tagger,
    scores: Scores,
    buffers: TagBuffers,
) -> list[str] | None:
    """The best labels [T] of one sentence, ``tokens`` [T] (dicts, lists or tuples of
    names), in one call that reads their entries as :func:`read_columns` does (a fitted
    vocabulary ``by_name``, ``by_key``; ``fallback`` reads the tokens C hands back) and
    runs :func:`tag_entries` on them: state_names[state] of each token's best state (the
    state path and score are left in the buffers' ``path`` and ``score``).  None when
    the call does not take the sentence: no tokens, a token not exactly a dict, list or
    tuple, a sentence or entries the buffers cannot hold, a kernel status other than
    FC_OK or a best score that is not finite (:func:`tag_entries` says what is wrong).
    Raises what ``fallback`` raises for a bad token."""
    return attributes_extension.tag_tokens(
        tokens, by_name, by_key, fallback, state_names, buffers.addresses(tagger, scores)
    )
