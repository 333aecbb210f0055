"""The ``fstcrf`` command line (:func:`main`, the console script; ``python -m fstcrf.cli``)."""

from fstcrf.cli.app import DEFAULT_SIGMA, build_parser, find_conll2000, main

__all__ = ["DEFAULT_SIGMA", "build_parser", "find_conll2000", "main"]
