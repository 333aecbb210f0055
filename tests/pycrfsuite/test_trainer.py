"""fstcrf.pycrfsuite.Trainer: CRFsuite's parameters, the models it writes (those
ChainCRF trains with the mapped settings), its log (read back by the parser)
and hooks, and the inputs it rejects."""

import math
import os
from fractions import Fraction

import numpy as np
import pytest

from fstcrf.corpus.conll import Sentence
from fstcrf.errors import (
    ArgumentTypeError,
    EmptySequenceError,
    FstcrfError,
    LabelError,
    LabelTypeError,
    OutputPathError,
)
from fstcrf.model import ChainCRF, load_model
from fstcrf.pycrfsuite import BaseTrainer, ItemSequence, Trainer
from fstcrf.pycrfsuite._logparser import TrainLogParser
from weather import weather

#: CRFsuite's parameters and defaults (``crfsuite learn -H``), per algorithm.
FEATURES = {"feature.minfreq": 0.0, "feature.possible_states": False, "feature.possible_transitions": False}
CRFSUITE_DEFAULTS = {
    "lbfgs": {
        **FEATURES,
        "c1": 0.0,
        "c2": 1.0,
        "max_iterations": 2**31 - 1,
        "num_memories": 6,
        "epsilon": 1e-5,
        "period": 10,
        "delta": 1e-5,
        "linesearch": "MoreThuente",
        "max_linesearch": 20,
    },
    "l2sgd": {
        **FEATURES,
        "c2": 1.0,
        "max_iterations": 1000,
        "period": 10,
        "delta": 1e-6,
        "calibration.eta": 0.1,
        "calibration.rate": 2.0,
        "calibration.samples": 1000.0,
        "calibration.candidates": 10,
        "calibration.max_trials": 20,
    },
    "ap": {**FEATURES, "max_iterations": 100, "epsilon": 0.0},
    "pa": {
        **FEATURES,
        "type": 1,
        "c": 1.0,
        "error_sensitive": True,
        "averaging": True,
        "max_iterations": 100,
        "epsilon": 0.0,
    },
    "arow": {**FEATURES, "variance": 1.0, "gamma": 1.0, "max_iterations": 100, "epsilon": 0.0},
}
ALIASES = {"averaged-perceptron": "ap", "passive-aggressive": "pa", "LBFGS": "lbfgs"}


class Capturing(Trainer):
    """Keeps every message and every hook call (python-crfsuite's test trainer does not
    call Trainer.__init__ either)."""

    def __init__(self):
        self.messages, self.calls = [], []

    def message(self, message):
        self.messages.append(message)
        super().message(message)

    def __getattribute__(self, name):
        attribute = super().__getattribute__(name)
        if name.startswith("on_"):
            calls = super().__getattribute__("calls")
            return lambda *args: calls.append((name, args))
        return attribute


@pytest.mark.parametrize("algorithm", [*CRFSUITE_DEFAULTS, *ALIASES])
def test_every_algorithm_has_crfsuites_parameters_and_defaults(algorithm):
    trainer = Trainer(algorithm)
    expected = CRFSUITE_DEFAULTS[ALIASES.get(algorithm, algorithm)]
    assert trainer.params() == list(expected)
    assert trainer.get_params() == expected
    assert all(type(trainer.get(name)) is type(value) for name, value in expected.items())
    trainer.set_params(trainer.get_params())
    assert trainer.get_params() == expected
    trainer.set("feature.possible_states", True)
    assert trainer.get("feature.possible_states") is True
    trainer.set("feature.possible_states", 0)
    assert trainer.get("feature.possible_states") is False
    with pytest.raises(ValueError, match="Parameter not found"):
        trainer.set_params({**expected, "foo": 5})
    assert all(isinstance(trainer.help(name), str) and trainer.help(name) for name in expected)


def test_parameters_are_read_as_crfsuite_reads_their_text():
    trainer = Trainer(params={"c2": 100})
    assert trainer.get("c2") == 100.0
    trainer.set("c2", "0.25")
    trainer.set("max_iterations", 7.0)
    trainer.set("linesearch", "Backtracking")
    assert (trainer.get("c2"), trainer.get("max_iterations"), trainer.get("linesearch")) == (0.25, 7, "Backtracking")
    assert "L1" in trainer.help("c1") and "L2" in trainer.help("c2")
    for name, value in [("c2", "abc"), ("c2", None), ("max_iterations", 2.5), ("feature.possible_states", "yes")]:
        with pytest.raises(FstcrfError, match=name):
            trainer.set(name, value)
    trainer.select("l2sgd")  # selecting resets the parameters, as in CRFsuite
    assert trainer.get("c2") == 1.0 and "c1" not in trainer.params()
    for call in (lambda: trainer.help("c1"), lambda: trainer.get("c1"), lambda: trainer.set("c1", 1)):
        with pytest.raises(ValueError, match="Parameter not found"):
            call()
    with pytest.raises(ValueError, match="algorithm must be one of"):
        trainer.select("foo")
    with pytest.raises(ValueError, match="graphical model"):
        trainer.select("lbfgs", "crf2d")
    with pytest.raises(ValueError, match="Parameter not found"):
        Trainer("l2sgd", params={"c1": 1})


@pytest.mark.parametrize("algorithm", list(CRFSUITE_DEFAULTS))
def test_the_model_is_chain_crfs_with_the_mapped_settings(algorithm, tmp_path):
    xseq, yseq = weather()
    trainer = Trainer(algorithm, params={"max_iterations": 12}, verbose=False)
    trainer.append(xseq, yseq)
    trainer.append(ItemSequence(xseq[:4]), yseq[:4])
    trainer.append([], [])  # an empty instance changes nothing
    trainer.train(str(tmp_path / "model"))
    model = load_model(tmp_path / "model")
    values = CRFSUITE_DEFAULTS[algorithm] | {"max_iterations": 12}
    settings = {
        "num_memories": "memory",
        "type": "pa_type",
        **{name: name.replace(".", "_") for name in values if name.startswith("calibration.")},
    }
    expected = ChainCRF(
        template="attributes",
        algorithm=algorithm,
        sigma=math.sqrt(0.5 / values.get("c2", 1.0)),
        max_iter=12,
        transitions="seen",
        algorithm_params={
            settings.get(name, name): int(value) if name == "calibration.samples" else value
            for name, value in values.items()
            if not name.startswith("feature.") and name not in ("c1", "c2", "max_iterations")
        },
    ).fit(
        [Sentence({"attributes": xseq, "label": yseq}), Sentence({"attributes": xseq[:4], "label": yseq[:4]})], "label"
    )
    assert model.labels_ == expected.labels_
    np.testing.assert_array_equal(model.weights_, expected.weights_)
    assert model.predict([Sentence({"attributes": xseq})]) == [yseq]


@pytest.mark.parametrize("algorithm", list(CRFSUITE_DEFAULTS))
def test_the_log_is_crfsuites_and_the_parser_reads_it(algorithm, tmp_path):
    xseq, yseq = weather()
    trainer = Capturing()
    trainer.select(algorithm)
    trainer.set("max_iterations", 5)
    trainer.verbose = True
    trainer.append(xseq, yseq)
    assert not trainer.messages
    trainer.train(str(tmp_path / "model"))
    model = load_model(tmp_path / "model")
    assert "type: CRF1d\n" in trainer.messages and "".join(trainer.messages).endswith("\n\n")
    parser = TrainLogParser()
    events = [event for event in map(parser.feed, trainer.messages) if event]
    iterations = model.n_iter_
    assert events == ["start"] + ["featgen_progress"] * 51 + ["featgen_end", "prepared"] + ["iteration"] * (
        iterations
    ) + ["optimization_end", "end"]
    assert parser.featgen_percent == 100
    assert [record["num"] for record in parser.iterations] == list(range(1, iterations + 1))
    for parsed, record in zip(parser.iterations, model.history_):
        assert parsed["loss"] == pytest.approx(record["objective"], abs=1e-6)
        assert parsed["time"] == pytest.approx(record["seconds"], abs=1e-3)
        if algorithm == "lbfgs":
            assert parsed["active_features"] == record["nonzero"]
    assert parser.training_seconds is not None and parser.storing_seconds is not None
    assert trainer.logparser.iterations == parser.iterations
    hooks = [name for name, _ in trainer.calls]
    assert hooks == [f"on_{event}" for event in events]
    iteration_infos = [args[1] for name, args in trainer.calls if name == "on_iteration"]
    assert iteration_infos == parser.iterations


def test_holdout_instances_are_scored_not_learnt(tmp_path):
    xseq, yseq = weather()
    other = [{"walk": 1}, {"clean": 1}, {"shop": 1}]
    gold = ["sunny", "rainy", "rainy"]
    trainer = Capturing()
    trainer.set("max_iterations", 20)
    trainer.append(xseq, yseq)
    trainer.append(other, gold, group=2)
    trainer.train(str(tmp_path / "held"), holdout=2)
    alone = Trainer(params={"max_iterations": 20}, verbose=False)
    alone.append(xseq, yseq)
    alone.train(str(tmp_path / "alone"))
    model = load_model(tmp_path / "held")
    np.testing.assert_array_equal(model.weights_, load_model(tmp_path / "alone").weights_)
    assert trainer.messages[:2] == ["Holdout group: 3\n", "\n"]
    predicted = model.predict([Sentence({"attributes": other})])[0]
    last = trainer.logparser.iterations[-1]
    assert all("scores" not in record or not record["scores"] for record in trainer.logparser.iterations[:-1])
    for label in ("sunny", "rainy"):
        match = sum(p == g == label for p, g in zip(predicted, gold))
        said, truth = predicted.count(label), gold.count(label)
        score = last["scores"][label]
        assert (score.match, score.model, score.ref) == (match, said, truth)
        if said:
            assert score.precision == pytest.approx(match / said, abs=1e-4)
    assert last["item_accuracy"] == Fraction(sum(p == g for p, g in zip(predicted, gold)), 3)
    assert last["instance_accuracy_float"] == float(predicted == gold)


def test_verbose_prints_the_log_and_quiet_prints_nothing(tmp_path, capsys):
    xseq, yseq = weather()
    for trainer_class, verbose in [(Trainer, True), (BaseTrainer, True), (Trainer, False), (BaseTrainer, False)]:
        trainer = trainer_class(params={"max_iterations": 3}, verbose=verbose)
        trainer.append(xseq, yseq)
        trainer.train(str(tmp_path / "model"))
        out = capsys.readouterr().out
        if verbose:
            assert "***** Iteration #3 *****\nLoss: " in out and out.startswith("Feature generation\n")
            assert "L-BFGS terminated with the maximum number of iterations\n" in out
        else:
            assert out == ""
    trainer.train("")  # no model file: the log stops before storing it
    assert "Storing" not in capsys.readouterr().out


def test_an_exception_from_message_stops_training_and_writes_nothing(tmp_path):
    class Failing(Trainer):
        def message(self, message):
            if message.startswith("***** Iteration #2"):
                raise KeyError("stop")

    xseq, yseq = weather()
    trainer = Failing()
    trainer.append(xseq, yseq)
    with pytest.raises(KeyError, match="stop"):
        trainer.train(str(tmp_path / "model"))
    assert not os.path.exists(tmp_path / "model")


def test_bad_instances_and_arguments_raise_before_training(tmp_path):
    trainer = Trainer(verbose=False)
    with pytest.raises(ValueError, match=r"The numbers of items and labels differ: \|x\| = 1, \|y\| = 2"):
        trainer.append([{"a": 1}], ["x", "y"])
    with pytest.raises(LabelTypeError, match="token 0") as raised:
        trainer.append([{"a": 1}], [1])
    assert isinstance(raised.value, TypeError)
    with pytest.raises(TypeError, match="sentence 0, token 1"):
        trainer.append([{"a": 1}, {"b": None}], ["x", "y"])
    with pytest.raises(ArgumentTypeError, match="group"):
        trainer.append([{"a": 1}], ["x"], group="g")
    trainer.append([{"a": 1}], [b"x"])  # bytes labels, as python-crfsuite takes them
    for label in ("B LOC", "O\u00a0", "<eps>"):  # labels a model cannot hold: refused at once
        with pytest.raises(LabelError, match="instance 1, token 0: the label .* cannot be learned"):
            trainer.append([{"a": 1}], [label])
    with pytest.raises(TypeError, match="holdout"):
        trainer.train(str(tmp_path / "model"), "a")
    with pytest.raises(TypeError, match="model"):
        trainer.train(None)
    with pytest.raises(OutputPathError, match="does not exist"):
        trainer.train(str(tmp_path / "missing" / "model"))
    with pytest.raises(EmptySequenceError, match="The data is empty"):
        trainer.train(str(tmp_path / "model"), holdout=0)
    trainer.clear()
    with pytest.raises(EmptySequenceError, match="The data is empty"):
        trainer.train(str(tmp_path / "model"))
    assert not os.path.exists(tmp_path / "model")
