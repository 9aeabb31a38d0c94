"""Where a JVM's sampled CPU goes, from a JFR recording: the share of execution samples per
thread and per group of stack frames (a sample counts for the first group its stack matches).

Used for the broker's profile in docs/benchmarks.md: record with ``jcmd <pid> JFR.start
settings=profile duration=120s filename=broker.jfr``, then
``python -m bench.broker.jfr_groups broker.jfr``. Needs the JDK's ``jfr`` tool on the PATH.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

#: (group, frame name fragments), in the order a sample is matched.
GROUPS = (
    ("request metrics (Yammer histograms, sensors)",
     ("updateRequestMetrics", "ExponentiallyDecayingSample", "Histogram.update", "Sensor.record",
      "Meter.mark")),
    ("log append (produce)",
     ("UnifiedLog.append", "appendToLocalLog", "LogValidator", "LogSegment.append")),
    ("fetch read", ("readFromLog", "fetchMessages", "FetchSession", "LocalLog.read")),
    ("delayed operations (purgatory)", ("Purgatory", "DelayedProduce", "DelayedFetch")),
    ("group coordinator", ("coordinator",)),
    ("responses", ("buildSend", "toSend", "sendResponse", "SendBuilder")),
    ("request parsing", ("parseRequest", "RequestContext", "AbstractRequest.parse")),
    ("network I/O", ("Selector", "SocketChannel", "IOUtil", "Processor")),
)  # fmt: skip


def samples(recording: str) -> list[dict]:
    """The recording's execution samples, as ``jfr print --json`` gives them; a missing ``jfr``
    tool or an unreadable recording ends the run with one line saying which."""
    try:
        printed = subprocess.run(
            ["jfr", "print", "--json", "--events", "jdk.ExecutionSample", recording],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
    except FileNotFoundError:
        raise SystemExit("jfr_groups: no `jfr` on the PATH; the JDK has it (bin/jfr)") from None
    except subprocess.CalledProcessError as failed:
        reason = (failed.stderr or failed.stdout).strip().splitlines()[:1] or ["no output"]
        raise SystemExit(f"jfr_groups: jfr cannot read {recording}: {reason[0]}") from None
    return list(json.loads(printed)["recording"]["events"])


def group_of(frames: list[str]) -> str:
    stack = " ".join(frames)
    for group, fragments in GROUPS:
        if any(fragment in stack for fragment in fragments):
            return group
    return f"other: {frames[0] if frames else '?'}"


def main(recording: str) -> None:
    events = samples(recording)
    if not events:
        raise SystemExit(f"jfr_groups: {recording} holds no execution samples (record with "
                         "settings=profile while the JVM is busy)")  # fmt: skip
    threads: Counter = Counter()
    groups: Counter = Counter()
    for event in events:
        values = event["values"]
        frames = [
            f"{frame['method']['type']['name']}.{frame['method']['name']}"
            for frame in values["stackTrace"]["frames"]
        ]
        threads[(values["sampledThread"]["javaName"] or "?").rstrip("0123456789-")] += 1
        groups[group_of(frames)] += 1
    print(f"{len(events)} samples")
    for title, counter in (("threads", threads), ("groups", groups)):
        print(f"\n{title}:")
        for name, count in counter.most_common(15):
            print(f"{100 * count / len(events):5.1f} %  {name}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m bench.broker.jfr_groups RECORDING.jfr")
    main(sys.argv[1])
