"""``python -m moczarr_intake.cli``: the ``moczarr-catalog`` command."""

import sys

from . import main

sys.exit(main())
