"""``make bench``: named scenarios measured against a baseline measured in the same run.

Every scenario reports records, records/s and, where it means something, end-to-end latency
percentiles. The raw confluent-kafka consume→produce pipe runs first; every other scenario's rate
is printed as a ratio to it, so figures from different machines or runs compare by ratio.
Timing thresholds live here, in the output, never in tests.
"""
