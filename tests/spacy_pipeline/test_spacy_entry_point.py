"""spaCy finds the factory "fstcrf" through the entry point pyproject.toml declares, in a
fresh process that never imports fstcrf, and loads only the light factory module
until the component is built."""

from needs_spacy import spacy  # noqa: F401  (skips the module without spaCy)

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fstcrf
from fstcrf.corpus.conll import read_conll
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.model import ChainCRF

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"

CHILD = """
import json, sys
import spacy
from spacy.tokens import Doc

nlp = spacy.blank("en")
light = "fstcrf.spacy.factory" in sys.modules and "fstcrf.model" not in sys.modules
nlp.add_pipe("fstcrf", config={"model": sys.argv[1]})
sentences = json.loads(sys.argv[2])
docs = nlp.pipe(Doc(nlp.vocab, words=words, tags=tags) for words, tags in sentences)
spans = [[[span.start, span.end - 1, span.label_] for span in doc.spans["chunks"]] for doc in docs]
print(json.dumps({"light": light, "spans": spans}))
"""


def entry_points(group: str) -> list[str]:
    """The lines "name = module:object" of the table [project.entry-points.GROUP] of pyproject.toml."""
    lines, inside = [], False
    for line in PYPROJECT.read_text("utf-8").splitlines():
        if line.startswith("["):
            inside = line.strip() == f"[project.entry-points.{group}]"
        elif inside and line.strip() and not line.startswith("#"):
            lines.append(line.strip().replace('"', ""))
    return lines


@pytest.mark.slow
def test_spacy_finds_the_factory_through_the_entry_point(tmp_path):
    assert entry_points("spacy_factories") == ["fstcrf = fstcrf.spacy.factory:make_component"]
    # the package metadata an install writes, here beside the tested fstcrf
    metadata = tmp_path / "site" / "fstcrf_entry_point_test-0.dist-info"
    metadata.mkdir(parents=True)
    (metadata / "METADATA").write_text("Metadata-Version: 2.1\nName: fstcrf-entry-point-test\nVersion: 0\n")
    (metadata / "entry_points.txt").write_text("[spacy_factories]\n" + "\n".join(entry_points("spacy_factories")))
    corpus = read_conll(DATA_DIR / "demo_test.txt")
    model = ChainCRF(template="bias\nword[0]\npos[0]\n", max_iter=5).fit(corpus[:80], target="chunk")
    model.save(tmp_path / "chunk.model")
    sentences = corpus.sentences[80:100]
    paths = [str(tmp_path / "site"), str(Path(fstcrf.__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")]
    completed = subprocess.run(
        [
            sys.executable,
            "-c",
            CHILD,
            str(tmp_path / "chunk.model"),
            json.dumps([[s["word"], s["pos"]] for s in sentences]),
        ],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(path for path in paths if path)},
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(completed.stdout)
    assert found["light"]
    assert found["spans"] == [
        [[e.first, e.last, e.type] for e in entities] for entities in model.predict_spans(sentences)
    ]
