"""A parser of CRFsuite's training log, fed one message at a time:
``TrainLogParser`` (python-crfsuite's ``pycrfsuite._logparser.TrainLogParser``,
which ``Trainer.logparser`` holds after training).  The module keeps
python-crfsuite's name so that code importing the parser from there works with
``import fstcrf.pycrfsuite as pycrfsuite``; it is this package's public home
of the parser.

The log is cut into events, each returned by ``feed`` for the message that
ends it: "start" (the first message), "featgen_progress" (each progress mark
of feature generation), "featgen_end", "prepared" (the algorithm's settings,
up to the first iteration), "prepare_error", "iteration" (one iteration's
block), "optimization_end" and "end" (the model stored).  ``last_log`` is the
text of the last event; ``iterations`` holds a dict per iteration: num, loss,
time, and where the log gives them feature_norm, error_norm, active_features,
linesearch_trials, linesearch_step, the held-out scores (avg_precision,
avg_recall, avg_f1, item_accuracy and instance_accuracy as Fractions with
their ``_float`` values) and ``scores``: per label a :data:`LabelScore`.
"""

from __future__ import annotations

import re
from collections import namedtuple
from fractions import Fraction

#: One label's held-out counts and scores (precision, recall and F1 are None when the
#: label is neither predicted nor in the reference).
LabelScore = namedtuple("LabelScore", "match model ref precision recall f1")

_NUMBER = r"(\d+\.\d+)"
_ITERATION_HEAD = re.compile(r"\*{5} (?:Iteration|Epoch) #(\d+) \*{5}\n")
_SECONDS = re.compile(r"Seconds required: " + _NUMBER)
_FEATURE_COUNT = re.compile(r"Number of features: (\d+)")
_TRAINING_SECONDS = re.compile(r"Total seconds required for training: " + _NUMBER)
#: Iteration fields: (key, pattern, type).
_FIELDS = (
    ("loss", re.compile(r"Loss: " + _NUMBER), float),
    ("feature_norm", re.compile(r"Feature norm: " + _NUMBER), float),
    ("error_norm", re.compile(r"Error norm: " + _NUMBER), float),
    ("active_features", re.compile(r"Active features: (\d+)"), int),
    ("linesearch_trials", re.compile(r"Line search trials: (\d+)"), int),
    ("linesearch_step", re.compile(r"Line search step: " + _NUMBER), float),
    ("time", re.compile(r"Seconds required for this iteration: " + _NUMBER), float),
)
_MACRO = re.compile(r"Macro-average precision, recall, F1: \((\d\.\d+), (\d\.\d+), (\d\.\d+)\)")
_ACCURACIES = (
    ("item_accuracy", re.compile(r"Item accuracy: (\d+) / (\d+)")),
    ("instance_accuracy", re.compile(r"Instance accuracy: (\d+) / (\d+)")),
)
_LABEL = re.compile(r"\s{4}(.+): \((\d+), (\d+), (\d+)\) \((\d\.\d+), (\d\.\d+), (\d\.\d+)\)")
_UNSCORED_LABEL = re.compile(r"\s{4}(.+): \(0, 0, 0\) \(\*{6}, \*{6}, \*{6}\)")
#: The messages CRFsuite prints as feature generation progresses ("0", ".", ..., "10").
_PROGRESS = "0123456789.10"
#: Events whose last message already belongs to the next event.
_ENDED_BEFORE = ("prepared", "optimization_end")


class TrainLogParser:
    """Follows a CRFsuite training log message by message (see the module doc)."""

    def __init__(self):
        self.state: str | None = None
        self.featgen_percent = -2
        self.featgen_num_features: int | None = None
        self.featgen_seconds: float | None = None
        self.training_seconds: float | None = None
        self.storing_seconds: float | None = None
        self.iterations: list[dict] = []
        self.last_iteration: dict | None = None
        self.log: list[str] = []
        self.events: list[tuple[str, int, int]] = []

    def feed(self, line: str) -> str | None:
        """Read one message; the event it ends, or None."""
        self.log.append(line)
        if self.state is None:
            self.state = "STARTING"
            self._starting(line)
            event, begin = "start", 0
        else:
            found = getattr(self, "_" + self.state.lower())(line)
            if found is None:
                return None
            event, begin = found, self.events[-1][2]
        end = len(self.log) - (1 if event in _ENDED_BEFORE else 0)
        self.events.append((event, begin, end))
        return event

    @property
    def last_log(self) -> str:
        """The text of the last event."""
        _, begin, end = self.events[-1]
        return "".join(self.log[begin:end])

    # -- one method per state: the event a message ends, or None ---------------
    def _starting(self, line: str) -> None:
        if line.startswith("Feature generation"):
            self.state = "FEATGEN"

    def _featgen(self, line: str) -> str | None:
        if line in _PROGRESS:
            self.featgen_percent += 2
            return "featgen_progress"
        count = _FEATURE_COUNT.match(line)
        if count:
            self.featgen_num_features = int(count.group(1))
            return None
        seconds = _seconds(line)
        if seconds is None:
            return None
        self.featgen_seconds = seconds
        self.state = "AFTER_FEATGEN"
        return "featgen_end"

    def _after_featgen(self, line: str) -> str | None:
        if _ITERATION_HEAD.match(line):
            self.state = "ITERATION"
            self._iteration(line)
            return "prepared"
        if "terminated with error" in line:
            self.state = "AFTER_ITERATION"
            return "prepare_error"
        return None

    def _iteration(self, line: str) -> str | None:
        head = _ITERATION_HEAD.match(line)
        if head:
            self.last_iteration = {"num": int(head.group(1)), "scores": {}}
            self.iterations.append(self.last_iteration)
            return None
        if line == "\n":
            self.state = "AFTER_ITERATION"
            return "iteration"
        current = self.last_iteration
        if current is None:
            return None
        for key, pattern, kind in _FIELDS:
            found = pattern.match(line)
            if found:
                current[key] = kind(found.group(1))
        macro = _MACRO.match(line)
        if macro:
            current["avg_precision"], current["avg_recall"], current["avg_f1"] = map(float, macro.groups())
        for key, pattern in _ACCURACIES:
            found = pattern.match(line)
            if found:
                current[key] = Fraction(int(found.group(1)), int(found.group(2)))
                current[key + "_float"] = float(current[key])
        label = _LABEL.match(line)
        if label:
            name, *counts = label.groups()
            current["scores"][name] = LabelScore(*map(int, counts[:3]), *map(float, counts[3:]))
        unscored = _UNSCORED_LABEL.match(line)
        if unscored:
            current["scores"][unscored.group(1)] = LabelScore(0, 0, 0, None, None, None)
        return None

    def _after_iteration(self, line: str) -> str | None:
        if _ITERATION_HEAD.match(line):
            self.state = "ITERATION"
            return self._iteration(line)
        total = _TRAINING_SECONDS.match(line)
        if total:
            self.training_seconds = float(total.group(1))
        if line.startswith("Storing the model"):
            self.state = "STORING"
            return "optimization_end"
        return None

    def _storing(self, line: str) -> str | None:
        if line == "\n":
            return "end"
        seconds = _seconds(line)
        if seconds:
            self.storing_seconds = seconds
        return None


def _seconds(line: str) -> float | None:
    found = _SECONDS.match(line)
    return float(found.group(1)) if found else None
