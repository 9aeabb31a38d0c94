"""The receiver's record file keeps a repeat too, marked, so a ledger can count what a person
would have been sent twice; the first delivery per key stays what every summary reads."""

import json
import urllib.request

from tools.notification_summary import delivered, read_lines
from tools.webhook_receiver import IDEMPOTENCY_HEADER, WebhookReceiver, main


def _post(url, key):
    body = json.dumps({"detector": "velocity", "source_record_id": "txn_1", "event_time": 5})
    request = urllib.request.Request(url, body.encode(), {IDEMPOTENCY_HEADER: key}, method="POST")
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200


def test_a_repeat_is_recorded_marked_and_the_first_delivery_is_still_the_one_read(tmp_path):
    record = tmp_path / "received.jsonl"
    with WebhookReceiver(record=record) as receiver:
        _post(receiver.url(), "a1")
        _post(receiver.url(), "a1")  # the same alert again: a notifier killed mid-delivery
        _post(receiver.url(), "b2")
    lines = read_lines(record)
    assert [(line["alert_id"], line.get("repeat", False)) for line in lines] == [
        ("a1", False), ("a1", True), ("b2", False)
    ]  # fmt: skip
    assert receiver.received.repeats == 1
    assert list(delivered(lines)) == [("velocity", "txn_1", 5)]  # one alert, read once


def test_a_long_running_receiver_keeps_only_its_newest_requests_yet_still_tells_a_repeat(tmp_path):
    record = tmp_path / "received.jsonl"
    with WebhookReceiver(record=record, keep=2) as receiver:
        for key in ("a1", "b2", "c3", "a1"):
            _post(receiver.url(), key)
    kept = receiver.received
    assert [r.key for r in kept.requests] == ["c3", "a1"]
    assert list(kept.taken) == ["b2", "c3"] and list(kept.tries) == ["c3", "a1"]
    assert kept.repeats == 1  # a1 had left ``taken``; its digest had not
    assert [line.get("repeat", False) for line in read_lines(record)] == [False] * 3 + [True]


def test_the_command_line_refuses_to_keep_nothing(capsys):
    assert main(["--keep", "0", "--port", "0"]) == 2
    assert capsys.readouterr().out.strip() == (
        "webhook receiver: error: --keep 0: keep at least 1 request in memory"
    )
