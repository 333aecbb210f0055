"""Settings of the learners, kept apart from the numerics so that the command
line can offer them without importing the learners: the options of bandit
learning (:mod:`fstcrf.learn.bandit`) and of learning from logged feedback
(:mod:`fstcrf.learn.counterfactual`), the default prior and sgd step size
(:mod:`fstcrf.learn.train`), and :func:`check_positive`, the check of every numeric
option."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from fstcrf.errors import ArgumentTypeError, FstcrfError

OBJECTIVES = ("expected", "pairwise", "pairwise-independent", "cross-entropy")
BASELINES = ("none", "mean", "loo")
STEPS = ("constant", "adagrad", "adam")
#: Importance weightings of logged rewards.
WEIGHTINGS = ("self-normalised", "clipped", "ips")
#: The defaults of the bandit options, chosen on a dev split of CoNLL-2000 NP chunking
#: (docs/bandit.md): Adam at this rate, four draws per sentence, each centred by the
#: mean gain of the other three.
DEFAULT_LEARNING_RATE = 0.003
DEFAULT_DRAWS = 4
#: The initial SGD step size when none is given.
SGD_LEARNING_RATE = 0.1
#: Correction pairs L-BFGS keeps (Sha & Pereira found 3 to 10 work well).
LBFGS_MEMORY = 10
#: Where joint training of a composition starts: the components' fitted weights, or zero
#: (:mod:`fstcrf.model.joint_training`).
JOINT_INITS = ("warm", "zero")
#: Where joint training centres its Gaussian prior: the starting weights, or zero.
JOINT_PRIORS = ("start", "zero")
#: The Gaussian prior's sigma when none is given (ChainCRF, lbfgs, sgd, ``fstcrf train``).
DEFAULT_SIGMA = 10.0
#: The sigmas whose prior 1 / sigma^2 is a normal double; math.inf (no prior) is also accepted.
SIGMA_RANGE = (1e-100, 1e100)


def check_positive(
    name: str,
    value,
    integer: bool = False,
    bounds: tuple[float, float] | None = None,
    infinite: bool = False,
    zero: bool = False,
) -> None:
    """Raise ArgumentTypeError unless ``value`` is a number (an integer with ``integer``),
    FstcrfError unless it is positive (or zero, with ``zero``) and finite (or inf, with
    ``infinite``) and, with ``bounds`` (low, high), low <= value <= high."""
    kind = "integer" if integer else "number"
    sign = "non-negative" if zero else "positive"
    number = numbers.Integral if integer else numbers.Real  # numpy's scalars included
    if isinstance(value, bool) or not isinstance(value, number):
        raise ArgumentTypeError(f"{name} must be a {sign} {kind}, got {type(value).__name__} {value!r}")
    if infinite and value == math.inf:
        return
    if not ((value >= 0 if zero else value > 0) and math.isfinite(value)):  # type: ignore[operator]  # numbers.Real declares no comparisons
        raise FstcrfError(f"{name} must be a {sign} finite {kind}{' or inf' if infinite else ''}, got {value!r}")
    if bounds is not None and not bounds[0] <= value <= bounds[1]:  # type: ignore[operator]  # as above
        raise FstcrfError(
            f"{name} must lie between {bounds[0]:g} and {bounds[1]:g}"
            f"{' (or be inf)' if infinite else ''}, got {value!r}"
        )


@dataclass
class BanditSettings:
    """The options of :func:`fstcrf.learn.bandit.learn` (see that module's doc).  The
    baseline None becomes "none" for pairwise-independent, "loo" with two draws
    or more, else "mean"."""

    objective: str = "expected"
    draws: int = DEFAULT_DRAWS
    baseline: str | None = None
    step: str = "adam"
    learning_rate: float = DEFAULT_LEARNING_RATE
    clip: float = 0.0
    batch_size: int = 16
    max_iter: int = 10
    seed: int = 0

    def __post_init__(self):
        if self.baseline is None:  # the default: none where the estimator is centred already
            self.baseline = (
                "none"
                if self.objective == "pairwise-independent"
                else "loo"
                if isinstance(self.draws, int) and self.draws >= 2
                else "mean"
            )

    def check(self) -> None:
        for name, value, choices in (
            ("objective", self.objective, OBJECTIVES),
            ("baseline", self.baseline, BASELINES),
            ("step", self.step, STEPS),
        ):
            if value not in choices:
                raise FstcrfError(f"bandit {name} must be one of {', '.join(choices)}, got {value!r}")
        check_positive("draws", self.draws, integer=True)
        check_positive("learning_rate", self.learning_rate)
        check_positive("batch_size", self.batch_size, integer=True)
        check_positive("max_iter", self.max_iter, integer=True)
        if isinstance(self.clip, bool) or not isinstance(self.clip, (int, float)) or not 0.0 <= self.clip < 1.0:
            raise FstcrfError(f"bandit clip is a probability floor in [0, 1), got {self.clip!r}")
        if self.baseline == "loo" and self.draws < 2:
            raise FstcrfError("baseline 'loo' (leave-one-out) needs draws >= 2")
        if self.objective == "pairwise-independent" and self.baseline != "none":
            raise FstcrfError("objective 'pairwise-independent' is centred by construction; use baseline 'none'")
        if not isinstance(self.seed, numbers.Integral) or isinstance(self.seed, bool) or self.seed < 0:
            raise FstcrfError(f"seed must be a non-negative integer, got {self.seed!r}")
