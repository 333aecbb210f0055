"""Chunk labels (IOB1, IOB2, BIOES): a label's prefix and type, whether a label
continues the chunk of the one before it, and the chunks of a sentence.

A chunk begins at a label that is not O and does not continue the label before
it, and runs while the next label continues it: ``I-`` or ``E-`` of the same type
after ``B-`` or ``I-``.  This reads IOB1, IOB2 and BIOES alike, as conlleval
does, honouring E and S.  Plain Python: the corpus readers import it at start-up.
"""

from __future__ import annotations

from collections.abc import Sequence

CHUNK_PREFIXES = ("B", "I", "E", "S")


def parse_chunk_label(label: str) -> tuple[str, str] | None:
    """(prefix, type) of a chunk label, ("O", "") for O; None for any other label."""
    if label == "O":
        return "O", ""
    prefix, dash, chunk_type = label.partition("-")
    if not dash or prefix not in CHUNK_PREFIXES or not chunk_type:
        return None
    return prefix, chunk_type


def continues(previous: tuple[str, str], current: tuple[str, str]) -> bool:
    """Whether a label (prefix, type) continues the chunk of the label before it."""
    return previous[0] in ("B", "I") and current[0] in ("I", "E") and previous[1] == current[1]


def chunks_of_parts(parts: Sequence[tuple[str, str]]) -> list[tuple[int, int, str]]:
    """The chunks (first, last inclusive, type) of one sentence's (prefix, type) pairs:
    a chunk begins at a label that is not O and does not continue the one before it,
    and runs while the next label continues it (one pass, :func:`continues` inline)."""
    chunks = []
    first, previous_prefix, previous_type = -1, "O", ""
    for t, (prefix, chunk_type) in enumerate(parts):
        continued = previous_prefix in ("B", "I") and prefix in ("I", "E") and previous_type == chunk_type
        if not continued:
            if first >= 0:
                chunks.append((first, t - 1, previous_type))
            first = -1 if prefix == "O" else t
        previous_prefix, previous_type = prefix, chunk_type
    if first >= 0:
        chunks.append((first, len(parts) - 1, previous_type))
    return chunks
