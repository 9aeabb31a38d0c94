"""The local servers `mesh up` starts on loopback: the Kafka broker (KRaft), InfluxDB and the
Jaeger trace backend, and the installers that put InfluxDB and Jaeger on the machine. Where a
running one listens is published for the services through :mod:`shared.endpoints`."""
