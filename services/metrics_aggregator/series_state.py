"""The state of one series (service + name + tags): every instance's latest snapshot, as a table.

Table semantics (docs/metrics.md): each instance contributes its latest snapshot, and a newer
snapshot (``timestamp`` later or equal, log order breaking ties) replaces that instance's
previous one; an older one arriving late is ignored. Instances are told apart by id, and a
restarted process has a new id, so its counts add to the dead process's.

Staleness is judged against a clock the caller passes (the Spark batch's processing time, see
:mod:`series_table`): an instance whose latest snapshot was taken ``stale_after_ms`` or more before
``now_ms`` is stale. A stale instance leaves ``live`` and is *retired*: only its last count and
timestamp are kept, so its gauges and rates drop out of the totals while its count stays. The
retired ids are remembered (up to ``remember`` per series, the most recent) so that

- a late snapshot of a retired instance, older than what was retired, is still ignored, and
- an instance that comes back after a pause (newer snapshot) is revived: its new count
  *replaces* its retired one instead of adding to it.

Beyond ``remember`` the oldest retired ids are forgotten, their counts folded into one anonymous
sum: state stays bounded per series whatever the churn of instances. (An instance forgotten that
way that then comes back would be counted twice; it takes ``remember`` younger retirements in
the same series first.)

The state is plain data with a JSON form (what Spark keeps), versioned by ``"v"``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from services.metrics_aggregator.snapshots import Snapshot

#: Retired ids remembered per series by default (see the module doc).
REMEMBER_RETIRED = 1000
FORMAT_VERSION = 1


@dataclass(frozen=True)
class Retired:
    """What is left of a stale instance: its last count (0 for a gauge) and that snapshot's time."""

    count: int
    timestamp: int


@dataclass
class SeriesState:
    #: Live instances by id: their latest snapshots.
    live: dict[str, Snapshot] = field(default_factory=dict)
    #: Stale instances by id, most recent ``remember`` of them.
    retired: dict[str, Retired] = field(default_factory=dict)
    #: Sum of the counts of retired instances no longer remembered by id, and how many they were.
    forgotten_count: int = 0
    forgotten_instances: int = 0
    #: Type of the newest accepted snapshot (what the totals are computed as) and its timestamp.
    type: str = ""
    newest_ms: int = 0
    #: Time of the latest total: the newest snapshot, or the moment instances went stale.
    time_ms: int = 0

    # ------------------------------------------------------------------ updates
    def merge(self, snapshot: Snapshot) -> bool:
        """Take ``snapshot`` if it is the instance's newest; False if it was ignored as late."""
        iid = snapshot.instance_id
        current = self.live.get(iid)
        if current is not None:
            if snapshot.timestamp < current.timestamp:
                return False
        else:
            retired = self.retired.get(iid)
            if retired is not None:
                if snapshot.timestamp < retired.timestamp:
                    return False
                del self.retired[iid]  # back after a pause: the new count replaces the old
        self.live[iid] = snapshot
        if snapshot.timestamp >= self.newest_ms:
            self.newest_ms = snapshot.timestamp
            self.type = snapshot.type
        self.time_ms = max(self.time_ms, snapshot.timestamp)
        return True

    def expire(
        self, now_ms: int, stale_after_ms: int, remember: int = REMEMBER_RETIRED
    ) -> list[str]:
        """Retire the instances stale at ``now_ms``; returns their ids (sorted).

        The total's time moves to the moment the last of them went stale (its snapshot's time
        plus ``stale_after_ms``), so a total re-emitted because instances went stale is a new
        point and never overwrites the one that still counted them.
        """
        gone = sorted(i for i, s in self.live.items() if now_ms - s.timestamp >= stale_after_ms)
        for iid in gone:
            snapshot = self.live.pop(iid)
            self.retired[iid] = Retired(snapshot.count or 0, snapshot.timestamp)
            self.time_ms = max(self.time_ms, snapshot.timestamp + stale_after_ms)
        excess = len(self.retired) - max(remember, 0)
        if excess > 0:
            oldest = sorted(self.retired.items(), key=lambda item: (item[1].timestamp, item[0]))
            for iid, retired in oldest[:excess]:
                del self.retired[iid]
                self.forgotten_count += retired.count
                self.forgotten_instances += 1
        return gone

    # ------------------------------------------------------------------ reading
    @property
    def stale_instances(self) -> int:
        return len(self.retired) + self.forgotten_instances

    def retired_count(self) -> int:
        """Counts that stay in the totals although their instances are gone."""
        return sum(r.count for r in self.retired.values()) + self.forgotten_count

    def next_stale_ms(self, stale_after_ms: int) -> int | None:
        """When the first live instance will be stale if it stays silent; None with none live."""
        if not self.live:
            return None
        return min(s.timestamp for s in self.live.values()) + stale_after_ms

    # ------------------------------------------------------------------ JSON
    def to_json(self) -> str:
        doc: dict[str, Any] = {
            "v": FORMAT_VERSION,
            "type": self.type,
            "newest": self.newest_ms,
            "time": self.time_ms,
            "live": {iid: self.live[iid].to_dict() for iid in sorted(self.live)},
            "retired": {iid: [r.count, r.timestamp] for iid, r in sorted(self.retired.items())},
            "forgotten": [self.forgotten_count, self.forgotten_instances],
        }
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> SeriesState:
        doc = json.loads(text)
        if doc.get("v") != FORMAT_VERSION:
            raise ValueError(
                f"series state format {doc.get('v')!r} is not {FORMAT_VERSION}: the checkpoint "
                "was written by another version of the aggregator; start it with a new "
                "checkpoint folder"
            )
        forgotten_count, forgotten_instances = doc.get("forgotten", [0, 0])
        return cls(
            live={iid: Snapshot.from_dict(iid, s) for iid, s in doc.get("live", {}).items()},
            retired={
                iid: Retired(int(count), int(ts))
                for iid, (count, ts) in doc.get("retired", {}).items()
            },
            forgotten_count=int(forgotten_count),
            forgotten_instances=int(forgotten_instances),
            type=str(doc.get("type", "")),
            newest_ms=int(doc.get("newest", 0)),
            time_ms=int(doc.get("time", 0)),
        )
