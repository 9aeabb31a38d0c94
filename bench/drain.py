"""``python -m bench.drain BOOTSTRAP DETECTOR INPUTS_JSON PREFIX TOTAL``: one reference detector on
one runtime instance drains ``TOTAL`` records of its input topics; prints its figures as JSON.

The same measurement as the detectors scenario (first batch to the last record, in-process), as a
program of its own, so the containers scenario runs it both on the host and in the Python
services image, on the same topics, and compares like with like. It imports the runtime and the
library only: the image has no test or bench dependencies (the bench folder is mounted in).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import replace

from services.detector_runtime.config import RuntimeConfig, default_topics
from services.detector_runtime.main import start
from shared.detector import load_detector
from shared.settings import PROJECT_ROOT, Settings
from shared.topic_names import TopicNames


def drain(settings: Settings, name: str, inputs: dict[str, str], prefix: str, total: int) -> dict:
    """``detectors/<name>`` on one runtime instance (group and outputs under ``prefix``) reads
    ``total`` records of ``inputs`` (record type -> topic): records, seconds from the first batch
    to the last record, alerts, changelog records, and whether it is stateful."""

    detector, manifest = load_detector(f"detectors.{name}")
    config = RuntimeConfig(
        detector=detector,
        manifest=manifest,
        topics=default_topics(detector, prefix, inputs),
        group_id=TopicNames(prefix).detector_group(name),
        instance_id=f"bench-drain-{name}",
        log_interval_s=3600,
    )
    runner = start(settings, config)
    runner.run(stop_when=lambda c: c.records >= total)
    counters = runner.counters
    seconds = time.perf_counter() - (counters.first_batch_at or time.perf_counter())
    return {
        "records": counters.records,
        "seconds": seconds,
        "alerts": counters.alerts,
        "changelog": counters.changelog,
        "stateful": detector.stateful,
        # What the state-at-scale scenario compares: restores done at assignment, and memory.
        "restored": sum(r.applied for r in runner.restores),
        "restore_s": runner.restore_seconds,
        "rss_mb": peak_rss_mb(),
    }


def drain_process(
    launcher: list[str], args: list[str], where: str, timeout_s: float = 1200
) -> dict:
    """Run ``python -m bench.drain ARGS`` as ``launcher`` starts Python (this interpreter, or
    ``docker run ... python``) and return its figures; a failure names ``where`` it ran."""

    command = [*launcher, "-m", "bench.drain", *args]
    out = subprocess.run(
        command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=timeout_s, check=False
    )
    if out.returncode != 0:
        raise RuntimeError(f"drain on the {where} failed: {out.stderr.strip()[-500:]}")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def peak_rss_mb() -> float:
    """This process's peak resident memory so far (VmHWM), in MiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


if __name__ == "__main__":
    bootstrap, detector_name, inputs_json, topic_prefix, count = sys.argv[1:6]
    settings = replace(Settings.from_env(), bootstrap_servers=bootstrap)
    figures = drain(settings, detector_name, json.loads(inputs_json), topic_prefix, int(count))
    print(json.dumps(figures))
