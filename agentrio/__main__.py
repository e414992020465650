"""``python -m agentrio``: the ``agentrio`` command."""

import sys

from .cli import main

sys.exit(main())
