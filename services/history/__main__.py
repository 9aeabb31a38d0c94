"""``python -m services.history``: see :mod:`services.history.main`."""

import sys

from services.history.main import main

sys.exit(main())
