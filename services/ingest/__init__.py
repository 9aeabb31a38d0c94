"""Upstream ingest: a PySpark Structured Streaming job that validates, routes and counts records.

Modules, one concern each:
  rules          THE place where each record type's business rules are declared
  iso_codes      reference code lists (ISO 4217, ISO 3166-1)
  record_types   raw topic -> record type -> Avro schema, and typed field access to raw JSON
  validation     classify(): every raw row gets exactly one outcome (valid, or an error code)
  avro_columns   Avro single-object encoding as Spark columns (from the same .avsc files)
  tracing        W3C traceparent header for every routed record
  routing        valid -> records.<type>, invalid -> records.invalid (Kafka sink rows)
  windows        valid/invalid/late counts per 1 s event-time window -> metrics.windows
  config         IngestConfig: topics, limits, trigger, checkpoints (MESH_INGEST_* variables)
  session        the SparkSession with the cached connector jars
  job            main(): wires the Kafka source to the routing and counting queries
Only Spark column expressions run per record: no Python UDF on the hot path.
"""
