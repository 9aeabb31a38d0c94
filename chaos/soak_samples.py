"""What a soak reads every few minutes from its running mesh, each as a user or an operator could.

* **memory and CPU**: each process of the mesh's MESH_HOME by name (``kafka-2``, ``ingest``,
  ``detector-velocity-r1-0`` ...), its private memory (resident, without mapped files' pages:
  :class:`shared.process_usage.ProcessUsage`), its resident size and CPU time, each summed with
  its children's (a service's JVM and Python workers carry its tag:
  :func:`shared.local_process.tagged_pids`); for a process that is or runs a JVM, its live
  heap too (in use after a full collection the sample asks for: :mod:`chaos.jvm_heap`);
* **InfluxDB's series**: how many series the mesh's database holds (an unbounded tag, an
  instance id per restart, would add some every sample: what its memory then grows with);
* **lag**: each consumer group's committed offsets behind the ends of the partitions it has
  committed, and ingest's backlog (raw records acknowledged but not yet routed, by end offsets);
* **tail**: raw record -> alert p50 / p99 / max of the alerts of the interval, from their lineage
  headers (what `mesh status` reads for its last minute).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from chaos.jvm_heap import heap_mib
from shared.influx.errors import InfluxError
from shared.kafka.inspect import consumer_groups, group_lag, partition_watermarks
from shared.kafka.recent_latency import RecentLatency, recent_alert_latency
from shared.local_process import tagged_pids
from shared.process_usage import ProcessUsage, process_usage
from shared.topic_names import TopicNames
from testkit.influx_query import query

#: Groups that only look (`mesh status`'s latency reader, the inspections).
_LOOKING = ("mesh-latency-", "mesh-inspect")
#: Alerts an interval's tail is read from at most (5 minutes at 1 000 records/s make ~3 000).
ALERTS = 100_000
#: The record types the soak feeds (`mesh produce`'s).
_TYPES = ("transactions", "logins")


@dataclass(frozen=True)
class Sample:
    """The mesh at ``at_s`` seconds into the feed."""

    at_s: float
    #: process name -> private MiB (with its children): what a leak grows
    memory_mib: dict[str, float]
    #: process name -> resident MiB (with its children), mapped files' pages included
    resident_mib: dict[str, float]
    #: process name -> CPU seconds so far (with its living children)
    cpu_s: dict[str, float]
    #: consumer group -> records behind
    lag: dict[str, int]
    #: raw records acknowledged but not yet routed
    ingest_backlog: int
    tail: RecentLatency
    #: process name -> its JVMs' live heap, MiB (processes that run a JVM only)
    heap_mib: dict[str, float] = field(default_factory=dict)
    #: series in the mesh's InfluxDB database (None: not read)
    series: int | None = None


def take_sample(
    home: Path,
    bootstrap: str,
    names: TopicNames,
    started: float,
    interval_s: float,
    influx: tuple[str, str] | None = None,
) -> Sample:
    """The mesh now; ``influx`` is the (URL, database) the metrics aggregator writes to."""
    pids = tagged_pids(home)
    usage = usage_by_process(home, pids)
    return Sample(
        at_s=time.monotonic() - started,
        memory_mib={name: u.private_bytes / 2**20 for name, u in usage.items()},
        resident_mib={name: u.rss_bytes / 2**20 for name, u in usage.items()},
        cpu_s={name: u.cpu_s for name, u in usage.items()},
        lag=lag_by_group(bootstrap, names),
        ingest_backlog=ingest_backlog(bootstrap, names),
        tail=recent_alert_latency(bootstrap, names.alerts, window_s=interval_s, max_alerts=ALERTS),
        heap_mib=heap_by_process(pids),
        series=influx_series(*influx) if influx else None,
    )


def usage_by_process(
    home: Path, tagged: Mapping[str, list[int]] | None = None
) -> dict[str, ProcessUsage]:
    """What every process of ``home`` uses, its children's included (``tagged``: its processes'
    pids by name, when the caller has read them already)."""
    found = {}
    for name, pids in sorted((tagged if tagged is not None else tagged_pids(home)).items()):
        usages = [u for u in map(process_usage, pids) if u is not None]
        found[name] = ProcessUsage(
            cpu_s=sum(u.cpu_s for u in usages),
            rss_bytes=sum(u.rss_bytes for u in usages),
            private_bytes=sum(u.private_bytes for u in usages),
        )
    return found


def heap_by_process(tagged: Mapping[str, list[int]]) -> dict[str, float]:
    """The live heap, MiB, of every process of ``tagged`` (pids by name) that is or runs a
    JVM."""
    found = {}
    for name, pids in sorted(tagged.items()):
        heap = heap_mib(pids)
        if heap is not None:
            found[name] = heap
    return found


def influx_series(url: str, database: str) -> int | None:
    """Series in ``database`` (InfluxDB's exact count, summed over its measurements); None
    when InfluxDB does not answer."""
    try:
        rows = query(url, database, "SHOW SERIES EXACT CARDINALITY")
    except InfluxError:
        return None
    return sum(int(row.get("count") or 0) for row in rows)


def memory_by_process(home: Path) -> dict[str, float]:
    """Private MiB of every process of ``home``, its children's included."""
    return {name: u.private_bytes / 2**20 for name, u in usage_by_process(home).items()}


def lag_by_group(bootstrap: str, names: TopicNames) -> dict[str, int]:
    """Each working group of the mesh's prefix: its lag over the partitions it committed (a
    detector reads one type: the other type's partitions, never committed, are not its lag)."""
    topics = [*_routed(names), names.alerts, names.metrics]
    lags = {}
    for group in consumer_groups(bootstrap):
        if not group.startswith(names.prefix) or group.startswith(_LOOKING):
            continue
        lag = group_lag(bootstrap, group, topics)
        lags[group] = sum(n for key, n in lag.partitions.items() if lag.committed[key] is not None)
    return lags


def ingest_backlog(bootstrap: str, names: TopicNames) -> int:
    """Raw records in the raw topics beyond what was routed (valid or dead-lettered)."""
    raw, routed = [names.raw(t) for t in _TYPES], _routed(names)
    ends = partition_watermarks(bootstrap, [*raw, *routed])
    written = {topic: sum(high for _, high in p.values()) for topic, p in ends.items()}
    return sum(written.get(t, 0) for t in raw) - sum(written.get(t, 0) for t in routed)


def _routed(names: TopicNames) -> list[str]:
    return [*(names.records(t) for t in _TYPES), names.invalid]
