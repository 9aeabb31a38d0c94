"""Alerts: the Avro ``Alert`` record, with an id that is the same every time it is raised.

Delivery is at-least-once: after a crash a record may be processed again and its alert produced
twice. ``alert_id`` is a hash of (detector, rule, source record type, source record id), so both
copies carry the same id and downstream deduplication (the notifier) makes the visible effect
exactly-once. The detector's version is deliberately not part of it: a rollout that replays a
record must not notify twice.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

SEVERITIES = ("LOW", "MEDIUM", "HIGH", "CRITICAL")


def alert_id(detector: str, rule: str, record_type: str, record_id: str) -> str:
    """32 hex digits (128 bits of SHA-256): stable across processes, hosts and versions."""
    material = "\x1f".join((detector, rule, record_type, record_id)).encode()
    return hashlib.sha256(material).hexdigest()[:32]


def build_alert(
    *,
    detector: str,
    detector_version: str,
    rule: str,
    severity: str,
    score: float,
    reason: str,
    record: Mapping[str, Any],
    record_type: str,
    source_topic: str,
    source_partition: int,
    source_offset: int,
    detection_time: int,
    evidence: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An ``alert`` schema record about ``record``; evidence values are turned into strings."""
    if severity not in SEVERITIES:
        raise ValueError(f"severity {severity!r} must be one of {', '.join(SEVERITIES)}")
    record_id = record["record_id"]
    return {
        "alert_id": alert_id(detector, rule, record_type, record_id),
        "detector": detector,
        "detector_version": detector_version,
        "rule": rule,
        "severity": severity,
        "score": float(score),
        "reason": reason,
        "customer_id": record["customer_id"],
        "source_record_id": record_id,
        "source_topic": source_topic,
        "source_partition": source_partition,
        "source_offset": source_offset,
        "event_time": record["event_time"],
        "detection_time": detection_time,
        "evidence": {str(k): str(v) for k, v in (evidence or {}).items()},
    }
