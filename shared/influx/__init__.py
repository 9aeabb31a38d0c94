"""InfluxDB 1.x: where the mesh's metrics end up (docs/metrics.md).

Modules, one concern each:
  line_protocol  Point and its line-protocol text (escaping, what InfluxDB would reject)
  writer         InfluxWriter: batched, bounded, retried HTTP writes (re-exports files')
  files          LineProtocolFiles: the same lines appended to $dir/metrics-<UTC date>.lp
  transport      the one urllib call: HTTP status as a value, no proxy for loopback
  errors         InfluxError, InfluxQueryError

Only the pure encoding is imported here; the rest is imported from its module.
"""

from shared.influx.line_protocol import Point, encode_point, encode_points

__all__ = ["Point", "encode_point", "encode_points"]
