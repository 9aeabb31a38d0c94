"""``python -m services.backtest``: see :mod:`services.backtest.main`."""

import sys

from services.backtest.main import main

sys.exit(main())
