"""A container's health check: ``python -m hosting.containers.healthcheck SERVICE``.

The engine runs it inside the container every few seconds; exit 0 is healthy. Each service
already reports itself in a file under ``$MESH_HOME`` (the same files `mesh status` reads), so
healthy means: that file was written by *this* run of the service (not left in the volume by the
last one) and says it is working. Compose's ``depends_on: condition: service_healthy`` and
`mesh status` both rely on it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from shared.process_usage import started_at
from shared.service_files import (
    aggregator_status_file,
    history_status_file,
    ingest_mode_file,
    notifier_status_file,
)

SERVICES = ("ingest", "aggregator", "detector", "notifier", "history")
#: The services whose status file says ``running`` while they work (and why not otherwise).
STATE_FILES = {"notifier": notifier_status_file, "history": history_status_file}
#: A detector that has not written its status for this long is stuck (it writes every few s).
DETECTOR_SILENT_S = 60.0


def container_started() -> float:
    """When the container's main process (pid 1) started, as a Unix time."""
    started = started_at(1)
    if started is None:  # pid 1 always exists; unreadable /proc is a broken container
        raise OSError("cannot read /proc/1/stat")
    return started


def written_this_run(path: Path) -> bool:
    return path.is_file() and path.stat().st_mtime >= container_started() - 1


def check(service: str, home: Path) -> str | None:
    """None when healthy, else why not (printed for `docker inspect`)."""
    if service == "ingest":
        path = ingest_mode_file(home)
        return None if written_this_run(path) else f"ingest has not planned its routing ({path})"
    if service == "aggregator":
        path = aggregator_status_file(home)
        return None if written_this_run(path) else f"the aggregator has not reported ({path})"
    if service == "detector":
        path = Path(os.environ.get("MESH_INSTANCE_STATUS", home / "instance.json"))
        if not written_this_run(path):
            return f"the detector has not reported ({path})"
        status = json.loads(path.read_text())
        if status.get("state") != "running":
            return f"the detector is {status.get('state')}: {status.get('last_error')}"
        if time.time() - float(status.get("updated", 0)) > DETECTOR_SILENT_S:
            return f"the detector has not reported for {DETECTOR_SILENT_S:.0f} s"
        return None
    if service in STATE_FILES:
        path = STATE_FILES[service](home)
        if not written_this_run(path):
            return f"the {service} has not reported ({path})"
        status = json.loads(path.read_text())
        if status.get("state") != "running":
            return f"the {service} is {status.get('state')}: {status.get('last_error')}"
        return None
    return f"unknown service {service!r}: {', '.join(SERVICES)}"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(f"usage: python -m hosting.containers.healthcheck {'|'.join(SERVICES)}")
        return 2
    try:
        reason = check(args[0], Path(os.environ.get("MESH_HOME", "/var/lib/mesh")))
    except (OSError, ValueError) as error:
        reason = f"status unreadable: {error}"
    if reason:
        print(reason)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
