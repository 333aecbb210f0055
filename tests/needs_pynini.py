"""Imported first by a test module that cannot run at all without pynini: the module
is skipped, with the reason, in the CI leg without pynini (FSTCRF_WITHOUT_PYNINI=1),
and fails elsewhere under CI, where pynini must be installed.  A module whose other
tests run without pynini marks the tests that need it ``@pytest.mark.pynini``."""

import os

import pytest

from fstcrf.extras import install_hint

REASON = f"needs pynini, which compiles grammars and exports lattices: {install_hint('pynini')}"

try:
    import pynini
except ImportError:
    if os.environ.get("CI") == "true" and os.environ.get("FSTCRF_WITHOUT_PYNINI") != "1":
        pytest.fail(f"pynini is missing outside the CI leg without it; {REASON}", pytrace=False)
    pytest.skip(REASON, allow_module_level=True)

__all__ = ["REASON", "pynini"]
