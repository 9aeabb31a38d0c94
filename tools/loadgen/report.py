"""What a ``mesh produce`` run did, in numbers a person and a test can check."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tools.loadgen.generated import GeneratedRecord


@dataclass
class Tally:
    """Counts of what was generated, kept while the stream runs."""

    per_topic: Counter[str] = field(default_factory=Counter)
    valid: int = 0
    invalid: int = 0
    planted: int = 0
    expected_alerts: int = 0
    invalid_kinds: Counter[str] = field(default_factory=Counter)
    bytes: int = 0

    def add(self, topic: str, record: GeneratedRecord) -> None:
        meta = record.meta
        self.per_topic[topic] += 1
        self.bytes += len(record.value)
        if meta.invalid_kind is not None:
            self.invalid += 1
            self.invalid_kinds[meta.invalid_kind] += 1
            return
        self.valid += 1
        if meta.pattern_id is not None:
            self.planted += 1
            self.expected_alerts += len(meta.alerts)


@dataclass(frozen=True)
class ProduceReport:
    #: Records generated (and sent, unless a dry run) per full topic name.
    per_topic: dict[str, int]
    valid: int
    invalid: int
    #: Valid records that belong to a planted fraud pattern, and the alerts they must raise.
    planted: int
    expected_alerts: int
    invalid_kinds: dict[str, int]
    bytes: int
    #: Records the broker acknowledged (equal to the total in a dry run), and those it did not.
    delivered: int
    failed: int
    errors: tuple[str, ...]
    elapsed_s: float
    dry_run: bool
    ground_truth: Path | None
    #: Told to stop (SIGTERM, Ctrl-C) before all ``requested`` records were sent.
    stopped_early: bool = False
    requested: int = 0

    @property
    def total(self) -> int:
        return sum(self.per_topic.values())

    @property
    def records_per_s(self) -> float:
        return self.total / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def ok(self) -> bool:
        return self.failed == 0

    def summary(self) -> list[str]:
        """A few lines for people: rate, topics, the mix, where the answer key is."""
        verb = "generated (dry run)" if self.dry_run else "produced"
        topics = ", ".join(f"{topic}={n}" for topic, n in sorted(self.per_topic.items()))
        stopped = f"stopped when told to, after {self.total} of {self.requested} records"
        lines = [stopped] if self.stopped_early else []
        lines += [
            f"{verb} {self.total} records in {self.elapsed_s:.2f} s "
            f"({self.records_per_s:,.0f} records/s, {self.bytes / 1e6:.1f} MB)",
            f"topics: {topics or 'none'}",
            f"valid {self.valid} (planted fraud {self.planted}, expected alerts "
            f"{self.expected_alerts}), invalid {self.invalid}",
        ]
        if self.ground_truth is not None:
            lines.append(f"ground truth: {self.ground_truth}")
        if not self.dry_run:
            lines.append(f"acknowledged {self.delivered}, failed {self.failed}")
        return lines
