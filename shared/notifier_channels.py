"""The channels a notifier's rules file can send alerts to, declared once.

The routing file (``infra/notifier/rules.yaml``, :mod:`services.notifier.rules`) names channels by
type; the fields below are the settings each type takes, with their defaults and limits, so the
notifier's parser and ``mesh settings --rules`` read the same declaration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

#: A channel field the file does not set (the channel's name is its key in ``channels``).
_NOT_READ = {"variable": False}


@dataclass(frozen=True)
class WebhookChannel:
    """HTTP POST of the alert as JSON, with an idempotency key, retried with backoff."""

    name: str = field(metadata=_NOT_READ)
    #: Where to POST: an http(s) URL with a host.
    url: str
    #: Seconds one POST may take before it counts as failed (and is retried).
    timeout_s: float = field(default=5.0, metadata={"minimum": 0.001})
    #: POSTs of one notification before it becomes a dead letter.
    max_attempts: int = field(default=5, metadata={"minimum": 1})
    #: Seconds before the first retry; each next one waits twice as long.
    backoff_initial_s: float = field(default=0.5, metadata={"minimum": 0.0})
    #: The longest wait between two retries, in seconds.
    backoff_max_s: float = field(default=30.0, metadata={"minimum": 0.0})
    #: Deliveries in flight at once: a slow receiver holds back only its own channel.
    concurrency: int = field(default=4, metadata={"minimum": 1})
    #: HTTP headers sent with every POST (an Authorization header, say).
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class FileChannel:
    """One JSON line per notification appended to a file (relative paths: under MESH_HOME)."""

    name: str = field(metadata=_NOT_READ)
    #: The file (relative: under MESH_HOME).
    path: str
    #: A full or read-only disk may clear up: retried like a webhook, then a dead letter.
    max_attempts: int = field(default=5, metadata=_NOT_READ)
    backoff_initial_s: float = field(default=0.5, metadata=_NOT_READ)
    backoff_max_s: float = field(default=30.0, metadata=_NOT_READ)
    #: One writer: lines are appended whole and in order.
    concurrency: int = field(default=1, metadata=_NOT_READ)


Channel = WebhookChannel | FileChannel
