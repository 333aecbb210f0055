"""Learning from logged bandit feedback (counterfactual learning).

A deployed tagger shows a user labels y_i drawn from its distribution
pi(y | x_i) and logs the probability pi_i of what it showed; the user's
reaction becomes a reward r_i in [0, 1].  A new model p_w is then learnt
offline from the log alone, by importance weighting (Swaminathan & Joachims
2015; Lawrence et al. 2017), with rho_i = p_w(y_i | x_i) / pi_i:

    ips                R(w) = sum_i r_i rho_i                (inverse propensity scoring)
    clipped            R(w) = sum_i r_i min(rho_i, max_ratio) (Ionides' truncation)
    self-normalised    R(w) = n sum_i r_i rho_i / sum_i rho_i (biased, but far lower
                                                            variance; the default)

L-BFGS maximises R(w) minus the Gaussian prior ||w||^2 / (2 sigma^2); the
gradients are sum_i c_i (phi(y_i) - E_w[phi]) and run through the bandit
learner's C path (:class:`fstcrf.learn.bandit.SampledGradient`).

The log is a JSON-lines file, one record per shown output:

    {"columns": {"word": [...], "pos": [...]}, "labels": [...],
     "reward": 0.8, "probability": 1.2e-05}

``fstcrf tag --sample N --with-probability`` writes such records with
``"reward": null`` for the application to fill in.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import IO
from collections.abc import Sequence

import numpy as np

from fstcrf.learn.bandit import SampledGradient
from fstcrf.learn.settings import WEIGHTINGS
from fstcrf.corpus.conll import Sentence
from fstcrf.errors import FstcrfError, LabelError
from fstcrf.files import read_utf8
from fstcrf.corpus.labels import label_states

#: Log-ratios are capped here before exponentiation (exp(700) is near the largest double).
_MAX_LOG_RATIO = 700.0
#: Sentences scored per block when the whole log is evaluated.
_BLOCK_SENTENCES = 2048


@dataclass
class FeedbackLog:
    """Logged outputs: ``sentences`` [B] (their input columns), ``labels`` [B][T] shown,
    ``rewards`` float [B] in [0, 1], ``probabilities`` float [B] in (0, 1] under the
    logging model, and the file ``line_numbers`` [B] of the records (or None)."""

    sentences: list[Sentence]
    labels: list[list[str]]
    rewards: np.ndarray
    probabilities: np.ndarray
    line_numbers: list[int] | None = None
    path: str | None = None

    def where(self, index: int) -> str:
        """ "FILE:LINE" of record ``index`` (or "record INDEX")."""
        if self.line_numbers is None:
            return f"record {index}"
        return f"{self.path}:{self.line_numbers[index]}"


def _number(value, what: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise FstcrfError(f"{where}: {what} must be a finite number, got {value!r}")
    return float(value)


def read_feedback_log(path: str | os.PathLike) -> FeedbackLog:
    """The records of a JSON-lines feedback log.  A malformed record, a reward outside
    [0, 1] (or null), a probability outside (0, 1] or labels whose count differs from
    the tokens' raise FstcrfError naming FILE:LINE."""
    path = os.fspath(path)
    sentences, labels, rewards, probabilities, lines = [], [], [], [], []
    for number, line in enumerate(read_utf8(path, FstcrfError).splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise FstcrfError(f"{where}: not a JSON record ({error.msg} at column {error.colno})") from None
        if not isinstance(record, dict) or not {"columns", "labels", "reward", "probability"} <= set(record):
            raise FstcrfError(f"{where}: a record needs the fields columns, labels, reward and probability")
        columns, shown = record["columns"], record["labels"]
        if (
            not isinstance(columns, dict)
            or not columns
            or not all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in columns.values())
        ):
            raise FstcrfError(f"{where}: columns must map column names to lists of strings")
        lengths = {len(values) for values in columns.values()}
        if len(lengths) != 1 or 0 in lengths:
            raise FstcrfError(f"{where}: the columns must hold one value per token, for at least one token")
        if not isinstance(shown, list) or not all(isinstance(x, str) for x in shown) or len(shown) not in lengths:
            raise FstcrfError(f"{where}: labels must be a list of strings, one per token ({lengths.pop()} tokens)")
        if record["reward"] is None:
            raise FstcrfError(f"{where}: the reward is null; fill in the user's reward in [0, 1] before training")
        reward = _number(record["reward"], "reward", where)
        probability = _number(record["probability"], "probability", where)
        if not 0.0 <= reward <= 1.0:
            raise FstcrfError(f"{where}: reward must lie in [0, 1], got {reward!r}")
        if not 0.0 < probability <= 1.0:
            raise FstcrfError(f"{where}: probability must lie in (0, 1], got {probability!r}")
        sentences.append(Sentence(columns, line_numbers=[number] * len(shown)))
        labels.append(shown)
        rewards.append(reward)
        probabilities.append(probability)
        lines.append(number)
    if not sentences:
        raise FstcrfError(f"{path}: the feedback log has no records")
    return FeedbackLog(sentences, labels, np.array(rewards), np.array(probabilities), lines, path)


def write_feedback_records(
    stream: IO[str],
    sentence: Sentence,
    columns: Sequence[str],
    labels: Sequence[Sequence[str]],
    probabilities: Sequence[float],
) -> None:
    """Write one record per shown label sequence of ``sentence`` (its ``columns``), each
    with its probability and a null reward."""
    inputs = {name: sentence[name] for name in columns}
    for shown, probability in zip(labels, probabilities):
        stream.write(
            json.dumps(
                {"columns": inputs, "labels": list(shown), "reward": None, "probability": float(probability)},
                ensure_ascii=False,
            )
            + "\n"
        )


class LoggedObjective:
    """Minus the importance-weighted reward of a log, as a :class:`fstcrf.learn.train.Problem`
    over weights theta [D] (for :func:`fstcrf.learn.train.lbfgs`).

    Args:
        gradient: the log's sentences, encoded and scored.
        states: int32 [N] the state path of each shown label sequence.
        rewards: float [B]; probabilities: float [B] under the logging model.
        weighting: one of WEIGHTINGS; max_ratio: the clip of "clipped".
    """

    def __init__(
        self,
        gradient: SampledGradient,
        states: np.ndarray,
        rewards: np.ndarray,
        probabilities: np.ndarray,
        weighting: str = "self-normalised",
        max_ratio: float = 10.0,
    ):
        if weighting not in WEIGHTINGS:
            raise FstcrfError(f"weighting must be one of {', '.join(WEIGHTINGS)}, got {weighting!r}")
        if isinstance(max_ratio, bool) or not isinstance(max_ratio, (int, float)) or not max_ratio > 0:
            raise FstcrfError(f"max_ratio must be a positive number, got {max_ratio!r}")
        self.gradient = gradient
        self.states = np.ascontiguousarray(states, dtype=np.int32)
        self.rewards = np.asarray(rewards, dtype=np.float64)
        self.log_propensities = np.log(np.asarray(probabilities, dtype=np.float64))
        self.weighting, self.max_ratio = weighting, float(max_ratio)
        self.num_weights = gradient.num_weights
        self.num_sequences = gradient.encoded.num_sequences
        self._blocks = [
            (first, min(first + _BLOCK_SENTENCES, self.num_sequences))
            for first in range(0, self.num_sequences, _BLOCK_SENTENCES)
        ]

    def _posteriors(self, theta: np.ndarray) -> list:
        return [self.gradient.posteriors(theta, first, last) for first, last in self._blocks]

    def _path(self, first: int, last: int) -> np.ndarray:
        """int32 [1, n]: the shown state path of sentences first .. last-1."""
        return self.states[self.gradient.encoded.token_rows(first, last)][None]

    def log_ratios(self, theta: np.ndarray, posteriors: list | None = None) -> np.ndarray:
        """float [B]: log rho_i = log p_theta(y_i | x_i) - log pi_i."""
        posteriors = posteriors or self._posteriors(theta)
        parts = [
            block.log_probabilities(self._path(first, last))[0]
            for (first, last), block in zip(self._blocks, posteriors)
        ]
        return np.concatenate(parts) - self.log_propensities

    def reward_and_coefficients(self, theta: np.ndarray, posteriors: list | None = None) -> tuple[float, np.ndarray]:
        """(R(theta), float [B] c_i with grad R = sum_i c_i (phi(y_i) - E[phi]))."""
        log_ratio = np.minimum(self.log_ratios(theta, posteriors), _MAX_LOG_RATIO)
        r = self.rewards
        if self.weighting == "self-normalised":
            share = np.exp(log_ratio - log_ratio.max())
            share /= share.sum()  # rho_i / sum rho
            mean = float(share @ r)
            return len(r) * mean, len(r) * (r - mean) * share
        ratio = np.exp(log_ratio)
        if self.weighting == "clipped":
            inside = ratio < self.max_ratio
            return float(r @ np.where(inside, ratio, self.max_ratio)), np.where(inside, r * ratio, 0.0)
        return float(r @ ratio), r * ratio

    def loss_and_gradient(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        posteriors = self._posteriors(theta)
        reward, coefficients = self.reward_and_coefficients(theta, posteriors)
        F = self.gradient.scorer.features.num_features
        gradient = np.zeros(self.num_weights)
        for (first, last), block in zip(self._blocks, posteriors):
            self.gradient.add_gradient(block, self._path(first, last), -coefficients[None, first:last])
            part = self.gradient.take(first, last)
            gradient[part.indices] += part.values
            gradient[F:] += part.transitions
        return -reward, gradient


def shown_states(topology, log: FeedbackLog, offsets: np.ndarray) -> np.ndarray:
    """int32 [N]: the state path of each record's shown labels (LabelError naming
    FILE:LINE for a label the model does not have or a path its topology forbids)."""
    index = {label: i for i, label in enumerate(topology.labels)}
    id_list: list[int] = []
    for number, shown in enumerate(log.labels):
        for label in shown:
            if label not in index:
                raise LabelError(
                    f"{log.where(number)}: label {label!r} is not one of the model's labels "
                    f"({', '.join(topology.labels)})"
                )
            id_list.append(index[label])
    ids = np.array(id_list, dtype=np.int64)
    try:
        return label_states(topology, ids, offsets)
    except LabelError:  # name the first record the topology rejects
        for number in range(len(log.labels)):
            rows = slice(offsets[number], offsets[number + 1])
            try:
                label_states(topology, ids[rows], np.array([0, rows.stop - rows.start]))
            except LabelError:
                raise LabelError(
                    f"{log.where(number)}: the labels {' '.join(log.labels[number])} are not "
                    f"allowed by the model's {topology.name} topology"
                ) from None
        raise
