"""The cffi module's constants, how an array crosses to C (:func:`input_pointer`,
:func:`output_pointer`, :class:`KernelBuffers` for struct fields, :func:`kernel_array` and
:class:`KernelViews` for objects that keep structs over their own arrays) and a status to
its typed error (:func:`check_status`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from fstcrf._kernel import ffi, lib
from fstcrf.errors import HashCollisionError, InfeasibleError, ShapeError


if TYPE_CHECKING:
    pass

#: The kernel's status of success.
FC_OK: int = lib.FC_OK
#: The status of a sentence with no allowed path (InfeasibleError).
FC_INFEASIBLE: int = lib.FC_INFEASIBLE
#: The status of a hash table given two equal keys (fh_build_table).
FH_DUPLICATE: int = lib.FH_DUPLICATE
#: The step rules of :class:`StepRule` by name.
STEP_RULES = {"constant": lib.FU_CONSTANT, "adagrad": lib.FU_ADAGRAD, "adam": lib.FU_ADAM}

#: Bytes in a cache line (x86-64's and most ARM cores'; a larger one only weakens :func:`own_lines`).
CACHE_LINE = 64


def own_lines(shape: int | tuple[int, ...], dtype=np.float64) -> np.ndarray:
    """np.empty(shape, dtype) on cache lines no other array shares: a thread's scratch
    that another thread's sits next to would otherwise pass their common line back
    and forth between the cores at every write (false sharing)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    memory = np.empty(nbytes + 2 * CACHE_LINE, dtype=np.uint8)
    start = -int(ffi.cast("uintptr_t", ffi.from_buffer(memory))) % CACHE_LINE
    return memory[start : start + nbytes].view(dtype).reshape(shape)


def written_zeros(shape) -> np.ndarray:
    """Zeros float64 of ``shape`` whose pages the calling thread writes now, before
    another thread touches them: the bandit learner's weights, step state and
    gradient buffers, which both threads of a shared minibatch write at scattered
    features.  Left to their first writes, fresh pages were faulted in by two threads
    at once, each fault a TLB shootdown between the cores (an IPI, costly in a
    virtual machine): a run's first minibatch shared out took 18-55 ms instead of
    about 0.6 ms.  Written at once they cost what one thread's faults cost (7 ms for
    a run's 83 MB at 3.5M weights, Adam)."""
    array = np.empty(shape)
    array.fill(0.0)
    return array


#: The C element type of each dtype an array may reach the kernel with.
C_ARRAY_TYPES = {
    np.dtype(np.float64): "double[]",
    np.dtype(np.float32): "float[]",
    np.dtype(np.int32): "int32_t[]",
    np.dtype(np.int64): "int64_t[]",
    np.dtype(np.uint64): "uint64_t[]",
    np.dtype(np.uint8): "uint8_t[]",
}


def input_pointer(array: np.ndarray):
    """A cffi view of an array the kernel reads, which keeps the array alive; an
    array that is not C-contiguous and aligned is copied first (the view keeps the copy)."""
    flags = array.flags
    if not (flags.c_contiguous and flags.aligned):
        array = array.copy()
    return ffi.from_buffer(C_ARRAY_TYPES[array.dtype], array)


def output_pointer(array: np.ndarray):
    """A cffi view of an array the kernel writes or updates in place: ShapeError unless
    it is C-contiguous, aligned and writable."""
    flags = array.flags
    if not (flags.c_contiguous and flags.aligned and flags.writeable):
        raise ShapeError("arrays the kernel writes must be C-contiguous, aligned and writable")
    return ffi.from_buffer(C_ARRAY_TYPES[array.dtype], array)


def optional_input(array: np.ndarray | None):
    """input_pointer(array), or NULL for None (an optional input left out)."""
    return ffi.NULL if array is None else input_pointer(array)


def optional_output(array: np.ndarray | None):
    """output_pointer(array), or NULL for None (an output not wanted)."""
    return ffi.NULL if array is None else output_pointer(array)


def check_status(status: int, what: str, allow_infeasible: bool = False) -> None:
    """Nothing for FC_OK (and FC_INFEASIBLE with ``allow_infeasible``); else the error
    of a status that computation ``what`` returned: InfeasibleError for a sentence
    without an allowed path, HashCollisionError for equal keys, RuntimeError for
    arguments the kernel rejects (Python checked them, so that is a bug)."""
    if status == FC_OK or (status == FC_INFEASIBLE and allow_infeasible):
        return
    # Potentials validated the lengths against the topology, and the kernel's exact
    # fallback rules out underflow, so only a clamp can leave a sentence no path.
    if status == FC_INFEASIBLE:
        raise InfeasibleError(
            f"{what}: a sentence has no allowed path: the states its clamp allows "
            "at each token do not connect through the topology, or every path's "
            "score is below float64's range (scale the scores down)"
        )
    if status == FH_DUPLICATE:
        raise HashCollisionError(f"{what}: two of them have the same key")
    raise RuntimeError(f"the C kernel rejected the arguments of {what} (status {status}); this is a bug in fstcrf")


class KernelBuffers:
    """Keeps alive the arrays that the fields of a C struct point into, as long as
    this object (which holds the struct as ``struct``)."""

    def __init__(self) -> None:
        self._views: list = []

    def pin(self, array: np.ndarray):
        """input_pointer(array), kept alive with this object: for a struct field."""
        view = input_pointer(array)
        self._views.append(view)
        return view


def kernel_array(values, dtype) -> np.ndarray:
    """``values`` as a C-contiguous array of ``dtype`` aligned for it (a copy only
    when it is not already one): what objects keep for the kernel to read.  An
    array that already is one is returned before np.require's own checks, which
    cost several times more on the learners' small per-minibatch arrays."""
    if type(values) is np.ndarray and values.dtype == dtype and values.flags.c_contiguous and values.flags.aligned:
        return values
    return np.require(values, dtype=dtype, requirements=["C", "A"])


class KernelViews:
    """An object that keeps kernel structs (:class:`KernelBuffers`) over its own
    arrays.  They cannot be pickled: pickling and copying drop them, and unpickling
    rebuilds them with the subclass's ``make_views``."""

    make_views: Callable[[], None]  # defined by each subclass

    def __getstate__(self) -> dict:
        return {name: value for name, value in self.__dict__.items() if not isinstance(value, KernelBuffers)}

    def __setstate__(self, state: dict) -> None:
        # Arrays unpickled from out-of-band buffers (Dask's transport) may start at any
        # byte; the kernel reads them as int64 or double, so each such array is copied.
        aligned = {
            name: value.copy() if isinstance(value, np.ndarray) and not value.flags.aligned else value
            for name, value in state.items()
        }
        self.__dict__.update(aligned)
        self.make_views()
