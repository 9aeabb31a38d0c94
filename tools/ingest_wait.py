"""``python -m tools.ingest_wait N``: wait until ingest has routed N records (for the demo).

Polls the declared output topics (records.<type> and records.invalid) of the running mesh and
prints progress, so `make demo` shows the diamond's first stage working rather than a race.
``--mark`` (run before producing) notes how many records the outputs have had so far; the next
wait then counts only records routed after the mark, so a second `make demo` on a mesh that
already holds a first one's records really waits for the new ones.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from shared.endpoints import resolve_bootstrap
from shared.errors import MeshError
from shared.json_files import read_json, write_json_atomic
from shared.kafka.inspect import topic_views
from shared.kafka.topics import declared_topics
from shared.settings import Settings
from shared.topic_names import TopicNames


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.ingest_wait", description=__doc__)
    parser.add_argument("records", type=int, nargs="?", help="how many routed records to wait for")
    parser.add_argument(
        "--mark",
        action="store_true",
        help="note the outputs now; the next wait counts from here",
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds (default 300)")
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    try:
        bootstrap = resolve_bootstrap(settings)
        family = TopicNames.of(settings).records_family + "."
        outputs = [s.name for s in declared_topics(settings) if s.name.startswith(family)]
        mark = mark_path(settings)
        if args.mark:
            written = {v.name: v.written for v in topic_views(bootstrap, outputs)}
            write_json_atomic(mark, written)
            return 0
        if args.records is None:
            parser.error("give the number of records to wait for, or --mark")
        since = read_json(mark) or {}
        deadline = time.monotonic() + args.timeout
        routed = 0
        while time.monotonic() < deadline:
            views = topic_views(bootstrap, outputs)
            routed = sum(v.written - since.get(v.name, 0) for v in views)
            print(f"\ringest routed {routed}/{args.records} records", end="", flush=True)
            if routed >= args.records:
                print()
                mark.unlink(missing_ok=True)  # used up; a wait that timed out can be run again
                return _wait_for_counts(bootstrap, settings, deadline)
            time.sleep(1)
    except MeshError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"\ningest routed only {routed} records in {args.timeout:.0f} s: see `mesh status`")
    return 1


def mark_path(settings: Settings) -> Path:
    """Where ``--mark`` notes the outputs' sizes."""
    return settings.home / "ingest" / "wait-mark.json"


def _wait_for_counts(bootstrap: str, settings: Settings, deadline: float) -> int:
    """The window counts follow the routing by a batch or two: wait for the first of them."""
    windows = [TopicNames.of(settings).windows]
    while time.monotonic() < deadline:
        if sum(v.records for v in topic_views(bootstrap, windows)) > 0:
            print(f"ingest window counts are in {windows[0]}")
            return 0
        time.sleep(1)
    print("no window counts yet: see `mesh status`")
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
