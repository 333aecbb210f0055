"""Imported first by a test module that needs torch: the module is skipped, with the
reason, where torch is not installed, except under CI's main leg (CI=true without
FSTCRF_WITHOUT_PYNINI=1), which installs the extra ``torch`` and fails without it."""

import os

import pytest

from fstcrf.extras import install_hint

REASON = f"needs torch: {install_hint('torch')}"

try:
    import torch
except ImportError:
    if os.environ.get("CI") == "true" and os.environ.get("FSTCRF_WITHOUT_PYNINI") != "1":
        pytest.fail(f"torch is missing in CI's main leg; {REASON}", pytrace=False)
    pytest.skip(REASON, allow_module_level=True)

__all__ = ["REASON", "torch"]
