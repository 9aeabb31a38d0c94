"""``python -m services.metrics_aggregator``: see :mod:`services.metrics_aggregator.main`."""

import sys

from services.metrics_aggregator.main import main

sys.exit(main())
