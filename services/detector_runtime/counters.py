"""What an instance has done, for log lines now and the metrics registry later.

Plain integers: the metrics issue turns them into Dropwizard meters; the runtime only counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.dead_letters import DECODE, DETECT


@dataclass
class Counters:
    records: int = 0
    alerts: int = 0
    batches: int = 0
    retries: int = 0
    changelog: int = 0
    restored: int = 0
    handed_back: int = 0
    #: records a restarted ingest routed again, skipped by a stateful detector (replays.py)
    replayed: int = 0
    dead_letters: dict[str, int] = field(default_factory=dict)
    #: perf_counter() when the first batch arrived (benchmarks measure from there)
    first_batch_at: float | None = None

    def dead_letter(self, stage: str) -> None:
        self.dead_letters[stage] = self.dead_letters.get(stage, 0) + 1

    @property
    def failed_records(self) -> int:
        """Records that could not be processed: dead-lettered at decode or detect (an alert that
        failed to encode is the record's output failing, not the record)."""
        return self.dead_letters.get(DECODE, 0) + self.dead_letters.get(DETECT, 0)

    def summary(self) -> str:
        dlq = ", ".join(f"{k}={v}" for k, v in sorted(self.dead_letters.items())) or "0"
        return (
            f"records={self.records} alerts={self.alerts} dead_letters[{dlq}] "
            f"retries={self.retries} replayed={self.replayed} changelog={self.changelog} "
            f"restored={self.restored} batches={self.batches}"
        )
