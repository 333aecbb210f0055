"""``import pycrfsuite`` answered by fstcrf.pycrfsuite, for code that cannot be edited
(NLTK's ``CRFTagger`` imports python-crfsuite by that name)."""

from __future__ import annotations

import sys

#: The module names python-crfsuite's users import, and fstcrf's modules that answer them.
MODULES = {
    "pycrfsuite": "fstcrf.pycrfsuite",
    "pycrfsuite._logparser": "fstcrf.pycrfsuite._logparser",
}


def install_as_pycrfsuite() -> None:
    """Make ``import pycrfsuite`` (and ``pycrfsuite._logparser``) give fstcrf.pycrfsuite
    from now on in this process, whether python-crfsuite is installed or not.  Call it
    before the code that imports pycrfsuite is imported (for NLTK: before ``import
    nltk``); a module that imported pycrfsuite earlier keeps what it imported."""
    for name, target in MODULES.items():
        __import__(target)
        sys.modules[name] = sys.modules[target]
