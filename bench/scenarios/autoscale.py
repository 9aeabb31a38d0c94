"""The ``autoscale`` benchmark: a burst on a slow detector, drained with and without autoscaling.

A detector whose ``detect()`` waits 2 ms a record (a lookup in another service, say: time a
replica spends waiting, not computing, which is when more replicas help on any machine) reads
transactions. The same burst is produced twice, each into a private mesh of its own on the run's
broker:

* **fixed**: one replica, as `mesh deploy` leaves it: the baseline, measured in the same run;
* **autoscaled**: the manifest's ``autoscale: {min: 1, max: 4, lag_per_replica: 2000}``, with the
  autoscaler process `mesh up` runs, at its default interval (``MESH_AUTOSCALE_INTERVAL_S``).

Measured from the first record of the burst: the seconds to the first extra replica (the
autoscaler's look plus the new replicas' start and health check) and the seconds until the group
has committed the whole burst (lag 0), for both. The ratio is fixed / autoscaled drain time.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from dataclasses import replace
from pathlib import Path

from bench.result import Result
from control.cli.topics import apply_declared
from control.deploy.lifecycle import deploy, down
from control.deploy.registry import Registry
from control.launch.autoscaler import autoscaler_process, start_autoscaler
from shared.kafka.inspect import group_lag
from shared.settings import Settings
from shared.topic_names import TopicNames
from testkit.detector_runs import produce_feed
from tools.loadgen import StreamConfig
from tools.loadgen.avro_feed import valid_records

#: Records of the burst (all kinds; the detector reads the transactions among them).
BURST = 30_000
NAME = "slow_lookup"
DETECTOR = f'''import time

from shared.detector import detector


@detector(name="{NAME}", version="1.0.0", inputs=["transactions"])
def detect(record, ctx):
    time.sleep(0.002)  # the lookup
    if record["amount"] <= 900:
        return []
    return [ctx.alert("above_900", severity="LOW", score=1.0, reason="amount above 900")]
'''
MANIFEST = f"""name: {NAME}
version: 1.0.0
inputs: [transactions]
owner: bench
replicas: 1
start: earliest
"""
AUTOSCALE = """autoscale:
  min: 1
  max: 4
  lag_per_replica: 2000
"""


def run_autoscale(settings: Settings) -> Result:
    fixed = _burst(settings, autoscaled=False)
    scaled = _burst(settings, autoscaled=True)
    ratio = fixed["drain_s"] / scaled["drain_s"] if scaled["drain_s"] else 0.0
    return Result(
        "autoscale_drain",
        int(scaled["records"]),
        scaled["drain_s"],
        notes=(
            f"burst of {scaled['records']:.0f} transactions on a detector waiting 2 ms a record: "
            f"first extra replica {scaled['first_extra_s']:.1f} s after the burst began, drained "
            f"in {scaled['drain_s']:.1f} s autoscaled (max {scaled['replicas']:.0f} replicas) "
            f"vs {fixed['drain_s']:.1f} s on one replica = {ratio:.2f}x; autoscaler look every "
            f"{settings.autoscale_interval_s:g} s"
        ),
        extra={
            "first_extra_replica_s": scaled["first_extra_s"],
            "drain_autoscaled_s": scaled["drain_s"],
            "drain_one_replica_s": fixed["drain_s"],
            "max_replicas": scaled["replicas"],
        },
        ratio=ratio,
        paced=True,
    )


def _burst(settings: Settings, autoscaled: bool) -> dict[str, float]:
    """Produce the burst into a fresh private mesh; the seconds to the first extra replica and to
    lag 0, from the burst's first record."""
    with tempfile.TemporaryDirectory(prefix="mesh-bench-autoscale-") as home:
        private = replace(
            settings, home=Path(home), topic_prefix=f"bench.autoscale.{uuid.uuid4().hex[:8]}."
        )
        folder = Path(home) / NAME
        folder.mkdir()
        (folder / "manifest.yaml").write_text(MANIFEST + (AUTOSCALE if autoscaled else ""))
        (folder / "detector.py").write_text(DETECTOR)
        apply_declared(private)
        names = TopicNames.of(private)
        registry = Registry(private.home)
        try:
            deploy(private, folder, say=lambda line: None)
            if autoscaled:
                start_autoscaler(private)
            records = valid_records(StreamConfig(start_time_ms=int(time.time() * 1000),
                                                 count=BURST, seed=11))  # fmt: skip
            began = time.perf_counter()
            produced = produce_feed(private, {"transactions": names.records("transactions")},
                                    records)["transactions"]  # fmt: skip
            first_extra = float("nan")
            most = 1
            while True:
                replicas = registry.get(NAME).replicas  # type: ignore[union-attr]
                if replicas > 1 and first_extra != first_extra:
                    first_extra = time.perf_counter() - began
                most = max(most, replicas)
                lag = group_lag(private.bootstrap_servers, names.detector_group(NAME),
                                [names.records("transactions")], timeout=5).total  # fmt: skip
                if lag == 0:
                    break
                if time.perf_counter() - began > 600:
                    raise RuntimeError(f"{NAME} still {lag} records behind after 600 s")
                time.sleep(0.25)
            drained = time.perf_counter() - began
        finally:
            autoscaler_process(private).stop()
            down(private, say=lambda line: None)
    return {"records": produced, "first_extra_s": first_extra, "drain_s": drained,
            "replicas": most}  # fmt: skip
