"""Routing first: the job's task slots go to the real-time routing query before the others.

Every checkpoint interval the real-time routing batch ends, and the next one needs a slot for each
of its long-running tasks at once. With Spark's default FIFO scheduling the window-count and
span-export micro-batches, whose jobs were submitted earlier, take the slots freed by that
hand-over first, and routing's new tasks wait behind them: records wait in Kafka meanwhile.

So the job runs Spark's FAIR scheduler with one pool for routing whose minimum share is its
task count: a pool below its minimum share is served first, so routing's tasks start as soon as
slots free up. The scheduler never takes a running task's slot back, though, so the side queries
(in the default pool) also read with few tasks and get slots of their own
(trigger_mode.side_slots): they never hold routing's when it comes back.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

#: The scheduler pool of the routing query.
ROUTING_POOL = "routing"
#: Its weight against the default pool once both have their minimum share.
ROUTING_WEIGHT = 10


def allocation_file(folder: Path, routing_tasks: int) -> Path:
    """Write the FAIR scheduler's pool definitions for ``routing_tasks`` long-running tasks."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "fair-scheduler.xml"
    path.write_text(
        '<?xml version="1.0"?>\n<allocations>\n'
        f'  <pool name="{ROUTING_POOL}">\n'
        "    <schedulingMode>FIFO</schedulingMode>\n"
        f"    <weight>{ROUTING_WEIGHT}</weight>\n"
        f"    <minShare>{max(routing_tasks, 1)}</minShare>\n"
        "  </pool>\n</allocations>\n"
    )
    return path


def scheduler_options(folder: Path, routing_tasks: int) -> dict[str, str]:
    """The session options that turn the FAIR scheduler and the routing pool on."""
    return {
        "spark.scheduler.mode": "FAIR",
        "spark.scheduler.allocation.file": str(allocation_file(folder, routing_tasks)),
    }


def in_routing_pool(spark: SparkSession) -> None:
    """Jobs started from this thread from now on (a streaming query started here keeps it for
    all its batches) run in the routing pool."""
    spark.sparkContext.setLocalProperty("spark.scheduler.pool", ROUTING_POOL)


def in_default_pool(spark: SparkSession) -> None:
    """Back to the default pool for the queries started after routing."""
    spark.sparkContext.setLocalProperty("spark.scheduler.pool", None)  # type: ignore[arg-type]
