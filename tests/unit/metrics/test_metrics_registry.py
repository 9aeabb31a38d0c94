"""MetricRegistry: get-or-create by name and tags, one type per name, schema-exact snapshots."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from metrics_fakes import FakeClock

from shared.avro import AvroDeserializer, AvroSerializer
from shared.metrics import Counter, Gauge, Histogram, Meter, MetricRegistry, Timer
from shared.settings import PROJECT_ROOT

SCHEMA_FILE = PROJECT_ROOT / "schemas" / "metric_snapshot" / "v1.avsc"
INSTANCE = "detector-velocity-r1-0@host:42:1700000000000"


def _schema_fields(path: Path = SCHEMA_FILE) -> list[str]:
    return [f["name"] for f in json.loads(path.read_text())["fields"]]


def _one_of_each(registry: MetricRegistry) -> None:
    registry.counter("errors").inc(2)
    registry.meter("records.in").mark(10)
    registry.histogram("delay.end_to_end").update(120.0)
    registry.timer("processing").update_ms(1.5)
    registry.gauge("state.size", lambda: 7)


def test_the_same_name_and_tags_give_the_same_metric(registry: MetricRegistry) -> None:
    assert registry.counter("errors") is registry.counter("errors")
    assert registry.meter("in", {"p": "1"}) is registry.meter("in", {"p": "1"})
    assert registry.meter("in", {"p": "1"}) is not registry.meter("in", {"p": "2"})
    assert registry.meter("in") is not registry.meter("in", {"p": "1"})


def test_each_getter_returns_its_type(registry: MetricRegistry) -> None:
    assert isinstance(registry.counter("c"), Counter)
    assert isinstance(registry.meter("m"), Meter)
    assert isinstance(registry.histogram("h"), Histogram)
    assert isinstance(registry.timer("t"), Timer)
    assert isinstance(registry.gauge("g", lambda: 1), Gauge)


def test_a_name_keeps_its_type_whatever_the_tags(registry: MetricRegistry) -> None:
    registry.counter("errors")
    with pytest.raises(ValueError) as error:
        registry.meter("errors")
    assert str(error.value) == (
        "metric 'errors' is a counter, not a meter; pick another name for the new metric"
    )
    with pytest.raises(ValueError, match="is a counter, not a timer"):
        registry.timer("errors", {"p": "1"})


def test_registering_a_gauge_again_replaces_its_function(registry: MetricRegistry) -> None:
    first = registry.gauge("state.size", lambda: 1)
    second = registry.gauge("state.size", lambda: 2)
    assert first is second
    assert second.read() == 2.0


def test_bad_names_and_instance_ids_are_refused(clock: FakeClock) -> None:
    with pytest.raises(ValueError, match="'/'"):
        MetricRegistry("svc", "a/b", clock=clock)
    registry = MetricRegistry("svc", "a@h:1:2", clock=clock)
    with pytest.raises(ValueError, match="metric name"):
        registry.counter("")
    with pytest.raises(ValueError, match="metric name"):
        registry.counter("x{y}")


def test_snapshots_have_exactly_the_schema_fields(registry: MetricRegistry) -> None:
    _one_of_each(registry)
    snapshots = registry.snapshots()
    assert len(snapshots) == 5
    for record in snapshots:
        assert list(record) == _schema_fields()


def test_snapshot_fields_by_type(registry: MetricRegistry, clock: FakeClock) -> None:
    _one_of_each(registry)
    clock.advance(5.5)  # one tick: rates become visible
    by_name = {r["name"]: r for r in registry.snapshots(now_ms=1_800_000_000_000)}
    meter_fields = {"count", "m1_rate", "m5_rate", "m15_rate", "mean_rate", "rate_unit"}
    stats = {"min", "max", "mean", "stddev", "p50", "p75", "p95", "p98", "p99", "p999"}
    expected_set = {
        "errors": {"count"},
        "records.in": meter_fields,
        "delay.end_to_end": {"count"} | stats,
        "processing": meter_fields | stats | {"duration_unit"},
        "state.size": {"value"},
    }
    for name, fields in expected_set.items():
        record = by_name[name]
        value_fields = {k for k, v in record.items() if v is not None} - set(_schema_fields()[:6])
        assert value_fields == fields, name
        assert record["timestamp"] == 1_800_000_000_000
        assert record["service"] == "detector.velocity"
        assert record["instance_id"] == INSTANCE
    assert by_name["errors"]["type"] == "COUNTER"
    assert by_name["records.in"]["m1_rate"] == pytest.approx(2.0)
    assert by_name["records.in"]["rate_unit"] == "events/s"
    assert by_name["processing"]["duration_unit"] == "ms"
    assert by_name["processing"]["p99"] == 1.5
    assert by_name["delay.end_to_end"]["type"] == "HISTOGRAM"
    assert by_name["state.size"]["value"] == 7.0


def test_timestamp_defaults_to_the_wall_clock(registry: MetricRegistry, clock: FakeClock) -> None:
    registry.counter("errors")
    clock.now = 1_700_000_123.4567
    assert registry.snapshots()[0]["timestamp"] == 1_700_000_123_456


def test_tags_merge_common_and_own_but_keys_keep_only_own(registry: MetricRegistry) -> None:
    meter = registry.meter("records.in", {"partition": "3"})
    plain = registry.counter("errors", {"detector": "velocity"})  # same as common: not own
    assert registry.key(meter) == f"{INSTANCE}/records.in{{partition=3}}"
    assert registry.key(plain) == f"{INSTANCE}/errors"
    assert plain is registry.counter("errors")
    tags = {r["name"]: r["tags"] for r in registry.snapshots()}
    assert tags == {
        "records.in": {"detector": "velocity", "partition": "3"},
        "errors": {"detector": "velocity"},
    }


def test_a_metric_tag_overrides_a_common_one(registry: MetricRegistry) -> None:
    counter = registry.counter("errors", {"detector": "other"})
    assert registry.key(counter) == f"{INSTANCE}/errors{{detector=other}}"
    assert registry.snapshots()[0]["tags"] == {"detector": "other"}


def test_snapshot_keys_equal_metric_keys(registry: MetricRegistry) -> None:
    _one_of_each(registry)
    registry.meter("records.in", {"partition": "0", "topic": "tx"})
    for key, record in registry.snapshot_items():
        assert registry.snapshot_key(record) == key
    assert {key for key, _ in registry.snapshot_items()} == {e.key for e in registry}


def test_key_of_a_foreign_metric_is_refused(registry: MetricRegistry) -> None:
    with pytest.raises(ValueError, match="not a metric of this registry"):
        registry.key(Counter())


def test_types_select_snapshots(registry: MetricRegistry) -> None:
    _one_of_each(registry)
    names = {r["name"] for r in registry.snapshots(types={"COUNTER", "METER"})}
    assert names == {"errors", "records.in"}
    with pytest.raises(ValueError, match="valid: COUNTER, GAUGE, HISTOGRAM, METER, TIMER"):
        registry.snapshots(types={"COUNTERS"})


def test_gauges_without_a_value_are_left_out(registry: MetricRegistry) -> None:
    registry.gauge("consumer.lag", lambda: None)
    registry.gauge("broken", lambda: 1 / 0)
    registry.gauge("state.size", lambda: 3)
    assert [r["name"] for r in registry.snapshots()] == ["state.size"]


def test_histograms_without_samples_report_count_but_no_statistics(
    registry: MetricRegistry,
) -> None:
    registry.histogram("delay.end_to_end")
    registry.timer("processing")
    for record in registry.snapshots():
        assert record["count"] == 0
        assert record["min"] is None and record["p99"] is None


def test_remove_forgets_a_metric_and_frees_its_name(registry: MetricRegistry) -> None:
    registry.counter("x", {"p": "1"})
    registry.counter("x", {"p": "2"})
    assert registry.remove("x", {"p": "1"})
    assert not registry.remove("x", {"p": "1"})
    with pytest.raises(ValueError):
        registry.meter("x")  # still a counter with p=2
    assert registry.remove("x", {"p": "2"})
    assert isinstance(registry.meter("x"), Meter)


def test_every_snapshot_round_trips_through_avro(registry: MetricRegistry) -> None:
    _one_of_each(registry)
    registry.meter("records.in", {"partition": "1"}).mark()
    encode = AvroSerializer("metric_snapshot").encode
    decode = AvroDeserializer("metric_snapshot").decode
    for record in registry.snapshots():
        assert decode(encode(record)) == record


def test_tick_clock_defaults_to_monotonic_only_with_the_real_wall_clock(clock: FakeClock) -> None:
    import time

    assert MetricRegistry("s", "i@h:1:2").tick is time.monotonic
    assert MetricRegistry("s", "i@h:1:2", clock=clock).tick is clock
