"""The one binding to fstcrf's C code: the cffi module ``fstcrf._kernel`` (its
API is the headers in csrc/) and the CPython extension ``fstcrf._attributes``
(token dicts to columns, csrc/fstcrf_attributes.c).  No module outside this
package imports them.

An array reaches C by its dtype (float64 as ``double``, int32, int64, uint64,
uint8; any other dtype is a KeyError, never a reinterpretation) in one of
three ways:

    input_pointer(array)     an array the kernel reads: a cffi view that keeps
                             it alive.  An array that is not C-contiguous and
                             aligned is copied first (weights unpickled from
                             Dask's out-of-band buffers may start at any byte).
    output_pointer(array)    an array the kernel writes or updates: it must be
                             C-contiguous, aligned and writable (ShapeError),
                             since a copy would take the results.
    KernelBuffers.pin(array) an array a struct field points to (an input or
                             scratch): its input_pointer, kept alive as long as
                             the struct.

An optional array given as None is NULL.  Each struct is a class here
(:class:`Graph`, :class:`Scores`, :class:`Batch`, :class:`Workspace`, ...)
that holds the cffi struct as ``struct`` and the arrays its fields point into;
each C function is called by one function or method below, which takes numpy
arrays and raises the typed error of a status other than success
(:func:`check_status`).  An object that keeps structs over arrays of its own
makes them with :func:`kernel_array` and derives from :class:`KernelViews`.

Shapes: n tokens and b sentences of a batch (N and B of a whole training set),
S states, E edges, C transition classes, P joint states, L labels, F features
and D weights.

The binding is split as the headers are: :mod:`~fstcrf.engine.kernel.buffers` (how
arrays and statuses cross), :mod:`~fstcrf.engine.kernel.chain`,
:mod:`~fstcrf.engine.kernel.features`, :mod:`~fstcrf.engine.kernel.training` and
:mod:`~fstcrf.engine.kernel.bandit` (the bandit learner's minibatch work, used as
``kernel.bandit.draw`` and so on) and :mod:`~fstcrf.engine.kernel.conll` (CoNLL lines scanned
and written, csrc/fstcrf_conll.h); :mod:`~fstcrf.engine.kernel.chunks` binds
csrc/fstcrf_chunks.h (entity probabilities and MBR candidates) and
:mod:`~fstcrf.engine.kernel.mbr` csrc/fstcrf_mbr.h (the F1-optimal chunks among
them); every other name is importable from here.
"""

from fstcrf.engine.kernel import bandit
from fstcrf.engine.kernel.buffers import (
    C_ARRAY_TYPES,
    FC_INFEASIBLE,
    FC_OK,
    FH_DUPLICATE,
    KernelBuffers,
    KernelViews,
    STEP_RULES,
    check_status,
    input_pointer,
    kernel_array,
    optional_input,
    optional_output,
    output_pointer,
    own_lines,
    written_zeros,
)
from fstcrf.engine.kernel.chain import (
    Batch,
    Graph,
    Joint,
    Scores,
    Workspace,
    chain_workspace,
    forward_backward,
    joint_forward_backward,
    joint_viterbi,
    joint_workspace,
    kbest,
    kept_scores,
    log_tables,
    max_marginals,
    sample,
    scratch_workspace,
    span_viterbi,
    topology_graph,
    viterbi,
)
from fstcrf.engine.kernel.chunks import (
    PREFIX_BITS,
    BatchArrays,
    ChunkReading,
    PathChunks,
    chunk_candidates,
    chunk_probabilities,
    finite_paths,
)
from fstcrf.engine.kernel.mbr import MbrCandidates
from fstcrf.engine.kernel.conll import FL_BAD_FIELD, FL_BAD_UTF8, Scan, format_lines, scan
from fstcrf.engine.kernel.features import (
    DIRECT,
    ITEM_FIELDS,
    ITEM_KINDS,
    IDENTITY,
    MAX_SUBSTRING_SOURCE,
    STORE_CATEGORIES,
    STORE_FIELDS,
    SUBSTRING_KINDS,
    TRANSFORM_KINDS,
    FeatureDictionary,
    StoreWriter,
    PredicateRows,
    Tokens,
    build_table,
    canonical_rows,
    chain_keys,
    checksum,
    factorize,
    item_values,
    key_table,
    line_hashes,
    line_sizes,
    lookup,
    predicate_rows,
    ReadingLines,
    reading_rows,
    read_columns,
    string_hashes,
    substring_hashes,
    values_by_key,
    window_hashes,
)
from fstcrf.engine.kernel.training import (
    GatherBuffers,
    HISTORY_PRECISIONS,
    OnlineProblem,
    StepRule,
    TrainingSentences,
    TrainingWorkspace,
    add_scaled,
    apply_step,
    change_single,
    gather_clear,
    history_dot,
    round_in_place,
    training_gradient,
    two_loop,
)

__all__ = [
    "ITEM_FIELDS",
    "ITEM_KINDS",
    "IDENTITY",
    "MAX_SUBSTRING_SOURCE",
    "STORE_CATEGORIES",
    "STORE_FIELDS",
    "SUBSTRING_KINDS",
    "StoreWriter",
    "TRANSFORM_KINDS",
    "bandit",
    "Batch",
    "C_ARRAY_TYPES",
    "DIRECT",
    "FC_INFEASIBLE",
    "FC_OK",
    "FH_DUPLICATE",
    "FL_BAD_FIELD",
    "FL_BAD_UTF8",
    "FeatureDictionary",
    "GatherBuffers",
    "HISTORY_PRECISIONS",
    "Graph",
    "Joint",
    "KernelBuffers",
    "KernelViews",
    "OnlineProblem",
    "PredicateRows",
    "STEP_RULES",
    "Scan",
    "Scores",
    "ChunkReading",
    "MbrCandidates",
    "BatchArrays",
    "PREFIX_BITS",
    "StepRule",
    "Tokens",
    "TrainingSentences",
    "TrainingWorkspace",
    "Workspace",
    "add_scaled",
    "apply_step",
    "build_table",
    "canonical_rows",
    "chain_keys",
    "change_single",
    "chain_workspace",
    "scratch_workspace",
    "topology_graph",
    "check_status",
    "checksum",
    "PathChunks",
    "chunk_candidates",
    "chunk_probabilities",
    "factorize",
    "finite_paths",
    "format_lines",
    "forward_backward",
    "gather_clear",
    "history_dot",
    "input_pointer",
    "item_values",
    "joint_forward_backward",
    "joint_viterbi",
    "joint_workspace",
    "kbest",
    "kept_scores",
    "kernel_array",
    "key_table",
    "line_hashes",
    "line_sizes",
    "log_tables",
    "lookup",
    "max_marginals",
    "optional_input",
    "optional_output",
    "output_pointer",
    "own_lines",
    "predicate_rows",
    "ReadingLines",
    "reading_rows",
    "read_columns",
    "round_in_place",
    "sample",
    "scan",
    "span_viterbi",
    "string_hashes",
    "substring_hashes",
    "training_gradient",
    "two_loop",
    "values_by_key",
    "window_hashes",
    "viterbi",
    "written_zeros",
]
