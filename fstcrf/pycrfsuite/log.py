"""CRFsuite's training log, written from fstcrf's training records, message by
message, so that python-crfsuite's ``Trainer.logparser``, its ``on_*`` hooks
and code that parses the log keep working.

The messages follow CRFsuite's layout: the held-out group, feature
generation (its settings, the progress marks and its seconds), the algorithm
and its parameters, one block per iteration ("***** Iteration #k *****", or
"Epoch" for l2sgd: Loss, for L-BFGS the gradient norm as "Error norm" and the
nonzero weights as "Active features", for l2sgd the learning rate, and the
seconds), the end of training and, when a model file is written, its sizes.
fstcrf does not report CRFsuite's "Number of features" before training, the
feature norm, the line search's trials and step, nor l2sgd's calibration
trials.  With held-out data the last iteration's block carries CRFsuite's
evaluation of the trained model on it (per label counts, precision, recall and
F1; their macro-averages; item and instance accuracy); CRFsuite evaluates every
iteration, fstcrf the model it keeps, which is the last iteration's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from fstcrf.model.chain import ChainCRF

#: The heading CRFsuite prints for each algorithm.
HEADINGS = {
    "lbfgs": "L-BFGS optimization",
    "l2sgd": "Stochastic Gradient Descent (SGD)",
    "ap": "Averaged perceptron",
    "pa": "Passive Aggressive",
    "arow": "Adaptive Regularization of Weights (AROW)",
}
#: CRFsuite's progress marks of feature generation.
PROGRESS = [mark for tens in range(10) for mark in (str(tens), ".", ".", ".", ".")] + ["10", "\n"]


def value_text(value) -> str:
    """A parameter's value as CRFsuite prints it."""
    if isinstance(value, float):
        return f"{value:f}"
    if isinstance(value, bool):
        return str(int(value))
    return str(value)


def performance_lines(
    gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]], labels: list[str]
) -> list[str]:
    """CRFsuite's evaluation of ``predicted`` against ``gold`` label sequences [B][T],
    labels in the order ``labels`` (then any other gold label in order of appearance)."""
    order = list(dict.fromkeys([*labels, *(label for sequence in gold for label in sequence)]))
    match = dict.fromkeys(order, 0)
    model = dict.fromkeys(order, 0)
    reference = dict.fromkeys(order, 0)
    items = correct_items = correct_instances = 0
    for truth, guess in zip(gold, predicted):
        for right, said in zip(truth, guess):
            reference[right] += 1
            model[said] += 1
            match[right] += right == said
        items += len(truth)
        correct_items += sum(right == said for right, said in zip(truth, guess))
        correct_instances += list(truth) == list(guess)
    lines = ["Performance by label (#match, #model, #ref) (precision, recall, F1):\n"]
    totals = np.zeros(3)
    for label in order:
        m, p, r = match[label], model[label], reference[label]
        if p == 0 and r == 0:
            lines.append(f"    {label}: (0, 0, 0) (******, ******, ******)\n")
            continue
        precision = m / p if p else 0.0
        recall = m / r if r else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        totals += (precision, recall, f1)
        lines.append(f"    {label}: ({m}, {p}, {r}) ({precision:.4f}, {recall:.4f}, {f1:.4f})\n")
    averages = totals / max(len(order), 1)
    lines.append("Macro-average precision, recall, F1: ({:f}, {:f}, {:f})\n".format(*averages))
    lines.append(f"Item accuracy: {correct_items} / {items} ({correct_items / max(items, 1):.4f})\n")
    lines.append(
        f"Instance accuracy: {correct_instances} / {len(gold)} ({correct_instances / max(len(gold), 1):.4f})\n"
    )
    return lines


class TrainingLog:
    """The log of one training run, sent message by message to ``emit``: ``start``
    before training, ``iteration`` as ChainCRF's fit callback, ``finish`` after it,
    ``stored`` after the model file is written.  ``values`` are every parameter of
    ``algorithm`` (CRFsuite's names); ``holdout`` is the held-out group
    (-1: none); ``evaluated`` says whether ``finish`` will get held-out evaluation
    lines, which the last iteration's block then holds."""

    def __init__(
        self, emit: Callable[[str], object], algorithm: str, values: Mapping[str, object], holdout: int, evaluated: bool
    ):
        self.emit = emit
        self.algorithm = algorithm
        self.values = values
        self.holdout = holdout
        self.evaluated = evaluated
        self.started = time.perf_counter()
        self.prepared = False
        self.open_block = False
        self.last_record: dict | None = None

    def _lines(self, *lines: str) -> None:
        for line in lines:
            self.emit(line)

    def start(self) -> None:
        """The held-out group and the head of feature generation."""
        if self.holdout >= 0:
            self._lines(f"Holdout group: {self.holdout + 1}\n", "\n")
        self._lines(
            "Feature generation\n",
            "type: CRF1d\n",
            *(f"{name}: {value_text(self.values[name])}\n" for name in self.values if name.startswith("feature.")),
        )

    def _prepare(self, training_seconds: float) -> None:
        """The rest of feature generation and the algorithm's settings, once."""
        if self.prepared:
            return
        self.prepared = True
        features = time.perf_counter() - self.started - training_seconds
        self._lines(*PROGRESS, f"Seconds required: {features:.3f}\n", "\n", HEADINGS[self.algorithm] + "\n")
        settings = {name: value for name, value in self.values.items() if not name.startswith("feature.")}
        self._lines(*(f"{name}: {value_text(value)}\n" for name, value in settings.items()), "\n")

    def iteration(self, record: dict) -> None:
        """One iteration's block (ChainCRF's fit callback)."""
        self._prepare(record["elapsed"])
        if self.open_block:
            self.emit("\n")
        kind = "Epoch" if self.algorithm == "l2sgd" else "Iteration"
        lines = [f"***** {kind} #{record['iteration']} *****\n", f"Loss: {record['objective']:f}\n"]
        if self.algorithm == "lbfgs":
            lines.append(f"Error norm: {record['gradient_norm']:f}\n")
            lines.append(f"Active features: {record['nonzero']}\n")
        if "learning_rate" in record:
            lines.append(f"Learning rate (eta): {record['learning_rate']:f}\n")
        lines.append(f"Seconds required for this iteration: {record['seconds']:.3f}\n")
        self._lines(*lines)
        self.open_block = self.evaluated
        if not self.evaluated:
            self.emit("\n")
        self.last_record = record

    def finish(self, model: ChainCRF, evaluation: list[str]) -> None:
        """The held-out ``evaluation`` lines (see :func:`performance_lines`; empty
        without held-out data) and the end of training."""
        training = 0.0 if self.last_record is None else self.last_record["elapsed"]
        self._prepare(training)
        if self.open_block:
            self._lines(*evaluation, "\n")
            self.open_block = False
        maximum = model.max_iter  # the limit it trained under (lbfgs given 0: unlimited)
        reached = "terminated with the maximum number of iterations"
        if self.algorithm == "lbfgs":
            self.emit(f"L-BFGS {reached}\n" if model.n_iter_ >= maximum else "L-BFGS resulted in convergence\n")
        elif self.algorithm == "l2sgd":
            stopped = reached if model.n_iter_ >= maximum else "terminated with the stopping criterion"
            self._lines(f"SGD {stopped}\n")
            if self.last_record is not None:
                self.emit(f"Loss: {self.last_record['objective']:f}\n")
        self._lines(f"Total seconds required for training: {training:.3f}\n", "\n")

    def stored(self, model: ChainCRF, attributes: int, seconds: float) -> None:
        """The sizes of the model written (``attributes``: those with a nonzero weight)."""
        weights = model.weights_
        self._lines(
            "Storing the model\n",
            f"Number of active features: {int(np.count_nonzero(weights))} ({len(weights)})\n",
            f"Number of active attributes: {attributes} ({len(model.extractor_.predicate_names_)})\n",
            f"Number of active labels: {len(model.labels_)} ({len(model.labels_)})\n",
            f"Seconds required: {seconds:.3f}\n",
            "\n",
        )
