"""``python -m tools.ingest_wait N``: wait until ingest has routed N records (for the demo).

Polls the running mesh's topics and prints one live progress line while the records flow: records
in (raw), valid and invalid (routed), how far ingest is behind, alerts raised and notifications
delivered, so `make demo` shows the whole diamond working rather than a silent wait.
``--mark`` (run before producing) notes how many records the outputs have had so far; the next
wait then counts only records routed after the mark, so a second `make demo` on a mesh that
already holds a first one's records really waits for the new ones. (`mesh up` itself waits until
the mesh can alert: control.readiness.)
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from shared.endpoints import resolve_bootstrap
from shared.errors import MeshError
from shared.json_files import read_json, write_json_atomic
from shared.kafka.inspect import TopicView, topic_views
from shared.kafka.security import client_security
from shared.kafka.topics import declared_topics
from shared.service_files import notifier_status_file
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
        views = _Views(settings)
        topics = _Topics.of(settings)
        mark = mark_path(settings)
        if args.mark:
            written = {v.name: v.written for v in views(topics.all)}
            write_json_atomic(mark, {**written, NOTIFIED: notified(settings)})
            return 0
        if args.records is None:
            parser.error("give the number of records to wait for, or --mark")
        since = read_json(mark) or {}
        deadline = time.monotonic() + args.timeout
        routed = 0
        while time.monotonic() < deadline:
            now = views(topics.all)
            new = {v.name: v.written - since.get(v.name, 0) for v in now}
            new[NOTIFIED] = notified(settings) - since.get(NOTIFIED, 0)
            routed = sum(new.get(t, 0) for t in topics.outputs)
            print(f"\r{topics.progress(new, settings)}", end="", flush=True)
            if routed >= args.records:
                print()
                mark.unlink(missing_ok=True)  # used up; a wait that timed out can be run again
                return _wait_for_counts(views, settings, deadline)
            time.sleep(1)
    except MeshError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"\ningest routed only {routed} records in {args.timeout:.0f} s: see `mesh status`")
    return 1


@dataclass(frozen=True)
class _Topics:
    """The topics the progress line counts."""

    raw: list[str]
    valid: list[str]
    invalid: str
    alerts: str

    @classmethod
    def of(cls, settings: Settings) -> _Topics:
        names = TopicNames.of(settings)
        declared = [s.name for s in declared_topics(settings)]
        raw = [t for t in declared if t.startswith(names.raw_family + ".")]
        family = names.records_family + "."
        valid = [t for t in declared if t.startswith(family) and t != names.invalid]
        return cls(raw, valid, names.invalid, names.alerts)

    @property
    def outputs(self) -> list[str]:
        return [*self.valid, self.invalid]

    @property
    def all(self) -> list[str]:
        return [*self.raw, *self.outputs, self.alerts]

    def progress(self, new: dict[str, int], settings: Settings) -> str:
        """``records in 12000 | valid 11800, invalid 200 | ingest behind 0 | alerts 25 | ...``"""
        raw = sum(new.get(t, 0) for t in self.raw)
        valid = sum(new.get(t, 0) for t in self.valid)
        invalid = new.get(self.invalid, 0)
        text = (f"records in {raw} | valid {valid}, invalid {invalid} | ingest behind "
                f"{max(raw - valid - invalid, 0)} | alerts {new.get(self.alerts, 0)}")  # fmt: skip
        if notifier_status_file(settings.home).exists():
            text += f" | notifications delivered {new.get(NOTIFIED, 0)}"
        return text + "   "


#: The mark's entry for the notifier's deliveries so far (not a topic name: it has a space).
NOTIFIED = "notifier deliveries"


class _Views:
    """The mesh's topics with their sizes, asked of the cluster with the mesh's login (looked up
    once: the waits ask every second)."""

    def __init__(self, settings: Settings) -> None:
        self.bootstrap, self.login = resolve_bootstrap(settings), client_security(settings)

    def __call__(self, names: list[str]) -> list[TopicView]:
        return topic_views(self.bootstrap, names, login=self.login)


def notified(settings: Settings) -> int:
    """Deliveries the running notifier made since it started (all channels)."""
    status = read_json(notifier_status_file(settings.home)) or {}
    return sum(status.get("delivered", {}).values())


def mark_path(settings: Settings) -> Path:
    """Where ``--mark`` notes the outputs' sizes."""
    return settings.home / "ingest" / "wait-mark.json"


def _wait_for_counts(views: _Views, settings: Settings, deadline: float) -> int:
    """The window counts follow the routing by a batch or two: wait for the first of them."""
    windows = [TopicNames.of(settings).windows]
    while time.monotonic() < deadline:
        if sum(v.records for v in views(windows)) > 0:
            print(f"ingest window counts are in {windows[0]}")
            return 0
        time.sleep(1)
    print("no window counts yet: see `mesh status`")
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
