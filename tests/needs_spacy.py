"""Imported first by a test module that needs spaCy: the module is skipped, with the
reason, where spaCy is not installed, except under CI's main leg (CI=true without
FSTCRF_WITHOUT_PYNINI=1), which installs the extra ``spacy`` and fails without it."""

from fstcrf.extras import install_hint

from needs import import_or_skip

REASON = f"needs spaCy: {install_hint('spacy')}"

spacy = import_or_skip("spacy", REASON)

__all__ = ["REASON", "spacy"]
