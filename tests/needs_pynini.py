"""Imported first by a test module that cannot run at all without pynini: the module
is skipped, with the reason, in the CI leg without pynini (FSTCRF_WITHOUT_PYNINI=1),
and fails elsewhere under CI, where pynini must be installed.  A module whose other
tests run without pynini marks the tests that need it ``@pytest.mark.pynini``."""

from fstcrf.extras import install_hint

from needs import import_or_skip

REASON = f"needs pynini, which compiles grammars and exports lattices: {install_hint('pynini')}"

pynini = import_or_skip("pynini", REASON)

__all__ = ["REASON", "pynini"]
