"""Optional dependencies: import one where a feature needs it, or stop with a typed
error that names the extra installing it.

The base install is numpy, scipy, cffi and threadpoolctl; pynini (the extra
``grammars``) compiles grammars and exports lattices."""

from __future__ import annotations

import importlib
from types import ModuleType

from fstcrf.errors import MissingExtraError

#: The extra that installs each optional module fstcrf imports.
EXTRAS = {
    "pynini": "grammars",
    "pywrapfst": "grammars",
    "torch": "torch",
    "torchcrf": "bench-torch",
    "torch_struct": "bench-torch",
    "spacy": "spacy",
    "pycrfsuite": "bench",
    "sklearn_crfsuite": "bench",
    "sklearn": "sklearn",
    "distributed": "distributed",
    "nltk": "test",
    "starlette": "serve",
    "uvicorn": "serve",
    "prometheus_client": "serve",
}


def install_hint(module: str) -> str:
    """How to install the optional ``module``: the pip command with its extra."""
    return f"pip install 'fstcrf[{EXTRAS[module]}]'"


def require(module: str, purpose: str) -> ModuleType:
    """The module ``module``, imported; MissingExtraError saying that ``purpose`` needs
    it and which extra to install if it is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtraError(f"{purpose} needs {module}, which is not installed: {install_hint(module)}") from None


def available(module: str) -> bool:
    """Whether ``module`` can be imported (imports it)."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True
