"""The package's structure, checked so that it stays true: no import cycle (imports
inside functions and under TYPE_CHECKING count), no private name imported from
another module, every error class in fstcrf.errors, and one binding to the
compiled extensions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "fstcrf"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, ast.Module]:
    return {_module_name(path): ast.parse(path.read_text("utf-8"), str(path)) for path in sorted(PACKAGE.rglob("*.py"))}


MODULES = _modules()


def _imports(name: str, tree: ast.Module) -> list[tuple[str, list[str]]]:
    """(imported module, imported names) of every import statement anywhere in a module."""
    package = name if (PACKAGE / Path(*name.split(".")[1:]) / "__init__.py").exists() else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names = [alias.name for alias in node.names]
            found.append((module, names))
            found.extend((f"{module}.{imported}", []) for imported in names if f"{module}.{imported}" in MODULES)
    return found


def _graph() -> dict[str, set[str]]:
    graph = {}
    for name, tree in MODULES.items():
        targets = {module for module, _ in _imports(name, tree) if module in MODULES and module != name}
        graph[name] = {target for target in targets if not name.startswith(target + ".")}  # a parent package
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    assert _cycles(_graph()) == []


def test_no_private_name_is_imported_from_another_module():
    private = [
        f"{name}: from {module} import {imported}"
        for name, tree in MODULES.items()
        for module, names in _imports(name, tree)
        for imported in names
        if imported.startswith("_") and module.startswith("fstcrf") and module not in ("fstcrf._kernel",)
    ]
    assert private == []


#: The one package whose modules import fstcrf's compiled extensions (docs/architecture.md).
BINDING = "fstcrf.engine.kernel"
EXTENSIONS = ("fstcrf._kernel", "fstcrf._attributes")


def _extension_imports(modules: dict[str, ast.Module]) -> list[str]:
    """ "module -> extension" for every import of a compiled extension, in any form."""
    found = set()
    for name, tree in modules.items():
        for module, names in _imports(name, tree):
            found.update(
                f"{name} -> {extension}"
                for extension in EXTENSIONS
                if module == extension or extension in (f"{module}.{imported}" for imported in names)
            )
    return sorted(found)


def test_the_extension_finder_finds_every_form_of_import():
    snippets = {
        "fstcrf.a": "from fstcrf._kernel import ffi, lib",
        "fstcrf.engine.b": "def f():\n    from .. import _attributes",
        "fstcrf.c": "import fstcrf._kernel as k",
        "fstcrf.d": "from fstcrf import errors",
    }
    modules = {name: ast.parse(text) for name, text in snippets.items()}
    assert _extension_imports(modules) == [
        "fstcrf.a -> fstcrf._kernel",
        "fstcrf.c -> fstcrf._kernel",
        "fstcrf.engine.b -> fstcrf._attributes",
    ]


def test_only_the_binding_imports_the_compiled_extensions():
    importers = {found.split(" -> ")[0] for found in _extension_imports(MODULES)}
    assert importers and all(name.startswith(BINDING + ".") for name in importers), importers


@pytest.mark.parametrize("name", sorted(MODULES))
def test_error_classes_live_in_errors(name):
    if name == "fstcrf.errors":
        return
    defined = [
        node.name
        for node in ast.walk(MODULES[name])
        if isinstance(node, ast.ClassDef)
        and any(isinstance(base, ast.Name) and base.id.endswith("Error") for base in node.bases)
    ]
    assert defined == [], f"{name} defines {defined}; error classes belong in fstcrf.errors"


#: The layers, lowest first: a module may import from its own layer and the ones below,
#: never from a layer above (docs/architecture.md).  Names are fstcrf's packages and
#: top-level modules.
LAYERS = [
    {"errors"},
    {"files", "phases", "progress", "moved", "extras"},
    {"_kernel", "_attributes", "engine"},  # the extensions: imported by engine.kernel alone
    {"grammar", "corpus"},
    {"features"},
    {"learn"},
    {
        "model",
        "distributed",
        "document",
        "experiments",
        "sklearn",
        "pycrfsuite",
        "torch",
        "logits",
        "pictures",
        "spacy",
    },
    {"bench", "cli", "serve", "__main__"},  # __main__: ``python -m fstcrf``, the command line
]


def _unit(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "fstcrf"
    return parts[1]


def test_every_package_and_module_has_a_layer():
    units = {_unit(name) for name in MODULES} - {"fstcrf"}
    assert units <= set().union(*LAYERS), units - set().union(*LAYERS)


def test_no_module_imports_from_a_higher_layer():
    layer = {unit: k for k, units in enumerate(LAYERS) for unit in units}
    upward = sorted(
        f"{source} -> {target}"
        for source, targets in _graph().items()
        for target in targets
        if _unit(source) != "fstcrf" and layer[_unit(target)] > layer[_unit(source)]
    )
    assert upward == []
