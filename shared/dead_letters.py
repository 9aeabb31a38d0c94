"""Dead letters: the original bytes of a record a service could not process, with the reason.

The headers follow the contract (``mesh.error.*``, in the spirit of Kafka Connect's
``__connect.errors.*``): stage, exception class, message, source topic/partition/offset, instance
id, timestamp. The message is cut to a bounded length; the record's values are never quoted in it
by the runtime (Avro decode errors name fields, not values).
"""

from __future__ import annotations

import time
from typing import Any

MAX_MESSAGE_CHARS = 1000

#: Stages a record can fail in.
DECODE, DETECT, ENCODE_ALERT, DELIVER = "decode", "detect", "encode_alert", "deliver"


def error_class(exc: BaseException) -> str:
    cls = type(exc)
    return cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def dead_letter_headers(
    *,
    stage: str,
    exc: BaseException,
    topic: str,
    partition: int,
    offset: int,
    instance_id: str,
    detector: str,
    attempts: int = 1,
    carried: list[tuple[str, Any]] | None = None,
    now_ms: int | None = None,
) -> list[tuple[str, bytes]]:
    """The headers of one dead letter; ``carried`` are the input's trace headers."""
    message = str(exc) or type(exc).__name__
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS - 3] + "..."
    headers = [
        ("mesh.error.stage", stage),
        ("mesh.error.class", error_class(exc)),
        ("mesh.error.message", message),
        ("mesh.error.source.topic", topic),
        ("mesh.error.source.partition", str(partition)),
        ("mesh.error.source.offset", str(offset)),
        ("mesh.error.instance.id", instance_id),
        ("mesh.error.detector", detector),
        ("mesh.error.attempts", str(attempts)),
        ("mesh.error.timestamp", str(now_ms if now_ms is not None else int(time.time() * 1000))),
    ]
    encoded = [(k, v.encode()) for k, v in headers]
    for key, value in carried or ():
        encoded.append((key, value if isinstance(value, bytes) else str(value).encode()))
    return encoded
