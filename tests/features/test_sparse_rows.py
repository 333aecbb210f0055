"""SparseRows against scipy.sparse: the same matrix, with entries added the same way."""

import numpy as np
import scipy.sparse
from hypothesis import given, settings, strategies as st

from fstcrf.features.sparse_rows import SparseRows


@st.composite
def matrices_and_new_entries(draw):
    """A random CSR matrix and entries at positions it does not store."""
    rows, columns = draw(st.integers(0, 6)), draw(st.integers(1, 6))
    cells = [(r, c) for r in range(rows) for c in range(columns)]
    stored = draw(st.lists(st.sampled_from(cells), unique=True)) if cells else []
    free = [cell for cell in cells if cell not in set(stored)]
    added = draw(st.lists(st.sampled_from(free), unique=True)) if free else []

    def values(n):
        return np.array(draw(st.lists(st.floats(-5, 5).filter(bool), min_size=n, max_size=n)), dtype=np.float64)

    matrix = scipy.sparse.csr_matrix(
        (values(len(stored)), ([r for r, _ in stored], [c for _, c in stored])), shape=(rows, columns)
    )
    matrix.sort_indices()
    return (
        matrix,
        np.array([r for r, _ in added], dtype=np.int64),
        np.array([c for _, c in added], dtype=np.int64),
        values(len(added)),
    )


@settings(max_examples=200, deadline=None)
@given(matrices_and_new_entries())
def test_with_entries_equals_scipy_addition(case):
    matrix, rows, columns, values = case
    result = SparseRows.of(matrix).with_entries(rows, columns, values)
    expected = matrix + scipy.sparse.csr_matrix((values, (rows, columns)), shape=matrix.shape)
    expected.sort_indices()
    assert result.shape == expected.shape and result.nnz == expected.nnz
    np.testing.assert_array_equal(result.indptr, expected.indptr)
    np.testing.assert_array_equal(result.indices, expected.indices)
    np.testing.assert_array_equal(result.data, expected.data)
    assert (result.to_scipy() != expected).nnz == 0


def test_of_converts_any_scipy_format_and_keeps_sparse_rows():
    dense = np.array([[0.0, 2.0, 0.0], [1.0, 0.0, 3.0]])
    rows = SparseRows.of(scipy.sparse.coo_matrix(dense))
    assert rows.shape == (2, 3) and rows.indptr.tolist() == [0, 1, 3]
    np.testing.assert_array_equal(rows.to_scipy().toarray(), dense)
    assert SparseRows.of(rows) is rows


@settings(max_examples=50, deadline=None, derandomize=True, database=None)
@given(matrices_and_new_entries())
def test_a_binary_matrix_is_its_pattern_with_ones_and_no_array_of_them(case):
    matrix, rows, columns, _ = case
    binary = SparseRows.binary(matrix.indptr, matrix.indices, matrix.shape)
    assert binary.data.strides == (0,) and binary.all_ones()
    as_scipy = binary.to_scipy()
    as_scipy.data *= 2.0  # a writable array of its own
    assert np.array_equal(as_scipy.toarray(), 2.0 * (matrix.toarray() != 0))
    added = binary.with_entries(rows, columns, np.full(len(rows), 3.0))
    assert added.all_ones() == (len(rows) == 0)
    general = SparseRows.of(matrix)
    assert general.all_ones() == bool(np.all(matrix.data == 1.0))
