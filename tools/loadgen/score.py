"""``python -m tools.loadgen.score``: did the mesh raise the alerts a run planted?

The load generator's ground truth names every alert the reference detectors must raise (detector
and source record id). This reads the alerts topic from the start and checks them off, waiting
until all are there or the time is up, and prints one line per detector. When the run was sent
with ``--trace-planted`` and the local Jaeger runs, it also prints, for a few raised alerts, the
link to the alert's trace and the spans in it: ingest, the detector, the alert's publish. That is
the last step of ``make demo``. Alerts of other runs on the same topic are ignored (they name
other record ids); exit status 1 if a planted alert is missing.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from shared.endpoints import resolve_trace_backend
from shared.errors import MeshError
from shared.kafka.config import consumer_config
from shared.settings import Settings
from shared.topic_names import TopicNames
from tools.loadgen.ground_truth import read_ground_truth

#: How many traced alerts to show with their trace.
TRACES_SHOWN = 3


#: (detector, source record id, event time): the event time tells this run's record from the
#: same seed's record of an earlier run (same ids, other start time) on the same alerts topic.
AlertKey = tuple[str, str, int]


def planted_alerts(truth: list[dict[str, Any]]) -> dict[AlertKey, str | None]:
    """Every alert the run must raise -> its trace id, if the record was sent traced."""
    return {
        (entry["detector"], entry["record_id"], entry["event_time"]): entry.get("trace_id")
        for entry in truth
        if entry["entry"] == "alert"
    }


def read_raised(
    settings: Settings, topic: str, wanted: set[AlertKey], timeout_s: float
) -> set[AlertKey]:
    """Those of ``wanted`` found on ``topic`` (read from the start, no group commits) within
    ``timeout_s``; stops as soon as all are found."""

    from shared.avro import AvroDeserializer, DecodeError

    decode = AvroDeserializer("alert").decode
    consumer = Consumer(consumer_config(settings, f"mesh-score-{uuid.uuid4().hex[:8]}"))
    found: set[AlertKey] = set()
    try:
        try:
            metadata = consumer.list_topics(topic, timeout=10).topics.get(topic)
        except KafkaException as exc:
            raise MeshError(
                f"Kafka did not answer ({exc.args[0].str()}): start the mesh with `mesh up`"
            ) from None
        if metadata is None or metadata.error is not None:
            raise MeshError(f"topic {topic} does not exist: start the mesh with `mesh up`")
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in metadata.partitions])
        deadline = time.monotonic() + timeout_s
        while found != wanted and time.monotonic() < deadline:
            for message in consumer.consume(1000, timeout=0.5):
                if message.error() is not None:
                    continue
                try:
                    alert = decode(message.value() or b"")
                except DecodeError:  # not an alert of ours: nothing planted to check off
                    continue
                key = (alert["detector"], alert["source_record_id"], alert["event_time"])
                if key in wanted:
                    found.add(key)
    finally:
        consumer.close()
    return found


def report(expected: dict[AlertKey, str | None], raised: set[AlertKey]) -> list[str]:
    """One line per detector: planted alerts raised of expected, and the first missing ids."""
    lines = []
    for detector in sorted({key[0] for key in expected}):
        wanted = {key for key in expected if key[0] == detector}
        missing = sorted(record for _, record, _ in wanted - raised)
        line = f"{detector:<14} {len(wanted & raised):>4} of {len(wanted)} planted alerts raised"
        if missing:
            line += f"; missing {', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}"
        lines.append(line)
    return lines


def trace_lines(
    settings: Settings, expected: dict[AlertKey, str | None], raised: set[AlertKey]
) -> list[str]:
    """For a few raised, traced alerts: their trace's link and the path ingest -> alert."""

    traced = sorted((key, trace) for key, trace in expected.items() if trace and key in raised)
    if not traced:
        return ["traces: no planted alert was sent traced (mesh produce --trace-planted)"]
    info = resolve_trace_backend(settings)
    if info is None:
        return ["traces: no trace backend (make jaeger, then mesh up; or set MESH_TRACE_UI_URL)"]
    lines = []
    by_detector = {key[0]: (key, trace) for key, trace in traced}  # one per detector
    for (detector, record, _), trace in list(by_detector.values())[:TRACES_SHOWN]:
        path, others = alert_path(info.ui_url, trace, detector)
        if not path:
            lines.append(f"trace of the {detector} alert on {record}: not in Jaeger within 60 s")
            continue
        lines.append(f"trace of the {detector} alert on {record}: {info.ui_url}/#/trace/{trace}")
        chain = " -> ".join(f"{s['service']} '{s['name']}'" for s in path)
        lines.append(f"  {chain}" + (f" (+{others} other spans)" if others else ""))
    return lines


def alert_path(
    ui_url: str, trace: str, detector: str, timeout_s: float = 60.0
) -> tuple[list[dict[str, Any]], int]:
    """The spans from ingest down to ``detector``'s alert publish in ``trace``, root first, and
    how many other spans the trace has; waits until that path is complete (ingest exports from
    a query of its own, so its span may come last). An incomplete path after the wait is
    returned as far as it goes."""
    from shared.tracing.jaeger_api import BackendError, get_trace

    deadline = time.monotonic() + timeout_s
    path: list[dict[str, Any]] = []
    spans: list[dict[str, Any]] = []
    while True:
        try:
            spans = get_trace(ui_url, trace)
        except (BackendError, OSError):
            spans = []
        path = _path_to_publish(spans, f"detector.{detector}")
        if (path and path[0]["service"] == "ingest") or time.monotonic() >= deadline:
            return path, len(spans) - len(path)
        time.sleep(1.0)


def _path_to_publish(spans: list[dict[str, Any]], service: str) -> list[dict[str, Any]]:
    by_id = {s["span_id"]: s for s in spans}
    publish = next((s for s in spans if s["service"] == service and s["kind"] == "producer"), None)
    path = []
    while publish is not None and publish not in path:
        path.append(publish)
        publish = by_id.get(publish["parent_span_id"] or "")
    return path[::-1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.loadgen.score", description=__doc__)
    parser.add_argument(
        "ground_truth",
        nargs="?",
        type=Path,
        help="a ground-truth file of mesh produce (default: that of --seed in $MESH_HOME)",
    )
    parser.add_argument(
        "--seed", type=int, default=42, help="the run's seed, to find its ground truth (42)"
    )
    parser.add_argument(
        "--alerts-topic", help="where alerts are (default: the mesh's, $MESH_TOPIC_PREFIX + alerts)"
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait (120)")
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    path = args.ground_truth or settings.home / "loadgen" / f"ground-truth-seed{args.seed}.jsonl"
    try:
        try:
            truth = read_ground_truth(path)
        except (OSError, ValueError) as exc:
            raise MeshError(f"cannot read the ground truth {path}: {exc}") from None
        expected = planted_alerts(truth)
        topic = args.alerts_topic or TopicNames.of(settings).alerts
        raised = read_raised(settings, topic, set(expected), args.timeout)
        for line in report(expected, raised):
            print(line)
        for line in trace_lines(settings, expected, raised):
            print(line)
    except MeshError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    missing = len(expected.keys() - raised)
    if missing:
        print(f"{missing} planted alerts were not raised within {args.timeout:.0f} s")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
