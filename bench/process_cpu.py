"""Where the machine's CPU goes, charged to the mesh's parts: the whole-mesh cost table.

The question a slow mesh raises is which part eats the two cores, per record and when idle. Only
the kernel's accounting answers it alike for a JVM, the broker, a Python detector and InfluxDB,
so a snapshot reads every process's user + system time from /proc and names it by its command
line; a process that names no part (a Spark job's JVM, its Python workers) is charged to the
nearest ancestor that does. Processes that end between two snapshots take their time with them;
the mesh's parts run for the whole of a measurement, so that loses nothing of theirs.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from shared.process_usage import parent_pid, process_usage

#: Module or program names in a command line, and the part of the mesh that runs them.
_PARTS = (
    ("kafka.Kafka", "broker"),
    ("services.ingest", "ingest (Spark)"),
    ("services.metrics_aggregator", "metrics aggregator (Spark)"),
    ("services.history", "history (Spark)"),
    ("services.notifier", "notifier"),
    ("tools.webhook_receiver", "webhook receiver"),
    ("control.supervisor", "supervisors"),
)
BENCH = "bench (load generator)"
OTHER = "other processes"


def part_of(argv: list[str]) -> str | None:
    """The mesh part a command line runs, None when it names none (a child of one, or not ours).

    A supervisor's command line holds its child's after ``--``: only what comes before counts."""
    own = argv[: argv.index("--")] if "--" in argv else argv
    if "services.detector_runtime" in own:
        named = own.index("--instance-id") + 1 if "--instance-id" in own else 0
        return f"detector {own[named]}" if 0 < named < len(own) else "detector"
    program = Path(own[0]).name if own else ""
    if program.startswith("influxd"):
        return "influxdb"
    if program.startswith("jaeger"):
        return "trace backend (jaeger)"
    for marker, part in _PARTS:
        if any(marker in arg for arg in own):
            return part
    return None


@dataclass(frozen=True)
class Snapshot:
    """CPU seconds so far of every process alive at ``taken_at`` (monotonic), by pid, with the
    part each is charged to."""

    taken_at: float
    cpu_s: Mapping[int, tuple[str, float]]

    def since(self, earlier: Snapshot) -> dict[str, float]:
        """CPU seconds each part used between ``earlier`` and this snapshot."""
        used: dict[str, float] = {}
        for pid, (part, cpu) in self.cpu_s.items():
            before = earlier.cpu_s.get(pid)
            start = before[1] if before is not None and before[0] == part else 0.0
            used[part] = used.get(part, 0.0) + max(cpu - start, 0.0)
        return used


def snapshot(own_pid: int | None = None) -> Snapshot:
    """Every user process's CPU time now; ``own_pid`` (default: this one) is the bench itself."""
    own_pid = os.getpid() if own_pid is None else own_pid
    argv: dict[int, list[str]] = {}
    parent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:  # gone meanwhile
            continue
        up = parent_pid(pid)
        if command == [b""] or up is None:  # a kernel thread, or gone meanwhile
            continue
        argv[pid] = [a.decode(errors="replace") for a in command if a]
        parent[pid] = up
    cpu: dict[int, tuple[str, float]] = {}
    for pid in argv:
        usage = process_usage(pid)
        if usage is not None:
            cpu[pid] = (_charged_to(pid, own_pid, argv, parent), usage.cpu_s)
    return Snapshot(time.monotonic(), cpu)


def _charged_to(pid: int, own_pid: int, argv: dict[int, list[str]], parent: dict[int, int]) -> str:
    seen = 0
    while pid in argv and seen < 64:
        if pid == own_pid:
            return BENCH
        part = part_of(argv[pid])
        if part is not None:
            return part
        pid, seen = parent.get(pid, 0), seen + 1
    return OTHER


def cpu_table(idle: Mapping[str, float], idle_s: float, busy: Mapping[str, float],
              busy_s: float, records: int) -> str:  # fmt: skip
    """Per part: CPU while the mesh was idle (ms per second; "-" when not measured, ``idle_s``
    0), while it worked on ``records`` (ms per second, µs per record), and its share of the
    busy time; the busiest part first."""
    parts = sorted(set(idle) | set(busy), key=lambda p: -busy.get(p, 0.0))
    total = sum(busy.values()) or 1.0
    head = (f"  {'part':<34} {'idle ms/s':>10} {'busy ms/s':>10} {'µs/record':>10} "
            f"{'share':>6}")  # fmt: skip
    lines = [head, "  " + "-" * (len(head) - 2)]
    for part in [*parts, "all"]:
        used = sum(busy.values()) if part == "all" else busy.get(part, 0.0)
        rest = sum(idle.values()) if part == "all" else idle.get(part, 0.0)
        per_record = used * 1e6 / records if records else 0.0
        idle_text = f"{rest * 1000 / idle_s:>10.0f}" if idle_s > 0 else f"{'-':>10}"
        lines.append(
            f"  {part:<34} {idle_text} {used * 1000 / busy_s:>10.0f} "
            f"{per_record:>10.1f} {used / total:>6.0%}"
        )
    return "\n".join(lines)
