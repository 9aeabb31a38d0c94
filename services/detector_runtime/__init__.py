"""The detector runtime: one process per detector instance, on confluent-kafka.

Modules, one concern each:
  main          ``python -m services.detector_runtime``: arguments, signals, exit codes
  config        RuntimeConfig and the topic names (contract defaults, overridable)
  topology      start-up checks: inputs exist, co-partitioning, the changelog topic
  runner        the loop: batch consume, detect, produce, wait for acks, commit
  changelog     writing state changes and restoring a task by committed offset
  delivery      counting broker acknowledgements before a commit
  error_policy  stop or go on when too many records fail
  counters      what the instance did (for logs and metrics)
"""
