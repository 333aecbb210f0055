"""Whether a learner on more than one thread shares its minibatches out between
threads or runs them on one (issue 62 item 7: two threads may cost at most 1.1
times the CPU of one, and only where they save wall time).

A :class:`ThreadChoice` runs on one thread until a measurement says otherwise.  A
measurement runs minibatches alternately on one thread and shared out, in pairs
(after one shared out, not timed, that wakes the threads), and compares each
pair's per-token costs: r = (seconds shared out / its tokens) / (seconds on one
thread / its tokens), in wall-clock seconds and in CPU seconds (the process's:
every thread the learner uses).  Neighbouring minibatches see the same load from
the rest of the machine, so the ratios are steadier than seconds measured apart,
and their medians ignore the minibatches another process interrupted.  With n
pairs, m the median of a ratio and s = 1.25 * IQR / 1.349 / sqrt(n) (the standard
error of a median), a limit is clearly kept where m + 2s <= limit and clearly
passed where m - 2s > limit.  Sharing out has to prove itself, one thread does
not: the measurement ends

    one thread:  from EARLIEST_PAIRS pairs on, either median clearly beyond its
                 limit; from FEWEST_PAIRS pairs on, either median beyond it,
    shared out:  from FEWEST_PAIRS pairs on, both medians clearly within their limits,

or after MOST_PAIRS pairs, with both medians within their limits: shared out.
(A measurement's minibatches shared out cost what sharing out costs: where it
clearly does not pay, ending early keeps that cost small.)  The limits are stricter to
start sharing out (ENTER: at least 5% less wall time at most 1.05 times the CPU)
than to go on (KEEP: no more wall time, at most 1.1 times the CPU), so that the
choice does not flip with the noise.  The next measurement starts FIRST_GAP
minibatches later, or twice the last gap (at most LONGEST_GAP) when the choice
stayed as it was, four times where the measurement ended before FEWEST_PAIRS (a
median clearly beyond its limit: a choice far from the line, which a short run
would otherwise pay to measure again and again).  Results are the same whatever the choice: the pieces of a
minibatch are fixed."""

from __future__ import annotations

import contextlib
import math
import time

import numpy as np

#: Pairs a measurement takes at least where a median is clearly beyond its limit ...
EARLIEST_PAIRS = 3
#: ... and otherwise ...
FEWEST_PAIRS = 8
#: ... and at most.
MOST_PAIRS = 32
#: Minibatches between a measurement and the next, after the first or a change ...
FIRST_GAP = 256
#: ... doubled each time the choice stays, up to this.
LONGEST_GAP = 4096
#: (wall, CPU) limits of the median ratios shared out / one thread: to start sharing out ...
ENTER = (0.95, 1.05)
#: ... and to go on.
KEEP = (1.0, 1.1)


def verdict(ratios: np.ndarray, shared: bool, last: bool = False) -> bool | None:
    """Whether to share out, from the per-token (wall, CPU) ratios float [n, 2] of a
    measurement's n pairs (see the module doc), the limits KEEP where ``shared`` is
    the choice so far, else ENTER; None while the pairs cannot tell yet, unless
    ``last`` (the measurement's last pair: medians within the limits share out,
    and fewer than FEWEST_PAIRS pairs mean one thread)."""
    n = len(ratios)
    if n < EARLIEST_PAIRS:
        return False if last else None
    limits = np.array(KEEP if shared else ENTER)
    median = np.median(ratios, axis=0)
    lower, upper = np.percentile(ratios, [25, 75], axis=0)
    margin = 2 * 1.25 * (upper - lower) / 1.349 / math.sqrt(n)
    if np.any(median - margin > limits):
        return False
    if n < FEWEST_PAIRS:
        return False if last else None
    if np.any(median > limits):
        return False
    return True if last or np.all(median + margin <= limits) else None


def clocks() -> tuple[float, float]:
    """(wall-clock, CPU) seconds now: time.perf_counter and the process's CPU time
    (every thread's, CLOCK_PROCESS_CPUTIME_ID on Linux)."""
    return time.perf_counter(), time.process_time()


class ThreadChoice:
    """Whether a learner shares out its minibatches (see the module doc), applied to
    ``gradient.shared`` for each minibatch run under :meth:`minibatch`, and the
    minibatches run each way counted in ``gradient.minibatches`` [one thread,
    shared out]."""

    def __init__(self):
        #: the choice between measurements
        self.shared = False
        #: minibatches until the next measurement starts
        self.wait = 0
        #: the gap after the last measurement (half FIRST_GAP: the first measurement grows it)
        self.gap = FIRST_GAP // 2
        #: the place in the measurement under way: None (none), 0 (the untimed first), 1, 2, ...
        self.place: int | None = None
        #: the measurement's (wall, CPU) seconds per token of its one-thread minibatch waiting for its pair
        self.alone: tuple[float, float] | None = None
        #: the (wall, CPU) ratios of the measurement's pairs
        self.ratios: list[tuple[float, float]] = []
        #: pairs the measurement timed (with those the clocks could not tell)
        self.pairs = 0
        #: the clocks the minibatches are timed by
        self.clocks = clocks

    @contextlib.contextmanager
    def minibatch(self, gradient, tokens: int):
        """Run the body (one minibatch of ``tokens`` tokens) on one thread or shared out,
        as the choice or the measurement says (``gradient`` shares out again after
        it), timing it while measuring."""
        if self.place is None and self.wait == 0:
            self.place, self.ratios, self.pairs, self.alone = 0, [], 0, None
        place = self.place
        # measuring: the untimed first and every second after it shared out
        gradient.shared = self.shared if place is None else place % 2 == 0
        started = (0.0, 0.0) if place is None else self.clocks()  # (the process's CPU clock is a system call)
        try:
            yield
        finally:
            shared, gradient.shared = gradient.shared, True
        gradient.minibatches[int(shared)] += 1
        if place is None:
            self.wait -= 1
            return
        ended, tokens = self.clocks(), max(tokens, 1)
        self.place = place + 1
        self._measured(place, shared, ((ended[0] - started[0]) / tokens, (ended[1] - started[1]) / tokens))

    def _measured(self, place: int, shared: bool, costs: tuple[float, float]) -> None:
        """Take the (wall, CPU) seconds per token of the minibatch at ``place`` in the
        measurement; decide once the pairs tell."""
        if place == 0:
            return
        if not shared:
            self.alone = costs
            return
        self.pairs += 1
        if self.alone is not None and min(self.alone) > 0:  # else a clock too coarse to tell
            self.ratios.append((costs[0] / self.alone[0], costs[1] / self.alone[1]))
        chosen = verdict(np.array(self.ratios).reshape(-1, 2), self.shared, last=self.pairs >= MOST_PAIRS)
        if chosen is not None:
            growth = 4 if self.pairs < FEWEST_PAIRS else 2
            self.gap = FIRST_GAP if chosen != self.shared else min(growth * self.gap, LONGEST_GAP)
            self.shared, self.wait, self.place = chosen, self.gap, None
