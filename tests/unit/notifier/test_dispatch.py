"""Deliveries in flight: a slow or dead channel neither holds back nor queues up work for the
others; its breaker opens; a channel never runs more than its concurrency at once."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from polling import wait_for

from services.notifier.book import DeliveryBook
from services.notifier.breaker import OPEN as BREAKER_OPEN
from services.notifier.breaker import Breaker
from services.notifier.dispatch import BUSY, OPEN, SENT, Dispatcher
from services.notifier.file_channel import FileSender
from services.notifier.outcome import Outcome
from shared.notifier_channels import FileChannel


class Held:
    """A channel whose attempts wait until the test lets them go (a slow receiver, without
    any timing in the test)."""

    def __init__(self, delivered: bool = True) -> None:
        self.release = threading.Event()
        self.started = 0
        self.delivered = delivered

    def send(self, body: bytes, key: str, headers: Mapping[str, str] | None = None) -> Outcome:
        self.started += 1
        self.release.wait(30)
        return Outcome(self.delivered, not self.delivered, None, None if self.delivered else "no",
                       0.0)  # fmt: skip

    def close(self) -> None:
        self.release.set()


def _book_with(alerts: int, channels: list[str]) -> DeliveryBook:
    book = DeliveryBook(ttl_s=60)
    for i in range(alerts):
        book.admit({"alert_id": f"a{i}"}, channels, now_s=0.0)
    return book


def test_a_slow_channel_runs_its_concurrency_and_no_more_while_a_fast_one_finishes(
    tmp_path: Path,
) -> None:
    slow = Held()
    fast = FileSender(FileChannel("log", "out.jsonl"), tmp_path)
    breakers = {"slow": Breaker(), "log": Breaker()}
    dispatcher = Dispatcher({"slow": slow, "log": fast}, {"slow": 2, "log": 4}, breakers)
    book = _book_with(10, ["slow", "log"])
    try:
        offers = [(e.channel, dispatcher.offer(e, b"{}", {})) for e in book.due(0.0)]
        assert offers.count(("slow", SENT)) == 2 and offers.count(("slow", BUSY)) == 8
        delivered: list[str] = []

        def every_log_delivered() -> bool:
            for entry, outcome in dispatcher.finished():
                assert outcome.delivered, outcome
                book.attempted(entry, 1.0, delivered=True)
                delivered.append(entry.channel)
            for entry in book.due(1.0):  # the next rounds of the loop
                if entry.channel == "log":
                    dispatcher.offer(entry, b"{}", {})
            return delivered.count("log") == 10

        wait_for(every_log_delivered, 30, "every file delivery")
        # ... while the slow channel still holds its two attempts, and took no more
        assert slow.started == 2 and len(dispatcher.in_flight("slow")) == 2
        assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 10
        slow.release.set()
        wait_for(lambda: [e for e, _ in dispatcher.finished() if e.channel == "slow"], 30,
                 "the slow attempts to end")  # fmt: skip
    finally:
        dispatcher.close()


def test_a_failing_channel_opens_its_breaker_and_offers_are_refused_until_the_cool_down() -> None:
    dead = Held(delivered=False)
    dead.release.set()
    now = [0.0]
    breakers = {"dead": Breaker(failure_threshold=2, cooldown_s=30)}
    dispatcher = Dispatcher({"dead": dead}, {"dead": 1}, breakers, clock=lambda: now[0])
    book = _book_with(3, ["dead"])
    try:
        first, second, third = book.due(0.0)
        for entry in (first, second):
            assert dispatcher.offer(entry, b"{}", {}) == SENT
            wait_for(dispatcher.finished, 30, "the attempt to end")
        assert breakers["dead"].state == BREAKER_OPEN
        assert dispatcher.offer(third, b"{}", {}) == OPEN
        now[0] = 30.0
        assert dispatcher.offer(third, b"{}", {}) == SENT  # the one trial
    finally:
        dispatcher.close()


def test_a_channel_that_raises_gives_a_retriable_failure_not_a_lost_delivery() -> None:
    class Broken:
        def send(self, *args: object) -> Outcome:
            raise RuntimeError("bug in a channel")

        def close(self) -> None:
            pass

    dispatcher = Dispatcher({"x": Broken()}, {"x": 1}, {"x": Breaker()})
    (entry,) = _book_with(1, ["x"]).due(0.0)
    try:
        assert dispatcher.offer(entry, b"{}", {}) == SENT
        ((ended, outcome),) = wait_for(dispatcher.finished, 30, "the attempt to end")
        assert (
            ended == entry
            and outcome.retriable
            and "RuntimeError: bug in a channel" in str(outcome.error)
        )
    finally:
        dispatcher.close()


def test_the_file_channel_appends_one_line_per_notification_under_home(tmp_path: Path) -> None:
    sender = FileSender(FileChannel("log", "notifier/out.jsonl"), tmp_path)
    before_ms = int(time.time() * 1000)  # whole ms, as the line has it
    traced = {"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01",
              "Mesh-Source-Timestamp": "1795000000000"}  # fmt: skip
    assert sender.send(b'{"a": 1}\n', "a1", traced).delivered
    assert sender.send(b'{"a": 2}', "a2").delivered
    first, second = [
        json.loads(line) for line in (tmp_path / "notifier" / "out.jsonl").read_text().splitlines()
    ]
    assert (first["alert_id"], first["alert"]) == ("a1", {"a": 1})
    assert first["source_ms"] == 1795000000000
    assert first["traceparent"] == traced["traceparent"] and first["delivered_ms"] >= before_ms
    assert (second["alert_id"], second["alert"], second["source_ms"]) == ("a2", {"a": 2}, None)
    blocked = FileSender(FileChannel("log", str(tmp_path / "out.jsonl" / "x")), tmp_path)
    (tmp_path / "out.jsonl").write_text("a file, not a folder")
    outcome = blocked.send(b"{}", "a3")
    assert (outcome.delivered, outcome.retriable) == (False, True)
    assert outcome.error is not None and outcome.error.startswith(str(tmp_path / "out.jsonl"))
