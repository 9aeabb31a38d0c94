"""Known faults of the pinned Spark that the Spark jobs step around, each with how it is recognised.

SPARK-55271 / SPARK-57438 (Spark 4.1.1; fixed in later releases, which Maven Central does not
serve here, see docs/ingest.md): after a restart, a micro-batch query whose first batch replays
one that was planned but not committed reports its Kafka source metrics before the source knows
the latest offsets, and dies with a ``NullPointerException`` in ``KafkaMicroBatchStream.metrics``
*after* the replayed batch was written and committed. Started again, the query goes on from the
next batch; the ingest job and the metrics aggregator do that in place instead of a restart of
the whole process (chaos case 11 met it in the aggregator: a SIGKILL between its InfluxDB write
and its commit made the replay hit it, and the process exited once more).
"""

from __future__ import annotations

#: How many times in a row one query is started again after the fault before the job gives up
#: (and its supervisor restarts the process).
REPLAY_METRICS_RETRIES = 3


def is_replay_metrics_fault(error: BaseException | None) -> bool:
    """True for SPARK-55271's NullPointerException in the Kafka source's progress metrics."""
    text = _texts(error)
    return "KafkaMicroBatchStream" in text and "scala.Option.get()" in text


def _texts(error: BaseException | None, depth: int = 5) -> str:
    """The message and JVM stack of ``error`` and of its causes (pyspark keeps them on its
    captured exceptions as ``_desc``, ``_stackTrace`` and ``_cause``)."""
    parts: list[str] = []
    while error is not None and depth > 0:
        parts += [
            str(getattr(error, "_desc", "") or error),
            getattr(error, "_stackTrace", "") or "",
        ]
        error, depth = getattr(error, "_cause", None), depth - 1
    return "\n".join(parts)
