"""Optional modules and programs the tests use: skipped where they may be missing,
required in CI's main leg, which installs every extra, and under CI, whose .ci/run
installs the programs (Graphviz, Chromium)."""

import contextlib
import importlib
import os
import shutil

import pytest


def extras_required() -> bool:
    """Whether every extra must be installed: CI's main leg (CI=true without
    FSTCRF_WITHOUT_PYNINI=1, the leg that leaves pynini out)."""
    return os.environ.get("CI") == "true" and os.environ.get("FSTCRF_WITHOUT_PYNINI") != "1"


def import_or_skip(name: str, reason: str):
    """The module ``name``; where it is missing, the importing test module is skipped
    with ``reason``, or fails where every extra is required."""
    try:
        return importlib.import_module(name)
    except ImportError:
        if extras_required():
            pytest.fail(f"{name} is missing in CI's main leg; {reason}", pytrace=False)
        pytest.skip(reason, allow_module_level=True)


def program_or_skip(name: str, package: str) -> str:
    """The path of the program ``name`` (Debian's package ``package``); where it is not
    installed, the calling test module is skipped, or fails under CI (CI=true), whose
    .ci/run installs it with apt-get."""
    path = shutil.which(name)
    if path is not None:
        return path
    reason = f"needs the program {name}: apt-get install {package}"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{name} is missing under CI, whose .ci/run installs it; {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


@contextlib.contextmanager
def uninstrumented():
    """os.environ without LD_PRELOAD while the block runs: the programs it starts
    (Chromium, Playwright's driver), not built with a sanitizer, hang with the runtimes
    that a sanitizer run (.ci/sanitizers) preloads into the tests and their fstcrf
    processes."""
    preloaded = os.environ.pop("LD_PRELOAD", None)
    try:
        yield
    finally:
        if preloaded is not None:
            os.environ["LD_PRELOAD"] = preloaded


def refusal_without(missing: str, package: str) -> str:
    """What importing ``package`` says, in a fresh interpreter where the module
    ``missing`` cannot be imported: the MissingExtraError's message (the test fails
    on any other outcome)."""
    import subprocess
    import sys

    code = (
        f"import sys\nsys.modules[{missing!r}] = None\n"
        "from fstcrf.errors import MissingExtraError\n"
        f"try:\n    import {package}\nexcept MissingExtraError as error:\n    print(error)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout
