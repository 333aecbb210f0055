"""Real size: small models (a perceptron epoch, or a few L-BFGS iterations) trained on the
whole CoNLL-2000 and CoNLL-2003 English training files, then every ``fstcrf`` command and
decoding mode run on the whole CoNLL-2000 test file (2,012 sentences) and the whole
eng.testb (3,453), each in a process of its own under a timeout that kills its process
group and fails the test instead of hanging (the cascade of a composed model once
deadlocked on the whole test file, its blocks' emissions waiting on the pool its blocks
held).  Every batch of 20,000 tokens is split across the models' 2 threads, so the work
nested in the pool's work (joint, cascade and k-best decoding, MBR, entity
probabilities, marginals, Dask tagging) runs at every level it can.  Each output is
checked: one line per input token holding the input's fields, label columns with labels
of the training data that mostly agree with the gold labels, probabilities in [0, 1].

About 2 to 3 minutes on 2 cores: the models are trained once for the module."""

import json
from html import escape
import os
import re
import signal
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

if os.environ.get("FSTCRF_WITHOUT_PYNINI") == "1":  # the grammar models need pynini; the main leg runs these
    pytest.skip("real-size runs are CI's main leg's (they train grammar models)", allow_module_level=True)

#: Seconds a command may take before it is killed and its test fails: about ten times
#: what it takes on 2 busy cores.
TIMEOUT = 120

#: The least share of tokens whose predicted label must be the gold one (the models are
#: trained for a few seconds: 0.9 or more on every task here).
AGREEMENT = 0.7


def fstcrf(*arguments, stdin: Path | None = None, timeout: float = TIMEOUT) -> str:
    """The standard output of ``fstcrf -q ARGUMENTS`` run in a process group of its own;
    the test fails if it exits with a status other than 0 or runs longer than
    ``timeout`` seconds (the group is killed then)."""
    return run_python(["-m", "fstcrf.cli", "-q", *map(str, arguments)], stdin=stdin, timeout=timeout)


def run_python(arguments: list[str], stdin: Path | None = None, timeout: float = TIMEOUT) -> str:
    """The standard output of ``python ARGUMENTS`` (see :func:`fstcrf`)."""
    shown = " ".join(arguments)
    with open(stdin or os.devnull, "rb") as source:
        process = subprocess.Popen(
            [sys.executable, *arguments],
            stdin=source,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            pytest.fail(f"python {shown} ran for more than {timeout} s (killed)")
    assert process.returncode == 0, f"python {shown} exited with {process.returncode}:\n{err.decode()[-3000:]}"
    return out.decode()


@cache
def sentences_of(path: Path) -> list[list[list[str]]]:
    """The sentences of a CoNLL file, each a list of its lines' fields (-DOCSTART- lines
    are one-line sentences, as fstcrf writes them back)."""
    return split_sentences(path.read_text())


def split_sentences(text: str) -> list[list[list[str]]]:
    """The sentences of CoNLL text, each a list of its lines' fields."""
    return [[line.split() for line in block.splitlines()] for block in re.split(r"\n\s*\n", text.strip())]


@cache
def labels_of(path: Path, column: int) -> frozenset[str]:
    """The labels of a column of a CoNLL file: the labels a model trained on it may predict."""
    return frozenset(fields[column] for sentence in sentences_of(path) for fields in sentence if len(fields) > column)


def probability(value: str) -> float:
    """A probability written by fstcrf (in [0, 1])."""
    number = float(value)
    assert 0.0 <= number <= 1.0, value
    return number


def check_tagged(source: Path, text: str, columns: list) -> list[list[list[str]]]:
    """Check that ``text`` is ``source`` with ``columns`` added to each token line and
    return its sentences.  Each column is ("label", labels, gold column or None),
    ("probability",), ("entity",) (a probability, or _ outside entities): label
    columns hold labels of the set, and agree with the gold column at AGREEMENT of
    the tokens or more."""
    expected, tagged = sentences_of(source), split_sentences(text)
    assert len(tagged) == len(expected), f"{len(tagged)} sentences written for {len(expected)} read"
    width = len(columns)
    agree = [0] * width
    tokens = 0
    for read, written in zip(expected, tagged):
        assert len(written) == len(read), f"a sentence of {len(read)} tokens came back with {len(written)}: {written}"
        if read[0][0] == "-DOCSTART-":
            continue
        for fields, output in zip(read, written):
            assert output[: len(fields)] == fields and len(output) == len(fields) + width, (fields, output)
            added = output[len(fields) :]
            tokens += 1
            for k, (value, column) in enumerate(zip(added, columns)):
                if column[0] == "label":
                    assert value in column[1], f"{value!r} is no label of the training data"
                    agree[k] += column[2] is not None and value == fields[column[2]]
                elif column[0] == "probability" or value != "_":
                    probability(value)
    for k, column in enumerate(columns):
        if column[0] == "label" and column[2] is not None:
            assert agree[k] / tokens >= AGREEMENT, f"column {k}: {agree[k] / tokens:.3f} of the tokens agree with gold"
    return tagged


@pytest.fixture(scope="module")
def data(data_file):
    """The whole corpora: CoNLL-2000's training and test files, CoNLL-2003's English
    training file and eng.testb, and the seminar announcements' folder."""
    folder = data_file("conll2000/train.txt").parent
    return {
        "train": folder / "train.txt",
        "test": data_file("conll2000/test.txt"),
        "eng.train": data_file("conll2003/eng.train"),
        "testb": data_file("conll2003/eng.testb"),
        "seminars": data_file("seminars/README").parent / "training",
    }


@pytest.fixture(scope="module")
def models(data, tmp_path_factory):
    """Model files, each trained once on a whole training file: ``chunker`` (L-BFGS, 8
    iterations, under the iob2 grammar), ``pos`` and ``chunk_reads_pos`` (a perceptron
    epoch each) and their composition ``composed``, NP and VP chunkers ``np`` and ``vp``
    composed under the joint grammar no_overlap (``no_overlap``), and a named-entity
    tagger ``ner`` with label-consistency penalties."""
    folder = tmp_path_factory.mktemp("models")
    small = folder / "small.template"
    small.write_text("bias\nword[0]\npos[-1]\npos[0]\npos[1]\n")
    paths = {name: folder / f"{name}.model" for name in ("chunker", "pos", "chunk_reads_pos", "np", "vp", "ner")}
    perceptron = ("--algorithm", "perceptron", "--max-iter", 1, "--threads", 2)
    train = data["train"]
    fstcrf("train", train, "--grammar", "iob2", "--max-iter", 8, "--threads", 2, "-o", paths["chunker"])
    fstcrf("train", train, "--target", "pos", "--template", "pos", *perceptron, "-o", paths["pos"])
    fstcrf(
        "train",
        train,
        "--reads",
        "pos",
        "--template",
        "chunking-reads-pos",
        *perceptron,
        "-o",
        paths["chunk_reads_pos"],
    )
    for kind in ("np", "vp"):
        fstcrf("train", train, "--only-types", kind.upper(), "--template", small, *perceptron, "-o", paths[kind])
    fstcrf(
        "train", data["eng.train"], "--columns", "word,pos,chunk,ner", "--target", "ner", "--template", "ner",
        "--consistency", "--document-method", "consistency", *perceptron, "-o", paths["ner"],
    )  # fmt: skip
    paths["composed"] = folder / "composed.model"
    fstcrf("compose", paths["pos"], paths["chunk_reads_pos"], "-o", paths["composed"])
    paths["no_overlap"] = folder / "no_overlap.model"
    fstcrf("compose", paths["np"], paths["vp"], "--joint", "no_overlap", "-o", paths["no_overlap"])
    return paths


@pytest.fixture(scope="module")
def labels(data):
    """The label sets of the training data: part-of-speech tags, chunk labels, NP and VP
    chunk labels, named-entity labels."""
    chunks = labels_of(data["train"], 2)
    return {
        "pos": labels_of(data["train"], 1),
        "chunk": chunks,
        "np": frozenset(label for label in chunks if label == "O" or label.endswith("-NP")),
        "vp": frozenset(label for label in chunks if label == "O" or label.endswith("-VP")),
        "ner": labels_of(data["eng.train"], 3),
    }


@pytest.mark.parametrize(
    "options, extra",
    [
        ([], ["chunk"]),
        (["--decode", "mbr"], ["chunk"]),
        (["--entity-probabilities", "--marginals"], ["chunk", "probability", "entity"]),
        (["--nbest", "3"], ["chunk"] * 3 + ["probability"] * 3),
        (["--sample", "2", "--seed", "1"], ["chunk", "chunk"]),
    ],
    ids=["viterbi", "mbr", "entity-probabilities-marginals", "nbest", "sample"],
)
def test_the_chunker_tags_the_whole_test_file(data, models, labels, options, extra):
    columns = [("label", labels["chunk"], 2) if kind == "chunk" else (kind,) for kind in extra]
    tagged = check_tagged(data["test"], fstcrf("tag", models["chunker"], data["test"], *options), columns)
    if "--nbest" in options:  # ranked by probability, which adds up to at most 1
        for sentence in tagged:
            ranked = [probability(value) for value in sentence[0][-3:]]
            assert ranked == sorted(ranked, reverse=True) and sum(ranked) <= 1 + 1e-9


def test_samples_with_their_probability_are_one_json_line_per_sentence(data, models, labels):
    lines = fstcrf("tag", models["chunker"], data["test"], "--sample", "2", "--with-probability").splitlines()
    sentences = sentences_of(data["test"])
    assert len(lines) == 2 * len(sentences)
    for line, sentence in zip(lines[::2], sentences):
        record = json.loads(line)
        assert record["columns"]["word"] == [fields[0] for fields in sentence]
        assert set(record["labels"]) <= labels["chunk"] and len(record["labels"]) == len(sentence)
        assert 0 < record["probability"] <= 1


def test_tagging_standard_input_and_on_dask(data, models, labels):
    columns = [("label", labels["chunk"], 2)]
    check_tagged(data["test"], fstcrf("tag", models["chunker"], "-", "--threads", 2, stdin=data["test"]), columns)
    check_tagged(data["test"], fstcrf("tag", models["chunker"], data["test"], "--dask", "local:1"), columns)


def test_a_plain_model_decodes_under_a_grammar(data, models, labels):
    output = fstcrf("tag", models["np"], data["test"], "--grammar", "iob2")
    tagged = check_tagged(data["test"], output, [("label", labels["np"], None)])
    for sentence in tagged:  # iob2: no I-NP after O or at the start
        chunk_labels = [fields[-1] for fields in sentence]
        assert all(label != "I-NP" or before != "O" for before, label in zip(["O", *chunk_labels], chunk_labels))


@pytest.mark.parametrize("mode", ["joint", "cascade", "kbest"])
def test_the_composed_model_tags_the_whole_test_file(data, models, labels, mode):
    output = fstcrf("tag", models["composed"], data["test"], "--mode", mode, "--threads", 2)
    check_tagged(data["test"], output, [("label", labels["pos"], 1), ("label", labels["chunk"], 2)])


@pytest.mark.parametrize("options", [[], ["--entity-probabilities"]], ids=["viterbi", "entity-probabilities"])
def test_a_joint_grammar_model_tags_the_whole_test_file(data, models, labels, options):
    columns = [("label", labels["np"], None), ("label", labels["vp"], None)]
    columns += [("entity",), ("entity",)] if options else []
    tagged = check_tagged(data["test"], fstcrf("tag", models["no_overlap"], data["test"], *options), columns)
    for sentence in tagged:  # no_overlap: no token in both chunks
        assert all(fields[3] == "O" or fields[4] == "O" for fields in sentence)


@pytest.mark.parametrize(
    "options",
    [[], ["--nonlocal", "consistency", "--sweeps", "2"], ["--decode", "mbr", "--entity-probabilities"]],
    ids=["viterbi", "nonlocal", "mbr-entity-probabilities"],
)
def test_the_entity_tagger_tags_the_whole_testb(data, models, labels, options):
    columns = [("label", labels["ner"], 3)] + ([("entity",)] if "--entity-probabilities" in options else [])
    check_tagged(data["testb"], fstcrf("tag", models["ner"], data["testb"], *options), columns)


def conlleval_f1(report: str) -> float:
    """The overall FB1 of a conlleval report."""
    return float(re.search(r"FB1:\s+([\d.]+)", report).group(1))


def test_eval_and_compare(data, models, tmp_path):
    f1 = conlleval_f1(fstcrf("eval", models["chunker"], data["test"]))
    assert f1 > 60
    assert conlleval_f1(fstcrf("eval", models["composed"], data["test"], "--mode", "cascade")) > 60
    report = fstcrf("eval", models["ner"], data["testb"], "--nonlocal", "consistency", "--sweeps", 2)
    assert conlleval_f1(report) > 50
    viterbi, mbr = tmp_path / "viterbi.txt", tmp_path / "mbr.txt"
    fstcrf("tag", models["chunker"], data["test"], "-o", viterbi)
    fstcrf("tag", models["chunker"], data["test"], "--decode", "mbr", "-o", mbr)
    assert conlleval_f1(fstcrf("eval", "--pred", viterbi)) == f1
    assert "McNemar" in fstcrf("compare", viterbi, mbr)


def test_calibrate_then_decode_with_the_fitted_temperature(data, models, labels, tmp_path):
    calibrated = tmp_path / "calibrated.model"
    temperature = float(
        re.search(r"[\d.]+(?:e[-+]?\d+)?", fstcrf("calibrate", models["ner"], data["testb"], "-o", calibrated)).group()
    )
    assert temperature > 0
    output = fstcrf("tag", calibrated, data["testb"], "--decode", "mbr")
    check_tagged(data["testb"], output, [("label", labels["ner"], 3)])


@pytest.mark.parametrize("model", ["chunker", "no_overlap"])
def test_view_the_whole_test_file(data, models, tmp_path, model):
    page = tmp_path / "page.html"
    fstcrf("view", models[model], data["test"], "-o", page)
    html = page.read_text()
    sentences = sentences_of(data["test"])
    assert html.count('class="sentence"') == len(sentences)
    assert "".join(f"<td>{escape(fields[0])}</td>" for fields in sentences[-1]) in html


@pytest.mark.parametrize("model", ["chunker", "composed"])
def test_draw_the_last_sentence_lattice(data, models, model):
    last = sentences_of(data["test"])[-1]
    dot = fstcrf(
        "draw", "lattice", models[model], data["test"], "--sentence", len(sentences_of(data["test"])) - 1, "-o", "-"
    )
    assert dot.startswith("digraph") and all(f'"{fields[0]}' in dot or fields[0] in dot for fields in last)


def test_convert_to_bioes_and_back(data, tmp_path):
    bioes, back = tmp_path / "bioes.txt", tmp_path / "back.txt"
    fstcrf("convert", data["test"], "--scheme", "bioes", "-o", bioes)
    converted = split_sentences(bioes.read_text())
    assert [[fields[:2] for fields in s] for s in converted] == [
        [fields[:2] for fields in s] for s in sentences_of(data["test"])
    ]
    assert {fields[2][:2] for s in converted for fields in s} == {"B-", "I-", "E-", "S-", "O"}
    fstcrf("convert", bioes, "--scheme", "iob2", "-o", back)
    assert split_sentences(back.read_text()) == sentences_of(data["test"])


def test_jackknife_the_whole_test_file(data, labels):
    options = ("--folds", 2, "--target", "pos", "--template", "pos", "--algorithm", "perceptron", "--max-iter", 1)
    output = split_sentences(fstcrf("jackknife", data["test"], *options, "-o", "-"))
    expected = sentences_of(data["test"])
    assert [[fields[0] for fields in s] for s in output] == [[fields[0] for fields in s] for s in expected]
    predicted = [fields[1] for s in output for fields in s]
    gold = [fields[1] for s in expected for fields in s]
    assert set(predicted) <= labels["pos"]
    assert sum(a == b for a, b in zip(predicted, gold)) >= AGREEMENT * len(gold)


def test_seminars_reads_every_announcement(data):
    output = fstcrf("seminars", data["seminars"], "-o", "-")
    announcements = [path for path in data["seminars"].iterdir() if path.suffix == ".txt"]
    assert output.count("-DOCSTART-") == len(announcements)
    assert all(len(line.split()) == 2 for line in output.splitlines() if line.strip())


def test_the_model_commands(models, tmp_path):
    assert "decoder" in fstcrf("info", models["composed"])
    assert "iteration" in fstcrf("history", models["chunker"])
    assert "B-" in fstcrf("dump", models["ner"], "--top", 5)
    fstcrf("upgrade", models["chunker"], "-o", tmp_path / "upgraded.model")


def test_bandit_training_on_the_whole_training_file(data, tmp_path, labels):
    """A bandit epoch over the whole training file: 16-sentence minibatches handed half to
    the partner thread."""
    model = tmp_path / "bandit.model"
    small = tmp_path / "small.template"
    small.write_text("bias\nword[0]\npos[0]\n")
    fstcrf("train", data["train"], "--algorithm", "bandit", "--only-types", "NP", "--template", small,
           "--max-iter", 1, "--threads", 2, "-o", model)  # fmt: skip
    check_tagged(data["test"], fstcrf("tag", model, data["test"]), [("label", labels["np"], None)])


#: The Python API at real size, in a process of its own: a composed model's three decoding
#: modes and a single model's marginals, MBR labels and k best on the whole test
#: file in one call each (one batch split across the model's threads).
API_SCRIPT = """
import sys
from fstcrf.corpus.conll import read_conll
from fstcrf.model.chain import ChainCRF
from fstcrf.model.compose import JointModel

composed, chunker, test = sys.argv[1:]
sentences = read_conll(test).sentences
lengths = [len(sentence) for sentence in sentences]
joint = JointModel.load(composed)
for mode in ("cascade", "kbest", "joint"):
    for labels in joint.predict(sentences, mode=mode):
        assert [len(s) for s in labels] == lengths, mode
model = ChainCRF.load(chunker)
assert [len(m) for m in model.predict_marginals(sentences)] == lengths
assert [len(labels) for labels in model.predict_mbr(sentences)] == lengths
ranked, probabilities = model.kbest(sentences, 2)
assert [len(labels[0]) for labels in ranked] == lengths and probabilities.shape == (len(sentences), 2)
print("ok")
"""


def test_the_python_api_at_real_size(data, models):
    assert run_python(["-c", API_SCRIPT, str(models["composed"]), str(models["chunker"]), str(data["test"])]) == "ok\n"
