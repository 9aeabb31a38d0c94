"""The notifier: alerts become notifications to the people who act on them (docs/notifier.md).

Modules, one concern each:
  main          ``python -m services.notifier``: arguments, the topics' checks, signals, exit codes
  service       the loop: take alerts, offer due deliveries, record what the attempts gave
  rules         where each alert goes: the declarative routing file (channels, customer segments,
                rules), validated at start with the line and field of every mistake
  book          the delivery book of one alerts partition: once per (alert, channel), retries
                due, dead letters, a TTL, and the changelog records that rebuild it
  restore       the books of newly assigned partitions, rebuilt from the changelog
  holding       alerts partitions held back while a partition they write to has no leader
  outputs       notifications, the changelog and dead letters, through one idempotent producer
  channels      the routing file's channels made real, and the one rule for retries
  webhook       one delivery attempt as one HTTP POST with an idempotency key
  file_channel  one JSON line per notification
  breaker       the circuit breaker of a channel
  dispatch      attempts in flight: a bounded worker pool per channel behind its breaker
  outcome       what one attempt gave
  records       the Notification record of a delivery, and the webhook's JSON body
  figures       its metrics and its status file
  config        MESH_NOTIFIER_* (rules file, dedup TTL, breaker, poll interval)
"""
