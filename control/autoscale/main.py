"""The autoscaler process: a look at the mesh every ``MESH_AUTOSCALE_INTERVAL_S`` until SIGTERM.

`mesh up` starts it under its own supervisor (restarted if it dies, its last error in `mesh
status`), like the notifier. It holds no state that matters across a restart: the deployments
and their counts are in the registry, the lag is asked of the broker, and a restarted
autoscaler's scale-down window starts again (so a restart can only delay a step down, never make
one early). It runs with the control plane's own Kafka login, as `mesh scale` does.
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
import time

from control.autoscale.autoscaler import AUTOSCALER, Autoscaler
from shared.errors import MeshError
from shared.metrics import MetricRegistry, MetricsReporter
from shared.metrics.instance import instance_id
from shared.settings import Settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m control.autoscale", description=__doc__)
    parser.add_argument("--once", action="store_true", help="one look, then exit (for scripts)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    log = logging.getLogger(AUTOSCALER)
    try:
        settings = Settings.from_env()
    except MeshError as error:
        print(f"{AUTOSCALER}: error: {error}")
        return 2
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    registry = MetricRegistry(AUTOSCALER, instance_id(AUTOSCALER))
    reporter = MetricsReporter.for_settings(registry, settings)
    autoscaler = Autoscaler(settings, registry)
    reporter.start()
    log.info("looking every %g s", settings.autoscale_interval_s)
    try:
        while True:
            started = time.monotonic()
            autoscaler.look()
            if args.once or stopping.wait(
                max(0.0, settings.autoscale_interval_s - (time.monotonic() - started))
            ):
                break
    finally:
        reporter.close()
    log.info("stopped")
    return 0
