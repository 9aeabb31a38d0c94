"""Declaration, ctx, alerts, retries, harness and manifest checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from shared.avro import AvroDeserializer, AvroSerializer
from shared.detector import (
    Context,
    DeclarationError,
    KeyValue,
    ManifestError,
    RetriableError,
    RetryPolicy,
    StateError,
    Task,
    alert_id,
    detector,
    load_detector,
    parse_manifest,
    run,
)
from shared.detector.task import NOTHING_FOUND

RECORD = {"record_id": "r1", "customer_id": "c1", "event_time": 1_000, "amount": 5.0}
MANIFEST = {
    "name": "demo",
    "version": "1.0.0",
    "inputs": ["transactions"],
    "owner": "team",
    "replicas": 1,
    "start": "earliest",
}


@detector(name="demo", version="1.0.0", inputs=["transactions"], state=[KeyValue("seen")])
def demo(record: dict[str, Any], ctx: Context) -> Any:
    seen = ctx.kv("seen")
    count = seen.get(record["customer_id"], 0) + 1
    seen.set(record["customer_id"], count)
    if count == 2:
        yield ctx.alert("second", severity="LOW", score=2, reason="second record")


def test_alert_fits_the_schema_and_its_id_is_deterministic() -> None:
    records = [("transactions", RECORD), ("transactions", {**RECORD, "record_id": "r2"})]
    first = run(demo, records, clock=lambda: 1).alerts
    again = run(demo, records, clock=lambda: 2).alerts
    assert len(first) == 1
    assert (
        first[0]["alert_id"]
        == again[0]["alert_id"]
        == alert_id("demo", "second", "transactions", "r2")
    )
    assert first[0]["detection_time"] != again[0]["detection_time"]
    decoded = AvroDeserializer("alert").decode(AvroSerializer("alert").encode(first[0]))
    assert decoded["source_topic"] == "records.transactions" and decoded["severity"] == "LOW"
    assert alert_id("demo", "other", "transactions", "r2") != first[0]["alert_id"]


def test_harness_returns_state_per_key() -> None:
    result = run(demo, [("transactions", RECORD)] * 3 + [("logins", RECORD)])
    assert result.store("seen") == {"c1": 3}


def test_retriable_error_is_retried_then_succeeds() -> None:
    calls = []

    @detector(name="flaky", version="1", inputs=["transactions"], state=[KeyValue("kv")])
    def flaky(record: dict[str, Any], ctx: Context) -> list[dict[str, Any]]:
        calls.append(1)
        ctx.kv("kv").set("k", len(calls))
        if len(calls) < 3:
            raise RetriableError("lookup timed out")
        return []

    task = Task(flaky, retry=RetryPolicy(retries=3), sleep=lambda _: None)
    outcome = task.process("transactions", RECORD, "t", 0)
    assert outcome.error is None and outcome.attempts == 3
    assert task.state.snapshot() == {"kv": {"k": 3}}


def test_retries_are_bounded_and_exceptions_are_not_retried() -> None:
    @detector(name="down", version="1", inputs=["transactions"])
    def down(record: dict[str, Any], ctx: Context) -> None:
        raise RetriableError("still down")

    @detector(name="bug", version="1", inputs=["transactions"])
    def bug(record: dict[str, Any], ctx: Context) -> None:
        raise KeyError("no_such_field")

    outcome = Task(down, retry=RetryPolicy(retries=2), sleep=lambda _: None).process(
        "transactions", RECORD, "t", 0
    )
    assert isinstance(outcome.error, RetriableError) and outcome.attempts == 3
    outcome = Task(bug, sleep=lambda _: None).process("transactions", RECORD, "t", 0)
    assert isinstance(outcome.error, KeyError) and outcome.attempts == 1
    result = run(bug, [("transactions", RECORD)] * 2)
    assert len(result.failures) == 2 and result.alerts == []
    with pytest.raises(KeyError):
        run(bug, [("transactions", RECORD)], raise_errors=True)


def test_unknown_store_names_the_declared_ones() -> None:
    @detector(name="typo", version="1", inputs=["transactions"], state=[KeyValue("seen")])
    def typo(record: dict[str, Any], ctx: Context) -> None:
        ctx.kv("sene")

    with pytest.raises(StateError, match="declared: seen"):
        run(typo, [("transactions", RECORD)], raise_errors=True)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "Bad-Name"}, "lower case"),
        ({"inputs": ["payments"]}, "unknown input type 'payments'"),
        ({"inputs": []}, "non-empty list"),
        ({"version": ""}, "version"),
        ({"state": [KeyValue("a"), KeyValue("a")]}, "declared twice"),
    ],
)
def test_bad_declaration_is_refused(kwargs: dict[str, Any], message: str) -> None:
    values: dict[str, Any] = {"name": "ok", "version": "1", "inputs": ["transactions"], **kwargs}
    with pytest.raises(DeclarationError, match=message):
        detector(**values)(lambda record, ctx: None)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"inputs": ["transactions", "payments"]},
            "field `inputs` names unknown input type 'payments'",
        ),
        ({"owner": None}, "field `owner`"),
        ({"replicas": 0}, "field `replicas`"),
        ({"start": "middle"}, "field `start`"),
        ({"colour": "red"}, "unknown field `colour`"),
        ({"tracing": "no"}, "field `tracing` must be true or false"),
        ({"batch_wait_ms": -1}, "field `batch_wait_ms` must be a whole number"),
        ({"batch_wait_ms": 0.5}, "field `batch_wait_ms` must be a whole number"),
        ({"batch_wait_ms": 10_001}, "from 0 to 10000"),
    ],
)
def test_bad_manifest_is_one_line_naming_the_field(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ManifestError, match=message) as info:
        parse_manifest({**MANIFEST, **change})
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("field", ["name", "version", "inputs", "owner", "replicas"])
def test_manifest_missing_field_is_named(field: str) -> None:
    document = {k: v for k, v in MANIFEST.items() if k != field}
    with pytest.raises(ManifestError, match=f"missing field `{field}`"):
        parse_manifest(document)


def test_manifest_tracing_defaults_to_on_and_can_be_turned_off() -> None:
    assert parse_manifest(MANIFEST).tracing is True
    import yaml

    assert parse_manifest({**MANIFEST, **yaml.safe_load("tracing: false")}).tracing is False


def test_manifest_batch_wait_defaults_to_none_so_a_lone_record_is_not_held() -> None:
    assert parse_manifest(MANIFEST).batch_wait_ms == 0
    assert parse_manifest({**MANIFEST, "batch_wait_ms": 250}).batch_wait_ms == 250


def test_manifest_start_defaults_to_latest() -> None:
    manifest = parse_manifest({k: v for k, v in MANIFEST.items() if k != "start"})
    assert (manifest.start, manifest.start_ms, manifest.start_position) == (
        "latest",
        None,
        "latest",
    )
    assert parse_manifest({**MANIFEST, "start": "earliest"}).start == "earliest"


@pytest.mark.parametrize(
    "text",
    [
        "start: 2026-11-22T10:00:00Z",  # YAML makes it a datetime in UTC
        "start: '2026-11-22T10:00:00Z'",  # quoted: a string
        "start: 2026-11-22T11:00:00+01:00",
        "start: '2026-11-22T05:00:00-05:00'",
        "start: 2026-11-22 10:00:00.000Z",
    ],
)
def test_manifest_start_at_a_time_with_a_zone(text: str) -> None:
    import yaml

    manifest = parse_manifest({**MANIFEST, **yaml.safe_load(text)})
    assert manifest.start == "timestamp"
    assert manifest.start_ms == 1_795_341_600_000
    assert manifest.start_position == "2026-11-22T10:00:00Z"
    assert hash(manifest) == hash(parse_manifest({**MANIFEST, **yaml.safe_load(text)}))


def test_manifest_start_keeps_milliseconds() -> None:
    manifest = parse_manifest({**MANIFEST, "start": "2026-11-22T10:00:00.123Z"})
    assert manifest.start_ms == 1_795_341_600_123
    assert manifest.start_position == "2026-11-22T10:00:00.123Z"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("start: 2026-11-22T10:00:00", "has no time zone; add Z"),
        ("start: '2026-11-22T10:00:00'", "has no time zone; add Z"),
        ("start: 2026-11-22", "has no time zone; add Z"),
        ("start: 1969-12-31T23:59:59Z", "before 1970"),
        ("start: middle", "field `start` must be earliest, latest or a time with a zone"),
        ("start: yesterday 10:00", "field `start` must be earliest, latest or a time"),
        ("start: 1795341600000", "field `start` must be earliest, latest or a time"),
        ("start: true", "field `start` must be earliest, latest or a time"),
        ("start:", "field `start` must be earliest, latest or a time"),
        ("start: [earliest]", "field `start` must be earliest, latest or a time"),
    ],
)
def test_bad_manifest_start_is_one_line_naming_the_field(text: str, message: str) -> None:
    import yaml

    with pytest.raises(ManifestError, match=message) as info:
        parse_manifest({**MANIFEST, **yaml.safe_load(text)}, "detectors/demo/manifest.yaml")
    assert "\n" not in str(info.value)
    assert str(info.value).startswith("detectors/demo/manifest.yaml: field `start`")


def test_reference_detectors_start_at_the_earliest_record() -> None:
    from shared.detector import load_manifest
    from shared.settings import PROJECT_ROOT

    manifests = [load_manifest(p.parent) for p in PROJECT_ROOT.glob("detectors/*/manifest.yaml")]
    assert {m.name for m in manifests} == {"large_amount", "new_country", "velocity"}
    assert all(m.start == "earliest" for m in manifests)


def test_manifest_must_agree_with_the_code(tmp_path: Path) -> None:
    (tmp_path / "manifest.yaml").write_text(
        "name: demo\nversion: 2.0.0\ninputs: [transactions]\nowner: t\nreplicas: 1\nstart: latest\n"
    )
    (tmp_path / "detector.py").write_text(
        "from shared.detector import detector\n"
        "@detector(name='demo', version='1.0.0', inputs=['transactions'])\n"
        "def detect(record, ctx):\n    return []\n"
    )
    with pytest.raises(
        ManifestError, match=r"field `version` is '2\.0\.0' but the code declares '1\.0\.0'"
    ):
        load_detector(tmp_path)


@pytest.mark.parametrize("stateful", [False, True])
@pytest.mark.parametrize("retries", [0, 1, 3])
def test_a_retriable_error_is_tried_exactly_retries_plus_one_times(
    stateful: bool, retries: int
) -> None:
    calls = []
    sleeps: list[float] = []

    @detector(
        name="down",
        version="1",
        inputs=["transactions"],
        state=[KeyValue("kv")] if stateful else [],
    )
    def down(record: dict[str, Any], ctx: Context) -> None:
        calls.append(1)
        raise RetriableError("still down")

    task = Task(down, retry=RetryPolicy(retries=retries, backoff_s=0.01), sleep=sleeps.append)
    outcome = task.process("transactions", RECORD, "t", 0)
    assert isinstance(outcome.error, RetriableError)
    assert len(calls) == outcome.attempts == retries + 1
    assert len(sleeps) == retries


@pytest.mark.parametrize("answer", [None, [], (), {}])
def test_every_way_of_finding_nothing_gives_no_alert(answer: Any) -> None:
    """The runtime skips the alert path for the shared NOTHING_FOUND outcome; any other empty
    answer must still come out as no alert (an empty dict is not an alert either: fit for the
    dead-letter topic, not for silence)."""

    @detector(name="quiet", version="1", inputs=["transactions"])
    def quiet(record: dict[str, Any], ctx: Context) -> Any:
        return answer

    @detector(name="quiet_kv", version="1", inputs=["transactions"], state=[KeyValue("kv")])
    def quiet_kv(record: dict[str, Any], ctx: Context) -> Any:
        ctx.kv("kv").set(record["customer_id"], 1)
        return answer

    for declared in (quiet, quiet_kv):
        outcome = Task(declared).process("transactions", RECORD, "t", 0)
        assert outcome.error is None and outcome.attempts == 1
        expected = [{}] if answer == {} else []
        assert list(outcome.alerts) == expected
        if answer is None or answer == []:
            assert outcome is NOTHING_FOUND
