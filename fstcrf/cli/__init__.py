"""The ``fstcrf`` command line: :func:`main` (which :func:`run`, the console script and
``python -m fstcrf.cli``, calls) runs a command of the parser :func:`build_parser` puts together in
:mod:`~fstcrf.cli.app`.  One module per command or group of commands registers its
commands there: :mod:`~fstcrf.cli.train` (train, jackknife),
:mod:`~fstcrf.cli.compose`, :mod:`~fstcrf.cli.tag`, :mod:`~fstcrf.cli.evaluate`
(eval, compare), :mod:`~fstcrf.cli.convert`, :mod:`~fstcrf.cli.seminars`,
:mod:`~fstcrf.cli.demo`, :mod:`~fstcrf.cli.inspect` (history, dump, upgrade, info)
and :mod:`~fstcrf.cli.bench`; the options several commands take are in
:mod:`~fstcrf.cli.options`, what they share in :mod:`~fstcrf.cli.common` and
:mod:`~fstcrf.cli.decoding`.  Each command imports numpy and the rest of fstcrf
only when it runs, so that ``fstcrf --help`` starts fast."""

from fstcrf.cli.app import build_parser, main, run
from fstcrf.cli.common import find_conll2000
from fstcrf.learn.settings import DEFAULT_SIGMA

__all__ = ["DEFAULT_SIGMA", "build_parser", "find_conll2000", "main", "run"]
