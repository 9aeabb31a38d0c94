"""The metrics aggregator: every instance's latest snapshots -> totals in InfluxDB and files.

A PySpark Structured Streaming job (docs/metrics.md). Modules, one concern each:
  snapshots     Snapshot: one instance's figures for one series; which fields each type has
  series_state  SeriesState: latest snapshot per instance, retired counts, staleness (table)
  totals        the scope=all figures of a series (cross-instance rules)
  series_step   one stateful call: merge, retire, emit total + instance rows
  series_table  a batch's snapshots -> series_step per series, timeouts, state kept in the driver
  series_store  the series' states by batch id (SQLite, next to the checkpoint): exact replays
  points        rows -> InfluxDB points (series and ingest windows)
  decode        Avro single-object decoding in the JVM, with the dead-letter reason
  series        transform: decoded snapshots -> flat columns (key, figures, position)
  windows       transform: metrics.windows -> latest count per window and outcome
  dead_letters  undecodable messages -> metrics.dlq with mesh.error.* headers
  checkpoint    a micro-batch's clock from Spark's offset log
  service       foreachBatch handlers, the one InfluxWriter, files, counters, status file
  status        counters and the status document ($MESH_HOME/metrics_aggregator/status.json)
  config        AggregatorConfig: topics, checkpoint, trigger, staleness
  job           the two streaming queries
  main          ``python -m services.metrics_aggregator``

Only the modules that need Spark import it; the logic (snapshots ... points) is plain Python,
and so is the per-series state: no Python worker runs (issue 20).

The aggregator's own figures (for the lead's registry, service ``metrics_aggregator``):
``AggregatorService.counters`` has batches, snapshots_in, dead_letters, window_counts_in,
series_points and window_points.
"""
