"""Optional modules the tests import: skipped where they may be missing, required in
CI's main leg, which installs every extra."""

import importlib
import os

import pytest


def extras_required() -> bool:
    """Whether every extra must be installed: CI's main leg (CI=true without
    FSTCRF_WITHOUT_PYNINI=1, the leg that leaves pynini out)."""
    return os.environ.get("CI") == "true" and os.environ.get("FSTCRF_WITHOUT_PYNINI") != "1"


def import_or_skip(name: str, reason: str):
    """The module ``name``; where it is missing, the importing test module is skipped
    with ``reason``, or fails where every extra is required."""
    try:
        return importlib.import_module(name)
    except ImportError:
        if extras_required():
            pytest.fail(f"{name} is missing in CI's main leg; {reason}", pytrace=False)
        pytest.skip(reason, allow_module_level=True)
