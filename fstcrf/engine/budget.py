"""Budgets for work whose size can explode.

Process-wide limits, checked before the expensive work starts (before anything
of that size is allocated):

    max_states          states of a compiled topology, grammar acceptor or grammar
                        product, of a k-th order topology and of a composition's
                        joint state space (default 200,000)
    max_edges           edges (allowed transitions) of a topology, an acceptor
                        product or a composition's dense cross product, and cells
                        of a dense table over states or labels, such as [S, S]
                        edge ids or [L, L] transition weights (default 10,000,000)
    max_work            estimated table cells of k-best lists and sampling, e.g.
                        k x tokens x states (default 2e8, a few seconds)
    max_resource_bytes  bytes of a gazetteer, cluster or embedding file that a
                        template names (default 256 MiB)

:func:`limits` raises them for a block of code, :func:`set_limits` for the
whole process (the command line's ``--max-states``, ``--max-edges``,
``--max-work`` and ``--max-resource-bytes``).  A check that fails raises
:class:`~fstcrf.errors.BudgetError` with the estimate, the limit and how to
raise it.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import threading
from collections.abc import Iterator, Sequence

from fstcrf.errors import ArgumentTypeError, BudgetError

DEFAULT_MAX_STATES = 200_000
DEFAULT_MAX_EDGES = 10_000_000
DEFAULT_MAX_WORK = 200_000_000
DEFAULT_MAX_RESOURCE_BYTES = 256 * 2**20
# A model call (scoring a batch of sentences) costs about as much as filling this
# many cells whatever its size: ~3 ms per hypothesis of cascaded k-best decoding.
CALL_CELLS = 100_000

#: Each limit's default.
DEFAULTS = {
    "max_states": DEFAULT_MAX_STATES,
    "max_edges": DEFAULT_MAX_EDGES,
    "max_work": DEFAULT_MAX_WORK,
    "max_resource_bytes": DEFAULT_MAX_RESOURCE_BYTES,
}

_lock = threading.Lock()
_process = dict(DEFAULTS)
_overrides: list[dict[str, int]] = []  # active limits() blocks, innermost (latest) last


def _how_to_raise(name: str) -> str:
    option = "--" + name.replace("_", "-")
    return f"{option} N on the command line, fstcrf.engine.budget.limits({name}=N) in Python"


def _check_limit(name: str, value) -> int | None:
    if value is None:
        return None
    whole_float = isinstance(value, float) and value.is_integer()
    if isinstance(value, bool) or not (isinstance(value, numbers.Integral) or whole_float):
        raise ArgumentTypeError(f"{name} must be a positive integer, got {type(value).__name__} {value!r}")
    if value < 1:
        raise BudgetError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def current(name: str) -> int:
    """The limit in force: one of :data:`DEFAULTS`' names (``"max_states"``, ...)."""
    with _lock:
        for override in reversed(_overrides):
            if name in override:
                return override[name]
        return _process[name]


def _given(**values) -> dict[str, int]:
    checked = {name: _check_limit(name, value) for name, value in values.items()}
    return {name: value for name, value in checked.items() if value is not None}


def set_limits(
    max_states: int | None = None,
    max_work: int | None = None,
    max_edges: int | None = None,
    max_resource_bytes: int | None = None,
) -> None:
    """Set the process-wide limits (None keeps a limit as it is)."""
    values = _given(
        max_states=max_states, max_work=max_work, max_edges=max_edges, max_resource_bytes=max_resource_bytes
    )
    with _lock:
        _process.update(values)


@contextlib.contextmanager
def limits(
    max_states: int | None = None,
    max_work: int | None = None,
    max_edges: int | None = None,
    max_resource_bytes: int | None = None,
) -> Iterator[None]:
    """Use these limits inside the ``with`` block (None keeps the limit in force),
    in every thread, including the worker threads of ``threads=``; the latest
    block entered wins, and leaving one restores the others' limits."""
    override = _given(
        max_states=max_states, max_work=max_work, max_edges=max_edges, max_resource_bytes=max_resource_bytes
    )
    with _lock:
        _overrides.append(override)
    try:
        yield
    finally:
        with _lock:
            del _overrides[next(i for i, item in enumerate(_overrides) if item is override)]


def _check(name: str, estimate: int, what: str, unit: str, at_least: bool = False, measured: bool = False) -> None:
    """BudgetError if ``estimate`` passes the limit ``name`` (``at_least``: a count
    stopped once it passed; ``measured``: the size of something that exists)."""
    limit = current(name)
    if estimate > limit:
        size = f"holds {estimate:,}" if measured else f"would need {'at least' if at_least else 'about'} {estimate:,}"
        reason = f"{what} {size} {unit}, more than the budget of {limit:,} ({name})"
        error = BudgetError(f"{reason}; raise it with {_how_to_raise(name)}")
        error.limit, error.reason = name, reason
        raise error


def check_states(estimate: int, what: str, at_least: bool = False) -> None:
    """Raise BudgetError if ``what`` would have more than max_states states
    (``at_least``: the estimate is a count stopped once it passed the limit)."""
    _check("max_states", int(estimate), what, "states", at_least)


def check_work(estimate: int, what: str) -> None:
    """Raise BudgetError if ``what`` would fill more than max_work table cells."""
    _check("max_work", int(estimate), what, "table cells")


def check_edges(estimate: int, what: str, unit: str = "edges", at_least: bool = False) -> None:
    """Raise BudgetError if ``what`` would have more than max_edges edges (``unit``:
    what is counted, e.g. "cells" of a dense table over states or labels)."""
    _check("max_edges", int(estimate), what, unit, at_least)


def check_table(shape: Sequence[int], what: str) -> None:
    """Raise BudgetError if a dense table of ``shape`` (e.g. [S, S]) would have more
    than max_edges cells."""
    check_edges(math.prod(int(size) for size in shape), f"{what} {' x '.join(f'{int(n):,}' for n in shape)}", "cells")


def check_resource_bytes(size: int, what: str) -> None:
    """Raise BudgetError if a resource file of ``size`` bytes is larger than max_resource_bytes."""
    _check("max_resource_bytes", int(size), what, "bytes", measured=True)


def check_cascade(k: int, num_tokens: int, state_counts: Sequence[int]) -> None:
    """Budget cascaded k-best decoding of ``num_tokens`` tokens through models of
    ``state_counts`` states (lowest first): every level but the first scores k
    hypotheses, each a model call over all tokens and a k-best list (1-best at
    the top level) over its states."""
    estimate = 0
    for level, states in enumerate(state_counts):
        hypotheses = 1 if level == 0 else k
        keep = k if level < len(state_counts) - 1 else 1
        estimate += hypotheses * (CALL_CELLS + keep * num_tokens * states)
    check_work(estimate, f"cascaded k-best decoding with k={k} of {num_tokens} tokens")
