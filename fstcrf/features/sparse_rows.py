"""Compressed sparse rows without scipy: the predicate matrices of the tagging path.

Importing scipy.sparse costs about 0.2 s (scipy 1.17 clones numpy's namespace, which
imports numpy.f2py and numpy.testing), a third of ``fstcrf tag``'s start-up.  Tagging
only builds CSR arrays and hands them to the kernel, so it keeps them in
:class:`SparseRows` and makes a scipy matrix only where a caller asks for one.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


#: ``met_columns`` finds the columns a matrix's entries meet by sorting them when they
#: are fewer than the columns over this (a sentence or a few: sorting some thousand
#: entries beats marking hundreds of thousands of columns), else by marking.
SORTED_ENTRIES = 16

#: The one 1.0 every entry of a binary matrix's data reads (a read-only view of it).
_ONE = np.ones(1)
_ONE.flags.writeable = False


class SparseRows(NamedTuple):
    """A CSR matrix [N, P]: the entries of row n are indices / data[indptr[n]:indptr[n + 1]].

    ``indptr`` int64 [N + 1], ``indices`` int [nnz] (columns), ``data`` float64 [nnz]
    (for a binary matrix, :meth:`binary`, a read-only view of one 1.0: no array of
    ones is made), ``shape`` (N, P).  Attribute names follow scipy.sparse.csr_matrix.
    """

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    shape: tuple[int, int]

    @classmethod
    def of(cls, matrix) -> SparseRows:
        """``matrix``'s rows: a SparseRows, or any scipy sparse matrix (converted to CSR)."""
        if isinstance(matrix, SparseRows):
            return matrix
        matrix = matrix.tocsr()
        return cls(matrix.indptr, matrix.indices, matrix.data, tuple(matrix.shape))

    @classmethod
    def binary(cls, indptr: np.ndarray, indices: np.ndarray, shape: tuple[int, int]) -> SparseRows:
        """The matrix whose stored entries are all 1."""
        ones = np.ndarray((len(indices),), dtype=np.float64, buffer=_ONE, strides=(0,))
        return cls(indptr, indices, ones, shape)

    @property
    def nnz(self) -> int:
        return len(self.indices)

    def all_ones(self) -> bool:
        """Whether every stored entry is 1 (at once for a :meth:`binary` matrix)."""
        if self.data.strides == (0,):
            return len(self.data) == 0 or bool(self.data[0] == 1.0)
        return bool(np.all(self.data == 1.0))

    def with_entries(self, rows: np.ndarray, columns: np.ndarray, values: np.ndarray) -> SparseRows:
        """These rows plus the entries (rows[i], columns[i]) = values[i] (int [E], int [E],
        float [E]), none of them at a position already stored; columns ascend in each row."""
        # the stored entries and the new ones, each sorted by (row, column): two runs,
        # which a stable sort (timsort) merges in linear time
        added = np.lexsort((columns, rows))
        rows, columns, values = rows[added], columns[added], values[added]
        row_of_entry = np.concatenate([np.repeat(np.arange(self.shape[0]), np.diff(self.indptr)), rows])
        indices = np.concatenate([self.indices, columns.astype(self.indices.dtype, copy=False)])
        data = np.concatenate([self.data, values.astype(np.float64, copy=False)])
        order = np.argsort(row_of_entry.astype(np.int64) * max(self.shape[1], 1) + indices, kind="stable")
        indptr = np.zeros(self.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(row_of_entry, minlength=self.shape[0]), out=indptr[1:])
        return SparseRows(indptr, indices[order], data[order], self.shape)

    def to_scipy(self):
        """The same matrix as a scipy.sparse.csr_matrix (imports scipy.sparse)."""
        import scipy.sparse

        data = np.array(self.data) if self.data.strides == (0,) else self.data  # a binary matrix's ones made
        return scipy.sparse.csr_matrix((data, self.indices, self.indptr), shape=self.shape)


def met_columns(rows: SparseRows) -> tuple[SparseRows, np.ndarray]:
    """``rows`` [N, P] narrowed to the M columns its entries meet: the rows [N, M], each
    entry's column its rank among them (so that a row's entries keep their order), and
    those columns int64 [M], ascending."""
    indices, num_columns = rows.indices, rows.shape[1]
    if len(indices) * SORTED_ENTRIES < num_columns:
        met, position = np.unique(indices, return_inverse=True)
        met, position = met.astype(np.int64), position.astype(np.int32)
    else:
        marked = np.full(num_columns, -1, dtype=np.int32)
        marked[indices] = 0
        met = np.flatnonzero(marked == 0)
        marked[met] = np.arange(len(met), dtype=np.int32)
        position = marked[indices]
    return SparseRows(rows.indptr, position, rows.data, (rows.shape[0], len(met))), met
