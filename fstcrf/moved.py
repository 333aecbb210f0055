"""Old module paths, kept for one release (listed in CHANGELOG.md).

``import fstcrf.topology`` gives :mod:`fstcrf.engine.topology` itself, so old
imports, pickles (which name a class by its module) and monkeypatches through
an old name keep working.  :func:`install` puts the finder first on
``sys.meta_path`` when fstcrf is imported; it imports nothing until an old
path is asked for.  A module that became a package (``fstcrf.model``,
``fstcrf.bench``) keeps its names with :func:`lazy_names`."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable

#: old dotted path -> the module that now holds everything it held.
MOVED: dict[str, str] = {
    "fstcrf.attributes": "fstcrf.features.attributes",
    "fstcrf.encoding": "fstcrf.features.encoding",
    "fstcrf.sparse_rows": "fstcrf.features.sparse_rows",
    "fstcrf.defaults": "fstcrf.features.defaults",
    "fstcrf.train": "fstcrf.learn.train",
    "fstcrf.bandit_settings": "fstcrf.learn.settings",
    "fstcrf.online": "fstcrf.learn.online",
    "fstcrf.objective": "fstcrf.learn.objective",
    "fstcrf.mce": "fstcrf.learn.mce",
    "fstcrf.bandit": "fstcrf.learn.bandit",
    "fstcrf.counterfactual": "fstcrf.learn.counterfactual",
    "fstcrf.feedback": "fstcrf.learn.feedback",
    "fstcrf.seminars": "fstcrf.experiments.seminars",
    "fstcrf.transfer": "fstcrf.experiments.transfer",
    "fstcrf.conll": "fstcrf.corpus.conll",
    "fstcrf.schemes": "fstcrf.corpus.schemes",
    "fstcrf.labels": "fstcrf.corpus.labels",
    "fstcrf.evaluate": "fstcrf.corpus.evaluate",
    "fstcrf.synthetic": "fstcrf.corpus.synthetic",
    "fstcrf.budget": "fstcrf.engine.budget",
    "fstcrf.topology": "fstcrf.engine.topology",
    "fstcrf.inference": "fstcrf.engine.inference",
    "fstcrf.joint": "fstcrf.engine.joint",
    "fstcrf.lattice": "fstcrf.engine.lattice",
    "fstcrf.reference": "fstcrf.engine.reference",
    "fstcrf.modelfile": "fstcrf.model.file",
    "fstcrf.compose": "fstcrf.model.compose",
    "fstcrf.inspection": "fstcrf.model.inspection",
    "fstcrf.bench_process": "fstcrf.bench.process",
    "fstcrf.bench_sklearn": "fstcrf.bench.sklearn",
    "fstcrf.bench_bandit": "fstcrf.bench.bandit",
    "fstcrf.bench_defaults": "fstcrf.bench.defaults",
    "fstcrf.bench_distributed": "fstcrf.bench.distributed",
    "fstcrf.bench_features": "fstcrf.bench.features",
    "fstcrf.bench_mce": "fstcrf.bench.mce",
    "fstcrf.bench_nonlocal": "fstcrf.bench.consistency",
    "fstcrf.bench_transfer": "fstcrf.bench.transfer",
}


class OldPathFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old paths of MOVED and loads each as its new module."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        return None  # a placeholder module, replaced in exec_module

    def exec_module(self, module):
        # the import system returns what sys.modules holds after this: the new module
        sys.modules[module.__name__] = importlib.import_module(MOVED[module.__name__])


def install() -> None:
    """Put the finder first on sys.meta_path (once), before any file finder that
    could still see a stale copy of an old module."""
    if not any(isinstance(finder, OldPathFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, OldPathFinder())


def lazy_names(package: str, names: dict[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` (PEP 562) of a package whose ``names`` (name
    -> the submodule that defines it) are imported on first use and then kept in the
    package, so that importing one of its submodules stays light."""

    def get(name: str) -> object:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{names[name]}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def listing() -> list[str]:
        module = sys.modules[package]
        return sorted(set(vars(module)) | set(module.__all__))

    return get, listing
