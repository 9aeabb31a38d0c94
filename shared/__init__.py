"""Detector Mesh's own library: the contracts every process shares. It imports nothing outside
itself (`make lint` checks it).

Sub-packages, one concern each:
  settings      typed configuration from ``MESH_*`` environment variables
  errors        the project's base exception
  avro          Avro contracts: schema catalogue, single-object encoding, serde, compatibility
  kafka         client configuration, topic declarations and their application, inspection
  endpoints     where Kafka, the trace backend and InfluxDB are (setting, else the local one)
  service_files what a service keeps under $MESH_HOME for the control plane to read
  detector      the detector SDK; metrics, tracing, influx: what every service reports with
Heavy optional dependencies (pyspark, docker, OpenTelemetry exporters) are imported only by the
modules that need them.
"""
