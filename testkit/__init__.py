"""Test support that production code never imports (`make lint` checks it): realistic Avro
examples, consumer-group generation probes, InfluxDB queries, a Spark standalone cluster, and
detector runtime processes fed with generated records. Used by tests/ and bench/."""
