"""The container mesh's costs, measured in the same run as everything else (issue 17):

* ``image <name>``: a build of the Python, Spark and broker images with no layer cache (what a
  first build costs; the Debian base and the JRE are reused, debootstrap is ~40 s once), and
  each image's size;
* ``compose up -> first alert``: seconds from `mesh compose up` on a fresh project (new ports,
  new volumes) until the mesh is healthy, and until the first alert of records produced then;
* ``detector large_amount in a container`` next to ``... on the host``: the same drain
  (:mod:`bench.drain`) of the same topics, once as a host process and once in the Python image
  on the host network; the container's ratio to the host is in the notes.

Without a Docker engine every row says so instead of a figure (the other scenarios still run).
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path

from docker.errors import ImageNotFound

from bench.drain import drain_process
from bench.kafka_fixture import create_topic
from bench.result import Result
from bench.scenarios.detectors import PARTITIONS, feed
from hosting.containers.compose import ComposeMesh
from hosting.containers.engine import EngineUnavailable, connect
from hosting.containers.images import ImageBuilder, image
from shared.settings import PROJECT_ROOT, Settings
from shared.topic_names import TopicNames
from testkit.container_mesh import compose_environment
from tools.loadgen import SendOptions, StreamConfig, produce_to_kafka
from tools.loadgen.ground_truth import read_ground_truth
from tools.loadgen.score import planted_alerts, read_raised

BENCH_TAG = "bench"
BUILT = ("python", "spark", "kafka")
DETECTOR = "large_amount"


def run_all(settings: Settings) -> list[Result]:
    try:
        client = connect()
    except EngineUnavailable as error:
        return [Result("containers", 0, 0.0, notes=f"not measured: {error}", paced=True)]
    return [*_image_builds(settings, client), _first_alert(), *_detector_ratio(settings)]


def _image_builds(settings: Settings, client) -> list[Result]:  # type: ignore[no-untyped-def]
    builder = ImageBuilder(settings, rebuild=True, say=lambda line: None, tag=BENCH_TAG,
                           no_cache=True)  # fmt: skip
    try:
        built = builder.build_all(only=BUILT)
    finally:
        for name in reversed(BUILT):
            with contextlib.suppress(ImageNotFound):  # not built: the error above says why
                client.images.remove(f"mesh/{name}:{BENCH_TAG}", force=True)
    return [
        Result(f"image {b.tag.split(':')[0]}", 1, b.seconds, paced=True,
               notes=f"built in {b.seconds:.1f} s without layer cache, {b.size_bytes / 1e6:.0f} MB",
               extra={"build_s": round(b.seconds, 1), "size_mb": round(b.size_bytes / 1e6)})
        for b in built
    ]  # fmt: skip


def _first_alert() -> Result:
    env, ports = compose_environment(f"mesh-bench-{uuid.uuid4().hex[:6]}")
    compose = ComposeMesh(environ=env, say=lambda line: None)
    started = time.monotonic()
    try:
        compose.up(timeout_s=600)
        ready_s = time.monotonic() - started
        settings = Settings(bootstrap_servers=f"127.0.0.1:{ports['MESH_KAFKA_PORT']}")
        stream = StreamConfig(start_time_ms=int(time.time() * 1000), count=200, seed=3,
                              customers=30_000, types=("transactions",),
                              patterns=("large_amount",), fraud_share=0.05)  # fmt: skip
        with tempfile.TemporaryDirectory() as scratch:
            truth = Path(scratch) / "truth.jsonl"
            produce_to_kafka(stream, SendOptions(ground_truth=truth, progress=False), settings)
            wanted = set(list(planted_alerts(read_ground_truth(truth)))[:1])
        found = read_raised(settings, "alerts", wanted, timeout_s=300)
        alert_s = time.monotonic() - started
    finally:
        compose.down(volumes=True)
    notes = f"healthy after {ready_s:.0f} s, " + (
        f"first alert after {alert_s:.0f} s" if found else "no alert within 300 s")  # fmt: skip
    extra = {"ready_s": round(ready_s, 1), "first_alert_s": round(alert_s, 1)}
    return Result("compose up -> first alert", 1, alert_s, notes=notes, paced=True, extra=extra)


def _detector_ratio(settings: Settings) -> list[Result]:
    data = feed(settings)
    inputs = {"transactions": data.topics["transactions"]}
    total = data.counts["transactions"]
    results = []
    for where in ("host", "container"):
        prefix = f"bench.drain.{uuid.uuid4().hex[:8]}."
        names = TopicNames(prefix)
        for topic in (names.alerts, names.detectors_dlq):
            create_topic(settings, "", PARTITIONS, name=topic)
        args = [settings.bootstrap_servers, DETECTOR, json.dumps(inputs), prefix, str(total)]
        figures = _drain(where, args)
        results.append(Result(f"detector {DETECTOR} ({where})", figures["records"],
                              figures["seconds"], notes=f"{figures['alerts']} alerts",
                              extra={"alerts": figures["alerts"]}))  # fmt: skip
    host, container = results
    container.notes += f"; {container.rate / host.rate:.2f} x the host's rate" if host.rate else ""
    return results


def _drain(where: str, args: list[str]) -> dict:
    if where == "host":
        launcher = [sys.executable]
    else:
        launcher = ["docker", "run", "--rm", "--network", "host",
                    "-v", f"{PROJECT_ROOT / 'bench'}:/opt/mesh/app/bench:ro",
                    image("python"), "python"]  # fmt: skip
    return drain_process(launcher, args, where, timeout_s=600)
