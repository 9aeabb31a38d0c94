"""Upstream ingest: a PySpark Structured Streaming job that validates, routes and counts records.

Modules, one concern each:
  rules          THE place where each record type's business rules are declared
  iso_codes      reference code lists (ISO 4217, ISO 3166-1)
  record_types   raw topic -> record type -> Avro schema
  typed_fields   each field read once: typed from_json where certain, the VARIANT where not
  validation     classify(): every raw row gets exactly one outcome (valid, or an error code)
  avro_columns   Avro single-object encoding as Spark columns (from the same .avsc files)
  tracing        W3C trace context for every routed record, worked out once per record
  routing        valid -> records.<type>, invalid -> records.invalid (Kafka sink rows)
  windows        valid/invalid/late counts per 1 s event-time window -> metrics.windows
  config         IngestConfig: topics, limits, trigger, checkpoints (MESH_INGEST_* variables)
  inputs         the raw source and its classification, worked out once for every query
  trigger_mode   real-time or micro-batch routing, the task slots it needs, the auto master
  data_loss      raw records retention removed before the job read them: found at start,
                 reported or refused (MESH_INGEST_ON_DATA_LOSS)
  checkpoint_repair  what a kill mid-write leaves in the checkpoints, cleared at start
  keeping        the queries started under a keeper (a query stopped for want of a leader
                 waits: shared/spark_query_keeper.py) and routing's handovers
  routing_handover   routing moved to a fresh checkpoint without (or again with) raw partitions
                 that lost their leader, each from exactly where it stood
  routing_degrade    when to hand over: a raw partition 15 s without a leader, or back
  handover_marks     what a handover's stopped batch may route twice, for the checks
  job            main(): wires the Kafka source to the routing and counting queries, watches
                 them, stops real-time routing at a checkpoint
Only Spark column expressions run per record: no Python UDF on the
hot path.
"""
