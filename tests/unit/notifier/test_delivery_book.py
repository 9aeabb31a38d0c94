"""The notifier's delivery book: once per (alert, channel), retries, dead letters, a TTL, and
the changelog that rebuilds it after a restart."""

from __future__ import annotations

import datetime

import pytest

from services.notifier.book import DELIVERED, FAILED, PENDING, Delivery, DeliveryBook


def _alert(alert_id: str = "a1") -> dict:
    return {"alert_id": alert_id, "detector": "large_amount", "severity": "HIGH",
            "customer_id": "c1", "detection_time": datetime.datetime(2026, 11, 24, 12, 0,
            tzinfo=datetime.UTC)}  # fmt: skip


def test_an_alert_is_admitted_once_per_channel_and_a_repeat_is_a_counted_duplicate() -> None:
    book = DeliveryBook(ttl_s=60)
    first = book.admit(_alert(), ["team", "log"], now_s=100.0)
    assert [(d.channel, d.status, d.attempts) for d in first] == [
        ("team", PENDING, 0), ("log", PENDING, 0)
    ]  # fmt: skip
    assert book.admit(_alert(), ["team", "log"], now_s=101.0) == []
    assert book.duplicates == 2
    assert [d.channel for d in book.admit(_alert(), ["team", "pager"], now_s=102.0)] == ["pager"]


def test_retries_are_due_at_their_time_and_the_last_failure_is_final() -> None:
    book = DeliveryBook(ttl_s=60)
    (entry,) = book.admit(_alert(), ["team"], now_s=0.0)
    assert book.due(0.0) == [entry]
    retry = book.attempted(entry, 0.5, delivered=False, error="HTTP 500", retry_in_s=2.0)
    assert (retry.status, retry.attempts, retry.at_s, retry.last_error) == (
        PENDING, 1, 2.5, "HTTP 500"
    )  # fmt: skip
    assert book.due(2.0) == [] and book.due(2.5) == [retry]
    failed = book.attempted(retry, 3.0, delivered=False, error="timed out", retry_in_s=None)
    assert (failed.status, failed.attempts, failed.alert) == (FAILED, 2, None)
    assert book.due(100.0) == []
    with pytest.raises(ValueError, match="no pending delivery a1/team"):
        book.attempted(failed, 4.0, delivered=True)


def test_a_delivery_keeps_no_alert_once_done_and_finished_ones_expire_after_the_ttl() -> None:
    book = DeliveryBook(ttl_s=60)
    team, log = book.admit(_alert(), ["team", "log"], now_s=0.0)
    done = book.attempted(team, 1.0, delivered=True)
    assert (done.status, done.attempts, done.alert) == (DELIVERED, 1, None)
    assert book.finished_at("a1", "team") == 1.0 and book.get("a1", "team") is None
    assert book.expire(60.5) == 0  # finished at 1.0: not yet 60 s
    assert book.expire(61.0) == 1
    assert book.finished_at("a1", "team") is None and book.get("a1", "team") is None
    assert book.get("a1", "log") == log  # pending entries never expire
    # once forgotten, the same alert is new again: the TTL bounds how long repeats are caught
    assert [d.channel for d in book.admit(_alert(), ["team"], now_s=62.0)] == ["team"]


def test_the_changelog_rebuilds_the_same_book_after_a_restart() -> None:
    book = DeliveryBook(ttl_s=60)
    team, log = book.admit(_alert(), ["team", "log"], now_s=0.0)
    book.attempted(team, 1.0, delivered=True)
    book.attempted(log, 1.0, delivered=False, error="disk full", retry_in_s=5.0)
    (other,) = book.admit(_alert("a2"), ["team"], now_s=2.0)
    book.attempted(other, 2.5, delivered=True)
    log_records = book.changes()
    assert book.changes() == []  # drained
    book.expire(70.0)
    log_records += book.changes()
    assert ("a1/team", None) in log_records and ("a2/team", None) in log_records

    restored = DeliveryBook(ttl_s=60)
    for key, value in log_records:
        restored.restore(key, value)
    assert len(restored) == 1
    pending = restored.get("a1", "log")
    assert pending is not None and pending.status == PENDING and pending.attempts == 1
    assert pending.alert is not None and pending.alert["alert_id"] == "a1"
    assert pending.alert["detection_time"] == "2026-11-24 12:00:00+00:00"
    assert restored.due(6.0) == [pending]
    # and an entry survives its own round trip through the changelog
    assert Delivery.from_json(pending.to_json()) == pending


def test_a_postponed_delivery_keeps_its_attempts_and_waits() -> None:
    book = DeliveryBook(ttl_s=60)
    (entry,) = book.admit(_alert(), ["team"], now_s=0.0)
    retry = book.attempted(entry, 1.0, delivered=False, error="HTTP 503", retry_in_s=1.0)
    later = book.postpone(retry, 30.0)
    assert (later.attempts, later.at_s, later.status) == (1, 30.0, PENDING)
    assert book.due(29.0) == [] and book.due(30.0) == [later]
    done = book.attempted(later, 30.5, delivered=True)
    with pytest.raises(ValueError, match="no pending delivery a1/team to postpone"):
        book.postpone(done, 40.0)


def test_expiry_goes_in_finishing_order_and_stops_at_the_first_young_one() -> None:
    book = DeliveryBook(ttl_s=60)
    early, late = book.admit(_alert("a1"), ["team"], 0.0) + book.admit(_alert("a2"), ["team"], 0.0)
    book.attempted(late, 1.0, delivered=True)
    book.attempted(early, 50.0, delivered=False, error="HTTP 400", retry_in_s=None)
    assert book.expire(61.0) == 1 and book.finished_at("a2", "team") is None
    assert book.finished_at("a1", "team") == 50.0
    assert book.expire(110.0) == 1 and len(book) == 0


def test_a_ttl_must_be_positive() -> None:
    with pytest.raises(ValueError, match="TTL must be positive"):
        DeliveryBook(ttl_s=0)
