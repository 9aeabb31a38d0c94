"""The notifier: alerts become notifications to the people who act on them (issue 18, in
progress).

Done so far:

  rules   where each alert goes: the declarative routing file (channels, customer segments,
          rules), validated at start with the line and field of every mistake

Still to come (see the issue and docs/dev/issue-18-notes.md): the service itself (consume
``alerts``, deduplicate by ``alert_id`` with state that survives restarts and expires after a
TTL), the webhook and file channels (retries with backoff and jitter, idempotency key, circuit
breaker, dead letters), ``notifications`` records, traces, metrics and `mesh up`/`status`.
"""
