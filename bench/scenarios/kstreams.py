"""Kafka Streams next to the runtime: the detectors' rules on the detectors' own feed.

Each runner drains the same transactions topic the ``detector_*`` rows drain, in the same run,
with the Kafka Streams peer (bench/kstreams_peer.py): one JVM, one stream thread, records/s from
its first record until it has closed (flushed and committed), as the runtime's rows count theirs.
``kstreams_large_amount`` is ``detector_large_amount``'s peer (the same rule, so the same alert
count); ``kstreams_hopping`` counts ``detector_velocity``'s windows; ``kstreams_tumbling`` is the
cheapest windowed count Kafka Streams has, as ``faust_tumbling`` is faust's.
"""

from __future__ import annotations

from bench.kafka_fixture import create_topic
from bench.kstreams_peer import run
from bench.result import Result
from bench.scenarios.detectors import PARTITIONS, feed
from shared.settings import Settings

#: Result name -> (peer mode, what the row measures).
ROWS = {
    "kstreams_large_amount": ("large_amount", "stateless large_amount rule"),
    "kstreams_tumbling": ("tumbling_count", "tumbling 60 s count in RocksDB, no record cache"),
    "kstreams_hopping": ("hopping_count", "hopping 60 s/5 s count in RocksDB, no record cache"),
}


def run_row(settings: Settings, name: str) -> Result:
    """One row: the peer in ``ROWS[name]``'s mode over the feed's transactions."""
    mode, what = ROWS[name]
    data = feed(settings)
    sink = create_topic(settings, f"kstreams-{mode}-alerts", PARTITIONS)
    figures = run(settings, mode, data.topics["transactions"], sink, data.counts["transactions"])
    # Up to its close, like the runtime's rows: until then its last alerts and offsets are not
    # committed (its default commit interval is 30 s, so a run commits once, at the close).
    closed = figures["seconds"] + figures.get("close_seconds", 0.0)
    return Result(
        name,
        figures["records"],
        closed,
        notes=(
            f"Kafka Streams {figures.get('version', '?')}, 1 stream thread, {what}, "
            f"{figures['alerts']} alerts, peak RSS {figures['rss_mb']:.0f} MB"
        ),
        extra={
            "alerts": figures["alerts"],
            "rss_mb": figures["rss_mb"],
            "close_s": figures.get("close_seconds", 0.0),
        },
    )


def run_large_amount(settings: Settings) -> Result:
    return run_row(settings, "kstreams_large_amount")


def run_tumbling(settings: Settings) -> Result:
    return run_row(settings, "kstreams_tumbling")


def run_hopping(settings: Settings) -> Result:
    return run_row(settings, "kstreams_hopping")


#: What to register in bench/scenarios/__init__.py (name -> runner), in run order.
SCENARIOS = {
    "kstreams_large_amount": run_large_amount,
    "kstreams_tumbling": run_tumbling,
    "kstreams_hopping": run_hopping,
}
