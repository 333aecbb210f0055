"""The line searches of L-BFGS and OWL-QN (:func:`fstcrf.learn.train.lbfgs`): a
strong-Wolfe search by bracketing and zoom with cubic interpolation
(:func:`zoom_search`, Nocedal & Wright's Algorithms 3.5 and 3.6), and backtracking
under an Armijo, Wolfe or strong Wolfe condition, along the orthant-projected path
when l1 > 0 (:func:`backtracking`, as CRFsuite's)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeVar, cast

import numpy as np

from fstcrf.engine.kernel import add_scaled, history_dot

#: The sufficient decrease (Armijo) and curvature (Wolfe) constants of every line search.
ARMIJO, CURVATURE = 1e-4, 0.9

Payload = TypeVar("Payload")


def zoom_search(
    smooth: Callable[[np.ndarray], tuple[float, np.ndarray]],
    theta: np.ndarray,
    loss: float,
    gradient: np.ndarray,
    direction: np.ndarray,
    max_linesearch: int,
) -> tuple[float, float, np.ndarray] | None:
    """(step, objective, gradient) of a step along ``direction`` from theta that meets
    the strong Wolfe conditions (:func:`strong_wolfe_step`), theta moved there; or None,
    theta moved back.

    The trial points are made in theta's own array, each from the one before (theta +=
    (step - previous step) * direction, in one kernel call), so that the search adds no
    [D] array besides the trial's gradient: the point reached, and theta moved back
    after a failure or an exception (Ctrl-C), differ from theta + step * direction
    and from theta by rounding only.  ``gradient`` and ``direction`` may be float32 (a
    single-precision history); slopes are summed in double either way."""
    reached = 0.0  # the step theta stands at

    def along(step: float):
        nonlocal reached
        add_scaled(theta, step - reached, direction)
        reached = step
        value, point_gradient = smooth(theta)
        return value, history_dot(point_gradient, direction), (value, point_gradient)

    found = None
    try:
        found = strong_wolfe_step(along, loss, history_dot(gradient, direction), max_linesearch)
    finally:
        if found is None and reached:
            add_scaled(theta, -reached, direction)
    return None if found is None else (found[0], *found[1])


def strong_wolfe_step(
    along: Callable[[float], tuple[float, float, Payload]], value0: float, slope0: float, max_evaluations: int
) -> tuple[float, Payload] | None:
    """(step, what ``along`` gave there) for a step that meets the strong Wolfe
    conditions (ARMIJO, CURVATURE) along a line where ``along(step)`` gives (objective,
    slope, anything) and step 0 has value0 and slope0; None after ``max_evaluations``
    or when slope0 does not descend.

    Nocedal & Wright's line search (Algorithm 3.5): steps 1, 2, 4, ... until one is
    too long (no sufficient decrease, or no lower than the step before) or climbs,
    which brackets an acceptable step; then their zoom (Algorithm 3.6) shrinks the
    bracket, each trial the minimiser of the cubic that matches the objective and its
    slope at both ends (both are known: every evaluation gives the gradient), kept at
    least a tenth of the bracket from either end, else the bracket's middle."""
    if not slope0 < 0.0:
        return None
    evaluations = 0
    payload: Payload | None = None  # the last trial's only: a trial's payload may be large

    def at(step: float) -> tuple[float, float, float]:
        nonlocal evaluations, payload
        evaluations += 1
        payload = None  # freed before the next trial's is made
        value, slope, payload = along(step)
        return step, value, slope

    def accepted(step: float) -> tuple[float, Payload]:
        return step, cast(Payload, payload)

    def decreases(step: float, value: float) -> bool:
        return value <= value0 + ARMIJO * step * slope0

    def flat(slope: float) -> bool:
        return abs(slope) <= -CURVATURE * slope0

    def zoom(low, high):
        """low, high: (step, value, slope); low decreases enough and is the lower."""
        while evaluations < max_evaluations:
            a, fa, da = low
            b, fb, db = high
            step = cubic_minimiser(a, fa, da, b, fb, db)
            margin = 0.1 * abs(b - a)
            if step is None or not min(a, b) + margin <= step <= max(a, b) - margin:
                step = 0.5 * (a + b)
            trial = at(step)
            if not decreases(step, trial[1]) or trial[1] >= fa:
                high = trial
                continue
            if flat(trial[2]):
                return accepted(trial[0])
            if trial[2] * (b - a) >= 0.0:
                high = low
            low = trial
        return None

    previous = (0.0, value0, slope0)
    step = 1.0
    while evaluations < max_evaluations:
        trial = at(step)
        if not decreases(step, trial[1]) or (evaluations > 1 and trial[1] >= previous[1]):
            return zoom(previous, trial)
        if flat(trial[2]):
            return accepted(trial[0])
        if trial[2] >= 0.0:
            return zoom(trial, previous)
        previous = trial
        step *= 2.0
    return None


def cubic_minimiser(a: float, fa: float, da: float, b: float, fb: float, db: float) -> float | None:
    """The minimiser of the cubic through (a, fa) and (b, fb) with slopes da and db
    there, or None when it has none (Nocedal & Wright, equation 3.59)."""
    if a == b:
        return None
    d1 = da + db - 3.0 * (fa - fb) / (a - b)
    square = d1 * d1 - da * db
    if not square >= 0.0:
        return None
    d2 = math.copysign(math.sqrt(square), b - a)
    denominator = db - da + 2.0 * d2
    if denominator == 0.0 or not math.isfinite(denominator):
        return None
    step = b - (b - a) * (db + d2 - d1) / denominator
    return step if math.isfinite(step) else None


def backtracking(
    smooth: Callable[[np.ndarray], tuple[float, np.ndarray]],
    theta: np.ndarray,
    loss: float,
    steepest: np.ndarray,
    direction: np.ndarray,
    l1: float,
    condition: str,
    max_linesearch: int,
) -> tuple[np.ndarray, float, np.ndarray] | None:
    """(point, objective, smooth gradient) of the first acceptable trial point along
    ``direction`` from theta, or None after ``max_linesearch`` trials or when direction
    does not descend.

    Every point must lower the objective f by at least ARMIJO * steepest.(point - theta).
    ``condition`` "wolfe" also asks for the slope along direction to rise to CURVATURE
    times its start, "strong-wolfe" for its magnitude to fall to that, "armijo" for
    nothing more.  Steps start at 1, double while too short, halve while too long and
    bisect once bracketed.  With l1 > 0 (OWL-QN, "armijo") direction loses the components
    that do not descend along -steepest, f adds l1 ||point||_1, and each point is
    projected on theta's orthant (the sign of -steepest where theta is 0): components
    that would change sign become 0.
    """
    if l1:
        direction = np.where(direction * steepest < 0.0, direction, 0.0)
        orthant = np.where(theta != 0.0, np.sign(theta), -np.sign(steepest))
    slope = float(steepest @ direction)
    if not slope < 0.0:
        return None
    low, high, step = 0.0, math.inf, 1.0
    for _ in range(max_linesearch):
        point = theta + step * direction
        if l1:
            point[np.sign(point) != orthant] = 0.0
        point_loss, point_gradient = smooth(point)
        if l1:
            point_loss += l1 * float(np.abs(point).sum())
        point_slope = float(point_gradient @ direction)
        if not point_loss <= loss + ARMIJO * float(steepest @ (point - theta)) or (
            condition == "strong-wolfe" and point_slope > -CURVATURE * slope
        ):
            high = step
        elif condition != "armijo" and point_slope < CURVATURE * slope:
            low = step
        else:
            return point, point_loss, point_gradient
        step = 2.0 * step if high == math.inf else 0.5 * (low + high)
    return None
