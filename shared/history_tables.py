"""The history's layout: which topic goes to which table, and the columns every row carries.

A table per record type (``transactions``, ``logins``: the detectors' inputs) and one for
``alerts``; a message that does not decode lands in ``_rejected`` with its bytes and the reason,
so nothing read is ever dropped. The history service writes this layout and the backtest reads
it, so it lives here, between them.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.detector.declaration import INPUT_TYPES
from shared.topic_names import TopicNames

#: The Kafka coordinates every history row carries (rejected rows too): a row's identity, the
#: order a backtest replays a partition in, where a job without its checkpoint resumes.
COORDINATES = ["kafka_topic", "kafka_partition", "kafka_offset", "kafka_timestamp"]
#: The partition column: the event time's UTC date (the session's time zone is UTC).
EVENT_DATE = "event_date"
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
