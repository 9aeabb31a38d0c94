"""The reliability suite (`make chaos`, docs/reliability.md): faults injected into a running mesh,
one case at a time, each checked like Kafka's own streams system tests check theirs.

A case feeds records whose ids carry a key and a per-key sequence (:mod:`chaos.smoke`), injects
its fault while they flow, and counts at the output what was lost (acknowledged by the broker,
never seen), duplicated and reordered, and how long the mesh took to recover. Every case also
checks that its fault happened mid-run, and, across every case, that no group's committed offset
ever went backwards (:mod:`chaos.offsets`).
"""
