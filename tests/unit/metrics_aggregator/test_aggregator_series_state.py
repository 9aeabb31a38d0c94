"""Table semantics of one series: replacement, restarts, late snapshots, staleness, bounds."""

from __future__ import annotations

from aggregator_builders import counter, gauge

from services.metrics_aggregator.series_state import Retired, SeriesState
from services.metrics_aggregator.totals import total_fields

TTL = 60_000


def test_a_newer_snapshot_replaces_the_instances_previous_contribution():
    state = SeriesState()
    assert state.merge(counter("a", 1_000, 10))
    assert state.merge(counter("a", 2_000, 25))
    assert total_fields(state)["count"] == 25


def test_a_restarted_instance_under_a_new_id_adds_to_the_dead_ones_count():
    state = SeriesState()
    state.merge(counter("a@h:1:100", 1_000, 40))
    state.merge(counter("a@h:2:5000", 6_000, 3))  # the restarted process, counting from 0
    assert total_fields(state)["count"] == 43
    state.expire(now_ms=1_000 + TTL, stale_after_ms=TTL)  # the dead one goes stale
    fields = total_fields(state)
    assert fields["count"] == 43  # never goes down
    assert (fields["instances"], fields["stale_instances"]) == (1, 1)


def test_an_older_snapshot_arriving_late_is_ignored():
    state = SeriesState()
    state.merge(counter("a", 2_000, 25))
    assert not state.merge(counter("a", 1_000, 10))
    assert total_fields(state)["count"] == 25


def test_equal_timestamps_take_the_later_message():
    state = SeriesState()
    state.merge(counter("a", 2_000, 25))
    assert state.merge(counter("a", 2_000, 26))
    assert total_fields(state)["count"] == 26


def test_a_stale_instance_drops_its_gauge_and_keeps_its_count():
    gauges, counts = SeriesState(), SeriesState()
    for state, make in ((gauges, gauge), (counts, counter)):
        state.merge(make("a", 1_000, 5))
        state.merge(make("b", 30_000, 7))
    for state in (gauges, counts):
        assert state.expire(now_ms=61_000, stale_after_ms=TTL) == ["a"]
    assert total_fields(gauges)["value"] == 7.0
    assert total_fields(counts)["count"] == 12
    assert counts.retired == {"a": Retired(5, 1_000)}
    assert "a" not in counts.live


def test_staleness_is_exact_at_the_ttl():
    state = SeriesState()
    state.merge(gauge("a", 1_000, 5))
    assert state.expire(now_ms=1_000 + TTL - 1, stale_after_ms=TTL) == []
    assert state.expire(now_ms=1_000 + TTL, stale_after_ms=TTL) == ["a"]


def test_a_late_snapshot_of_a_retired_instance_is_still_ignored():
    state = SeriesState()
    state.merge(counter("a", 5_000, 50))
    state.expire(now_ms=100_000, stale_after_ms=TTL)
    assert not state.merge(counter("a", 4_000, 40))
    assert total_fields(state)["count"] == 50


def test_an_instance_back_after_a_pause_replaces_its_retired_count():
    state = SeriesState()
    state.merge(counter("a", 5_000, 50))
    state.expire(now_ms=100_000, stale_after_ms=TTL)
    assert state.merge(counter("a", 99_000, 70))
    fields = total_fields(state)
    assert fields["count"] == 70  # not 50 + 70
    assert (fields["instances"], fields["stale_instances"]) == (1, 0)


def test_retired_ids_beyond_the_bound_are_folded_into_one_sum():
    state = SeriesState()
    for i in range(10):
        state.merge(counter(f"i{i}", 1_000 + i, 1 + i))
    state.expire(now_ms=1_000_000, stale_after_ms=TTL, remember=3)
    assert sorted(state.retired) == ["i7", "i8", "i9"]  # the most recent ones
    assert (state.forgotten_instances, state.forgotten_count) == (7, sum(range(1, 8)))
    fields = total_fields(state)
    assert fields["count"] == sum(range(1, 11))
    assert fields["stale_instances"] == 10


def test_the_total_time_moves_to_when_instances_went_stale():
    state = SeriesState()
    state.merge(gauge("a", 1_000, 5))
    state.merge(gauge("b", 2_000, 5))
    assert state.time_ms == 2_000
    state.expire(now_ms=70_000, stale_after_ms=TTL)
    assert state.time_ms == 2_000 + TTL


def test_the_next_timeout_is_when_the_oldest_live_instance_goes_stale():
    state = SeriesState()
    assert state.next_stale_ms(TTL) is None
    state.merge(gauge("a", 3_000, 1))
    state.merge(gauge("b", 2_000, 1))
    assert state.next_stale_ms(TTL) == 2_000 + TTL


def test_the_state_survives_its_json_form():
    state = SeriesState()
    state.merge(counter("a", 1_000, 5))
    state.merge(counter("b", 90_000, 9))
    state.expire(now_ms=70_000, stale_after_ms=TTL, remember=5)
    again = SeriesState.from_json(state.to_json())
    assert again == state
    assert again.to_json() == state.to_json()


def test_a_state_of_another_format_version_is_refused_with_advice():
    import pytest

    with pytest.raises(ValueError, match="new checkpoint"):
        SeriesState.from_json('{"v": 99}')
