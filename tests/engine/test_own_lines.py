"""kernel.own_lines: a thread's scratch on cache lines no other array shares (the
bandit learner's partner thread and the gradient threads write theirs side by side)."""

import numpy as np
from hypothesis import given, strategies as st

from fstcrf.engine import kernel
from fstcrf.engine.kernel.buffers import CACHE_LINE


@given(
    st.one_of(st.integers(1, 300), st.tuples(st.integers(1, 9), st.integers(1, 9))),
    st.sampled_from([np.float64, np.int32, np.int64, np.uint8]),
    st.integers(0, 5),
)
def test_each_array_starts_a_line_and_owns_its_last_one(shape, dtype, earlier):
    _others = [np.empty(size) for size in range(earlier)]  # other allocations around it
    array = kernel.own_lines(shape, dtype)
    assert array.shape == ((shape,) if isinstance(shape, int) else shape) and array.dtype == dtype
    assert array.flags.c_contiguous and array.flags.writeable
    start = array.ctypes.data
    assert start % CACHE_LINE == 0
    memory = array.base
    while memory.base is not None:  # the allocation the views are of
        memory = memory.base
    end_of_last_line = -(-(start + array.nbytes) // CACHE_LINE) * CACHE_LINE
    assert memory.ctypes.data <= start and end_of_last_line <= memory.ctypes.data + memory.nbytes
    array[...] = 1
    assert (array == 1).all()
