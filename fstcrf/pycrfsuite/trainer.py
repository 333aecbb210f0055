"""python-crfsuite's ``Trainer`` (and ``BaseTrainer``), training fstcrf models.

A trainer holds instances (``append``: items, labels and a group number), an
algorithm (``select``: lbfgs, l2sgd, ap, pa or arow, and their aliases) and its
parameters with CRFsuite's names and defaults (``set``, ``get``,
``set_params``, ``get_params``, ``params``, ``help``).  ``train(model,
holdout)`` fits :func:`fstcrf.pycrfsuite.params.chain_crf`'s ChainCRF on the
instances outside the held-out group and writes it as an fstcrf model file;
the training messages are CRFsuite's log (:mod:`fstcrf.pycrfsuite.log`), sent
to ``message``.  ``BaseTrainer.message`` prints them when ``verbose``;
``Trainer.message`` feeds them to ``logparser``
(:class:`~fstcrf.pycrfsuite._logparser.TrainLogParser`) and calls the hook of
each event (``on_start``, ``on_featgen_progress``, ``on_featgen_end``,
``on_prepared``, ``on_prepare_error``, ``on_iteration``,
``on_optimization_end``, ``on_end``), which print the event's text.

As in python-crfsuite, a trainer is ready (lbfgs selected) even when a
subclass's ``__init__`` does not call this one, ``select`` resets the
parameters to the algorithm's defaults, and an exception raised by
``message`` stops training.
"""

from __future__ import annotations

import os
import time

from fstcrf.corpus.conll import Sentence
from fstcrf.errors import ArgumentTypeError, EmptySequenceError, FstcrfError, ShapeError
from fstcrf.features.attributes import check_sentences
from fstcrf.files import check_output_path
from fstcrf.model.inspection import model_features
from fstcrf.pycrfsuite._logparser import TrainLogParser
from fstcrf.pycrfsuite.items import TARGET, item_list, item_sentence, label_list
from fstcrf.pycrfsuite.log import TrainingLog, performance_lines
from fstcrf.pycrfsuite.params import (
    GRAPHICAL_MODEL,
    algorithm_name,
    chain_crf,
    defaults,
    integer_argument,
    parameters,
    parse_value,
)


class BaseTrainer:
    """Trains a CRF on appended instances (python-crfsuite's BaseTrainer; see the
    module doc).  ``algorithm`` is selected and ``params`` set if given; ``verbose``
    prints the training messages."""

    #: The instances appended: (the Sentence of items and labels, the group).
    _instances: list[tuple[Sentence, int]]

    def __new__(cls, *args, **kwargs):
        trainer = super().__new__(cls)
        trainer._instances = []
        trainer.verbose = None
        trainer.select("lbfgs")
        return trainer

    def __init__(self, algorithm=None, params=None, verbose=True):
        if algorithm is not None:
            self.select(algorithm)
        if params is not None:
            self.set_params(params)
        self.verbose = verbose

    def message(self, message: str) -> None:
        """Receive one training message; prints it when ``verbose``."""
        if self.verbose:
            print(message, end="")

    # -- data ----------------------------------------------------------------
    def append(self, xseq, yseq, group=0) -> None:
        """Add an instance: items ``xseq`` (a list of item features or an ItemSequence),
        its labels ``yseq`` (as many), and its group number (see ``train``'s holdout)."""
        group = integer_argument("group", group)
        number = len(self._instances)
        tokens = item_list(xseq, f"xseq of instance {number}")
        labels = label_list(yseq, f"yseq of instance {number}", training=True)
        if len(tokens) != len(labels):
            raise ShapeError(
                f"The numbers of items and labels differ: |x| = {len(tokens)}, |y| = {len(labels)} (instance {number})"
            )
        sentence = item_sentence(tokens, f"instance {number}", labels=labels)
        check_sentences([sentence], first=number)
        self._instances.append((sentence, group))

    def clear(self) -> None:
        """Remove every instance."""
        self._instances = []

    # -- the algorithm and its parameters --------------------------------------
    def select(self, algorithm, type=GRAPHICAL_MODEL) -> None:
        """Choose the training algorithm: 'lbfgs', 'l2sgd', 'ap' (or 'averaged-perceptron'),
        'pa' (or 'passive-aggressive') or 'arow'; its parameters take their defaults."""
        if not isinstance(type, str) or type.lower() != GRAPHICAL_MODEL:
            raise FstcrfError(f"Bad arguments: type={type!r}; the graphical model is {GRAPHICAL_MODEL!r}")
        self._algorithm = algorithm_name(algorithm)
        self._values = defaults(self._algorithm)

    def params(self) -> list[str]:
        """The names of the selected algorithm's parameters."""
        return list(self._values)

    def set(self, name, value) -> None:
        """Set a parameter of the selected algorithm (its value may be given as text)."""
        parameter = parameters(self._algorithm).get(name)
        if parameter is None:
            raise FstcrfError(f"Parameter not found: {name!r} = {value!r}; {self._parameters_are()}")
        self._values[name] = parse_value(parameter, value)

    def get(self, name):
        """The value of a parameter of the selected algorithm."""
        if name not in self._values:
            raise FstcrfError(f"Parameter not found: {name!r}; {self._parameters_are()}")
        return self._values[name]

    def set_params(self, params) -> None:
        """Set parameters from a dict {name: value}."""
        for name, value in params.items():
            self.set(name, value)

    def get_params(self) -> dict:
        """Every parameter of the selected algorithm, {name: value}."""
        return dict(self._values)

    def help(self, name) -> str:
        """The description of a parameter of the selected algorithm."""
        parameter = parameters(self._algorithm).get(name)
        if parameter is None:
            raise FstcrfError(f"Parameter not found: {name!r}; {self._parameters_are()}")
        return parameter.description

    def _parameters_are(self) -> str:
        return f"the parameters of {self._algorithm} are {', '.join(self._values)}"

    # -- training ------------------------------------------------------------
    def train(self, model, holdout=-1) -> None:
        """Train on the instances whose group is not ``holdout`` (-1: all of them) and
        write the model to the file ``model`` ('' writes none).  The held-out
        instances are tagged by the trained model and scored in the log."""
        self._before_train()
        holdout = integer_argument("holdout", holdout)
        if not isinstance(model, (str, bytes, os.PathLike)):
            raise ArgumentTypeError(f"model must be a file name ('' for none), got {type(model).__name__}")
        path = os.fsdecode(model)
        if path:
            check_output_path(path)
        held = [sentence for sentence, group in self._instances if holdout >= 0 and group == holdout]
        training = [
            sentence for sentence, group in self._instances if not (holdout >= 0 and group == holdout) and len(sentence)
        ]
        if not training:
            raise EmptySequenceError("The data is empty: append instances (outside the holdout group) before training")
        values = self.get_params()
        log = TrainingLog(self.message, self._algorithm, values, holdout, bool(held))
        log.start()
        crf = chain_crf(self._algorithm, values)
        crf.fit(training, target=TARGET, callback=log.iteration)
        evaluation = []
        if held:
            tagged = [sentence for sentence in held if len(sentence)]
            predicted = crf.predict(tagged)
            evaluation = performance_lines([sentence[TARGET] for sentence in tagged], predicted, list(crf.labels_))
        log.finish(crf, evaluation)
        if path:
            started = time.perf_counter()
            crf.save(path)
            log.stored(crf, len(model_features(crf)[0]), time.perf_counter() - started)

    def _before_train(self) -> None:
        """Called first by ``train`` (Trainer makes its log parser here)."""


class Trainer(BaseTrainer):
    """python-crfsuite's Trainer: ``logparser`` (a TrainLogParser, made when training
    starts) reads the messages, and each event calls its ``on_*`` hook when ``verbose``."""

    logparser: TrainLogParser | None = None

    def _before_train(self) -> None:
        self.logparser = TrainLogParser()

    def message(self, message: str) -> None:
        """Receive one training message: fed to ``logparser``, and when ``verbose`` handed to the
        hook of the event it completes (``on_iteration``, ``on_end``, ...)."""
        parser = self.logparser
        if parser is None:  # a message outside training (none is sent)
            return
        event = parser.feed(message)
        if not self.verbose or event is None:
            return
        text = parser.last_log
        if event == "featgen_progress":
            self.on_featgen_progress(text, parser.featgen_percent)
        elif event == "iteration":
            self.on_iteration(text, parser.last_iteration or {})
        else:
            getattr(self, "on_" + event)(text)

    def on_start(self, log: str) -> None:
        """Training started (the held-out group, the feature settings)."""
        print(log, end="")

    def on_featgen_progress(self, log: str, percent: int) -> None:
        """A progress mark of feature generation, ``percent`` done."""
        print(log, end="")

    def on_featgen_end(self, log: str) -> None:
        """Feature generation ended."""
        print(log, end="")

    def on_prepared(self, log: str) -> None:
        """The algorithm and its settings."""
        print(log, end="")

    def on_prepare_error(self, log: str) -> None:
        """The algorithm could not start."""
        print(log, end="")

    def on_iteration(self, log: str, info: dict) -> None:
        """An iteration ended; ``info`` is its dict (see TrainLogParser)."""
        print(log, end="")

    def on_optimization_end(self, log: str) -> None:
        """Training ended."""
        print(log, end="")

    def on_end(self, log: str) -> None:
        """The model was written."""
        print(log, end="")
