"""A model trained under a grammar is used without pynini: both CI legs (with and
without it) load tests/data/iob2-order2-chunker.model, trained with
``fstcrf train <first 400 lines of demo_train.txt> --grammar iob2 --order 2
--max-iter 5 --min-count 2`` where pynini compiled the grammar, and tag the demo
test file into the very bytes stored beside it; in a child process where pynini
cannot be imported, training, tagging and evaluation without a grammar work and
a grammar stops with MissingExtraError naming the extra."""

import subprocess
import sys
from pathlib import Path


from fstcrf.cli import main
from fstcrf.corpus.synthetic import DATA_DIR
from fstcrf.engine.acceptor import Acceptor
from fstcrf.grammar import accepts
from fstcrf.model import load_model

HERE = Path(__file__).resolve().parents[1] / "data"
MODEL, TAGGED = HERE / "iob2-order2-chunker.model", HERE / "iob2-order2-chunker.tagged"


def test_a_model_trained_under_a_grammar_tags_as_it_did_where_it_was_trained(tmp_path):
    output = tmp_path / "tagged.txt"
    assert main(["-q", "tag", str(MODEL), str(DATA_DIR / "demo_test.txt"), "-o", str(output)]) == 0
    assert output.read_bytes() == TAGGED.read_bytes()


def test_the_stored_grammar_is_an_acceptor_that_accepts_what_the_model_predicts():
    model = load_model(MODEL)
    assert isinstance(model.constraint_, Acceptor) and model.order == 2
    predicted = [line.split()[-1] for line in TAGGED.read_text().splitlines() if line.strip()]
    assert accepts(model.constraint_, predicted[:40])
    assert not accepts(model.constraint_, ["O", "I-NP"])
    assert model.constraint_.symbols == {0: "<eps>", **{i + 1: label for i, label in enumerate(model.labels_)}}


WITHOUT_PYNINI = """
import sys
sys.modules["pynini"] = sys.modules["pywrapfst"] = None  # import pynini raises ImportError
from fstcrf.cli import main
train, test, model, out = sys.argv[1:5]
assert main(["-q", "train", train, "--order", "2", "--max-iter", "3", "-o", model]) == 0
assert main(["-q", "tag", model, test, "-o", out]) == 0
assert main(["-q", "eval", model, test]) == 0
assert main(["-q", "train", train, "--grammar", "iob2", "-o", model + ".2"]) == 2
"""


def test_without_pynini_only_a_grammar_is_refused(tmp_path):
    test = str(DATA_DIR / "demo_test.txt")
    result = subprocess.run(
        [sys.executable, "-c", WITHOUT_PYNINI, str(DATA_DIR / "demo_train.txt"), test, str(tmp_path / "m"), "o"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "--grammar needs pynini, which is not installed: pip install 'fstcrf[grammars]'" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "m.2").exists()
