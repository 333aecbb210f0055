"""``import pycrfsuite`` answered by fstcrf.pycrfsuite, and NLTK's CRFTagger trained and
tagging on CoNLL-2000 chunks through it, in a fresh process as a user runs it; where
python-crfsuite is installed, NLTK with it is the reference."""

import importlib
import importlib.util
import json
import os
import subprocess
import sys

import pytest

import fstcrf.pycrfsuite
from fstcrf.corpus.evaluate import score_chunks
from fstcrf.model import load_model
from fstcrf.pycrfsuite import install_as_pycrfsuite
from fstcrf.pycrfsuite._logparser import TrainLogParser

from needs import import_or_skip

import_or_skip("nltk", "needs nltk: pip install 'fstcrf[test]'")

#: The child: trains NLTK's CRFTagger on (word, chunk) pairs and tags words; argv:
#: backend ("fstcrf" or "python-crfsuite"), train file, test file, sentences, model file.
CHILD = """
import json, sys
backend, train_path, test_path, count, model_path = sys.argv[1:]
if backend == "fstcrf":
    from fstcrf.pycrfsuite import install_as_pycrfsuite
    install_as_pycrfsuite()
import os
import nltk
from nltk.tag import CRFTagger
nltk.data.path.insert(0, os.path.dirname(model_path))

def read(path):
    sentences, current = [], []
    for line in open(path, encoding="utf-8"):
        if line.split():
            current.append(line.split())
        elif current:
            sentences.append(current)
            current = []
    return sentences[: int(count)]

tagger = CRFTagger(training_opt={"max_iterations": 40, "c2": 0.1})
tagger.train([[(word, chunk) for word, _, chunk in sentence] for sentence in read(train_path)], model_path)
tagged = tagger.tag_sents([[word for word, _, _ in sentence] for sentence in read(test_path)])
print(json.dumps({"tagger": type(tagger._tagger).__module__, "tags": [[tag for _, tag in s] for s in tagged]}))
"""


def nltk_tags(backend: str, data_file, folder, count: int = 400) -> dict:
    train, test = data_file("conll2000/train.txt"), data_file("conll2000/test.txt")
    model = os.path.join(folder, f"{backend}.model")
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.run(
        [sys.executable, "-c", CHILD, backend, str(train), str(test), str(count), model],
        capture_output=True,
        text=True,
        env=environment,
        check=True,
    )
    return {**json.loads(child.stdout), "model": model, "test": test}


def gold_chunks(path, count: int) -> list[list[str]]:
    sentences, current = [], []
    for line in open(path, encoding="utf-8"):
        if line.split():
            current.append(line.split()[2])
        elif current:
            sentences.append(current)
            current = []
    return sentences[:count]


def test_install_as_pycrfsuite_answers_import_pycrfsuite(monkeypatch):
    for name in ("pycrfsuite", "pycrfsuite._logparser"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    install_as_pycrfsuite()
    assert importlib.import_module("pycrfsuite") is fstcrf.pycrfsuite
    assert importlib.import_module("pycrfsuite._logparser").TrainLogParser is TrainLogParser


@pytest.mark.slow
def test_nltk_crftagger_trains_and_tags_conll2000_through_fstcrf(data_file, tmp_path):
    result = nltk_tags("fstcrf", data_file, tmp_path)
    assert result["tagger"] == "fstcrf.pycrfsuite.tagger"
    model = load_model(result["model"])  # NLTK wrote an fstcrf model file
    gold = gold_chunks(result["test"], 400)
    assert [len(tags) for tags in result["tags"]] == [len(tags) for tags in gold]
    assert set(model.labels_) >= {tag for tags in result["tags"] for tag in tags}
    f1 = score_chunks(gold, result["tags"]).f1
    assert f1 > 60
    if importlib.util.find_spec("pycrfsuite") is not None:
        reference = nltk_tags("python-crfsuite", data_file, tmp_path)
        assert reference["tagger"].startswith("pycrfsuite")
        assert abs(f1 - score_chunks(gold, reference["tags"]).f1) < 1.5
