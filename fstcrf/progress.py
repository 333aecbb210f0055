"""A dependency-free progress bar on stderr for long runs."""

from __future__ import annotations

import sys
import time


class Progress:
    """Report ``done / total`` with rate and ETA (``done`` and the rate alone when the
    total is None: a stream of unknown length).

    Redraws one line on a terminal; elsewhere (a log file, a pipe) prints a line at
    the first update, then at the first update after each multiple of ``interval``
    seconds from the start, so that lines come at a steady pace however the updates
    fall, and a last line at the end with the final count.  Use as a context manager."""

    def __init__(
        self,
        total: int | None,
        description: str,
        unit: str = "it",
        stream=None,
        interval: float = 5.0,
        enabled: bool = True,
    ):
        self.total = None if total is None else max(int(total), 1)
        self.description = description
        self.unit = unit
        self.stream = stream or sys.stderr
        self.interval = interval if not self.stream.isatty() else 0.1
        self.enabled = enabled
        self.done = 0
        self._started = time.perf_counter()
        self._next_draw = self._started  # the first update draws
        self._drawn = 0  # ``done`` at the last line drawn

    def update(self, amount: int = 1) -> None:
        self.done += amount
        now = time.perf_counter()
        finished = self.total is not None and self.done >= self.total
        if self.enabled and (now >= self._next_draw or finished):
            self._draw(now)
            if self.interval > 0:  # the next multiple of the interval from the start
                self._next_draw = self._started + self.interval * ((now - self._started) // self.interval + 1)

    def _draw(self, now: float) -> None:
        self._drawn = self.done
        elapsed = now - self._started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        if self.total is None:
            end = "\r" if self.stream.isatty() else "\n"
            self.stream.write(f"{self.description}: {self.done:,} {self.unit} {_rate(rate, self.unit)}{end}")
            self.stream.flush()
            return
        remaining = (self.total - self.done) / rate if rate > 0 else float("inf")
        width = 24
        filled = int(width * min(self.done, self.total) / self.total)
        line = (
            f"{self.description} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
            f"{self.unit} {_rate(rate, self.unit)} ETA {remaining:,.0f}s"
        )
        end = "\r" if self.stream.isatty() and self.done < self.total else "\n"
        self.stream.write(line + end)
        self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        if not self.enabled:
            return
        if self.done != self._drawn:  # the final count, on a terminal and off it
            self._draw(time.perf_counter())
        if self.stream.isatty() and (self.total is None or self.done < self.total):
            self.stream.write("\n")


def _rate(per_second: float, unit: str) -> str:
    """ "1,234 it/s" for fast work, "12.3 s/it" for slow work (never "0 it/s")."""
    if per_second >= 1.0:
        return f"{per_second:,.0f} {unit}/s"
    if per_second > 0.0:
        return f"{1.0 / per_second:,.1f} s/{unit}"
    return f"- {unit}/s"
