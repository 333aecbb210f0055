"""What the benchmarks share: timings (each the best of ``repeats`` runs) and the
fstcrf side of a whole-process comparison (the command line of an fstcrf command,
fstcrf's modules compiled to bytecode as ``pip install`` leaves them).

This module imports only the standard library and fstcrf.progress, so that the
processes a benchmark starts pay nothing for it."""

from __future__ import annotations

import os
import sys
import time

from fstcrf.progress import Progress


def best_time(function, repeats: int) -> float:
    """Smallest wall-clock seconds of ``repeats`` calls."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return min(times)


def tokens_per_second(function, tokens: int, repeats: int, bar: Progress) -> float:
    """``tokens`` / the smallest seconds of ``repeats`` calls, advancing ``bar`` by
    ``tokens`` after each call."""
    best = float("inf")
    for _ in range(repeats):
        best = min(best, best_time(function, 1))
        bar.update(tokens)
    return tokens / best


def fstcrf_command(*arguments: str) -> list[str]:
    """The command line of an fstcrf command run by this Python, as a fresh process."""
    return [sys.executable, "-m", "fstcrf.cli", *arguments]


def compile_bytecode() -> bool:
    """Compile fstcrf's modules to bytecode beside them, as ``pip install`` does; False
    when that cannot be done (a read-only folder), and processes then compile them
    at every start unless Python may write its caches."""
    import compileall

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # fstcrf, above fstcrf/bench
    return bool(compileall.compile_dir(package, quiet=2))
