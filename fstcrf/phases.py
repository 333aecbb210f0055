"""Wall and CPU seconds of a process's phases, written as JSON when it exits.

    from fstcrf.phases import phase
    with phase("load"):
        model = load_model(path)

Timing is on when the environment variable FSTCRF_PHASES names a file at
import time; the variable is then removed from ``os.environ``, so that the
processes this one starts do not write the same file.  Off, ``phase(name)``
costs one global lookup and returns a shared do-nothing context.  On, the
file gets, at exit (``atexit``), one JSON object::

    {"load": 0.41, "read": 1.20, ...,            # wall seconds per phase
     "process": {"start": 0.52, ...}}            # see ``PhaseTimer.report``

Phases may nest: every second is charged to the innermost open phase only,
so an outer phase's figure excludes its inner phases and the figures add up.
"start" is the time from the process's start, as the kernel records it in
/proc/self/stat (the fork of the process, in clock ticks of 10 ms), to the
first phase: interpreter start-up, imports and argument parsing.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import threading
import time
from collections.abc import Callable, Iterator

#: The environment variable that names the JSON file to write at exit.
PHASES_VARIABLE = "FSTCRF_PHASES"


def process_age() -> float:
    """Seconds since this process started, from /proc/self/stat (10 ms resolution;
    0.0 where /proc is missing)."""
    try:
        with open("/proc/self/stat", "rb") as stream:
            stat = stream.read()
    except OSError:
        return 0.0
    # the fields after the parenthesised command name; start time is field 22 of the whole line
    started_ticks = int(stat[stat.rindex(b")") + 2 :].split()[19])
    return max(time.clock_gettime(time.CLOCK_BOOTTIME) - started_ticks / os.sysconf("SC_CLK_TCK"), 0.0)


def peak_resident_mib() -> float:
    """The peak resident memory of this process's own address space (VmHWM in
    /proc/self/status, which unlike ``ru_maxrss`` excludes what the parent held
    before the exec), in MiB; 0.0 where /proc is missing."""
    try:
        with open("/proc/self/status", "rb") as stream:
            for line in stream:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def release_free_heap() -> None:
    """Hand the C heap's free pages back to the system (glibc's ``malloc_trim``; nothing
    elsewhere): a step that frees many small objects, such as feature extraction,
    otherwise leaves them counted in the resident memory of the work that follows."""
    trim = _glibc_function("malloc_trim")
    if trim is not None:
        trim(0)


#: glibc's mallopt parameter M_MMAP_THRESHOLD, and the size fstcrf train holds it at.
M_MMAP_THRESHOLD, LARGE_BLOCK_BYTES = -3, 4 << 20


def map_large_blocks() -> None:
    """Have glibc serve each allocation of LARGE_BLOCK_BYTES or more from a mapping of its
    own, which ``free`` gives back at once (``mallopt(M_MMAP_THRESHOLD)``; nothing
    elsewhere).  By default glibc raises that threshold as large blocks are freed and
    then keeps the next ones of up to 32 MiB on its heap, resident after they are freed:
    a training evaluation's temporaries then add tens of MiB to every later peak.  For
    the rest of the process: ``fstcrf train`` calls it, a program that trains large
    models can too (or set MALLOC_MMAP_THRESHOLD_ in the environment)."""
    mallopt = _glibc_function("mallopt")
    if mallopt is not None:
        mallopt(M_MMAP_THRESHOLD, LARGE_BLOCK_BYTES)


@functools.cache
def _glibc_function(name: str):
    """glibc's function ``name`` among the symbols the process already has loaded, or None
    (ctypes.util.find_library would run ldconfig in a subprocess at every fit)."""
    import ctypes

    try:
        return getattr(ctypes.CDLL(None), name)
    except (OSError, TypeError, AttributeError):  # TypeError: Windows takes no None
        return None


class PhaseTimer:
    """Exclusive wall and CPU seconds per phase name (the innermost open phase is charged).

    ``wall`` and ``cpu`` are the clocks (seconds); ``age`` gives the seconds
    between the process's start and the moment the timer is made."""

    def __init__(
        self,
        wall: Callable[[], float] = time.perf_counter,
        cpu: Callable[[], float] = time.process_time,
        age: Callable[[], float] = process_age,
    ):
        self._wall, self._cpu = wall, cpu
        self.created_wall, self.created_cpu = wall(), cpu()
        self.age_at_creation = age()
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.first_wall: float | None = None
        self.first_cpu: float | None = None
        self._open: list[str] = []
        self._mark = (0.0, 0.0)

    def _charge(self) -> None:
        """Charge the time since the last mark to the innermost open phase, if any; mark now."""
        now = (self._wall(), self._cpu())
        if self._open:
            name = self._open[-1]
            self.wall[name] += now[0] - self._mark[0]
            self.cpu[name] += now[1] - self._mark[1]
        self._mark = now

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the body as phase ``name``."""
        self._charge()
        if self.first_wall is None:
            self.first_wall, self.first_cpu = self._mark
        self.wall.setdefault(name, 0.0)
        self.cpu.setdefault(name, 0.0)
        self.calls[name] = self.calls.get(name, 0) + 1
        self._open.append(name)
        try:
            yield
        finally:
            self._charge()
            self._open.pop()

    def report(self) -> dict:
        """{phase: wall seconds, ..., "process": {...}}.  "process" holds "start"
        (wall seconds from the process's start to the first phase, or to now if
        no phase ran), "start_cpu" (CPU seconds of the process before the first
        phase), "elapsed" (wall seconds from the process's start to now),
        "cpu" (CPU seconds of the process so far, all threads), "peak_rss_mib"
        (see :func:`peak_resident_mib`), "outside"
        (wall seconds after the first phase in no phase), "cpu_by_phase" and
        "calls" (per phase)."""
        now_wall, now_cpu = self._wall(), self._cpu()
        first_wall = now_wall if self.first_wall is None else self.first_wall
        first_cpu = now_cpu if self.first_cpu is None else self.first_cpu
        start = self.age_at_creation + first_wall - self.created_wall
        elapsed = self.age_at_creation + now_wall - self.created_wall
        process = {
            "start": start,
            "start_cpu": first_cpu,
            "elapsed": elapsed,
            "cpu": now_cpu,
            "peak_rss_mib": peak_resident_mib(),
            "outside": now_wall - first_wall - sum(self.wall.values()),
            "cpu_by_phase": dict(self.cpu),
            "calls": dict(self.calls),
        }
        return {**self.wall, "process": process}


def _write_report(timer: PhaseTimer, path: str) -> None:
    """Write ``timer.report()`` as JSON to ``path`` (atomically)."""
    from fstcrf.files import write_atomically

    text = json.dumps(timer.report(), indent=1) + "\n"
    write_atomically(path, lambda stream: stream.write(text.encode("utf-8")))


_NO_PHASE = contextlib.nullcontext()
_TIMER: PhaseTimer | None = None
_REPORT_PATH = os.environ.pop(PHASES_VARIABLE, "")
if _REPORT_PATH:
    _TIMER = PhaseTimer()
    atexit.register(_write_report, _TIMER, _REPORT_PATH)


def phase(name: str) -> contextlib.AbstractContextManager:
    """A context that times its body as phase ``name`` when FSTCRF_PHASES was set and
    this is the main thread (the phases of other threads are not timed: one timer
    cannot tell their seconds from the main thread's)."""
    if _TIMER is None or threading.current_thread() is not threading.main_thread():
        return _NO_PHASE
    return _TIMER.phase(name)
