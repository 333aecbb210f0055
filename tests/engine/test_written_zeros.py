"""kernel.written_zeros: zeros whose pages are in memory when they are returned, so that
two threads writing them later do not fault them in at once (the bandit learner's weights,
step state and gradient buffers)."""

import mmap
import resource

import numpy as np

from fstcrf.engine import kernel

PAGE = resource.getpagesize()


def faults_while_writing(array: np.ndarray) -> int:
    """Minor page faults of the process while one element of each page of ``array`` is written."""
    flat = array.reshape(-1)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    flat[:: PAGE // flat.itemsize] = 1.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def test_zeros_of_the_shape():
    array = kernel.written_zeros((3, 5))
    assert array.shape == (3, 5) and array.dtype == np.float64 and array.flags.c_contiguous
    assert not array.any()
    assert kernel.written_zeros(7).shape == (7,)


def test_its_pages_are_in_memory_before_anything_writes_them():
    # 64 MiB: fresh zeros of that size fault at their first writes (16,384 small pages,
    # or 32 huge ones where transparent huge pages are on).  The fresh ones are mapped
    # here: np.zeros may be given memory malloc has used before (whose pages are in
    # memory already), as it was once in CI after other tests in the same process.
    with mmap.mmap(-1, 64 << 20) as fresh_pages:
        fresh = faults_while_writing(np.frombuffer(fresh_pages, dtype=np.float64))
    written = faults_while_writing(kernel.written_zeros(8 << 20))
    assert written <= 2 < fresh
