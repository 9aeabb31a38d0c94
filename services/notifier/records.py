"""What the notifier writes about a delivery: the ``notifications`` record (Avro Notification,
key = alert id, as ARCHITECTURE.md says) and the webhook's JSON body.

``notification_id`` is ``<alert_id>/<channel>``: deterministic, so a record written again after
a restart is the same record. ``notifications`` is compacted by alert id, so for an alert sent to
two channels the compacted topic keeps the later channel's record; the full history is in the
topic until compaction, and what each channel got is in the notifier's own changelog.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from typing import Any

from services.notifier.book import DELIVERED, FAILED, Delivery


def notification_value(delivery: Delivery, alert: Mapping[str, Any]) -> dict[str, Any]:
    """The Notification record of ``delivery`` (of the decoded ``alert``) as it stands now."""
    finished = delivery.status in (DELIVERED, FAILED)
    return {
        "notification_id": delivery.key,
        "alert_id": delivery.alert_id,
        "channel": delivery.channel,
        "customer_id": str(alert["customer_id"]),
        "severity": str(alert["severity"]),
        "message": f"{alert['detector']}/{alert['rule']}: {alert['reason']}",
        "created_time": _millis(delivery.admitted_s),
        "status": delivery.status,
        "attempts": delivery.attempts,
        "delivered_time": _millis(delivery.at_s) if delivery.status == DELIVERED else None,
        "last_error": delivery.last_error,
        "latency_ms": _millis(delivery.at_s - delivery.admitted_s) if finished else None,
        "source_time": delivery.source_ms,
    }


def webhook_body(alert: Mapping[str, Any]) -> bytes:
    """The alert as the receiver gets it: its fields, times as ISO 8601 (UTC)."""
    return json.dumps(dict(alert), default=_json_value, sort_keys=True).encode()


def _millis(seconds: float) -> int:
    return round(seconds * 1000)


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=datetime.UTC)
        return aware.astimezone(datetime.UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, bytes):
        return value.hex()
    return str(value)
