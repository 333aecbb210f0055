"""``python -m fstcrf.cli``: the ``fstcrf`` command."""

from fstcrf.cli.app import run

run()
