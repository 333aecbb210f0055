"""Shared fixtures."""

import os
from pathlib import Path

import pytest


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
