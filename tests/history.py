"""Old implementations as oracles: a module's source at a past commit, read from git
and imported under a name of its own."""

import subprocess
import sys
import types
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]


def module_at(commit: str, path: str, name: str, package: str):
    """The module ``path`` (relative to the repository) as of ``commit``, imported as
    ``name`` inside ``package``; the test fails if git cannot show it."""
    shown = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=REPOSITORY, capture_output=True, text=True)
    if shown.returncode != 0:
        pytest.fail(f"git cannot show {path} as of {commit}: {shown.stderr.strip()}")
    module = types.ModuleType(name)
    module.__package__ = package
    sys.modules[name] = module  # dataclasses look their module up
    exec(compile(shown.stdout, f"{name}.py", "exec"), module.__dict__)
    return module
