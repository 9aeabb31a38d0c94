"""The history: every validated record and every alert, kept as Delta tables for backtests.

A downstream Spark job (issue 31). One streaming query reads every ``records.<type>`` topic and
``alerts``, decodes each message in the JVM (:mod:`shared.spark_avro`), and appends it to the
table of its type under the history's location, partitioned by event date (UTC), with its Kafka
coordinates. Exactly once: each micro-batch's appends are idempotent Delta transactions keyed by
the query's batch id (a batch Spark runs again after a crash writes nothing twice), and a query
started without its checkpoint resumes from the offsets the tables already hold instead of
from the topics' start.

Modules: ``tables`` (which topic goes to which table), ``rows`` (a history row),
``writer`` (one micro-batch), ``resume`` (starting offsets from the tables), ``query`` (the
streaming query).
"""
