"""``python -m fstcrf.cli``: the ``fstcrf`` command."""

import sys

from fstcrf.cli.app import main

sys.exit(main())
