"""Detector Mesh's own library: the contracts every service shares.

Sub-packages, one concern each:
  settings      typed configuration from ``MESH_*`` environment variables
  errors        the project's base exception
  avro          Avro contracts: schema catalogue, single-object encoding, serde, compatibility
  kafka         broker process, client configuration, topic declarations and their application
  cli           the ``mesh`` command line
Heavy optional dependencies (pyspark, docker, OpenTelemetry exporters) are imported only by the
modules that need them.
"""
