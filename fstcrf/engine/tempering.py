"""Temperature scaling: potentials whose every score is divided by a temperature T,
the distribution p(y | x)^(1/T) renormalised.  T > 1 flattens an overconfident
model's probabilities (fitted on held-out data by ``ChainCRF.fit_temperature``)
and anneals the document-level samplers; the best paths do not change."""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np

from fstcrf.engine.inference import Potentials, check_potentials, log_partition
from fstcrf.errors import ArgumentTypeError, ScoreError


def tempered(pot: Potentials, temperature: float) -> Potentials:
    """The same lattice with every score divided by ``temperature`` > 0 (``pot``
    itself at 1); forbidden starts and ends stay forbidden."""
    check_potentials(pot, "tempered")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float, np.floating, np.integer)):
        raise ArgumentTypeError(f"temperature must be a positive number, got {type(temperature).__name__}")
    if not (np.isfinite(temperature) and temperature > 0):
        raise ScoreError(f"temperature must be a positive finite number, got {temperature!r}")
    if temperature == 1.0:
        return pot
    result = copy.copy(pot)
    result.emissions = pot.emissions / temperature
    result.transitions = pot.transitions / temperature
    result.start = pot.start / temperature
    result.final = pot.final / temperature
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
    return float(np.exp(best.x))
