"""``python -m control.autoscale``: the autoscaler process (see :mod:`control.autoscale.main`)."""

from control.autoscale.main import main

raise SystemExit(main())
