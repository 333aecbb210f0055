"""Temperature scaling: potentials whose every score is divided by a temperature T,
the distribution p(y | x)^(1/T) renormalised.  T > 1 flattens an overconfident
model's probabilities (fitted on held-out data by ``ChainCRF.fit_temperature``)
and anneals the document-level samplers; the best paths do not change."""

from __future__ import annotations

import copy

import numpy as np

from fstcrf.engine.inference import Potentials, check_potentials
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
    return result
