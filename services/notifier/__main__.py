"""``python -m services.notifier``: see :mod:`services.notifier.main`."""

import sys

from services.notifier.main import main

sys.exit(main())
