"""``python -m fstcrf``: the ``fstcrf`` command (as ``python -m fstcrf.cli``)."""

from fstcrf.cli.app import run

run()
