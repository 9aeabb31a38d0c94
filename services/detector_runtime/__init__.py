"""The detector runtime: one process per detector instance, on confluent-kafka.

Modules, one concern each:
  main            ``python -m services.detector_runtime``: arguments, signals, exit codes
  config          RuntimeConfig and the topic names (contract defaults, overridable)
  topology        start-up checks: inputs exist, co-partitioning, the changelog topic
  runner          the loop: batch consume, detect, produce, wait for acks, commit; partitions
                  held back while an output partition has no leader (the books and the
                  acknowledgement count are shared with the notifier: shared/kafka/parking.py,
                  shared/kafka/delivery_tracker.py)
  commits         committing a batch's offsets while the group may be rebalancing
  changelog       writing state changes and restoring a task by committed offset
  start_position  where a partition the group never committed starts (the manifest's start)
  input_identity  an input topic deleted and re-created under the same name
  error_policy    stop or go on when too many records fail
  counters        what the instance did (for logs and metrics)
  instrumentation the instance's metrics, and when they are reported
  record_tracing  spans for the records an instance processes
  status          the instance status file (`mesh status`)
  gc_tuning       the garbage collector's settings for a detector process
"""
