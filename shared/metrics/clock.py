"""The two clocks of the metrics library, as plain callables returning seconds.

Like Dropwizard's ``Clock`` (``getTick`` and ``getTime``) there are two: a *tick* clock that
only moves forward, for rates, decay and durations (``time.monotonic``), and a *wall* clock for
the timestamps snapshots carry (``time.time``). Both are injectable so tests can drive time.
"""

from __future__ import annotations

from collections.abc import Callable

#: A clock: seconds as a float (monotonic for ticks, epoch for wall time).
Clock = Callable[[], float]
