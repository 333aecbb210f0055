"""Faults made on purpose, for the tests of what a command does when one of its threads is
stuck (docs/development.md, Fault injection).

``FSTCRF_FAULT=PLACE[:N][,PLACE[:N]...]`` makes the thread that reaches PLACE for the
N-th time in the process (default the first) block for ever, after a line on standard
error saying so.  The places: ``worker``, a thread of the kept pools (``engine.threads``)
before an item of work; ``partner``, the bandit learner's partner thread before it
serves its first call; ``writer``, ``fstcrf tag``'s writer thread before it writes a
batch.  Read once, at import; unset, :func:`stall` returns at once."""

from __future__ import annotations

import os
import sys
import threading

#: The environment variable that names the places where a thread blocks.
FAULT_VARIABLE = "FSTCRF_FAULT"


def parse_faults(text: str) -> dict[str, int]:
    """{place: the visit that blocks} of a value of FSTCRF_FAULT (unknown places are kept,
    and never reached)."""
    faults = {}
    for part in filter(None, (part.strip() for part in text.split(","))):
        place, _, visit = part.partition(":")
        faults[place] = int(visit) if visit.isdigit() and int(visit) > 0 else 1
    return faults


_faults = parse_faults(os.environ.get(FAULT_VARIABLE, ""))
_visits: dict[str, int] = {}
_lock = threading.Lock()


def stall(place: str) -> None:
    """Block the calling thread for ever if FSTCRF_FAULT says so for this visit of ``place``."""
    if not _faults or place not in _faults:
        return
    with _lock:
        _visits[place] = visit = _visits.get(place, 0) + 1
    if visit == _faults[place]:
        print(
            f"fstcrf: {FAULT_VARIABLE}: thread {threading.current_thread().name} blocks at {place} (visit {visit})",
            file=sys.stderr,
            flush=True,
        )
        threading.Event().wait()
