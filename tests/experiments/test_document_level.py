"""The document-level experiment on a toy CoNLL-2003 layout: every figure against the
cached models decoded directly, the dev choice as the argmax, the cache, bad input."""

from __future__ import annotations

import random

import pytest

from fstcrf.corpus.evaluate import mcnemar, score_labels
from fstcrf.document.two_stage import load_two_stage
from fstcrf.errors import FstcrfError
from fstcrf.experiments import document_level
from fstcrf.model import ChainCRF

NAMES = [("Anna Berg", "PER"), ("Bert", "PER"), ("Oslo", "LOC"), ("New Rome", "LOC"), ("Acme", "ORG"), ("Bert", "ORG")]
VERBS = ["runs", "sleeps", "grows", "said"]


def _write(path, documents: int, seed: int) -> None:
    """Documents of "<name> <verb> ." sentences; a document mentions few names, so
    a name's type repeats within it (IOB1 labels, POS and chunk columns as in CoNLL-2003)."""
    rng = random.Random(seed)
    lines = []
    for _ in range(documents):
        lines += ["-DOCSTART- -X- O O", ""]
        cast = rng.sample(NAMES, 2)
        for _ in range(rng.randint(2, 5)):
            name, kind = rng.choice(cast)
            for word in name.split():
                lines.append(f"{word} NNP I-NP I-{kind}")
            lines += [f"{rng.choice(VERBS)} VBZ I-VP O", ". . O O", ""]
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    folder = tmp_path_factory.mktemp("conll2003")
    for number, name in enumerate(document_level.SPLITS):
        _write(folder / name, 12 if name == "eng.train" else 5, number)
    return folder


SETTINGS = document_level.Settings(
    template="ner", sigma=3.0, folds=2, second_sigmas=(1.0, 3.0), scales=(1.0, 2.0), block_sizes=(0,),
    sweeps=3, max_iter=15, threads=1, resamples=50,
)  # fmt: skip


@pytest.mark.slow
def test_the_figures_are_those_of_the_cached_models_and_a_second_run_reuses_them(toy, tmp_path):
    lines = []
    result = document_level.measure(toy, SETTINGS, tmp_path, log=lines.append)
    dev, test = (document_level.read_split(toy, name) for name in document_level.SPLITS[1:])
    methods = {method.name: method for method in result.methods}
    assert list(methods) == ["local", "consistency", "two-stage", "two-stage + consistency"]
    local = ChainCRF.load(next(tmp_path.glob("local-*.model")))
    assert local.consistency_ is not None
    local_test = local.predict(test)
    assert methods["local"].dev_f1 == score_labels(dev.column("ner"), local.predict(dev)).primary
    assert methods["local"].test_f1 == score_labels(test.column("ner"), local_test).primary
    for method in methods.values():  # the chosen setting is the best on dev
        on_dev = [f1 for name, f1 in result.dev.items() if name.startswith(method.name + " ")]
        assert method.dev_f1 == max(on_dev)
    two_stage = methods["two-stage"]
    sigma = float(two_stage.setting.split()[1])
    chosen = [path for path in tmp_path.glob("two-stage2-*.model") if load_two_stage(path).second_.sigma == sigma]
    labels = load_two_stage(chosen[0]).predict(test)
    assert two_stage.test_f1 == score_labels(test.column("ner"), labels).primary
    assert two_stage.mcnemar_p == mcnemar(test.column("ner"), local_test, labels).p_value
    assert two_stage.bootstrap.difference == pytest.approx(two_stage.test_f1 - methods["local"].test_f1)
    scale, block = (float(part) for part in methods["consistency"].setting.split()[1::2])
    annealed = document_level.consistency_labels(local, test, scale, int(block), SETTINGS.sweeps)
    assert methods["consistency"].test_f1 == score_labels(test.column("ner"), annealed).primary
    again = document_level.measure(toy, SETTINGS, tmp_path, log=lines.append)
    assert set(again.train_seconds.values()) == {0.0}
    assert [(m.setting, m.test_f1) for m in again.methods] == [(m.setting, m.test_f1) for m in result.methods]


def test_a_missing_file_is_a_typed_error(tmp_path):
    with pytest.raises(FstcrfError, match="eng.train does not exist"):
        document_level.measure(tmp_path, SETTINGS, tmp_path / "cache")
    assert document_level.main(["--data", str(tmp_path), "--cache", str(tmp_path / "cache")]) == 2


def test_read_split_converts_iob1_to_iob2(toy):
    for sentence in document_level.read_split(toy, "eng.testa"):
        labels = sentence["ner"]
        assert all(not label.startswith("I-") or labels[i - 1][2:] == label[2:] for i, label in enumerate(labels))
        assert labels[0] != "O" and labels[0].startswith("B-")


def test_the_local_models_take_the_feature_set_fstcrf_train_gives_their_template():
    assert document_level.Settings(template="ner-rich").local().features == "complete-if-fits"
    assert document_level.Settings(template="ner").local().features is None
    assert document_level.Settings(template="ner-rich").key() != document_level.Settings(template="ner").key()
