"""``cold_start``: what `mesh up` costs until it can alert, with and without the class archives.

Why it is measured: on two cores a cold mesh's JVMs take the whole machine for their first
minutes (loading classes, then compiling), and a feed started when `mesh up` says ready queues
behind that (issue 29, docs/benchmarks.md "The first minutes"). The JVMs' class data sharing
archives (:mod:`shared.class_archive`) cut the loading part; this scenario shows by how much, in
the same run, so the figure is measured rather than assumed.

Each variant starts a private mesh on the run's broker with `mesh up`, exactly as a user does
(its own MESH_HOME and topic prefix; the broker is the run's, so its own archive is not in
these figures), and records: the seconds until `mesh up` said the mesh can alert; each part's
CPU from the command to that moment; each part's CPU over the IDLE_S after it (nothing fed);
and how long `mesh down` took. The variants alternate, archives on first: when the cache holds
no archive for ingest yet, that first run is the one that writes them (its `mesh down` is
longer), and the note says so.
"""

from __future__ import annotations

import time

from bench.private_mesh import private_mesh
from bench.process_cpu import snapshot
from bench.result import Result
from shared.settings import Settings

#: (label, MESH_JVM_CLASS_ARCHIVE), in the order they run.
VARIANTS = (("archives", "true"), ("no archives", "false"), ("archives", "true"))
#: Seconds the ready mesh is watched with nothing fed.
IDLE_S = 60.0
#: The parts named in the note, in this order (the rest are in the result's extra figures).
SHOWN = ("ingest (Spark)", "metrics aggregator (Spark)")


def run_cold_start(settings: Settings) -> list[Result]:
    return [_start_once(settings, label, archives) for label, archives in VARIANTS]


def _start_once(settings: Settings, label: str, archives: str) -> Result:
    writing = archives == "true" and not _has_ingest_archive(settings)
    with private_mesh(settings, "cold", MESH_JVM_CLASS_ARCHIVE=archives) as cold:
        before = snapshot()
        cold.up()
        ready = snapshot()
        time.sleep(IDLE_S)
        idle_end = snapshot()
        down_at = time.monotonic()
        cold.run("down")
        down_s = time.monotonic() - down_at
    up_s = ready.taken_at - before.taken_at
    starting, idle = ready.since(before), idle_end.since(ready)
    idle_s = idle_end.taken_at - ready.taken_at
    shown = ", ".join(
        f"{part.split(' (')[0]} {starting.get(part, 0.0):.0f} s / "
        f"{idle.get(part, 0.0) * 1000 / idle_s:.0f} ms/s"
        for part in SHOWN
    )
    notes = (
        f"ready to alert after {up_s:.0f} s; CPU until ready / idle after: all "
        f"{sum(starting.values()):.0f} s / {sum(idle.values()) * 1000 / idle_s:.0f} ms/s, {shown}; "
        f"mesh down {down_s:.0f} s" + (" (this run wrote the archives)" if writing else "")
    )
    extra = {"mesh_up_s": up_s, "mesh_down_s": down_s, "idle_s": idle_s}
    extra.update({f"cpu_until_ready_s {part}": used for part, used in starting.items()})
    extra.update({f"idle_ms_per_s {part}": used * 1000 / idle_s for part, used in idle.items()})
    return Result(f"cold_start {label}", 0, up_s, notes=notes, extra=extra, paced=True)


def _has_ingest_archive(settings: Settings) -> bool:
    return any((settings.cache / "jvm").glob("detector-mesh-ingest-*.jsa"))
