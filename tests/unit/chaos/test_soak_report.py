"""The soak's verdicts: a creeping process and a building lag are called so, a steady one is not."""

import pytest

from chaos.soak_report import (
    cpu_lines,
    lag_verdict,
    memory_lines,
    series_verdict,
    slope_per_hour,
)
from chaos.soak_samples import Sample
from shared.kafka.recent_latency import summarize

TAIL = summarize([10.0, 20.0], 300)


def _samples(memory, lag=None, backlog=None, heap=None, series=None):
    lag = lag or [0] * len(memory)
    backlog = backlog or [0] * len(memory)
    heap = heap or [{}] * len(memory)
    series = series or [None] * len(memory)
    return [Sample(i * 300.0, m, {n: v + 50 for n, v in m.items()}, {n: 60.0 * i for n in m},
                   {"detector.velocity": lag[i]}, backlog[i], TAIL, heap[i], series[i])
            for i, m in enumerate(memory)]  # fmt: skip


def test_the_slope_is_per_hour_and_zero_without_two_points():
    assert slope_per_hour([(0, 100), (1800, 150), (3600, 200)]) == pytest.approx(100)
    assert slope_per_hour([(0, 100)]) == 0.0


def test_a_process_that_creeps_is_growing_and_the_warm_up_half_is_left_out():
    # a JVM filling its heap for the first half hour, then steady: not a leak
    warming = [{"ingest": 200.0 + 100 * min(i, 6) + i % 2} for i in range(13)]
    lines, growing, filling = memory_lines(_samples(warming))
    assert growing == filling == [] and lines[0].endswith("flat")
    creeping = _samples([{"ingest": 800.0 + 20 * i} for i in range(13)])  # +240 MiB/h throughout
    lines, growing, filling = memory_lines(creeping)
    assert growing == ["ingest grows +240 MiB/h (median 980 MiB private)"] and filling == []
    assert lines[0].split() == ["ingest", "private", "800", "1040", "980", "1090", "+240.0",
                                "GROWING"]  # fmt: skip


def test_a_process_filling_toward_a_bound_is_named_but_not_failed():
    # profiles of a fixed population: each sample adds 80 % of the last one's growth
    profiles = _samples([{"detector": 200.0 + 400 * (1 - 0.8**i)} for i in range(13)])
    lines, growing, filling = memory_lines(profiles)
    assert growing == [] and lines[0].endswith("filling")
    assert filling == ["detector fills: +254 then +104 MiB/h (median 546 MiB private)"]


def test_lag_that_builds_every_sample_fails_and_a_steady_one_passes():
    steady = _samples([{}] * 9, lag=[400, 100, 900, 300, 200, 800, 100, 600, 300])
    assert lag_verdict(steady, 1000)[1]
    building = _samples([{}] * 9, backlog=[1000 * i * 10 for i in range(9)])
    line, flat = lag_verdict(building, 1000)
    assert not flat and line == "lag (records, all groups + ingest) first third 10000, last 70000"


def test_cpu_is_cores_used_between_the_first_and_the_last_sample():
    # 60 CPU seconds every 300 s: a fifth of a core
    lines = cpu_lines(_samples([{"kafka": 1.0, "ingest": 1.0}] * 4))
    assert lines == ["kafka                         0.20 cores",
                     "ingest                        0.20 cores",
                     "all                           0.40 cores"]  # fmt: skip


def test_a_leak_whose_last_samples_dip_is_still_growing_not_filling():
    # +240 MiB/h throughout, the last two samples 40 MiB down (a collection): one slowdown only
    leak = [800.0 + 20 * i - (40 if i >= 11 else 0) for i in range(13)]
    lines, growing, filling = memory_lines(_samples([{"notifier": v} for v in leak]))
    assert filling == [] and len(growing) == 1 and lines[0].endswith("GROWING")


def test_a_jvm_is_judged_by_its_heap_not_by_its_private_memory():
    # the aggregator's JVM: private memory +200 MiB then -240 (the collector giving regions back
    # and taking them again), its live heap flat around 300 MiB
    private = [900.0 + (200 if 4 <= i < 8 else 0) - (240 if i >= 10 else 0) + 30 * i
               for i in range(13)]  # fmt: skip
    heap = [{"metrics_aggregator": 300.0 + (i % 3)} for i in range(13)]
    samples = _samples([{"metrics_aggregator": v} for v in private], heap=heap)
    lines, growing, filling = memory_lines(samples)
    assert growing == filling == [] and lines[0].split()[1] == "heap"
    assert lines[0].endswith("flat")
    # the same JVM whose live heap keeps rising: a leak, whatever its private memory does
    leaking = [{"metrics_aggregator": 300.0 + 25 * i} for i in range(13)]
    lines, growing, _ = memory_lines(_samples([{"metrics_aggregator": 900.0}] * 13, heap=leaking))
    assert growing == ["metrics_aggregator grows +300 MiB/h (median 525 MiB heap)"]


def test_a_process_whose_heap_was_not_read_every_time_is_judged_by_private_memory():
    heap = [{"ingest": 300.0}] * 6 + [{}] + [{"ingest": 300.0}] * 6  # one jstat missed
    lines, _, _ = memory_lines(_samples([{"ingest": 800.0}] * 13, heap=heap))
    assert lines[0].split()[1] == "private"


def test_series_that_stop_growing_are_flat_and_a_tag_without_bound_is_not():
    settling = [120, 180, 190, 190, 190, 191, 191, 191, 191]  # services showing up, then one gauge
    line, flat = series_verdict(_samples([{}] * 9, series=settling))
    assert flat and line == "InfluxDB series 120 at first, 190 at half time, 191 last"
    unbounded = [120 + 40 * i for i in range(9)]  # an instance id per restart, say
    assert not series_verdict(_samples([{}] * 9, series=unbounded))[1]
    assert series_verdict(_samples([{}] * 9)) == ("InfluxDB series not read", True)


def test_one_odd_sample_does_not_make_a_flat_process_grow():
    """The fourth soak's kafka-2: 157-160 MiB of live heap for 55 minutes, 178 at the last
    sample (least squares: +32 MiB/h, growing)."""
    heap = [157, 158, 159, 159, 159, 157, 159, 158, 160, 158, 159, 178]
    samples = _samples([{"kafka-2": 700.0}] * 12, heap=[{"kafka-2": float(v)} for v in heap])
    lines, growing, filling = memory_lines(samples)
    assert growing == filling == [] and lines[0].endswith("flat"), lines


def test_a_jvm_heap_judged_by_its_floor_ignores_what_was_in_flight_but_not_a_leak():
    """The fourth soak's ingest: its live heap 174-260 MiB by turns with no trend (a batch in
    flight at one collection, not at the next); the slope of the readings said +92 MiB/h. Its
    floor is flat; the history's floor, which kept rising, still grows."""
    ingest = [240, 177, 182, 242, 241, 223, 174, 260, 189, 207, 186, 248]
    samples = _samples([{"ingest": 900.0}] * 12, heap=[{"ingest": float(v)} for v in ingest])
    lines, growing, filling = memory_lines(samples)
    assert growing == filling == [] and lines[0].endswith("flat"), lines
    history = [180, 181, 199, 190, 209, 228, 213, 204, 222, 229, 227, 236]
    samples = _samples([{"history": 900.0}] * 12, heap=[{"history": float(v)} for v in history])
    lines, growing, _ = memory_lines(samples)
    assert len(growing) == 1 and lines[0].endswith("GROWING"), lines


def test_a_server_whose_cache_cycles_is_flat_until_it_reaches_new_highs():
    """The fifth soak's InfluxDB: its write cache filled and was written out (10 ... 26, then
    12 ... 20 MiB); the second half's slope says growing, its highs do not. The same server
    whose last third goes past its earlier high grows."""
    cycled = [10, 12, 14, 18, 18, 19, 23, 26, 12, 14, 15, 18, 19, 20]
    samples = _samples([{"influxdb": float(v)} for v in cycled])
    lines, growing, filling = memory_lines(samples)
    assert growing == filling == [] and lines[0].endswith("flat"), lines
    leaking = [10, 12, 14, 18, 18, 19, 23, 26, 24, 27, 29, 31, 33, 35]
    samples = _samples([{"influxdb": float(v)} for v in leaking])
    _, growing, _ = memory_lines(samples)
    assert len(growing) == 1 and growing[0].startswith("influxdb grows"), growing
