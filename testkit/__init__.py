"""Test support that production code never imports (`make lint` checks it): realistic Avro
examples, consumer-group generation probes, InfluxDB queries, a Spark standalone cluster, and
detector runtime processes fed with generated records, a supervised service SIGKILLed as a
machine's death would (service_kill). Used by tests/, bench/ and chaos/."""
