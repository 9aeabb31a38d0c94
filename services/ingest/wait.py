"""``python -m services.ingest.wait N``: wait until ingest has routed N records (for the demo).

Polls the declared output topics (records.<type> and records.invalid) of the running mesh and
prints progress, so `make demo` shows the diamond's first stage working rather than a race.
"""

from __future__ import annotations

import argparse
import sys
import time

from shared.errors import MeshError
from shared.kafka.config import resolve_bootstrap
from shared.kafka.inspect import topic_views
from shared.kafka.topics import load_topics
from shared.settings import Settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m services.ingest.wait", description=__doc__)
    parser.add_argument("records", type=int, help="how many routed records to wait for")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds (default 300)")
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    try:
        bootstrap = resolve_bootstrap(settings)
        outputs = [
            s.name for s in load_topics(settings.topics_file) if s.name.startswith("records.")
        ]
        deadline = time.monotonic() + args.timeout
        routed = 0
        while time.monotonic() < deadline:
            routed = sum(v.records for v in topic_views(bootstrap, outputs))
            print(f"\ringest routed {routed}/{args.records} records", end="", flush=True)
            if routed >= args.records:
                print()
                return _wait_for_counts(bootstrap, settings, deadline)
            time.sleep(1)
    except MeshError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"\ningest routed only {routed} records in {args.timeout:.0f} s: see `mesh status`")
    return 1


def _wait_for_counts(bootstrap: str, settings: Settings, deadline: float) -> int:
    """The window counts follow the routing by a batch or two: wait for the first of them."""
    windows = [s.name for s in load_topics(settings.topics_file) if s.name == "metrics.windows"]
    while time.monotonic() < deadline:
        if sum(v.records for v in topic_views(bootstrap, windows)) > 0:
            print("ingest window counts are in metrics.windows")
            return 0
        time.sleep(1)
    print("no window counts yet: see `mesh status`")
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
