"""Temperature scaling: potentials whose every score is divided by a temperature T,
the distribution p(y | x)^(1/T) renormalised.  T > 1 flattens an overconfident
model's probabilities (fitted on held-out data by ``ChainCRF.fit_temperature``)
and anneals the document-level samplers; the best paths do not change.

Any temperature in TEMPERATURE_RANGE decodes exactly: a small one sharpens the
distribution until its scores span more than the linear domain holds, and the
span probabilities of those sentences are then computed in the log domain
(:mod:`fstcrf.engine.spans`), as the forward-backward's are.  A temperature
outside the range is refused where it is given, naming the option or parameter."""

from __future__ import annotations

import copy
import math
import weakref
from collections.abc import Sequence

import numpy as np

from fstcrf.engine.inference import Potentials, check_potentials, log_partition
from fstcrf.errors import ArgumentTypeError, ScoreError


#: The temperatures decoding takes (every one exactly): scores divided by 1e-6 stay
#: far from overflowing, and above 1e6 every distribution is uniform to 6 digits.
TEMPERATURE_RANGE = (1e-6, 1e6)


def check_temperature(temperature, name: str = "temperature") -> float:
    """``temperature`` as a float; ArgumentTypeError for a non-number, ScoreError
    naming ``name`` (the option or parameter that gave it) outside TEMPERATURE_RANGE."""
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float, np.floating, np.integer)):
        raise ArgumentTypeError(f"{name} must be a positive number, got {type(temperature).__name__}")
    low, high = TEMPERATURE_RANGE
    try:
        value = float(temperature)  # (math.isfinite on it costs a tenth of np.isfinite's call)
    except OverflowError:
        raise ScoreError(
            f"{name} must be a number from {low:g} to {high:g}, got an integer beyond float's range"
        ) from None
    if not (math.isfinite(value) and low <= value <= high):
        raise ScoreError(f"{name} must be a number from {low:g} to {high:g}, got {temperature!r}")
    return value


def tempered(pot: Potentials, temperature: float, name: str = "temperature") -> Potentials:
    """The same lattice with every score divided by ``temperature`` (in
    TEMPERATURE_RANGE; ``name`` is what errors call it; ``pot`` itself at 1);
    forbidden starts and ends stay forbidden.  ScoreError if a divided score
    overflows (scores beyond 1e302).  A model's read-only transition, start and
    final scores are divided once per temperature (:func:`divided_scores`)."""
    check_potentials(pot, "tempered")
    temperature = check_temperature(temperature, name)
    if temperature == 1.0:
        return pot
    result = copy.copy(pot)
    if temperature > 1.0:  # scores only shrink
        result.emissions = pot.emissions / temperature
    else:
        with np.errstate(over="ignore"):
            result.emissions = pot.emissions / temperature
        if np.any(np.isfinite(pot.emissions) & ~np.isfinite(result.emissions)):
            raise _overflow(name, temperature)
    result.transitions, result.start, result.final = divided_scores(pot, temperature, name)
    result.emissions.flags.writeable = pot.emissions.flags.writeable  # a model's stay read-only: checked once
    result.seal()
    return result


def _overflow(name: str, temperature: float) -> ScoreError:
    return ScoreError(f"{name} {temperature:g} is too small for these scores: divided by it, a score overflows")


#: The divided scores of read-only score arrays, by (the arrays' ids, temperature):
#: (weak references to the arrays, the divided arrays); at most DIVIDED_KEPT.
_divided: dict[tuple, tuple[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
DIVIDED_KEPT = 64


def divided_scores(
    pot: Potentials, temperature: float, name: str = "temperature"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(transitions, start, final) of ``pot`` divided by ``temperature`` (not 1), read-only;
    made once per temperature for read-only arrays (a model's, the same for every
    batch it scores) while they live, anew for writable ones.  ScoreError if a
    divided score overflows."""
    parts = (pot.transitions, pot.start, pot.final)
    key = (*map(id, parts), temperature)
    kept = _divided.get(key)
    if kept is not None and all(ref() is part for ref, part in zip(kept[0], parts)):
        return kept[1]
    with np.errstate(over="ignore"):
        divided = (parts[0] / temperature, parts[1] / temperature, parts[2] / temperature)
    if temperature < 1.0 and any(np.any(np.isfinite(a) & ~np.isfinite(b)) for a, b in zip(parts, divided)):
        raise _overflow(name, temperature)
    for array in divided:
        array.flags.writeable = False
    if not any(part.flags.writeable for part in parts):
        if len(_divided) >= DIVIDED_KEPT:
            _divided.clear()
        _divided[key] = (tuple(weakref.ref(part) for part in parts), divided)
    return divided


def likelihood_temperature(lattices: Sequence[tuple[Potentials, np.ndarray]], threads: int = 1) -> float:
    """The temperature T in [exp(-4), exp(4)] that maximises the summed log-likelihood
    of the gold state paths of one or more lattices (``(pot, gold)`` pairs, gold
    int [N] the state of each of pot's N tokens) under p(y | x)^(1/T), renormalised
    (a bounded search over log T); held-out labels give the T that calibrates them."""
    from scipy.optimize import minimize_scalar

    gold_scores = [float(pot.path_scores(gold).sum()) for pot, gold in lattices]

    def negative_log_likelihood(log_temperature: float) -> float:
        temperature = float(np.exp(log_temperature))
        return sum(
            float(log_partition(tempered(pot, temperature), threads).sum()) - gold_score / temperature
            for (pot, _), gold_score in zip(lattices, gold_scores)
        )

    best = minimize_scalar(negative_log_likelihood, bounds=(-4.0, 4.0), method="bounded")
    return check_temperature(float(np.exp(best.x)), "the fitted temperature")
