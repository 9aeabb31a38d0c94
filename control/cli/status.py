"""``mesh status``: every service of the local mesh, each detector replica, and the topics.

Pointed at a container mesh's broker, the same for its containers (:mod:`control.compose_status`).

Per detector: UP / PART / DOWN / STOPPED, replicas running, version, consumer lag of its group and
records/s; per replica: pid, uptime, records/s, CPU seconds and resident memory (measured by the
kernel, see :mod:`shared.process_usage`), restarts, and the last error. A detector whose replicas
are all down says DOWN with the error that took the last one down (seed 002: dead stream threads
went unnoticed for hours). And the live tail: raw record -> alert p50 / p99 / max over the last
minute, from the alerts' lineage headers.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

from control.autoscale.autoscaler import autoscaler_status_file
from control.autoscale.report import autoscale_line
from control.cli.history import records_behind
from control.cli.latency_view import DEFAULT_MINUTES, MAX_MINUTES, print_latency
from control.cluster_status import cluster_lines, kafka_lines
from control.compose_status import ContainerMesh, container_mesh_of, print_container_mesh
from control.deploy.autoscale_choice import effective_policy
from control.deploy.backends import running_replicas, shadow_replicas
from control.deploy.lifecycle import current_instances
from control.deploy.registry import STOPPED, Registry
from control.launch.aggregator import aggregator_process
from control.launch.autoscaler import autoscaler_process
from control.launch.history import history_process
from control.launch.ingest import ingest_process
from control.launch.notifier import notifier_process
from control.supervised_service import supervised_child
from hosting.containers.compose import service_states
from hosting.containers.engine import EngineUnavailable
from hosting.servers import influx, jaeger_install
from hosting.servers.influx import LocalInflux
from hosting.servers.kafka_cluster import LocalKafka, NodeState
from shared.detector import load_manifest
from shared.disk_space import disk_space
from shared.endpoints import resolve_bootstrap
from shared.errors import ConfigError, MeshError
from shared.json_files import read_json
from shared.kafka.inspect import ClusterUnreachableError, group_lag, topic_views
from shared.kafka.recent_latency import recent_alert_latency
from shared.kafka.security import client_security
from shared.kafka.topics import declared_topics
from shared.local_process import LocalProcess, ProcessInfo
from shared.service_files import (
    aggregator_status_file,
    data_loss_text,
    history_checkpoint,
    ingest_mode_file,
    ingest_status_file,
    notifier_status_file,
    notifier_text,
    routing_mode_text,
)
from shared.settings import Settings
from shared.topic_names import TopicNames

if TYPE_CHECKING:
    from control.deploy.instances import InstanceView


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "status", help="services, detector replicas (pid, rate, CPU, memory, lag), topics"
    )
    parser.add_argument("--latency", action="store_true",
                        help="only raw -> alert and raw -> notification p50/p99/max per 5 s "
                             "over the last minutes")  # fmt: skip
    parser.add_argument(
        "--minutes",
        type=_minutes,
        help=f"with --latency: how far back (default {DEFAULT_MINUTES:g})",
    )
    parser.set_defaults(handler=status)


def _minutes(text: str) -> float:
    try:
        minutes = float(text)
    except ValueError:
        minutes = 0.0
    if not 0 < minutes <= MAX_MINUTES:
        raise argparse.ArgumentTypeError(f"give more than 0 and at most {MAX_MINUTES:g} "
                                         f"minutes, not {text!r}")  # fmt: skip
    return minutes


def status(args: argparse.Namespace, settings: Settings) -> int:
    minutes = getattr(args, "minutes", None)
    if getattr(args, "latency", False):
        return _latency_view(settings, DEFAULT_MINUTES if minutes is None else minutes)
    if minutes is not None:
        raise ConfigError("--minutes goes with --latency: mesh status --latency --minutes N")
    _home_line(settings)
    if settings.uses_external_kafka:
        containers = container_mesh_of(settings.bootstrap_servers)
        if containers is not None:
            return _container_mesh_status(settings, containers)
    nodes = _local_nodes(settings)
    if nodes is None:
        return 1
    bootstrap = resolve_bootstrap(settings)
    kafka_lines(settings, bootstrap, nodes)
    _ingest_line(settings)
    _influx_line(settings)
    _aggregator_line(settings)
    _history_line(settings)
    _notifier_line(settings)
    _autoscaler_line(settings)
    _traces_line(settings)
    _detector_lines(settings, bootstrap)
    _latency_line(settings, bootstrap)
    _container_lines()
    _topic_lines(settings, bootstrap)
    return 0


def _local_nodes(settings: Settings) -> list[NodeState] | None:
    """This MESH_HOME's Kafka nodes (none asked of a cluster the mesh did not start); None, and
    said in one line, when no local node runs."""
    if settings.uses_external_kafka:
        return []
    nodes = LocalKafka(settings).states()
    if not any(node.info for node in nodes):
        print("broker   DOWN   (start the mesh with `mesh up`)")
        return None
    return nodes


def _container_mesh_status(settings: Settings, containers: ContainerMesh) -> int:
    """The container mesh whose broker ``settings`` name: its services' containers in the
    lines the local services get, then the detectors deployed here, the tail and the topics."""
    bootstrap = resolve_bootstrap(settings)
    print_container_mesh(containers, lambda group, topics: _lag(settings, bootstrap, group, topics),
                         print)  # fmt: skip
    cluster_lines(settings, bootstrap)  # its nodes and what a lost one left short
    _detector_lines(settings, bootstrap)  # `mesh deploy --backend docker` beside it
    _latency_line(settings, bootstrap)
    _topic_lines(settings, bootstrap)
    return 0


def _topic_lines(settings: Settings, bootstrap: str) -> None:
    declared = [s.name for s in declared_topics(settings)]
    login = client_security(settings)
    for view in topic_views(bootstrap, declared, login=login, skip_offline=True):
        offline = ", ".join(f"{view.name}[{n}]" for n in view.offline)
        print(
            f"topic    {view.name:<24} {view.partitions:>3} partitions {view.records:>10} records"
            + (f" (not counting {offline}: no leader)" if offline else "")
        )


def _latency_view(settings: Settings, minutes: float) -> int:
    """`mesh status --latency` (:mod:`control.cli.latency_view`)."""
    if _local_nodes(settings) is None:
        return 1
    bootstrap = resolve_bootstrap(settings)
    try:
        print_latency(bootstrap, TopicNames.of(settings), client_security(settings), minutes)
    except Exception as exc:  # the cluster, a login: one line, as the status line says it
        print(f"alerts   latency unknown ({_first_line(exc)})")
        return 1
    return 0


def _latency_line(settings: Settings, bootstrap: str) -> None:
    """The live tail: raw record -> alert over the last minute (shared.kafka.recent_latency)."""
    alerts = TopicNames.of(settings).alerts
    try:
        recent = recent_alert_latency(bootstrap, alerts, login=client_security(settings))
    except Exception as exc:  # status goes on without it; say why in one line
        print(f"alerts   latency unknown ({_first_line(exc)})")
        return
    print(f"alerts   {recent.line()}")


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _home_line(settings: Settings) -> None:
    """MESH_HOME's disk: every service's checkpoints, state and log are there, so a full or
    read-only one stops them all, and none of them can say so itself (chaos case 13)."""
    try:
        space = disk_space(settings.home)
    except OSError as error:
        print(f"home     ?      {settings.home}: {error.strerror}")
        return
    advice = f": {space.advice}" if space.advice else ""
    print(f"home     {space.state:<6} {space.text()}{advice}")


def _container_lines() -> None:
    """The services of container meshes (`mesh compose up`, with or without --swarm) on this
    machine's engine, if one answers: where the mesh runs when its processes are not local."""

    try:
        projects = service_states()
    except EngineUnavailable:
        return  # no engine here: no container can be running
    for project, states in sorted(projects.items()):
        for state in states:
            print(f"container {project}/{state.line()}")


def _ingest_line(settings: Settings) -> None:
    """The ingest job: up or down, pid, uptime and its last progress report."""

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
    state, text = _supervised(process, info)
    mode = routing_mode_text(read_json(ingest_mode_file(settings.home)))
    status = read_json(ingest_status_file(settings.home))
    loss = data_loss_text(status)
    extras = "".join(f"  {part}" for part in (mode, rate.strip(), loss) if part)
    print(f"ingest   {state:<6} {text}{extras}")
    _held_back((status or {}).get("waiting"))


def _held_back(waiting: list[str] | None) -> None:
    """What a service holds back for want of a leader, under its line (its status file's
    ``waiting``: the notifier's partitions, a Spark job's queries)."""
    if waiting:
        print(f"  held back: {'; '.join(waiting)}")


def _supervised(process: LocalProcess, info: ProcessInfo) -> tuple[str, str]:
    """(UP or RESTART, "pid P  up U s" plus restarts and the last exit) of a service that runs
    under a supervisor: the pid and uptime are the service's, not the supervisor's."""
    child = supervised_child(process)
    if child is not None and child.state == "backoff":
        return "RESTART", f"restart {child.restarts + 1} soon; last exit: {child.last_exit}"
    if child is None or child.pid is None:  # the supervisor is starting it
        return "UP", f"pid {info.pid}  up {info.uptime_s:.0f} s"
    text = f"pid {child.pid}  up {time.time() - (child.started or info.started):.0f} s"
    if child.restarts:
        text += f"  restarts {child.restarts} (last exit: {child.last_exit})"
    return "UP", text


def _influx_line(settings: Settings) -> None:
    url = LocalInflux(settings).running_url()
    _backend_line(
        "influxdb",
        external=settings.influx_url and f"{settings.influx_url} (MESH_INFLUX_URL)",
        running=url and f"{url}  database {settings.influx_db}",
        installed=influx.installed(),
        missing="not installed: metrics go to files (as root: make influxdb)",
    )


def _traces_line(settings: Settings) -> None:
    from hosting.servers.jaeger import LocalJaeger

    info = LocalJaeger(settings).running()
    _backend_line(
        "jaeger",
        external=settings.otlp_endpoint
        and f"spans to {settings.otlp_endpoint} (MESH_OTLP_ENDPOINT)",
        running=f"{info.ui_url}  (OTLP {info.otlp_endpoint})" if info else None,
        installed=jaeger_install.installed(settings) is not None,
        missing="not built: spans are not exported (make jaeger)",
    )


def _backend_line(
    name: str, *, external: str | None, running: str | None, installed: bool, missing: str
) -> None:
    """One optional backend of the mesh: named by the environment, ours and up, ours but down,
    or not installed at all (then what to run)."""
    if external:
        state, text = "EXTERN", external
    elif running:
        state, text = "UP", running
    elif installed:
        state, text = "DOWN", "(start the mesh with `mesh up`)"
    else:
        state, text = "NONE", missing
    print(f"{name:<8} {state:<6} {text}")


def _supervised_prefix(label: str, process: LocalProcess) -> str | None:
    """``label  UP  pid ...  up ... s`` of a supervised service, or None once its DOWN line is
    printed."""
    info = process.running()
    if info is None:
        print(f"{label:<8} DOWN   (start it with `mesh up`)")
        return None
    state, text = _supervised(process, info)
    return f"{label:<8} {state:<6} {text}"


def _aggregator_line(settings: Settings) -> None:
    """The metrics aggregator: up or down, its throughput, and whether InfluxDB takes its points
    (a down InfluxDB shows here as buffered points and the last error, not as a crash)."""

    up = _supervised_prefix("metrics", aggregator_process(settings))
    if up is None:
        return
    status = read_json(aggregator_status_file(settings.home)) or {}
    figures = (
        f"{status.get('snapshots_in', 0)} snapshots, {status.get('dead_letters', 0)} dead letters,"
        f" {status.get('series', 0)} series"
    )
    influx_sink = status.get("influx")
    if influx_sink is None:
        sink = "files only"
    elif influx_sink.get("healthy"):
        sink = f"influx ok ({influx_sink.get('written', 0)} points)"
    else:
        sink = (
            f"influx FAILING: {influx_sink.get('buffered', 0)} points buffered, "
            f"{influx_sink.get('dropped', 0)} dropped, "
            f"last error: {influx_sink.get('last_error') or '?'}"
        )
    print(f"{up}  {figures}; {sink}")
    _held_back(status.get("waiting"))


def _history_line(settings: Settings) -> None:
    """The history job: up or down, and how many records it is behind the topics."""

    up = _supervised_prefix("history", history_process(settings))
    if up is None:
        return
    print(f"{up}  {records_behind(settings, history_checkpoint(settings.home))}")


def _notifier_line(settings: Settings) -> None:
    """The notifier: up or down, deliveries per channel, duplicates suppressed, what failed."""

    up = _supervised_prefix("notifier", notifier_process(settings))
    if up is None:
        return
    status = read_json(notifier_status_file(settings.home)) or {}
    print(f"{up}  {notifier_text(status)}")
    _held_back(status.get("waiting"))
    if status.get("last_error"):
        print(f"  last error: {status['last_error']}")


def _autoscaler_line(settings: Settings) -> None:
    """The autoscaler: up or down, how many detectors it scales, when it last looked."""
    up = _supervised_prefix("autoscale", autoscaler_process(settings))
    if up is None:
        return
    looked = read_json(autoscaler_status_file(settings.home)) or {}
    scaled = [n for n, v in looked.get("detectors", {}).items() if v.get("autoscale")]
    when = f"last look {time.time() - looked['updated']:.0f} s ago" if looked else "no look yet"
    print(f"{up}  {len(scaled)} detector(s) autoscaled, {when}")


def _detector_lines(settings: Settings, bootstrap: str) -> None:
    looked = read_json(autoscaler_status_file(settings.home)) or {}
    age = time.time() - looked["updated"] if looked else None
    for deployment in Registry(settings.home).all():
        try:
            views = [i.view() for i in current_instances(settings, deployment)]
        except MeshError as error:  # its containers' engine does not answer
            print(f"detector {deployment.name:<14} ?       {deployment.backend}: {error}")
            continue
        alive = [v for v in views if v.alive]
        inputs = load_manifest(Path(deployment.current.path)).inputs
        names = TopicNames.of(settings)
        group = names.detector_group(deployment.name)
        lag = _lag(settings, bootstrap, group, [names.records(t) for t in inputs])
        rate = sum(float(v.report.get("records_per_s", 0.0)) for v in alive)
        if deployment.desired == STOPPED and not alive:
            state = "STOPPED"
        else:
            state = "UP" if len(alive) == len(views) else "DOWN" if not alive else "PART"
        print(
            f"detector {deployment.name:<14} {state:<7} {len(alive)}/{deployment.replicas}  "
            f"v{deployment.current.version}  lag {lag}  {rate:.0f} records/s"
        )
        if deployment.desired != STOPPED:
            look = looked.get("detectors", {}).get(deployment.name) if looked else None
            policy = effective_policy(deployment)
            print("  " + autoscale_line(policy, look, age, settings.autoscale_interval_s))
        if deployment.shadow_release is not None:
            shadows = [i.view() for i in shadow_replicas(settings, deployment)]
            running_s = time.time() - float(deployment.shadow["started"])  # type: ignore[index]
            print(
                f"  shadow v{deployment.shadow_release.version} for {running_s:.0f} s: "
                f"{sum(v.alive for v in shadows)}/{len(shadows)} replica(s); "
                f"`mesh shadow {deployment.name}` compares"
            )
        if state == "DOWN":
            errors = [v.last_error for v in views if v.last_error]
            print(f"  last error: {errors[-1] if errors else 'none recorded (see `mesh logs`)'}")
        shown = {v.process for v in views}
        others = [  # replicas of another release, while a rollout runs
            i.view()
            for i in running_replicas(settings, deployment.backend, deployment.name)
            if i.name not in shown
        ]
        for view in views + others:
            if view.supervisor is None and state == "STOPPED":
                continue
            print("  " + _replica_line(view, deployment.current.seq))


def _lag(settings: Settings, bootstrap: str, group: str, topics: list[str]) -> str:
    """The group's lag, or ``?`` when the coordinator does not answer (a broker still loading
    its groups must not take the whole status down)."""
    try:
        return str(
            group_lag(bootstrap, group, topics, timeout=5, login=client_security(settings)).total
        )
    except ClusterUnreachableError:
        return "?"


def _replica_line(view: InstanceView, current_seq: int) -> str:
    label = f"r{view.seq}-{view.index}" + ("" if view.seq == current_seq else " (old)")
    if not view.alive:
        waiting = " (restarting)" if view.supervisor == "backoff" else ""
        error = f"  last error: {view.last_error}" if view.last_error else ""
        return f"{label:<12} DOWN{waiting}  restarts {view.restarts}{error}"
    usage = view.usage
    assert usage is not None  # alive means its /proc entry was read
    rate = float(view.report.get("records_per_s", 0.0))
    parked = view.report.get("waiting") or []
    held = f"\n{'':<14}held back: {'; '.join(parked)}" if parked else ""
    replayed = int(view.report.get("replayed", 0))  # routed again by a restarted ingest
    again = f"\n{'':<14}{replayed} records routed again by ingest, skipped" if replayed else ""
    return (
        f"{label:<12} pid {view.pid:<7} up {view.uptime_s:>5.0f} s  {rate:>7.0f} records/s  "
        f"records {int(view.report.get('records', 0)):>9}  cpu {usage.cpu_s:>6.1f} s  "
        f"rss {usage.rss_bytes / 2**20:>5.0f} MiB  restarts {view.restarts}{held}{again}"
    )
