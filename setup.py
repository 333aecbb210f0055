"""Builds the cffi extension; all metadata lives in pyproject.toml."""
from setuptools import setup

setup(cffi_modules=["csrc/build_kernel.py:ffibuilder"])
