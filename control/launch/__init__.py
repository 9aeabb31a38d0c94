"""How `mesh up` starts the two Spark jobs (ingest, the metrics aggregator) as supervised local
processes, with this mesh's Kafka, home, topic prefix and trace backend in their environment."""
