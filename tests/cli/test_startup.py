"""Start-up stays light: ``import fstcrf`` and every ``fstcrf ... --help`` run
without numpy, scipy, pynini or the C kernel, the public names of the package
are imported on first access, and the tagging path does not load the training
and scoring libraries it does not use.  Each check runs in a fresh interpreter,
whose ``sys.modules`` shows what was imported."""

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

import fstcrf
from fstcrf.cli import build_parser

#: The folder holding the fstcrf this process imported: the checkout, or site-packages when the tests run
#: against an installed wheel.  Each child interpreter starts there, so it imports the same package.
PACKAGE_HOME = Path(fstcrf.__file__).resolve().parents[1]

#: Modules too heavy for start-up (a name covers its submodules).
HEAVY = (
    "numpy",
    "scipy",
    "pynini",
    "_pynini",
    "cffi",
    "_cffi_backend",
    "fstcrf._kernel",
    "threadpoolctl",
    "matplotlib",
    "torch",
    "torchcrf",
    "starlette",
    "uvicorn",
    "prometheus_client",
)

#: Prints the heavy modules loaded so far, as a JSON list (appended to a child's code).
REPORT_HEAVY = f"""
import json, sys
heavy = {HEAVY!r}
print(json.dumps(sorted(name for name in sys.modules if name.startswith(heavy)
                        and (name in heavy or name.startswith(tuple(h + "." for h in heavy))))))
"""


def run_child(code: str) -> list:
    """The JSON value printed last by ``code`` run in a fresh interpreter."""
    result = subprocess.run([sys.executable, "-c", code], cwd=PACKAGE_HOME, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def test_import_fstcrf_loads_no_heavy_module():
    assert run_child("import fstcrf" + REPORT_HEAVY) == []


def test_every_help_loads_no_heavy_module():
    commands = list(
        next(action for action in build_parser()._actions if isinstance(action, argparse._SubParsersAction)).choices
    )
    assert "tag" in commands and "train" in commands
    code = (
        f"""
import contextlib, io
from fstcrf.cli import main
for words in [["--help"]] + [[command, "--help"] for command in {commands!r}]:
    text = io.StringIO()
    try:
        with contextlib.redirect_stdout(text):
            main(words)
    except SystemExit as stopped:
        assert stopped.code == 0, (words, stopped.code)
    assert text.getvalue().startswith("usage: fstcrf"), (words, text.getvalue()[:200])
"""
        + REPORT_HEAVY
    )
    assert run_child(code) == []


def test_public_names_resolve_on_first_access():
    code = """
import json, sys
import fstcrf
before = [name for name in ("fstcrf.engine.inference", "fstcrf.engine.topology") if name in sys.modules]
missing = [name for name in fstcrf.__all__ if name not in dir(fstcrf)]
origins = {name: getattr(fstcrf, name).__module__ for name in fstcrf.__all__}
print(json.dumps([before, missing, origins]))
"""
    before, missing, origins = run_child(code)
    assert before == [] and missing == []
    assert origins["Potentials"] == origins["viterbi"] == "fstcrf.engine.inference"
    assert origins["iob2"] == origins["Topology"] == "fstcrf.engine.topology"
    assert origins["ShapeError"] == "fstcrf.errors"
    assert set(origins) == set(fstcrf.__all__)


def test_lazy_names_are_the_submodules_objects():
    from fstcrf.engine import budget, inference, topology

    assert fstcrf.forward_backward is inference.forward_backward
    assert fstcrf.Topology is topology.Topology
    assert fstcrf.engine.budget is budget
    namespace: dict = {}
    exec("from fstcrf import *", namespace)
    assert {name for name in namespace if not name.startswith("__")} == set(fstcrf.__all__)


def test_unknown_names_raise_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        fstcrf.no_such_name
    assert not hasattr(fstcrf, "__wrapped__")


def test_tagging_path_leaves_training_and_scoring_libraries_out():
    loaded = run_child("import fstcrf.model.compose, fstcrf.model" + REPORT_HEAVY)
    assert "numpy" in loaded  # the tagger needs it, and not pynini: topologies are built directly
    for name in ("pynini", "pywrapfst", "scipy.stats", "scipy.optimize", "scipy.special", "matplotlib"):
        assert name not in loaded
    assert not [name for name in loaded if name.startswith("scipy")]


def test_training_and_tagging_a_file_never_import_scipy(tmp_path):
    """scipy.sparse alone costs about 0.2 s of start-up and scipy.optimize 0.35 s:
    tagging keeps its rows in SparseRows, L-BFGS has its own line search."""
    data = PACKAGE_HOME / "fstcrf" / "data"
    model = tmp_path / "demo.model"
    code = (
        f"""
from fstcrf.cli import main
main(["-q", "train", {str(data / "demo_train.txt")!r}, "--max-iter", "3", "-o", {str(model)!r}])
"""
        + REPORT_HEAVY
    )
    loaded = run_child(code)
    assert "numpy" in loaded and not [name for name in loaded if name.startswith("scipy")]
    assert "pynini" not in loaded
    code = (
        f"""
from fstcrf.cli import main
main(["tag", {str(model)!r}, {str(data / "demo_test.txt")!r}, "-o", {str(tmp_path / "tagged.txt")!r}])
"""
        + REPORT_HEAVY
    )
    loaded = run_child(code)
    assert "numpy" in loaded and "fstcrf._kernel" in loaded
    assert not [name for name in loaded if name.startswith("scipy")]
    assert (tmp_path / "tagged.txt").read_text().count("\n") > 100
