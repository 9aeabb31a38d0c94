"""Errors of the InfluxDB package: what went wrong and what to do about it."""

from __future__ import annotations

from shared.errors import MeshError


class InfluxError(MeshError):
    """InfluxDB could not be reached, started, installed or asked."""


class InfluxQueryError(InfluxError):
    """InfluxDB answered a query with an error message (bad InfluxQL, unknown database...)."""
