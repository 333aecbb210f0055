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
    if not (np.isfinite(temperature) and low <= temperature <= high):
        raise ScoreError(f"{name} must be a number from {low:g} to {high:g}, got {temperature!r}")
    return float(temperature)


def tempered(pot: Potentials, temperature: float, name: str = "temperature") -> Potentials:
    """The same lattice with every score divided by ``temperature`` (in
    TEMPERATURE_RANGE; ``name`` is what errors call it; ``pot`` itself at 1);
    forbidden starts and ends stay forbidden.  ScoreError if a divided score
    overflows (scores beyond 1e302)."""
    check_potentials(pot, "tempered")
    temperature = check_temperature(temperature, name)
    if temperature == 1.0:
        return pot
    result = copy.copy(pot)
    with np.errstate(over="ignore"):
        result.emissions = pot.emissions / temperature
        result.transitions = pot.transitions / temperature
        result.start = pot.start / temperature
        result.final = pot.final / temperature
    pairs = [(pot.emissions, result.emissions), (pot.transitions, result.transitions)]
    pairs += [(pot.start, result.start), (pot.final, result.final)]
    if any(np.any(np.isfinite(before) & ~np.isfinite(after)) for before, after in pairs):
        raise ScoreError(f"{name} {temperature:g} is too small for these scores: divided by it, a score overflows")
    result.seal()
    return result


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
