"""Builds the cffi kernel and the token-dict reader; all metadata lives in pyproject.toml."""
import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "csrc"))
from build_kernel import EXTRA_FLAGS, compiler_options  # noqa: E402  (csrc/ is not a package)

# fstcrf._attributes uses only the limited API of Python 3.10, so one build serves later versions too.
# EXTRA_FLAGS (FSTCRF_CFLAGS) reach both extensions, e.g. a sanitizer (docs/development.md).
ATTRIBUTES = Extension("fstcrf._attributes", ["csrc/fstcrf_attributes.c"], py_limited_api=True, include_dirs=["csrc"],
                       define_macros=[("Py_LIMITED_API", "0x030A0000")], extra_compile_args=["-O2", *EXTRA_FLAGS],
                       extra_link_args=EXTRA_FLAGS)


class BuildExt(build_ext):
    """Gives the kernel the flags and libraries of the compiler that builds it:
    MSVC spells them its own way, and ``--compiler mingw32`` on Windows is gcc."""

    def build_extension(self, ext):
        if ext.name == "fstcrf._kernel":
            for option, value in compiler_options(self.compiler.compiler_type).items():
                setattr(ext, option, value)
        super().build_extension(ext)


# cffi builds fstcrf._kernel against the limited API too (its generated C defines Py_LIMITED_API), so both
# extensions are abi3 and the wheel is tagged cp310-abi3-<platform>: one wheel per platform for Python >= 3.10.
setup(cffi_modules=["csrc/build_kernel.py:ffibuilder"], ext_modules=[ATTRIBUTES], cmdclass={"build_ext": BuildExt},
      options={"bdist_wheel": {"py_limited_api": "cp310"}})
