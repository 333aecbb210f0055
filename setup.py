"""Builds the cffi kernel and the token-dict reader; all metadata lives in pyproject.toml."""
import os

from setuptools import Extension, setup

# extra compiler and linker flags for both extensions, e.g. a sanitizer (docs/development.md)
EXTRA_FLAGS = os.environ.get("FSTCRF_CFLAGS", "").split()
# fstcrf._attributes uses only the limited API of Python 3.10, so one build serves later versions too.
ATTRIBUTES = Extension("fstcrf._attributes", ["csrc/fstcrf_attributes.c"], py_limited_api=True,
                       define_macros=[("Py_LIMITED_API", "0x030A0000")], extra_compile_args=["-O2", *EXTRA_FLAGS],
                       extra_link_args=EXTRA_FLAGS)

# cffi builds fstcrf._kernel against the limited API too (its generated C defines Py_LIMITED_API), so both
# extensions are abi3 and the wheel is tagged cp310-abi3-<platform>: one wheel per platform for Python >= 3.10.
setup(cffi_modules=["csrc/build_kernel.py:ffibuilder"], ext_modules=[ATTRIBUTES],
      options={"bdist_wheel": {"py_limited_api": "cp310"}})
