"""Which topic goes to which history table, decoded with which schema.

A table per record type (``transactions``, ``logins``: the detectors' inputs) and one for
``alerts``; a message that does not decode lands in ``_rejected`` with its bytes and the reason,
so nothing read is ever dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.detector.declaration import INPUT_TYPES
from shared.topic_names import TopicNames

#: Messages of any topic that do not decode as their schema: raw bytes, coordinates, reason.
REJECTED = "_rejected"


@dataclass(frozen=True)
class HistoryTable:
    """One table of the history: its name (a folder under the location), topic and schema."""

    name: str
    topic: str
    schema: str


def history_tables(names: TopicNames) -> list[HistoryTable]:
    """Every record type's table, then the alerts'."""
    tables = [
        HistoryTable(kind, names.records(kind), schema) for kind, schema in INPUT_TYPES.items()
    ]
    return [*tables, HistoryTable("alerts", names.alerts, "alert")]


def table_path(location: str, table: str) -> str:
    """A table's folder: ``<location>/<table>`` (any Hadoop path; ``file://`` here)."""
    return f"{location.rstrip('/')}/{table}"
