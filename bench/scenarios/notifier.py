"""``notifier``: notifications/s to a loopback webhook, and a fast channel's rate beside a slow one.

Baseline of the same run (``notifier_http_pipe``): the same number of the same JSON bodies POSTed
to the same receiver by a plain urllib3 pool with the same concurrency, no Kafka, no book: what
the receiver and the HTTP stack can take on this machine.

``notifier``: the real notifier process (``python -m services.notifier``) on a private mesh,
draining COUNT alerts that are already on the topic to one webhook channel. The rate is the
receiver's: its deliveries from the first to the last, which includes consuming, the changelog
and ``notifications`` writes and committing, as in production.

``notifier_fast_beside_slow``: the same, with every alert also routed to a second channel whose
receiver answers after SLOW_S (concurrency 2). The fast channel's rate must hold: the slow one
may only deliver what its concurrency allows, and must not slow the fast one down.
"""

from __future__ import annotations

import json
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import urllib3

from bench.result import Result
from control.cli.topics import apply_declared
from shared.settings import Settings
from shared.topic_names import TopicNames
from testkit.notifier_runs import NotifierProcess, alert, produce_alerts
from tools.webhook_receiver import WebhookReceiver

COUNT = 5_000
CONCURRENCY = 8
SLOW_S = 0.5

FAST = """
channels:
  fast: {type: webhook, url: RECEIVER/ok, timeout_s: 5, concurrency: CONCURRENCY}
rules:
  - channels: [fast]
"""
FAST_AND_SLOW = """
channels:
  fast: {type: webhook, url: RECEIVER/ok, timeout_s: 5, concurrency: CONCURRENCY}
  slow: {type: webhook, url: RECEIVER/slow/SLOW_S, timeout_s: 5, concurrency: 2}
rules:
  - channels: [fast, slow]
"""


def run_all(settings: Settings) -> list[Result]:
    baseline = _http_pipe()
    alone = _notifier_run(settings, FAST, "notifier")
    beside = _notifier_run(settings, FAST_AND_SLOW, "notifier_fast_beside_slow")
    alone.notes += f"; {alone.rate / baseline.rate:.2f} x the HTTP pipe"
    beside.notes += f"; {beside.rate / alone.rate:.2f} x the fast channel alone"
    return [baseline, alone, beside]


def _http_pipe() -> Result:
    bodies = [(f"p{i}", _body(alert(f"p{i}", customer=f"cust_{i}"))) for i in range(COUNT)]
    pool = urllib3.PoolManager(maxsize=CONCURRENCY, block=True, retries=False)
    with WebhookReceiver() as receiver, ThreadPoolExecutor(CONCURRENCY) as workers:
        url = receiver.url("/ok")

        def post(item: tuple[str, bytes]) -> int:
            key, body = item
            headers = {"Content-Type": "application/json", "Idempotency-Key": key}
            return int(pool.request("POST", url, body=body, headers=headers).status)

        started = time.perf_counter()
        statuses = list(workers.map(post, bodies))
        seconds = time.perf_counter() - started
    assert statuses.count(200) == COUNT, "the receiver refused some POSTs"
    return Result("notifier_http_pipe", COUNT, seconds,
                  notes=f"baseline: urllib3, {CONCURRENCY} threads, same bodies")  # fmt: skip


def _notifier_run(settings: Settings, rules_text: str, name: str) -> Result:
    with tempfile.TemporaryDirectory(prefix="mesh-bench-notifier-") as home:
        prefix = f"bench.notify.{uuid.uuid4().hex[:8]}."
        private = replace(settings, home=Path(home), topic_prefix=prefix)
        apply_declared(private)
        alerts = [alert(f"a{i}", customer=f"cust_{i}") for i in range(COUNT)]
        produce_alerts(private, TopicNames(prefix).alerts, list(alerts))
        env = {"MESH_BOOTSTRAP_SERVERS": settings.bootstrap_servers, "MESH_HOME": home,
               "MESH_TOPIC_PREFIX": prefix}  # fmt: skip
        with WebhookReceiver() as receiver:
            rules = Path(home) / "rules.yaml"
            rules.write_text(
                rules_text.replace("RECEIVER", f"http://127.0.0.1:{receiver.port}")
                .replace("CONCURRENCY", str(CONCURRENCY)).replace("SLOW_S", str(SLOW_S))
            )  # fmt: skip
            process = NotifierProcess(env, rules, Path(home) / "notifier.log",
                                      Path(home) / "status.json")  # fmt: skip
            try:
                deadline = time.monotonic() + 300
                while (done := len(receiver.received.delivered("/ok"))) < COUNT:
                    if time.monotonic() > deadline or process.process.poll() is not None:
                        log = process.log_text()[-2000:]
                        raise RuntimeError(f"{name}: {done} of {COUNT} delivered\n{log}")
                    time.sleep(0.2)
                fast = sorted(r.at_s for r in receiver.received.delivered("/ok").values())
                slow = len(receiver.received.delivered("/slow"))
            finally:
                process.stop()
    seconds = fast[-1] - fast[0]
    notes = "the real notifier process, alerts already on the topic, first to last delivery"
    if slow or "slow" in rules_text:
        notes += f"; the slow channel ({SLOW_S} s per answer, concurrency 2) delivered {slow}"
    return Result(name, COUNT, seconds, notes=notes)


def _body(record: dict) -> bytes:
    return json.dumps(record, sort_keys=True).encode()
