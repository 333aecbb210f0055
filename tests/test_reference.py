"""The API reference (docs/reference/*.md) covers every public name, and every public name
has a docstring.

A public package is ``fstcrf`` or a package under it whose ``__init__.py`` defines
``__all__``; its public names are those of ``__all__``, and a public name that is a
module brings the names of its own ``__all__``.  A name is in the reference when a
``::: PATH`` directive of docs/reference/ resolves to the same object (for a constant:
the same object under the same name).  Docstrings are read as the site reads them
(griffe, with docs/hooks/docstrings.py: ``#:`` comments above a constant count)."""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
from pathlib import Path

import pytest

from needs import import_or_skip

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "fstcrf"
REFERENCE = ROOT / "docs" / "reference"


def public_packages() -> list[str]:
    """fstcrf and every package under it whose __init__.py assigns __all__."""
    found = ["fstcrf"]
    for init in sorted(PACKAGE.rglob("__init__.py")):
        tree = ast.parse(init.read_text(encoding="utf-8"))
        assigns = any(
            isinstance(node, ast.Assign) and any(getattr(target, "id", None) == "__all__" for target in node.targets)
            for node in tree.body
        )
        name = ".".join(init.parent.relative_to(ROOT).parts)
        if assigns and name != "fstcrf":
            found.append(name)
    return found


def public_names() -> list[tuple[str, str, object]]:
    """(module, name, object) of every public name, modules' own __all__ included."""
    names, queue, seen = [], public_packages(), set()
    while queue:
        module_name = queue.pop(0)
        if module_name in seen:
            continue
        seen.add(module_name)
        module = importlib.import_module(module_name)
        for name in module.__all__:
            value = getattr(module, name)
            names.append((module_name, name, value))
            if inspect.ismodule(value) and hasattr(value, "__all__"):
                queue.append(value.__name__)
    return names


def directives() -> list[str]:
    """The identifiers of every ``:::`` directive of the reference pages."""
    return [
        line[4:].strip()
        for page in sorted(REFERENCE.glob("*.md"))
        for line in page.read_text(encoding="utf-8").splitlines()
        if line.startswith("::: ")
    ]


def resolve(identifier: str):
    """The object a dotted path names: the longest importable module, then attributes."""
    parts = identifier.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            value = getattr(value, attribute)
        return value
    raise LookupError(identifier)


def _is_constant(value) -> bool:
    return not (inspect.ismodule(value) or inspect.isclass(value) or callable(value))


def covering(name: str, value, resolved: dict[str, object]) -> str | None:
    """The directive that documents a public name, if any."""
    for identifier, target in resolved.items():
        if target is value and (not _is_constant(value) or identifier.rpartition(".")[2] == name):
            return identifier
    return None


@pytest.fixture(scope="module")
def names_and_directives():
    for extra in ("torch", "sklearn", "griffe"):
        import_or_skip(extra, f"the reference test imports every public package and griffe ({extra} missing)")
    resolved = {identifier: resolve(identifier) for identifier in directives()}
    return public_names(), resolved


def test_the_public_packages_are_those_with_all():
    packages = public_packages()
    assert packages[0] == "fstcrf" and {"fstcrf.logits", "fstcrf.model", "fstcrf.engine.kernel"} <= set(packages)
    assert "fstcrf.features" not in packages  # a package without __all__ is not public


@pytest.mark.slow
def test_every_public_name_is_in_the_reference(names_and_directives):
    names, resolved = names_and_directives
    missing = [f"{module}.{name}" for module, name, value in names if covering(name, value, resolved) is None]
    assert not missing, "add a ::: directive to docs/reference/ for: " + ", ".join(missing)


@pytest.mark.slow
def test_every_public_name_has_a_docstring(names_and_directives):
    import griffe

    sys.path.insert(0, str(ROOT / "docs" / "hooks"))
    try:
        from docstrings import FstcrfDocstrings
    finally:
        sys.path.remove(str(ROOT / "docs" / "hooks"))
    package = griffe.load("fstcrf", search_paths=[str(ROOT)], extensions=griffe.load_extensions(FstcrfDocstrings()))
    names, resolved = names_and_directives
    undocumented = []
    for module, name, value in names:
        identifier = covering(name, value, resolved)
        if identifier is None:
            continue  # reported by the test above
        documented = package[identifier.removeprefix("fstcrf.")] if identifier != "fstcrf" else package
        if documented.docstring is None or not documented.docstring.value.strip():
            undocumented.append(f"{module}.{name} ({identifier})")
    assert not undocumented, "no docstring (for a constant: a '#:' comment above it): " + ", ".join(undocumented)


@pytest.mark.slow
def test_every_directive_names_something(names_and_directives):
    _, resolved = names_and_directives
    assert resolved and all(target is not None for target in resolved.values())
