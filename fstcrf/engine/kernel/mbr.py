"""The F1-optimal chunks among a batch's candidates (csrc/fstcrf_mbr.h):
:class:`MbrCandidates` holds the candidates as the kernel reads them, with one method
per call.  The arrays' sizes are checked here; the kernel checks their values."""

from __future__ import annotations

import numpy as np

from fstcrf._kernel import ffi, lib
from fstcrf.engine.kernel.buffers import KernelBuffers, check_status, output_pointer
from fstcrf.errors import ShapeError


class MbrCandidates(KernelBuffers):
    """fc_mbr_candidates: M candidate chunks of B sentences (``lengths`` int64 [B]),
    ordered by sentence and, within one, by first and last token: ``starts`` int64
    [B+1] (sentence b's are starts[b] .. starts[b+1]-1), ``first``, ``last`` int64 [M]
    (within the sentence), ``kind`` int32 [M] (of K types) and ``probability`` float
    [M]; ``adjacent`` uint8 [K]: where a chunk may directly follow one of its type."""

    def __init__(
        self,
        lengths: np.ndarray,
        starts: np.ndarray,
        first: np.ndarray,
        last: np.ndarray,
        kind: np.ndarray,
        probability: np.ndarray,
        adjacent: np.ndarray,
    ):
        super().__init__()
        M = len(probability)
        if starts.shape != (len(lengths) + 1,) or not len(first) == len(last) == len(kind) == M or starts[-1] != M:
            raise ShapeError("candidates need a start per sentence and one more, and a span, type and probability each")
        self.num_candidates = M
        candidates = self.struct = ffi.new("fc_mbr_candidates *")
        candidates.num_sentences = len(lengths)
        candidates.lengths = self.pin(lengths)
        candidates.starts = self.pin(starts)
        candidates.first = self.pin(first)
        candidates.last = self.pin(last)
        candidates.type = self.pin(kind)
        candidates.probability = self.pin(probability)
        candidates.num_types = len(adjacent)
        candidates.adjacent = self.pin(adjacent)
        self.work = np.empty(lib.fc_mbr_work_doubles(candidates))
        self.links = np.empty(lib.fc_mbr_work_links(candidates), dtype=np.int64)

    def best(self, threshold: float) -> np.ndarray:
        """fc_mbr_best: bool [M], each sentence's non-overlapping candidates that
        maximise sum (p - threshold)."""
        chosen = np.empty(self.num_candidates, dtype=np.uint8)
        status = lib.fc_mbr_best(
            self.struct, float(threshold), output_pointer(chosen), output_pointer(self.work), output_pointer(self.links)
        )
        check_status(status, "mbr_best")
        return chosen.view(bool)

    def search(self, expected_chunks: float, floor: float, max_rounds: int) -> tuple[float, np.ndarray]:
        """fc_mbr_search: (the threshold, bool [M] the candidates chosen at it) of
        Dinkelbach's search for the largest expected F1 from the candidates more
        probable than 1/2, no threshold below ``floor``."""
        chosen = np.empty(self.num_candidates, dtype=np.uint8)
        proposal = np.empty(self.num_candidates, dtype=np.uint8)
        threshold = np.empty(1)
        status = lib.fc_mbr_search(
            self.struct,
            float(expected_chunks),
            float(floor),
            int(max_rounds),
            output_pointer(chosen),
            output_pointer(threshold),
            output_pointer(proposal),
            output_pointer(self.work),
            output_pointer(self.links),
        )
        check_status(status, "mbr_search")
        return float(threshold[0]), chosen.view(bool)
