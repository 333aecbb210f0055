"""Builds the cffi kernel and the token-dict reader; all metadata lives in pyproject.toml."""
from setuptools import Extension, setup

# fstcrf._attributes uses only the limited API of Python 3.10, so one build serves later versions too.
ATTRIBUTES = Extension("fstcrf._attributes", ["csrc/fstcrf_attributes.c"], py_limited_api=True,
                       define_macros=[("Py_LIMITED_API", "0x030A0000")], extra_compile_args=["-O2"])

setup(cffi_modules=["csrc/build_kernel.py:ffibuilder"], ext_modules=[ATTRIBUTES])
