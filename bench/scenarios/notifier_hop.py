"""``notifier_hop``: the notifier's hop, an alert written -> its webhook request, in ms.

Issue 49 asks for a median of at most 20 ms (it was ~130 ms: the notifier asked the consumer for a
batch of 500 with a 0.2 s timeout, and librdkafka holds a lone alert for the whole timeout:
:mod:`shared.kafka.batches`). Measured at the rate alerts come in production, a trickle: RATE
alerts a second for SECONDS, each produced alone (as a detector's batch of one) and timed from
the produce call to the receiver taking the request, so the hop includes writing the alert.

Baseline of the same run (``notifier_hop_pipe``): the same alerts, same pacing, same receiver, read
by a plain confluent-kafka consumer (``poll`` one message at a time) and POSTed by urllib3 at
once: what Kafka and HTTP cost on this machine with no book, no changelog and no commit per alert.
``notifier_hop`` is the real notifier process (``python -m services.notifier``) on a private
mesh with one webhook channel, as ``mesh up`` runs it. Both take one warm-up alert first, so the
figures are the steady state, not the first connection.
"""

from __future__ import annotations

import json
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import urllib3
from confluent_kafka import Consumer, Producer

from bench.result import Result, percentile
from control.cli.topics import apply_declared
from shared.avro import AvroDeserializer, AvroSerializer
from shared.kafka.config import consumer_config, producer_config
from shared.settings import Settings
from shared.topic_names import TopicNames
from testkit.notifier_runs import NotifierProcess, alert
from tools.webhook_receiver import WebhookReceiver

#: Alerts a second, and for how long: a trickle, as alerts are (1 % of 1 000 records/s is 10).
RATE = 20.0
SECONDS = 30.0
#: The longest a run waits for its last delivery after the feed.
DRAIN_S = 60.0

RULES = """
channels:
  team: {type: webhook, url: RECEIVER/ok, timeout_s: 5, concurrency: 8}
rules:
  - channels: [team]
"""


def run_all(settings: Settings) -> list[Result]:
    pipe = _run(settings, "notifier_hop_pipe", _plain_pipe)
    notifier = _run(settings, "notifier_hop", _notifier_process)
    if pipe.latency_p50_ms and notifier.latency_p50_ms is not None:
        times = notifier.latency_p50_ms / pipe.latency_p50_ms
        notifier.notes += f"; median {times:.1f} x the pipe's"
    return [pipe, notifier]


@dataclass
class Running:
    """A started reader: how to stop it, and what it logged (for a run that went wrong)."""

    stop: Callable[[], None]
    log: Callable[[], str] = lambda: ""


#: Starts a reader of ``topic`` that POSTs each alert to ``url``.
Reader = Callable[[Settings, str, str, Path], Running]


def _run(settings: Settings, name: str, reader: Reader) -> Result:
    with tempfile.TemporaryDirectory(prefix="mesh-bench-hop-") as home:
        prefix = f"bench.hop.{uuid.uuid4().hex[:8]}."
        private = replace(settings, home=Path(home), topic_prefix=prefix)
        apply_declared(private)
        topic = TopicNames(prefix).alerts
        with WebhookReceiver() as receiver:
            running = reader(private, topic, f"http://127.0.0.1:{receiver.port}", Path(home))
            try:
                sent = _paced_alerts(private, topic, receiver)
            except RuntimeError as exc:
                raise RuntimeError(f"{name}: {exc}\n{running.log()[-2000:]}") from exc
            finally:
                running.stop()
            delivered = receiver.received.delivered("/ok")
    hops = [(delivered[key].at_s - at) * 1000 for key, at in sent.items() if key in delivered]
    missing = len(sent) - len(hops)
    notes = (f"{RATE:g} alerts/s for {SECONDS:g} s, each alone, produce -> webhook request; "
             f"max {max(hops):.1f} ms" if hops else "nothing delivered")  # fmt: skip
    if missing:
        notes += f"; {missing} never delivered"
    return Result(name, len(hops), SECONDS, percentile(hops, 50), percentile(hops, 99),
                  notes=notes, extra={"max_ms": max(hops, default=0.0)}, paced=True)  # fmt: skip


def _paced_alerts(settings: Settings, topic: str, receiver: WebhookReceiver) -> dict[str, float]:
    """One warm-up alert, delivered; then RATE a second for SECONDS, each flushed alone; when
    each was produced (wall clock, as the receiver stamps arrivals), once the last is in."""
    encode = AvroSerializer("alert").encode
    producer = Producer({**producer_config(settings), "linger.ms": 0})

    def send(key: str) -> float:
        record = alert(key, customer=f"cust_{key}")
        at = time.time()
        producer.produce(topic, encode(record), record["customer_id"].encode())
        producer.flush(10)
        return at

    send("warm-up")
    _wait_for(lambda: "warm-up" in receiver.received.delivered("/ok"), DRAIN_S, "the warm-up")
    sent: dict[str, float] = {}
    start = time.monotonic()
    for i in range(int(RATE * SECONDS)):
        time.sleep(max(start + i / RATE - time.monotonic(), 0.0))
        sent[f"hop-{i}"] = send(f"hop-{i}")
    _wait_for(lambda: set(sent) <= set(receiver.received.delivered("/ok")), DRAIN_S, None)
    return sent


def _wait_for(done: Callable[[], bool], timeout_s: float, what: str | None) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            if what is not None:
                raise RuntimeError(f"{what} was not delivered in {timeout_s:g} s")
            return  # the figures say how many never came
        time.sleep(0.01)


def _plain_pipe(settings: Settings, topic: str, url: str, home: Path) -> Running:
    consumer = Consumer(consumer_config(settings, f"bench-hop-pipe-{uuid.uuid4().hex[:8]}"))
    consumer.subscribe([topic])
    pool = urllib3.PoolManager(maxsize=8, retries=False)
    decode = AvroDeserializer("alert").decode
    stopping = threading.Event()

    def loop() -> None:
        while not stopping.is_set():
            message = consumer.poll(0.2)
            if message is None or message.error() is not None:
                continue
            record = decode(message.value())
            pool.request("POST", f"{url}/ok", body=json.dumps(record, default=str).encode(),
                         timeout=5.0,
                         headers={"Content-Type": "application/json",
                                  "Idempotency-Key": record["alert_id"]})  # fmt: skip

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()

    def stop() -> None:
        stopping.set()
        thread.join(10)
        consumer.close()

    return Running(stop)


def _notifier_process(settings: Settings, topic: str, url: str, home: Path) -> Running:
    rules = home / "rules.yaml"
    rules.write_text(RULES.replace("RECEIVER", url))
    env = {"MESH_BOOTSTRAP_SERVERS": settings.bootstrap_servers, "MESH_HOME": str(home),
           "MESH_TOPIC_PREFIX": settings.topic_prefix}  # fmt: skip
    process = NotifierProcess(env, rules, home / "notifier.log", home / "status.json")
    return Running(lambda: process.stop(), process.log_text)
