"""`mesh status --latency`: rows per 5 s of raw time, delivered notifications only, bad minutes
refused in one line (issue 49)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import pytest

from control.cli import status
from control.cli.latency_view import latency_rows, notification_sample, render
from shared.avro import AvroSerializer
from shared.errors import ConfigError
from shared.kafka.recent_latency import Sample
from shared.settings import Settings

ORIGIN = 1_800_000_000_000  # on a 5 s boundary


def test_samples_fall_in_the_5_s_row_of_their_raw_record() -> None:
    alerts = [
        Sample(ORIGIN + 100, 20.0),
        Sample(ORIGIN + 4_900, 40.0),
        Sample(ORIGIN + 12_000, 900.0),
    ]
    notified = [Sample(ORIGIN + 200, 150.0)]
    rows = latency_rows(alerts, notified, ORIGIN)
    assert [start for start, _, _ in rows] == [ORIGIN, ORIGIN + 10_000]
    first_alerts, first_notified = rows[0][1], rows[0][2]
    assert first_alerts is not None and first_notified is not None
    assert (first_alerts.count, first_alerts.max_ms) == (2, 40.0)
    assert first_notified.count == 1
    assert rows[1][2] is None  # no notification of a record of that 5 s


def test_the_view_says_the_whole_window_and_each_row() -> None:
    text = render([Sample(ORIGIN + 100, 20.0)], [], 5, ORIGIN)
    assert "over the last 5 minutes" in text
    assert "1 alerts: p50 20, p99 20, max 20" in text
    assert "0 notified" in text
    assert len(text.splitlines()) == 4  # title, whole window, header, one row


def test_nothing_recent_says_so() -> None:
    assert "is a feed running?" in render([], [], 5, ORIGIN)


@dataclass
class _Message:
    payload: bytes

    def value(self) -> bytes:
        return self.payload


def _notification(status: str, delivered: int | None) -> _Message:
    record = {
        "notification_id": "a1:team", "alert_id": "a1", "channel": "team", "customer_id": "c1",
        "severity": "HIGH", "message": "m", "created_time": ORIGIN + 30, "status": status,
        "attempts": 1, "delivered_time": delivered, "last_error": None,
        "latency_ms": None, "source_time": ORIGIN,
    }  # fmt: skip
    return _Message(AvroSerializer("notification").encode(record))


def test_a_delivered_notification_says_raw_to_notification() -> None:
    sample = notification_sample()(_notification("DELIVERED", ORIGIN + 180))
    assert sample == Sample(ORIGIN, 180.0)


def test_a_pending_notification_or_a_bad_record_says_nothing() -> None:
    sample_of = notification_sample()
    assert sample_of(_notification("PENDING", None)) is None
    assert sample_of(_Message(b"not avro")) is None


@pytest.mark.parametrize("minutes", ["0", "-1", "61", "soon"])
def test_bad_minutes_are_refused_by_name(minutes: str, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="mesh")
    status.register(parser.add_subparsers(dest="command", required=True))
    with pytest.raises(SystemExit):
        parser.parse_args(["status", "--latency", "--minutes", minutes])
    assert "--minutes" in capsys.readouterr().err


def test_minutes_without_latency_is_refused_in_one_line() -> None:
    parser = argparse.ArgumentParser(prog="mesh")
    status.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["status", "--minutes", "10"])
    with pytest.raises(ConfigError, match="--minutes goes with --latency"):
        status.status(args, Settings())


def test_a_record_whose_raw_record_is_before_the_window_is_left_out() -> None:
    # written inside the window, sent before it: only the slow ones are, so counting them would
    # make the first row (and the whole window) look slower than it was
    text = render([Sample(ORIGIN - 2_000, 3_000.0), Sample(ORIGIN + 100, 20.0)], [], 5, ORIGIN)
    assert "1 alerts: p50 20, p99 20, max 20" in text


def test_a_partial_read_is_said() -> None:
    text = render([Sample(ORIGIN + 100, 20.0)], [], 5, ORIGIN, partial=("alerts",))
    assert "partial: alerts was not read to its end" in text
