"""``python -m services.detector_runtime``: see :mod:`services.detector_runtime.main`."""

import sys

from services.detector_runtime.main import main

sys.exit(main())
