"""One scenario's measurement and how it is printed and stored."""

from __future__ import annotations

import json
import platform
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from shared.percentiles import nearest_rank


@dataclass
class Result:
    """What a scenario measured."""

    scenario: str
    records: int
    seconds: float
    latency_p50_ms: float | None = None
    latency_p99_ms: float | None = None
    notes: str = ""
    extra: dict[str, float] = field(default_factory=dict)
    ratio: float | None = None
    #: A paced scenario runs at a fixed input rate: its records/s is not a capacity, so no ratio.
    paced: bool = False

    @property
    def rate(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0


def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile (0..100) by nearest rank; None for no values (shared.percentiles)."""
    return nearest_rank(values, q)


def table(results: list[Result], header: bool = True) -> str:
    """The results as aligned rows, under a header line unless ``header`` is False (rows printed
    one scenario at a time, as they finish)."""
    columns = ("records", 9), ("records/s", 11), ("p50 ms", 8), ("p99 ms", 8), ("ratio", 6)
    title = f"{'scenario':<20} " + " ".join(f"{n:>{w}}" for n, w in columns) + "  notes"
    lines = [title, "-" * len(title)] if header else []
    for r in results:
        p50 = f"{r.latency_p50_ms:.1f}" if r.latency_p50_ms is not None else "-"
        p99 = f"{r.latency_p99_ms:.1f}" if r.latency_p99_ms is not None else "-"
        ratio = f"{r.ratio:.2f}" if r.ratio is not None else "-"
        figures = f"{r.records:>9} {r.rate:>11,.0f} {p50:>8} {p99:>8} {ratio:>6}"
        lines.append(f"{r.scenario:<20} {figures}  {r.notes}")
    return "\n".join(lines)


def append_json(results: list[Result], folder: Path, command: str) -> Path:
    """Append this run's results, with where and when they were measured, as JSON lines."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "results.jsonl"
    run = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": _git_commit(),
        "machine": f"{platform.machine()} {platform.node()}",
        "command": command,
    }
    with path.open("a") as out:
        for r in results:
            out.write(json.dumps({**run, **asdict(r), "records_per_s": r.rate}) + "\n")
    return path


def _git_commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
