"""Shared fixtures."""

import os
import signal
from pathlib import Path

import pytest
from hypothesis import settings

# Under CI every hypothesis test draws the same examples on every run (its settings
# inherit these), so that a run passes or fails by the code alone, never by a rare
# draw; runs elsewhere keep drawing afresh.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI") == "true":
    settings.load_profile("ci")


def pytest_configure(config):
    """Ctrl-C raises KeyboardInterrupt in this process and the processes it starts,
    as in a terminal: a run started in the background by a non-interactive shell
    (``cmd &``) inherits SIGINT ignored, which Python keeps, and the tests that
    interrupt themselves (the thread pools, the pipelines, the bandit partner)
    would wait for an interrupt that never comes."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _missing(message: str):
    """Fail under CI (CI=true), where the real data must be present; skip elsewhere."""
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


#: The real-data folder when $FSTCRF_DATA is not set: shared/data beside the repository.
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real-data folder: $FSTCRF_DATA, else ../shared/data from the repository
    (skip or fail if missing)."""
    path = Path(os.environ.get("FSTCRF_DATA", DEFAULT_DATA))
    if not path.is_dir():
        _missing(f"real data folder {path} is missing (set FSTCRF_DATA)")
    return path


@pytest.fixture(scope="session")
def data_file(data_dir):
    """A function from a path inside ``data_dir`` to that file (skip or fail if missing)."""

    def find(relative_path: str) -> Path:
        path = data_dir / relative_path
        if not path.is_file():
            _missing(f"real data file {path} is missing (set FSTCRF_DATA)")
        return path

    return find


#: The package's demo corpus, which the shared demo models are trained on.
DEMO_TRAIN = Path(__file__).resolve().parents[1] / "fstcrf" / "data" / "demo_train.txt"


def _trained(folder: Path, name: str, *options: str) -> Path:
    """A model file ``name`` in ``folder`` that ``fstcrf train`` fits on the demo corpus."""
    from fstcrf.cli import main

    path = folder / name
    assert main(["-q", "train", str(DEMO_TRAIN), "-o", str(path), *options]) == 0
    return path


def _shared(path: Path):
    """Yield ``path`` to the tests, then fail if one of them changed the shared file."""
    before = path.read_bytes()
    yield path
    assert path.read_bytes() == before, f"a test changed the shared model file {path}"


@pytest.fixture(scope="session")
def demo_chunker(tmp_path_factory):
    """A first-order chunker model file (5 iterations on the demo corpus); read-only."""
    yield from _shared(_trained(tmp_path_factory.mktemp("demo"), "chunker.model", "--max-iter", "5"))


@pytest.fixture(scope="session")
def demo_order2_chunker(tmp_path_factory):
    """A second-order chunker model file (5 iterations on the demo corpus); read-only."""
    folder = tmp_path_factory.mktemp("demo")
    yield from _shared(_trained(folder, "order2.model", "--max-iter", "5", "--order", "2"))


@pytest.fixture(scope="session")
def demo_pos_tagger(tmp_path_factory):
    """A part-of-speech model file (5 iterations on the demo corpus); read-only."""
    folder = tmp_path_factory.mktemp("demo")
    yield from _shared(_trained(folder, "pos.model", "--target", "pos", "--max-iter", "5"))


@pytest.fixture(scope="session")
def demo_joint(tmp_path_factory):
    """The composition file of a part-of-speech tagger and a chunker that reads its tags
    (3 iterations each on the demo corpus); read-only."""
    from fstcrf.cli import main

    folder = tmp_path_factory.mktemp("demo")
    pos = _trained(folder, "pos.model", "--target", "pos", "--template", "pos", "--max-iter", "3")
    chunk = _trained(folder, "chunk.model", "--reads", "pos", "--template", "chunking-reads-pos", "--max-iter", "3")
    joint = folder / "joint.model"
    assert main(["-q", "compose", str(pos), str(chunk), "-o", str(joint)]) == 0
    yield from _shared(joint)


def pytest_collection_modifyitems(config, items):
    """The longest tests first: the documentation's pages (docs/benchmarks.md's about
    three minutes), then the other tests marked ``slow`` (whole corpora), so that
    pytest-xdist's workers (``--dist worksteal``, pyproject.toml) start them early and
    share out the short ones at the end instead of one worker ending on a long one;
    tests marked ``pynini`` skip, with the reason, where pynini is missing: only in
    the CI leg without it (FSTCRF_WITHOUT_PYNINI=1); elsewhere under CI they fail."""
    from fstcrf.extras import available, install_hint
    from needs import extras_required

    items.sort(  # stable: in order within each group
        key=lambda item: (item.get_closest_marker("slow") is None, item.originalname != "test_page_examples_run")
    )
    if available("pynini") or extras_required():
        return  # where pynini must be installed, the marked tests run (and fail without it)
    for item in items:
        if "pynini" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=f"needs pynini: {install_hint('pynini')}"))
