"""fstcrf.pycrfsuite side by side with python-crfsuite (the extra ``bench`` installs
it): the same calls raise the same exception types, L-BFGS and SGD models give the
same answers, each log parser reads the other's log as its own, and python-crfsuite's
dump parser reads fstcrf's dump."""

import os

import pytest

import fstcrf.pycrfsuite as ours
from fstcrf.pycrfsuite._logparser import TrainLogParser

from needs import import_or_skip
from weather import weather

real = import_or_skip("pycrfsuite", "needs python-crfsuite: pip install 'fstcrf[bench]'")

XSEQ, YSEQ = weather()


def train(module, path, algorithm="lbfgs", holdout=-1, messages=None):
    class Keeping(module.Trainer):
        def message(self, message):
            if messages is not None:
                messages.append(message)
            super().message(message)

    trainer = Keeping(algorithm, params={"max_iterations": 5} if messages is not None else None, verbose=False)
    trainer.append(XSEQ, YSEQ)
    trainer.append(XSEQ[:4], YSEQ[:4], group=1)
    trainer.train(path, holdout)
    return path


def opened(module, tmp_path):
    tagger = module.Tagger()
    tagger.open(train(module, str(tmp_path / module.__name__)))
    tagger.set(XSEQ)
    return tagger


def unset(module, folder):
    """What a tagger answers before a sequence is set."""
    tagger = module.Tagger()
    tagger.open(train(module, str(folder / "model")))
    return tagger.tag(), tagger.probability(["sunny"]), tagger.marginal("x", 0)


CALLS = {
    "unknown parameter": lambda m, _: m.Trainer().set("foo", 1),
    "unknown parameter's value": lambda m, _: m.Trainer().get("foo"),
    "unknown parameter's help": lambda m, _: m.Trainer().help("foo"),
    "unknown algorithm": lambda m, _: m.Trainer().select("foo"),
    "another graphical model": lambda m, _: m.Trainer().select("lbfgs", "crf2d"),
    "a parameter of another algorithm": lambda m, _: m.Trainer("l2sgd", params={"c1": 1}),
    "labels of another length": lambda m, _: m.Trainer().append([{"a": 1}], ["x", "y"]),
    "a label that is a number": lambda m, _: m.Trainer().append([{"a": 1}], [1]),
    "a value that is None": lambda m, _: m.Trainer().append([{"a": None}], ["x"]),
    "a value that is a tuple": lambda m, _: m.Trainer().append([{"a": (1, 2)}], ["x"]),
    "a token that is a number": lambda m, _: m.Trainer().append([5], ["x"]),
    "a key that is a number": lambda m, _: m.Trainer().append([{5: 1}], ["x"]),
    "a nested list of numbers": lambda m, _: m.Trainer().append([{"a": [1, 2]}], ["x"]),
    "a group that is text": lambda m, _: m.Trainer().append([{"a": 1}], ["x"], "g"),
    "no items": lambda m, _: m.Trainer().append(None, ["x"]),
    "no labels": lambda m, _: m.Trainer().append([{"a": 1}], None),
    "a model name that is None": lambda m, tmp: train(m, None),
    "a holdout group that is text": lambda m, tmp: train(m, str(tmp / "model"), holdout="a"),
    "training on nothing": lambda m, tmp: (lambda t: (t.append([{"a": 1}], ["x"]), t.clear(), t.train(str(tmp))))(
        m.Trainer(verbose=False)
    ),
    "parameters that are not a dict": lambda m, _: m.Trainer().set_params([("c2", 1)]),
    "labels of a closed tagger": lambda m, _: m.Tagger().labels(),
    "set on a closed tagger": lambda m, _: m.Tagger().set(XSEQ),
    "probability on a closed tagger": lambda m, _: m.Tagger().probability(YSEQ),
    "marginal on a closed tagger": lambda m, _: m.Tagger().marginal("sunny", 0),
    "dump of a closed tagger": lambda m, tmp: m.Tagger().dump(str(tmp / "dump")),
    "info of a closed tagger": lambda m, _: m.Tagger().info(),
    "a missing model": lambda m, tmp: m.Tagger().open(str(tmp / "missing")),
    "a folder as the model": lambda m, tmp: m.Tagger().open(str(tmp)),
    "None as the model": lambda m, _: m.Tagger().open(None),
    "a text file as the model": lambda m, _: m.Tagger().open(__file__),
    "no bytes": lambda m, _: m.Tagger().open_inmemory(b""),
    "text for bytes": lambda m, _: m.Tagger().open_inmemory("abc"),
    "probability of too few labels": lambda m, tmp: opened(m, tmp).probability(YSEQ[:2]),
    "probability of an unknown label": lambda m, tmp: opened(m, tmp).probability(["x"] * 10),
    "probability of numbers": lambda m, tmp: opened(m, tmp).probability([1] * 10),
    "marginal of an unknown label": lambda m, tmp: opened(m, tmp).marginal("x", 0),
    "marginal past the end": lambda m, tmp: opened(m, tmp).marginal("sunny", 10),
    "marginal before the start": lambda m, tmp: opened(m, tmp).marginal("sunny", -1),
    "a position that is text": lambda m, tmp: opened(m, tmp).marginal("sunny", "1"),
    "a label that is not text": lambda m, tmp: opened(m, tmp).marginal(1, 0),
    "a closed tagger closed": lambda m, _: m.Tagger().close(),
    "an unknown attribute": lambda m, tmp: opened(m, tmp).tag([{"zzz": 1}]),
    "no sequence set": lambda m, tmp: unset(m, tmp),
}
KINDS = (TypeError, ValueError, RuntimeError, OSError, AttributeError)


def raised(call, module, folder):
    """The kinds of exception ``call`` raises with ``module`` (empty: none)."""
    folder.mkdir()
    try:
        call(module, folder)
    except KINDS as error:
        return {kind.__name__ for kind in KINDS if isinstance(error, kind)}
    return set()


@pytest.mark.parametrize("name", list(CALLS))
def test_fstcrf_raises_what_python_crfsuite_raises(name, tmp_path):
    theirs = raised(CALLS[name], real, tmp_path / "real")
    mine = raised(CALLS[name], ours, tmp_path / "ours")
    assert theirs <= mine and bool(theirs) == bool(mine), (theirs, mine)


@pytest.mark.parametrize("algorithm, tolerance", [("lbfgs", 1e-6), ("l2sgd", 1e-2)])
def test_lbfgs_and_sgd_models_answer_as_python_crfsuites(algorithm, tolerance, tmp_path):
    """L-BFGS reaches CRFsuite's optimum; SGD visits the sentences in another order."""
    answers = []
    for module in (real, ours):
        with module.Tagger().open(train(module, str(tmp_path / module.__name__), algorithm)) as tagger:
            answers.append(
                (
                    tagger.tag(XSEQ),
                    tagger.probability(YSEQ),
                    [tagger.marginal(label, t) for t in range(len(XSEQ)) for label in ("sunny", "rainy")],
                    sorted(tagger.labels()),
                )
            )
    (tags, probability, marginals, labels), theirs = answers[1], answers[0]
    assert tags == theirs[0] and labels == theirs[3]
    assert probability == pytest.approx(theirs[1], rel=tolerance)
    assert marginals == pytest.approx(theirs[2], abs=tolerance)


@pytest.mark.parametrize("holdout", [-1, 1])
def test_each_log_parser_reads_the_others_log(holdout, tmp_path):
    for module in (real, ours):
        messages = []
        train(module, str(tmp_path / module.__name__), holdout=holdout, messages=messages)
        parsers = [TrainLogParser(), real._logparser.TrainLogParser()]
        events = [[parser.feed(message) for message in messages] for parser in parsers]
        assert events[0] == events[1] and events[0].count("iteration") == 5
        ours_parsed, theirs_parsed = parsers
        assert ours_parsed.iterations == theirs_parsed.iterations
        assert [ours_parsed.last_log, ours_parsed.featgen_percent, ours_parsed.training_seconds] == [
            theirs_parsed.last_log,
            theirs_parsed.featgen_percent,
            theirs_parsed.training_seconds,
        ]
        assert bool(ours_parsed.iterations[-1]["scores"]) == (holdout >= 0)


def test_python_crfsuites_dump_parser_reads_the_dump(tmp_path):
    from pycrfsuite._dumpparser import CRFsuiteDumpParser

    with ours.Tagger().open(train(ours, str(tmp_path / "model"))) as tagger:
        tagger.dump(str(tmp_path / "dump.txt"))
        info = tagger.info()
    parser = CRFsuiteDumpParser()
    with open(tmp_path / "dump.txt", encoding="utf-8") as stream:
        for line in stream:
            parser.feed(line)
    parsed = parser.result
    assert parsed.header == info.header and parsed.labels == info.labels and parsed.attributes == info.attributes
    assert parsed.state_features == pytest.approx(info.state_features, abs=5e-7)
    assert parsed.transitions == pytest.approx(info.transitions, abs=5e-7)
    assert ("солнце:не светит", "rainy") in parsed.state_features
    assert os.path.getsize(tmp_path / "model") == int(parsed.header["size"])
