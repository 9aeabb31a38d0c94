"""A soak's figures and verdict: is memory flat, is lag flat, was anything lost.

Memory is each process's private memory (its resident pages less those of mapped files: a database's
mapped data files are the kernel's cache of its disk, and grow with the data). It is judged by the
slope over the second half of the samples (Theil-Sen, which one odd sample does not move): a JVM's
heap, the JIT's code and the caches fill over the first minutes and then stay (a 3-minute run called
ingest "growing" at +15 GiB/h), which is not a leak; a leak goes on growing in the second half too.
A process grows when that slope, held for the whole run, would add more than GROWTH_SHARE of its
median, unless it is **filling**: slower in each third of the run than in the one before, and in the
last at most FILLING_RATIO of the middle one. State bounded by what it keys on fills so (a
detector's profiles, one per customer of the feed's population, or a trace store up to its cap):
each new minute finds fewer new keys. A leak does not slow down at a steady rate of input, and one
noisy sample cannot pass it (two slowdowns in a row are asked for). A filling process passes, named,
so a longer run can show where it stops. A process that is or runs a JVM is judged by its live heap
instead, in use right after a full collection (:mod:`chaos.jvm_heap`: what a JVM's leak fills; its
private memory moves with the collector and the JIT), and by its floor: the lower of every two
consecutive readings. A live heap holds what is in flight when the collection runs (ingest's
batch, its fetched records: 174-260 MiB by turns in the fourth soak, which the slope alone called
+92 MiB/h), and only a leak raises the floor too. The Go servers beside the mesh (SAWTOOTH:
InfluxDB, whose write cache grows to its snapshot size and is then written out, and Jaeger) rise
and fall over tens of minutes: InfluxDB read 10, 12, 14, 18, 18, 19, 23, 26, 12, 14, 15, 18, 19,
20 MiB in the fifth soak, a slope of the second half says growing, and one of the whole run
would say the same of any tooth. What a leak does and a cycle does not is reach new highs: such a
server is flat while the last third's highest reading stays within GROWTH_SHARE of its median
above the highest before it.

InfluxDB's series are flat when the second half of the run added at most SERIES_SLACK of them
(a gauge that shows up late adds one): a tag without bound (an instance id per restart, a
customer id) adds some every sample, and InfluxDB's index and memory grow with them.

Lag is flat when the last third of the samples is no higher on average than the first third plus
LAG_SLACK_S seconds of input: a mesh that keeps up stays near zero, one that does not grows
every sample. Nothing lost is counted by the caller (offsets and the planted frauds' deliveries).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from statistics import median

from chaos.soak_samples import Sample

#: Growth over the run, as a share of the median, that calls a process's memory growing.
GROWTH_SHARE = 0.10
#: The last third's slope, as a share of the middle third's, at most which growth is filling.
FILLING_RATIO = 0.5
#: Series the second half may add, as a share of the count at half time (at least 5).
SERIES_SLACK = 0.02
#: Lag allowed to rise between the first and the last third, in seconds of input.
LAG_SLACK_S = 5.0
#: Servers whose memory rises and falls over tens of minutes with their own cache: judged by
#: their highs (see the module docstring).
SAWTOOTH = frozenset({"influxdb", "jaeger"})


def slope_per_hour(points: Sequence[tuple[float, float]]) -> float:
    """The Theil-Sen slope of ``(seconds, value)`` points, per hour (the median of the slopes
    between every two points); 0 for fewer than two. One odd sample moves a least-squares line:
    the fourth soak's brokers read 157-160 MiB of live heap for 55 minutes and 178 at the last
    sample, which least squares called +32 MiB/h, growing; the median of the pairs, +7, flat."""
    pairs = [(v2 - v1) / (t2 - t1) for i, (t1, v1) in enumerate(points)
             for t2, v2 in points[i + 1 :] if t2 != t1]  # fmt: skip
    return median(pairs) * 3600 if pairs else 0.0


def memory_lines(samples: Sequence[Sample]) -> tuple[list[str], list[str], list[str]]:
    """A line per process (what is judged: ``private`` memory or a JVM's ``heap``; first,
    last, median MiB of it, last resident MiB and the second half's slope), the growing ones
    and the filling ones."""
    steady = samples[len(samples) // 2 :] if len(samples) >= 6 else samples[-3:]
    hours = (samples[-1].at_s - samples[0].at_s) / 3600 if samples else 0.0
    names = sorted({name for s in steady for name in s.memory_mib})
    lines, growing, filling = [], [], []
    for name in names:
        measure = _measure(samples, name)
        points = _points(steady, name, measure)
        every = [v for _, v in _points(samples, name, measure)]
        slope, middle = slope_per_hour(_judged(points, measure)), median(v for _, v in points)
        verdict = "flat"
        if name in SAWTOOTH and not _new_high(every, middle):
            pass  # a cycle of its cache: flat
        elif middle > 0 and slope * hours > GROWTH_SHARE * middle:
            first, earlier, latest = _third_slopes(samples, name, measure)
            if first > earlier and latest <= FILLING_RATIO * earlier:
                verdict = "filling"
                filling.append(f"{name} fills: {earlier:+.0f} then {latest:+.0f} MiB/h "
                               f"(median {middle:.0f} MiB {measure})")  # fmt: skip
            else:
                verdict = "GROWING"
                growing.append(f"{name} grows {slope:+.0f} MiB/h (median {middle:.0f} MiB "
                               f"{measure})")  # fmt: skip
        resident = samples[-1].resident_mib.get(name, 0.0)
        lines.append(f"{name:<28} {measure:<7} {every[0]:>8.0f} {every[-1]:>8.0f} "
                     f"{middle:>8.0f} {resident:>8.0f} {slope:>+9.1f}  {verdict}")  # fmt: skip
    return lines, growing, filling


def _measure(samples: Sequence[Sample], name: str) -> str:
    """``heap`` when every sample of ``name`` read a JVM's heap, else ``private``."""
    seen = [s for s in samples if name in s.memory_mib]
    return "heap" if seen and all(name in s.heap_mib for s in seen) else "private"


def _points(samples: Sequence[Sample], name: str, measure: str) -> list[tuple[float, float]]:
    if measure == "heap":
        return [(s.at_s, s.heap_mib[name]) for s in samples if name in s.heap_mib]
    return [(s.at_s, s.memory_mib[name]) for s in samples if name in s.memory_mib]


def _new_high(values: list[float], middle: float) -> bool:
    """Whether the last third of ``values`` rose more than GROWTH_SHARE of ``middle`` above the
    highest value before it (a SAWTOOTH server's leak; too few values count as one)."""
    third = len(values) // 3
    if third < 2:
        return True
    return max(values[-third:]) > max(values[:-third]) + GROWTH_SHARE * middle


def _judged(points: list[tuple[float, float]], measure: str) -> list[tuple[float, float]]:
    """What a slope is taken of: private memory as read; a JVM's live heap by its floor, the
    lower of each two consecutive readings (at the later one's time; see the module docstring)."""
    if measure != "heap" or len(points) < 3:
        return points
    return [(t2, min(v1, v2)) for (_, v1), (t2, v2) in pairwise(points)]


def _third_slopes(samples: Sequence[Sample], name: str, measure: str) -> tuple[float, float, float]:
    """The slopes of ``name``'s ``measure`` over the first, middle and last thirds, per hour."""
    third = max(2, len(samples) // 3)
    thirds = samples[: -2 * third], samples[-2 * third : -third], samples[-third:]
    first, middle, last = (
        slope_per_hour(_judged(_points(part, name, measure), measure)) for part in thirds
    )
    return first, middle, last


def series_verdict(samples: Sequence[Sample]) -> tuple[str, bool]:
    """InfluxDB's series at the first sample, half time and the last, and whether the second
    half kept them flat (no verdict, and flat, when they were never read)."""
    counts = [s.series for s in samples if s.series is not None]
    if len(counts) < 2:
        return "InfluxDB series not read", True
    half = counts[(len(counts) - 1) // 2]
    flat = counts[-1] - half <= max(5, SERIES_SLACK * half)
    return f"InfluxDB series {counts[0]} at first, {half} at half time, {counts[-1]} last", flat


def cpu_lines(samples: Sequence[Sample]) -> list[str]:
    """Cores each process used between the first and the last sample (what three brokers,
    ingest and each detector cost at the soak's rate), busiest first."""
    if len(samples) < 2:
        return []
    first, last = samples[0], samples[-1]
    seconds = last.at_s - first.at_s
    used = {name: (cpu - first.cpu_s.get(name, 0.0)) / seconds
            for name, cpu in last.cpu_s.items() if seconds > 0}  # fmt: skip
    ranked = sorted(used.items(), key=lambda item: -item[1])
    total = sum(used.values())
    return [f"{name:<28} {cores:>5.2f} cores" for name, cores in ranked] + [
        f"{'all':<28} {total:>5.2f} cores"
    ]


def lag_verdict(samples: Sequence[Sample], rate: float) -> tuple[str, bool]:
    """The total lag (groups and ingest's backlog) of the first and last thirds, and whether
    it stayed flat."""
    totals = [sum(s.lag.values()) + max(s.ingest_backlog, 0) for s in samples]
    third = max(1, len(totals) // 3)
    first, last = totals[:third], totals[-third:]
    early, late = sum(first) / len(first), sum(last) / len(last)
    flat = late <= early + LAG_SLACK_S * rate
    return f"lag (records, all groups + ingest) first third {early:.0f}, last {late:.0f}", flat


def sample_line(sample: Sample) -> str:
    """One row of the per-interval table."""
    tail = sample.tail
    p99 = f"{tail.p99_ms:.0f}" if tail.p99_ms is not None else "-"
    worst = f"{tail.max_ms:.0f}" if tail.max_ms is not None else "-"
    memory = sum(sample.memory_mib.values())
    return (f"{sample.at_s / 60:>6.1f} min  {memory:>8.0f} MiB  lag {sum(sample.lag.values()):>8} "
            f"backlog {sample.ingest_backlog:>8}  alerts {tail.count:>6}  raw->alert p99 {p99:>6} "
            f"ms max {worst:>6} ms")  # fmt: skip
