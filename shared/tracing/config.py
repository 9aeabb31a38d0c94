"""Tracing configuration, read from the environment.

Export is on when an OTLP endpoint is configured: ``MESH_OTLP_ENDPOINT``, or the standard
``OTEL_EXPORTER_OTLP_ENDPOINT`` (:attr:`shared.settings.Settings.otlp_endpoint` reads both). The
endpoint speaks **OTLP/HTTP with protobuf bodies** (a collector's or Jaeger's port 4318, not the
gRPC port 4317). As the OTLP specification says for ``OTEL_EXPORTER_OTLP_ENDPOINT``, it is a base
URL and spans are posted to ``<endpoint>/v1/traces``; an endpoint that already ends with
``/v1/traces`` is used as it is. ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is not read.

The other settings, each with a default:

  ``MESH_TRACE_SAMPLE_RATIO``      fraction of new traces recorded, 0..1 (default 0.01); a record
                                   whose context says "sampled" is always recorded (parent-based)
  ``MESH_TRACE_EXPORT_TIMEOUT_S``  seconds one export call may take, retries included (default 2)
  ``MESH_TRACE_QUEUE_SIZE``        finished spans waiting for export; more are dropped and
                                   counted (default 2048)
  ``MESH_TRACE_SCHEDULE_DELAY_S``  seconds between two exports of a part-filled batch (default 1)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from shared.errors import ConfigError
from shared.settings import Settings

TRACES_PATH = "/v1/traces"

T = TypeVar("T", int, float)


@dataclass(frozen=True)
class TracingConfig:
    """Where and how much to trace; ``endpoint == ""`` means tracing is off (nothing exported)."""

    #: OTLP/HTTP endpoint as configured (base URL or full ``.../v1/traces`` URL); "" = off.
    #: Not a MESH_TRACE_ variable: it is MESH_OTLP_ENDPOINT (Settings.otlp_endpoint).
    endpoint: str = field(default="", metadata={"variable": False})
    #: Fraction of new (parentless) traces that are recorded.
    sample_ratio: float = 0.01
    #: Upper bound of one export call, retries and their back-off included.
    export_timeout_s: float = 2.0
    #: Finished spans that may wait for export; further spans are dropped and counted.
    queue_size: int = 2048
    #: Spans per export request (at most ``queue_size``; not a setting).
    max_export_batch_size: int = field(default=512, metadata={"variable": False})
    #: Seconds between exports when fewer than a batch of spans are waiting.
    schedule_delay_s: float = 1.0

    @property
    def enabled(self) -> bool:
        return bool(self.endpoint)

    @property
    def traces_url(self) -> str:
        """The URL spans are posted to: the endpoint plus ``/v1/traces`` unless already there."""
        return traces_url(self.endpoint)

    @classmethod
    def from_env(
        cls, settings: Settings | None = None, env: Mapping[str, str] | None = None
    ) -> TracingConfig:
        """Read the configuration; a bad value raises ConfigError naming the variable.

        Without ``env``, the ``MESH_TRACE_*`` variables come from the snapshot ``settings`` was
        read from (the process environment is read once, by :class:`Settings`)."""
        settings = Settings.from_env(env) if settings is None else settings
        env = settings.environment if env is None else env
        endpoint = settings.otlp_endpoint.strip()
        if endpoint and not endpoint.startswith(("http://", "https://")):
            name = next(
                (n for n in ("MESH_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT") if env.get(n)),
                "the OTLP endpoint",
            )
            raise ConfigError(
                f"{name}={endpoint!r} is not an http(s) URL; set it to the OTLP/HTTP endpoint, "
                "e.g. http://127.0.0.1:4318"
            )
        ratio = _read(
            env, "MESH_TRACE_SAMPLE_RATIO", cls.sample_ratio, float,
            lambda v: 0.0 <= v <= 1.0, "a number from 0 to 1, e.g. 0.01 for 1 %",
        )  # fmt: skip
        timeout = _read(
            env, "MESH_TRACE_EXPORT_TIMEOUT_S", cls.export_timeout_s, float,
            lambda v: 0.0 < v <= 600.0, "a number of seconds above 0, e.g. 2",
        )  # fmt: skip
        queue = _read(
            env, "MESH_TRACE_QUEUE_SIZE", cls.queue_size, int,
            lambda v: v >= 1, "a whole number of spans, at least 1, e.g. 2048",
        )  # fmt: skip
        delay = _read(
            env, "MESH_TRACE_SCHEDULE_DELAY_S", cls.schedule_delay_s, float,
            lambda v: 0.0 < v <= 3600.0, "a number of seconds above 0, e.g. 1",
        )  # fmt: skip
        return cls(
            endpoint=endpoint,
            sample_ratio=ratio,
            export_timeout_s=timeout,
            queue_size=queue,
            max_export_batch_size=min(cls.max_export_batch_size, queue),
            schedule_delay_s=delay,
        )


def traces_url(endpoint: str) -> str:
    """``http://h:4318`` -> ``http://h:4318/v1/traces``; ``.../v1/traces`` stays as it is."""
    base = endpoint.strip().rstrip("/")
    return base if base.endswith(TRACES_PATH) else base + TRACES_PATH


def _read(
    env: Mapping[str, str],
    name: str,
    default: T,
    kind: Callable[[str], T],
    valid: Callable[[T], bool],
    hint: str,
) -> T:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        value = None
    if value is None or (isinstance(value, float) and not math.isfinite(value)) or not valid(value):
        raise ConfigError(f"{name}={raw!r} is not usable; set it to {hint}")
    return value
