"""The estimators' API under misuse: pickling, scikit-learn's parameter protocol,
argument types and values, dev selection metrics, warnings, SIGTERM, model files
replaced or truncated while in use, and model files with non-finite weights."""

import contextlib
import copy
import json
import logging
import math
import os
import pickle
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from fstcrf.cli import main
from fstcrf.model.compose import compose, load_joint
from fstcrf.corpus.conll import READ_BLOCK, Corpus, Sentence
from fstcrf.errors import ArgumentTypeError, FstcrfError, ModelFileError
from fstcrf.corpus.evaluate import TagScores
from fstcrf.model import ChainCRF, load_model
from fstcrf.model.file import MODEL_IN_MEMORY_VARIABLE, MODEL_KIND, read_container, write_container
from fstcrf.corpus.synthetic import DATA_DIR
from corpora import TEMPLATE, chunk_corpus

POS_TEMPLATE = "bias\nword[0]\nword[-1]\nword[+1]\n"
READING_TEMPLATE = "bias\nword[0]\npos[0]\npos[0]|word[0]\n"


@pytest.fixture(scope="module")
def corpus():
    return chunk_corpus(1, 40)


@pytest.fixture(scope="module")
def model(corpus):
    return ChainCRF(TEMPLATE, max_iter=8).fit(corpus)


# -- pickling and copying ----------------------------------------------------------


@pytest.mark.parametrize(
    "duplicate", [lambda m: pickle.loads(pickle.dumps(m)), copy.deepcopy], ids=["pickle", "deepcopy"]
)
def test_a_fitted_model_pickles_and_copies(model, duplicate, tmp_path):
    test = chunk_corpus(2, 15)
    again = duplicate(model)
    assert again.predict(test) == model.predict(test)
    for got, expected in zip(again.predict_marginals(test), model.predict_marginals(test)):
        np.testing.assert_array_equal(got, expected)
    again.save(tmp_path / "again.model")
    assert load_model(tmp_path / "again.model").predict(test) == model.predict(test)


def test_a_joint_model_pickles_and_copies(corpus):
    pos_model = ChainCRF(POS_TEMPLATE, max_iter=8).fit(corpus, target="pos")
    chunk_model = ChainCRF(READING_TEMPLATE, reads="pos", max_iter=8).fit(corpus, target="chunk")
    joint = compose([pos_model, chunk_model])
    test = [Sentence({"word": sentence["word"]}) for sentence in chunk_corpus(3, 10)]
    expected = joint.predict(test)
    for again in (pickle.loads(pickle.dumps(joint)), copy.deepcopy(joint)):
        assert again.predict(test) == expected
        assert again.predict(test, mode="cascade") == joint.predict(test, mode="cascade")


# -- scikit-learn's parameter protocol -------------------------------------------------


def test_get_params_and_set_params():
    estimator = ChainCRF(TEMPLATE, sigma=3.0, max_iter=7)
    params = estimator.get_params(deep=True)
    assert params == estimator.get_params(deep=False) == estimator.get_params()
    assert params["sigma"] == 3.0 and params["max_iter"] == 7 and params["template"] == TEMPLATE
    assert estimator.set_params(sigma=2.0, order=2) is estimator
    assert (estimator.sigma, estimator.order) == (2.0, 2)
    with pytest.raises(FstcrfError, match=r"no parameter 'sigmaa'.*template, order, algorithm, sigma"):
        estimator.set_params(sigmaa=1.0)
    assert estimator.sigma == 2.0


def test_sklearn_clone_gives_an_unfitted_copy(model):
    base = pytest.importorskip("sklearn.base")
    cloned = base.clone(model)
    assert type(cloned) is ChainCRF and cloned.get_params() == model.get_params()
    assert not hasattr(cloned, "weights_")


# -- sentences as lists, corpus slices -----------------------------------------------


def test_fit_and_score_take_lists_of_sentences(corpus, model):
    from_list = ChainCRF(TEMPLATE, max_iter=8).fit(list(corpus.sentences))
    np.testing.assert_array_equal(from_list.weights_, model.weights_)
    assert from_list.columns_ == model.columns_
    test = chunk_corpus(2, 15)
    assert model.score(test.sentences) == model.score(test)
    with_dev = ChainCRF(TEMPLATE, max_iter=3).fit(corpus.sentences[:30], dev=corpus.sentences[30:])
    assert with_dev.history_[0]["dev_metric"] == "F1"


def test_corpus_slices(corpus):
    corpus = Corpus(corpus.column_names, corpus.sentences, trailing_docstart_lines=("-DOCSTART- -X- O",))
    part = corpus[10:20]
    assert isinstance(part, Corpus) and part.sentences == corpus.sentences[10:20]
    assert part.column_names == corpus.column_names and part.trailing_docstart_lines == ()
    assert corpus[30:].trailing_docstart_lines == ("-DOCSTART- -X- O",)
    assert corpus[3] is corpus.sentences[3] and corpus[-1] is corpus.sentences[-1]
    assert corpus[np.int64(2)] is corpus.sentences[2]
    with pytest.raises(ArgumentTypeError, match="sentence number or a slice"):
        corpus["word"]


# -- wrong argument types and missing columns -------------------------------------------


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda m: ChainCRF(TEMPLATE).fit("train.txt"), r"got str 'train.txt'.*read_conll"),
        (lambda m: ChainCRF(TEMPLATE).fit(Path("train.txt")), r"PosixPath.*read_conll"),
        (lambda m: ChainCRF(TEMPLATE).fit(["The cat"]), r"item 0 is str 'The cat'"),
        (lambda m: ChainCRF(TEMPLATE).fit(chunk_corpus(1, 5), dev="dev.txt"), r"fit \(dev\).*got str"),
        (lambda m: ChainCRF(TEMPLATE).fit(chunk_corpus(1, 5), target=2), r"target must be a column name"),
        (lambda m: m.predict("The cat sat"), r"predict expects .* got str"),
        (lambda m: m.predict([["The", "cat"]]), r"item 0 is list \['The', 'cat'\]"),
        (lambda m: m.predict(42), r"got int"),
        (lambda m: m.predict_marginals("x"), r"predict_marginals"),
        (lambda m: m.potentials([["x"]]), r"potentials"),
        (lambda m: m.score("test.txt"), r"score expects .* got str"),
        (lambda m: m.score([["B-NP"]]), r"item 0 is list"),
    ],
)
def test_wrong_argument_types(model, call, match):
    with pytest.raises(ArgumentTypeError, match=match) as raised:
        call(model)
    assert isinstance(raised.value, TypeError) and isinstance(raised.value, ValueError)


def test_joint_model_predict_checks_its_argument(corpus):
    pos_model = ChainCRF(POS_TEMPLATE, max_iter=3).fit(corpus, target="pos")
    chunk_model = ChainCRF(READING_TEMPLATE, reads="pos", max_iter=3).fit(corpus, target="chunk")
    joint = compose([pos_model, chunk_model])
    for bad, match in (("The cat", "JointModel.predict expects .* got str"), ([["The"]], "item 0 is list")):
        with pytest.raises(ArgumentTypeError, match=match):
            joint.predict(bad)
    with pytest.raises(ArgumentTypeError, match="JointModel.predict_marginals"):
        joint.predict_marginals("x")
    with pytest.raises(FstcrfError, match="reads column 'word'.*its columns are pos"):
        joint.predict([Sentence({"pos": ["DT"]})])


def test_a_missing_target_column_names_the_columns(corpus, model):
    for data in (corpus, corpus.sentences):
        with pytest.raises(FstcrfError, match="no column 'ner'; the columns are word, pos, chunk"):
            ChainCRF(TEMPLATE, max_iter=2).fit(data, target="ner")
        with pytest.raises(FstcrfError, match="no column 'ner'; the columns are word, pos, chunk"):
            model.score(data, target="ner")
    without_chunk = [Sentence({"word": s["word"], "pos": s["pos"]}) for s in corpus.sentences[:5]]
    with pytest.raises(FstcrfError, match="no column 'chunk'; the columns are word, pos"):
        ChainCRF(TEMPLATE, max_iter=2).fit(corpus, dev=without_chunk)


# -- parameter values ----------------------------------------------------------------


@pytest.mark.parametrize(
    "name, value",
    [
        ("sigma", 1e-300),
        ("sigma", 1e300),
        ("sigma", math.nan),
        ("sigma", 0.0),
        ("sigma", -1.0),
        ("tol", math.inf),
        ("tol", math.nan),
        ("tol", 0.0),
        ("learning_rate", -0.1),
        ("learning_rate", math.inf),
        ("max_iter", 0),
        ("min_count", 0),
        ("mce_c", 1e-300),
        ("mce_c", math.nan),
        ("mce_iter", 0),
        ("threads", 0),
    ],
)
def test_out_of_range_parameters_are_refused_by_name(corpus, name, value):
    for algorithm in ("lbfgs", "sgd"):
        with pytest.raises(FstcrfError, match=f"^{name} must"):
            ChainCRF(TEMPLATE, algorithm=algorithm, **{name: value}).fit(corpus)


@pytest.mark.parametrize(
    "name, value",
    [
        ("sigma", "10"),
        ("max_iter", 2.5),
        ("min_count", 1.0),
        ("tol", None),
        ("seed", "0"),
        ("reads", 3),
        ("grammar_params", "X=NP"),
    ],
)
def test_parameters_of_the_wrong_type_are_refused_by_name(corpus, name, value):
    with pytest.raises(ArgumentTypeError, match=f"^{name} must"):
        ChainCRF(TEMPLATE, **{name: value}).fit(corpus)


def test_extreme_but_valid_sigmas_train(corpus):
    for sigma in (math.inf, 1e100, 1e-100):
        model = ChainCRF(TEMPLATE, sigma=sigma, max_iter=3).fit(corpus)
        assert np.all(np.isfinite(model.weights_))


# -- dev selection metric ----------------------------------------------------------------


def test_dev_selection_on_tags_uses_token_accuracy(corpus, caplog):
    dev = chunk_corpus(5, 20)
    with caplog.at_level(logging.INFO, logger="fstcrf"):
        model = ChainCRF(POS_TEMPLATE, max_iter=12).fit(corpus, target="pos", dev=dev)
    assert "selecting on dev token accuracy" in caplog.messages
    assert sum("selecting on dev" in message for message in caplog.messages) == 1
    assert {record["dev_metric"] for record in model.history_} == {"accuracy"}
    scores = [record["dev_score"] for record in model.history_]
    assert model.best_iteration_ == int(np.argmax(scores)) + 1 > 1
    kept = model.score(dev)
    assert isinstance(kept, TagScores) and kept.accuracy == pytest.approx(max(scores), abs=1e-12)
    assert max(scores) > 90


def test_dev_selection_on_chunks_uses_f1(corpus, caplog):
    with caplog.at_level(logging.INFO, logger="fstcrf"):
        model = ChainCRF(TEMPLATE, max_iter=3).fit(corpus, dev=chunk_corpus(5, 10))
    assert "selecting on dev chunk F1" in caplog.messages
    assert {record["dev_metric"] for record in model.history_} == {"F1"}


def test_model_files_with_dev_f1_records_still_load(corpus, tmp_path):
    model = ChainCRF(TEMPLATE, max_iter=3).fit(corpus, dev=chunk_corpus(5, 10))
    header, arrays = model.to_payload()
    old = [
        {key: value for key, value in record.items() if key not in ("dev_score", "dev_metric")}
        for record in header["training"]["history"]
    ]
    for record, new in zip(old, model.history_):
        record["dev_f1"] = new["dev_score"]
    header["training"]["history"] = old
    write_container(tmp_path / "old.model", MODEL_KIND, header, arrays)
    loaded = load_model(tmp_path / "old.model")
    assert [(r["dev_score"], r["dev_metric"]) for r in loaded.history_] == [
        (r["dev_score"], "F1") for r in model.history_
    ]
    assert all("dev_f1" not in record for record in loaded.history_)


# -- warnings ----------------------------------------------------------------------------


def test_a_min_count_that_keeps_few_predicates_warns(caplog):
    # every word is new, so min_count=2 keeps the bias and the 4 POS predicates of 725
    sentences = [
        Sentence(
            {
                "word": [f"w{i}_{t}" for t in range(6)],
                "pos": ["DT", "NN", "VB", "DT", "NN", "."],
                "chunk": ["B-NP", "I-NP", "B-VP", "B-NP", "I-NP", "O"],
            }
        )
        for i in range(60)
    ]
    with caplog.at_level(logging.WARNING, logger="fstcrf"):
        ChainCRF("bias\nword[0]\nword[-1]|word[0]\npos[0]", min_count=2, max_iter=2).fit(sentences)
    warnings = [r.getMessage() for r in caplog.records if r.name == "fstcrf.features.extractor"]
    assert len(warnings) == 1
    assert "min_count=2 keeps 5 of the 725 predicates" in warnings[0] and "--min-count 1 keeps 725" in warnings[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="fstcrf"):
        ChainCRF("bias\nword[0]\npos[0]", min_count=1, max_iter=2).fit(sentences)
    assert not caplog.records


def test_training_labels_that_are_all_one_label_warn(corpus, caplog):
    outside = [sentence.with_column("chunk", ["O"] * len(sentence)) for sentence in corpus]
    with caplog.at_level(logging.WARNING, logger="fstcrf"):
        ChainCRF(TEMPLATE, max_iter=2).fit(outside)
    assert [r.getMessage() for r in caplog.records] == [
        "every training label of column 'chunk' is 'O': the model can only predict 'O'"
    ]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="fstcrf"):
        ChainCRF(TEMPLATE, max_iter=2).fit(corpus)
    assert not caplog.records


# -- SIGTERM ------------------------------------------------------------------------------

_TRAIN_UNTIL_SIGTERM = """
import json, signal, sys, time
from fstcrf.corpus.conll import read_conll
from fstcrf.model import ChainCRF
from fstcrf.corpus.synthetic import DATA_DIR

def raise_keyboard_interrupt(signal_number, frame):
    raise KeyboardInterrupt

signal.signal(signal.SIGTERM, raise_keyboard_interrupt)
corpus = read_conll(DATA_DIR / "demo_train.txt")

def report(record):
    print("iteration", record["iteration"], flush=True)
    time.sleep(0.05)

model = ChainCRF("pos", max_iter=10000, tol=1e-300).fit(corpus[:400], target="pos", dev=corpus[400:],
                                                        callback=report)
print(json.dumps({"interrupted": model.interrupted_, "n_iter": model.n_iter_,
                  "best_iteration": model.best_iteration_,
                  "dev_scores": [record["dev_score"] for record in model.history_],
                  "kept_score": model.score(corpus[400:]).primary}), flush=True)
"""


@pytest.mark.slow
def test_sigterm_during_training_keeps_the_best_weights():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    process = subprocess.Popen(
        [sys.executable, "-c", _TRAIN_UNTIL_SIGTERM], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        for line in process.stdout:
            if line.strip() == "iteration 3":
                process.send_signal(signal.SIGTERM)
                break
        output, errors = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, errors
    result = json.loads(output.strip().splitlines()[-1])
    assert result["interrupted"] and 3 <= result["n_iter"] < 10000
    scores = result["dev_scores"]
    assert result["best_iteration"] == int(np.argmax(scores)) + 1
    assert result["kept_score"] == pytest.approx(max(scores), abs=1e-12)


# -- a model file replaced or truncated while in use ---------------------------------

FSTCRF = [sys.executable, "-m", "fstcrf.cli"]
#: The load paths: the file read into memory (the default for a small file), or a
#: private snapshot of it mapped into memory (forced with a limit of 0 bytes).
LOAD_PATHS = {"in memory": None, "snapshot": "0"}


@pytest.fixture
def saved_model(model, tmp_path):
    path = tmp_path / "chunker.model"
    model.save(path)
    return path


@pytest.fixture(scope="session")
def demo_models(demo_chunker, demo_pos_tagger):
    """(a chunker model file, a part-of-speech model file) trained on the demo data."""
    return demo_chunker, demo_pos_tagger


@pytest.fixture(scope="module")
def tagging_input(demo_models, tmp_path_factory):
    """(a first part of standard input, longer than the block ``fstcrf tag`` reads at a
    time, the rest, the chunker's output for both)."""
    text = (DATA_DIR / "demo_test.txt").read_bytes()
    first, rest = text * (READ_BLOCK // len(text) + 2), text * 2
    folder = tmp_path_factory.mktemp("tagging_input")
    (folder / "input.txt").write_bytes(first + rest)
    assert main(["-q", "tag", str(demo_models[0]), str(folder / "input.txt"), "-o", str(folder / "output.txt")]) == 0
    return first, rest, (folder / "output.txt").read_bytes()


def _load_path_environment(load_path: str) -> dict[str, str]:
    """The environment of a child process that loads models by ``load_path``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop(MODEL_IN_MEMORY_VARIABLE, None)
    if LOAD_PATHS[load_path] is not None:
        env[MODEL_IN_MEMORY_VARIABLE] = LOAD_PATHS[load_path]
    return env


def _tag_while_changing(model: Path, first: bytes, rest: bytes, change, env: dict) -> tuple[int, bytes, bytes]:
    """(exit code, output, standard error) of ``fstcrf tag MODEL -`` fed ``first``, then,
    once a first batch is tagged (the model is loaded and in use), ``change()``, then
    ``rest`` (read after the change: ``first`` fills more than a block).  A process
    still running after 120 s is killed."""
    process = subprocess.Popen(
        FSTCRF + ["-q", "tag", str(model), "-", "-o", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    watchdog = threading.Timer(120, process.kill)
    watchdog.start()
    output, tagging = [], threading.Event()

    def read() -> None:
        for line in process.stdout:
            output.append(line)
            tagging.set()
        tagging.set()

    reader = threading.Thread(target=read)
    reader.start()
    try:
        process.stdin.write(first)
        process.stdin.flush()
        tagging.wait()
        change()
        process.stdin.write(rest)
        process.stdin.flush()
    except BrokenPipeError:
        pass  # the process ended early: its exit code tells why
    finally:
        with contextlib.suppress(BrokenPipeError):
            process.stdin.close()
    errors = process.stderr.read()
    process.wait()
    reader.join()
    watchdog.cancel()
    return process.returncode, b"".join(output), errors


@pytest.mark.slow
@pytest.mark.parametrize("load_path", list(LOAD_PATHS))
@pytest.mark.parametrize("change", ["replaced by cp", "truncated"])
def test_a_model_in_use_survives_its_file_being_changed(demo_models, tagging_input, load_path, change, tmp_path):
    chunker, tagger = demo_models
    first, rest, expected = tagging_input
    victim = tmp_path / "victim.model"
    victim.write_bytes(chunker.read_bytes())

    def change_the_file() -> None:
        if change == "replaced by cp":
            subprocess.run(["cp", str(tagger), str(victim)], check=True)
        else:
            with open(victim, "r+b") as stream:
                stream.truncate(100)

    code, output, errors = _tag_while_changing(victim, first, rest, change_the_file, _load_path_environment(load_path))
    assert code == 0, f"exit code {code}: {errors.decode(errors='replace')}"
    assert output == expected
    assert victim.read_bytes() != chunker.read_bytes()  # the file did change under the tagger


_LOAD_WHILE_REWRITTEN = """
import json, shutil, sys, threading
from fstcrf.errors import ModelFileError
from fstcrf.model import load_model

victim, versions = sys.argv[1], sys.argv[2:]
weights = [load_model(path).weights_ for path in versions]
done = threading.Event()

def rewrite():
    k = 0
    while not done.is_set():
        shutil.copyfile(versions[k % 2], victim)      # in place: truncated, then written
        k += 1

writer = threading.Thread(target=rewrite)
writer.start()
outcomes = {"loaded": 0, "refused": 0, "wrong": []}
try:
    for _ in range(300):
        try:
            model = load_model(victim)
        except ModelFileError as error:
            outcomes["refused"] += 1
            if "truncated" not in str(error) and "checksum" not in str(error) and "magic" not in str(error):
                outcomes["wrong"].append(str(error))
            continue
        if any(len(w) == len(model.weights_) and (w == model.weights_).all() for w in weights):
            outcomes["loaded"] += 1
        else:
            outcomes["wrong"].append("weights of neither version")
finally:
    done.set()
    writer.join()
print(json.dumps(outcomes))
"""


@pytest.mark.slow
@pytest.mark.parametrize("load_path", list(LOAD_PATHS))
def test_a_file_rewritten_during_loading_loads_or_is_refused(demo_models, load_path, tmp_path):
    chunker, tagger = demo_models
    victim = tmp_path / "victim.model"
    victim.write_bytes(chunker.read_bytes())
    result = subprocess.run(
        [sys.executable, "-c", _LOAD_WHILE_REWRITTEN, str(victim), str(chunker), str(tagger)],
        capture_output=True,
        text=True,
        env=_load_path_environment(load_path),
        timeout=120,
    )
    assert result.returncode == 0, f"exit code {result.returncode}: {result.stderr}"
    outcomes = json.loads(result.stdout)
    assert outcomes["wrong"] == [] and outcomes["loaded"] + outcomes["refused"] == 300


def test_the_arrays_of_a_loaded_model_are_read_only(saved_model, monkeypatch):
    for load_path, limit in LOAD_PATHS.items():
        if limit is None:
            monkeypatch.delenv(MODEL_IN_MEMORY_VARIABLE, raising=False)
        else:
            monkeypatch.setenv(MODEL_IN_MEMORY_VARIABLE, limit)
        _, arrays = read_container(saved_model)
        assert arrays and not any(array.flags.writeable for array in arrays.values()), load_path
        with pytest.raises(ValueError, match="read-only"):
            load_model(saved_model).weights_[0] = 1.0


@pytest.mark.parametrize("limit", ["-1", "many", "1.5"])
def test_a_bad_in_memory_limit_is_named(saved_model, monkeypatch, limit):
    monkeypatch.setenv(MODEL_IN_MEMORY_VARIABLE, limit)
    with pytest.raises(FstcrfError, match=f"{MODEL_IN_MEMORY_VARIABLE} must be .*got '{re.escape(limit)}'"):
        load_model(saved_model)


# -- non-finite weights and numbers ------------------------------------------------------


def _with_value(path: Path, hostile: Path, name: str, index: int, value: float) -> None:
    """Write ``hostile``: the model file ``path`` with ``value`` at ``index`` of array
    ``name`` (a valid checksum: only the check of the values can refuse it)."""
    header, arrays = read_container(path)
    arrays = {key: np.array(array) for key, array in arrays.items()}
    arrays[name][index] = value
    write_container(hostile, header["format"], {key: item for key, item in header.items() if key != "arrays"}, arrays)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_weights_are_refused_at_load(saved_model, tmp_path, capsys, value):
    hostile = tmp_path / "hostile.model"
    _with_value(saved_model, hostile, "weights", 12, value)
    message = f"{hostile}: array 'weights' has a non-finite value {value} at index 12"
    with pytest.raises(ModelFileError, match=re.escape(message)):
        load_model(hostile)
    assert main(["tag", str(hostile), str(DATA_DIR / "demo_test.txt"), "-o", str(tmp_path / "out.txt")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.strip().splitlines() == [f"fstcrf: error: {message}"]
    assert not (tmp_path / "out.txt").exists()


def test_non_finite_weights_of_a_joint_model_are_refused_at_load(corpus, tmp_path, capsys):
    pos_model = ChainCRF(POS_TEMPLATE, max_iter=3).fit(corpus, target="pos")
    chunk_model = ChainCRF(READING_TEMPLATE, reads="pos", max_iter=3).fit(corpus, target="chunk")
    joint, hostile = tmp_path / "joint.model", tmp_path / "hostile.model"
    compose([pos_model, chunk_model]).save(joint)
    _with_value(joint, hostile, "1.weights", 3, math.nan)
    message = f"{hostile}: array '1.weights' has a non-finite value nan at index 3"
    with pytest.raises(ModelFileError, match=re.escape(message)):
        load_joint(hostile)
    assert main(["tag", str(hostile), str(DATA_DIR / "demo_test.txt"), "-o", str(tmp_path / "out.txt")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"fstcrf: error: {message}"]
    header, arrays = read_container(joint)
    header = {key: item for key, item in header.items() if key != "arrays"}
    write_container(hostile, header["format"], dict(header, scales=[1.0, math.nan]), dict(arrays))
    with pytest.raises(ModelFileError, match=r"scales must be .* got \[1.0, nan\]"):
        load_joint(hostile)


_CONSISTENCY = {"types": ["NP", "VP"], "same": [[0.5, 0.5], [0.5, 0.5]], "sub": [[0.5, 0.5], [0.5, 0.5]], "scale": 1.0}


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda header: header["params"].update(sigma=math.nan), "sigma must be .* got nan"),
        (lambda header: header["params"].update(tol=math.inf), "tol must be .* got inf"),
        (
            lambda header: header.update(consistency=dict(_CONSISTENCY, same=[[math.nan, 0.5], [0.5, 0.5]])),
            r"penalty same\[NP, NP\] = nan is outside",
        ),
        (lambda header: header.update(consistency=dict(_CONSISTENCY, scale=math.inf)), "scale must be .* got inf"),
    ],
    ids=["sigma", "tol", "consistency penalty", "consistency scale"],
)
def test_non_finite_numbers_in_the_header_are_refused_at_load(model, tmp_path, edit, message):
    header, arrays = model.to_payload()
    edit(header)
    write_container(tmp_path / "hostile.model", MODEL_KIND, header, arrays)
    with pytest.raises(ModelFileError, match=message):
        load_model(tmp_path / "hostile.model")
