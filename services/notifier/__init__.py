"""The notifier: alerts become notifications to the people who act on them (issue 18, in
progress).

Done so far:

  rules   where each alert goes: the declarative routing file (channels, customer segments,
          rules), validated at start with the line and field of every mistake
  book    the delivery book of one alerts partition: once per (alert, channel), retries due,
          dead letters, a TTL, and the changelog records that rebuild it after a restart
  webhook one delivery attempt as one HTTP POST (urllib3) with an idempotency key, and the
          retry schedule (exponential, capped, jittered, at least Retry-After)
  file_channel  one JSON line per notification
  breaker the circuit breaker of a channel
  dispatch      attempts in flight: a bounded worker pool per channel behind its breaker
  outcome what one attempt gave
  records the Notification record of a delivery, and the webhook's JSON body
  config  MESH_NOTIFIER_* (rules file, dedup TTL, breaker, poll interval)

Still to come (see the issue and docs/dev/issue-18-notes.md): the service itself (consume
``alerts``, keep a book per partition in a changelog, restore it on assignment, the loop that
offers due deliveries to the dispatcher), dead letters, ``notifications`` records, traces,
metrics and `mesh up`/`status`.
"""
