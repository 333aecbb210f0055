"""Imported first by a test module that needs torch: the module is skipped, with the
reason, where torch is not installed, except under CI's main leg (CI=true without
FSTCRF_WITHOUT_PYNINI=1), which installs the extra ``torch`` and fails without it."""

from fstcrf.extras import install_hint

from needs import import_or_skip

REASON = f"needs torch: {install_hint('torch')}"

torch = import_or_skip("torch", REASON)

__all__ = ["REASON", "torch"]
