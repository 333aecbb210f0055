"""Logits decoded in one call (csrc/fstcrf_logits.h): each token's label
log-probabilities lifted to a topology's states, and each sentence's best path."""

from __future__ import annotations

import numpy as np

from fstcrf._kernel import ffi, lib
from fstcrf.engine.kernel.buffers import FC_OK, check_status, input_pointer, output_pointer
from fstcrf.engine.kernel.chain import Graph, Scores, Workspace


def label_log_probs(rows: np.ndarray, state_label: np.ndarray, emit: np.ndarray) -> bool:
    """fd_label_log_probs: emit float [n, S] OVERWRITTEN with the log-softmax of each
    of the logit rows float64 [n, L], at the label state_label int32 [S] of each
    state; False (emit then undefined) if a logit is NaN or infinite."""
    return FC_OK == lib.fd_label_log_probs(
        len(rows),
        rows.shape[1],
        input_pointer(rows),
        len(state_label),
        input_pointer(state_label),
        output_pointer(emit),
    )


def decode_rows(
    graph: Graph,
    scores: Scores,
    rows: np.ndarray,
    state_label: np.ndarray,
    offsets: np.ndarray,
    emit: np.ndarray,
    path: np.ndarray,
    score: np.ndarray,
    workspace: Workspace,
) -> bool:
    """fd_decode: :func:`label_log_probs` into emit float [n, S], then the best path
    int32 [n] and its score float [b] of each sentence cut at offsets int64 [b+1]
    (from 0), as :func:`~fstcrf.engine.kernel.chain.viterbi` writes them.  Every
    array is C-contiguous of the dtype given: rows float64, state_label int32, and
    the three outputs new arrays of the caller's.  False (nothing decoded) if a
    logit is NaN or infinite; InfeasibleError if a sentence has no path."""
    status = lib.fd_decode(
        graph.struct,
        scores.struct,
        len(rows),
        rows.shape[1],
        # what the caller guarantees (see above) taken as it is: the checks of input_pointer and
        # output_pointer cost as much as the kernel's work on one sentence
        ffi.from_buffer("double[]", rows),
        ffi.from_buffer("int32_t[]", state_label),
        len(offsets) - 1,
        ffi.from_buffer("int64_t[]", offsets),
        ffi.from_buffer("double[]", emit, require_writable=True),
        ffi.from_buffer("int32_t[]", path, require_writable=True),
        ffi.from_buffer("double[]", score, require_writable=True),
        workspace.struct,
    )
    if status == FC_OK:
        return True
    if status == lib.FD_NOT_FINITE:
        return False
    check_status(status, "viterbi")
    return True
