"""``mesh up|down|status|describe``: the embedded local mesh as a whole.

For now the mesh is the broker and the declared topics; the ingest job, detectors, aggregator and
notifier join ``up``/``down``/``status`` as they are built.
"""

from __future__ import annotations

import argparse

from shared.cli.broker import ensure_broker, stop_broker
from shared.cli.topics import apply_declared
from shared.kafka.broker import LocalBroker
from shared.kafka.config import resolve_bootstrap
from shared.kafka.inspect import consumer_groups, topic_views
from shared.kafka.topics import load_topics
from shared.settings import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    subparsers.add_parser("up", help="start the local mesh (idempotent)").set_defaults(handler=up)
    subparsers.add_parser("down", help="stop what `mesh up` started").set_defaults(handler=down)
    subparsers.add_parser("status", help="services, topics and counts").set_defaults(handler=status)
    subparsers.add_parser("describe", help="the topology: topics and consumer groups").set_defaults(
        handler=describe
    )


def up(args: argparse.Namespace, settings: Settings) -> int:
    ensure_broker(settings)
    code = apply_declared(settings)
    from services.ingest.service import start_ingest

    info, started = start_ingest(settings)
    state = "started" if started else "already running:"
    print(f"{state} ingest pid {info.pid} (log: {settings.home / 'ingest' / 'ingest.log'})")
    from services.detector_runtime.service import detector_manifests, start_detector

    for manifest in detector_manifests():
        instances = start_detector(settings, manifest)
        pids = ", ".join(str(info.pid) for info, _ in instances)
        fresh = sum(started for _, started in instances)
        print(f"detector {manifest.name} v{manifest.version}: {fresh} started, pids {pids}")
    return code


def down(args: argparse.Namespace, settings: Settings) -> int:
    from services.detector_runtime.service import detector_manifests, stop_detector
    from services.ingest.service import ingest_process

    for manifest in detector_manifests():
        for info in stop_detector(settings, manifest):
            print(f"stopped detector {manifest.name} pid {info.pid}")
    stopped = ingest_process(settings).stop()
    print(f"stopped ingest pid {stopped.pid}" if stopped else "ingest was not running")
    stop_broker(settings)
    return 0


def status(args: argparse.Namespace, settings: Settings) -> int:
    if not settings.uses_external_kafka:
        info = LocalBroker(settings).running()
        if info is None:
            print("broker   DOWN   (start the mesh with `mesh up`)")
            return 1
        print(f"broker   UP     pid {info.pid}  {info.bootstrap}")
    _service_line(settings)
    _detector_lines(settings)
    bootstrap = resolve_bootstrap(settings)
    declared = [s.name for s in load_topics(settings.topics_file)]
    for view in topic_views(bootstrap, declared):
        print(
            f"topic    {view.name:<24} {view.partitions:>3} partitions {view.records:>10} records"
        )
    return 0


def _service_line(settings: Settings) -> None:
    """The ingest job: up or down, pid, uptime and its last progress report."""
    import json

    from services.ingest.service import ingest_process

    process = ingest_process(settings)
    info = process.running()
    if info is None:
        last = next(iter(process.tail_log(1)), "")
        print(f"ingest   DOWN   {('last log: ' + last) if last else '(start it with `mesh up`)'}")
        return
    rate = ""
    for line in reversed(process.tail_log(50)):
        if line.startswith("{") and '"ingest-routing"' in line:
            progress = json.loads(line)
            rate = f"  {progress['processed_rows_per_s']} records/s (last batch)"
            break
    print(f"ingest   UP     pid {info.pid}  up {info.uptime_s:.0f} s{rate}")


def _detector_lines(settings: Settings) -> None:
    """Each detector: how many of its replicas run, with their pids."""
    from services.detector_runtime.service import detector_manifests, instance

    for manifest in detector_manifests():
        running = [
            info
            for i in range(manifest.replicas)
            if (info := instance(settings, manifest.name, i).running()) is not None
        ]
        state = "UP  " if len(running) == manifest.replicas else "DOWN" if not running else "PART"
        pids = " ".join(str(info.pid) for info in running)
        print(f"detector {manifest.name:<14} {state}  {len(running)}/{manifest.replicas}  {pids}")


def describe(args: argparse.Namespace, settings: Settings) -> int:
    bootstrap = resolve_bootstrap(settings)
    specs = load_topics(settings.topics_file)
    live = {v.name: v for v in topic_views(bootstrap)}
    print(f"cluster  {bootstrap}")
    for spec in specs:
        view = live.get(spec.name)
        state = f"{view.partitions} partitions" if view else "MISSING (run `mesh topics apply`)"
        group = f"  co-partitioned: {spec.copartition}" if spec.copartition else ""
        policy = spec.config.get("cleanup.policy", "delete")
        print(f"topic    {spec.name:<24} {state:<16} {policy:<8}{group}")
    for group_id in consumer_groups(bootstrap):
        print(f"group    {group_id}")
    return 0
