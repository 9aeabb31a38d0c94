"""``mesh shadow NAME``: what the shadow version would change, on the same live records.

Both versions started from the same offsets (the live group's, when the shadow started). The
comparison takes, per input partition, the records *both* have committed since then (from the
start offset up to the lower of the two groups' committed offsets), and the alerts each version
raised on exactly those records (the alerts name their source topic, partition and offset).
Alerts are matched by source record and rule: only in the live version, only in the shadow, or in
both, per rule, with a few examples of each side. Records each version read, records/s and CPU
come from the groups' offsets and the replicas' own reports.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from control.deploy.backends import Replica, shadow_replicas
from control.deploy.lifecycle import current_instances
from control.deploy.registry import Deployment
from shared.detector import load_manifest
from shared.endpoints import resolve_bootstrap
from shared.kafka.config import consumer_config
from shared.kafka.inspect import group_lag
from shared.kafka.security import client_security
from shared.settings import Settings
from shared.topic_names import TopicNames

#: Examples printed per side and rule.
EXAMPLES = 3
Key = tuple[str, int]


def compare(settings: Settings, deployment: Deployment) -> dict[str, Any]:
    """The comparison as a JSON-able dict (``mesh shadow NAME --json`` prints it as is)."""
    release = deployment.shadow_release
    assert deployment.shadow and release, "no shadow"
    names, login = TopicNames.of(settings), client_security(settings)
    bootstrap = resolve_bootstrap(settings)
    topics = [names.records(t) for t in load_manifest(Path(release.path)).inputs]
    start: dict[Key, int] = {(t, p): o for t, p, o in deployment.shadow["start_offsets"]}
    live = group_lag(bootstrap, names.detector_group(deployment.name), topics, 10, login)
    shadow = group_lag(bootstrap, names.shadow_group(deployment.name), topics, 10, login)
    common = {
        key: (start.get(key, 0), min(_at(live.committed, key), _at(shadow.committed, key)))
        for key in live.partitions
    }
    since_ms = int(deployment.shadow["started"] * 1000) - 60_000  # clocks and batching slack
    live_alerts = _alerts(settings, names.alerts, deployment.name, since_ms, common)
    shadow_alerts = _alerts(settings, names.alerts_shadow, deployment.name, since_ms, common)
    return {
        "detector": deployment.name,
        "live_version": deployment.current.version,
        "shadow_version": release.version,
        "since": deployment.shadow["started"],
        "running_s": time.time() - deployment.shadow["started"],
        "records": {
            "live": _read(live.committed, start),
            "shadow": _read(shadow.committed, start),
            "compared": sum(max(0, end - begin) for begin, end in common.values()),
        },
        "rules": _by_rule(live_alerts, shadow_alerts),
        "live": _usage(current_instances(settings, deployment)),
        "shadow": _usage(shadow_replicas(settings, deployment)),
    }


def _at(committed: Mapping[Key, int | None], key: Key) -> int:
    value = committed.get(key)
    return 0 if value is None else value


def _read(committed: Mapping[Key, int | None], start: Mapping[Key, int]) -> int:
    return sum(max(0, _at(committed, key) - start.get(key, 0)) for key in committed)


def _alerts(
    settings: Settings,
    topic: str,
    detector: str,
    since_ms: int,
    common: Mapping[Key, tuple[int, int]],
) -> dict[tuple[str, str], dict[str, Any]]:
    """``(source record id, rule) -> alert`` of ``detector`` on ``topic`` from ``since_ms``,
    for the records inside ``common``'s ranges only."""
    from shared.avro import AvroDeserializer  # fastavro only when comparing (docs/layout.md)

    decode = AvroDeserializer("alert").decode
    consumer = Consumer(consumer_config(settings, f"mesh-shadow-{time.monotonic_ns()}",
                                        **{"enable.auto.commit": False}))  # fmt: skip
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics[topic]
        wanted = [TopicPartition(topic, p, since_ms) for p in sorted(metadata.partitions)]
        positions = consumer.offsets_for_times(wanted, timeout=10)
        ends = {tp.partition: consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in wanted}
        todo = {tp.partition for tp in positions if 0 <= tp.offset < ends[tp.partition]}
        consumer.assign([tp for tp in positions if tp.partition in todo])
        found: dict[tuple[str, str], dict[str, Any]] = {}
        deadline = time.monotonic() + 60
        while todo and time.monotonic() < deadline:
            for message in consumer.consume(1000, timeout=0.5):
                value = message.value()
                if message.error() is not None or value is None:
                    continue
                partition, offset = message.partition() or 0, message.offset() or 0
                if offset + 1 >= ends[partition]:
                    todo.discard(partition)
                alert = decode(value)
                key = (alert["source_topic"], alert["source_partition"])
                begin, end = common.get(key, (0, 0))
                if alert["detector"] == detector and begin <= alert["source_offset"] < end:
                    found[(alert["source_record_id"], alert["rule"])] = alert
        return found
    finally:
        consumer.close()


def _by_rule(
    live: Mapping[tuple[str, str], dict[str, Any]],
    shadow: Mapping[tuple[str, str], dict[str, Any]],
) -> dict[str, dict[str, Any]]:
    rules: dict[str, dict[str, Any]] = defaultdict(
        lambda: {
            "both": 0,
            "live_only": 0,
            "shadow_only": 0,
            "examples": {"live_only": [], "shadow_only": []},
        }
    )
    for key in set(live) | set(shadow):
        if key in live and key in shadow:
            side = "both"
        else:
            side = "live_only" if key in live else "shadow_only"
        entry = rules[key[1]]
        entry[side] += 1
        if side != "both" and len(entry["examples"][side]) < EXAMPLES:
            alert = live.get(key) or shadow[key]
            entry["examples"][side].append(_example(alert))
    return dict(sorted(rules.items()))


def _example(alert: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "record": alert["source_record_id"],
        "customer": alert["customer_id"],
        "severity": alert["severity"],
        "reason": alert["reason"],
    }


def _usage(instances: Iterable[Replica]) -> dict[str, float]:
    """Records/s and CPU of a version's replicas, from their reports and /proc."""
    views = [instance.view() for instance in instances]
    return {
        "replicas": float(sum(1 for v in views if v.alive)),
        "records_per_s": sum(float(v.report.get("records_per_s", 0.0)) for v in views),
        # average over each replica's life: CPU seconds used / seconds up
        "cpu_percent": sum(
            100 * v.usage.cpu_s / v.uptime_s for v in views if v.usage and v.uptime_s > 0
        ),
    }


def comparison_text(report: Mapping[str, Any]) -> list[str]:
    """The report as `mesh shadow NAME` prints it."""
    records = report["records"]
    lines = [
        f"{report['detector']}: live v{report['live_version']} vs shadow "
        f"v{report['shadow_version']}, shadow running {report['running_s']:.0f} s",
        f"records read since the shadow started: live {records['live']}, shadow "
        f"{records['shadow']}; compared (read by both) {records['compared']}",
    ]
    for side in ("live", "shadow"):
        use = report[side]
        lines.append(
            f"{side:<6} {use['replicas']:.0f} replica(s), {use['records_per_s']:.0f} records/s, "
            f"CPU {use['cpu_percent']:.0f} %"
        )
    totals: Counter[str] = Counter()
    if not report["rules"]:
        lines.append("no alert from either version on the compared records")
    for rule, entry in report["rules"].items():
        totals.update({k: entry[k] for k in ("both", "live_only", "shadow_only")})
        lines.append(
            f"rule {rule}: both {entry['both']}, only live {entry['live_only']}, only shadow "
            f"{entry['shadow_only']}"
        )
        for side in ("live_only", "shadow_only"):
            for example in entry["examples"][side]:
                lines.append(
                    f"  only {side.split('_')[0]}: record {example['record']} customer "
                    f"{example['customer']} {example['severity']}: {example['reason']}"
                )
    if report["rules"]:
        lines.append(
            f"total: both {totals['both']}, only live {totals['live_only']}, only shadow "
            f"{totals['shadow_only']}"
        )
    return lines
