"""``mesh up|down|status|describe``: the embedded local mesh as a whole.

The mesh is the broker, the declared topics, InfluxDB (when installed), the ingest job, the
metrics aggregator, the history job, every deployed detector (the reference ones under
detectors/ are deployed by the first ``up``), the autoscaler and the notifier (with the
shipped rules, the loopback webhook receiver they name too). ``mesh status`` lives in
:mod:`control.cli.status`.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from control.cli.arguments import add_wait_options
from control.cli.broker import ensure_broker, node_count, stop_broker
from control.cli.topics import apply_declared
from control.deploy import lifecycle
from control.launch.aggregator import aggregator_process, start_aggregator
from control.launch.autoscaler import autoscaler_process, start_autoscaler
from control.launch.history import history_process, start_history
from control.launch.ingest import ingest_process, start_ingest
from control.launch.notifier import (
    DEMO_RECEIVER_PORT,
    notifier_process,
    received_file,
    receiver_process,
    start_demo_receiver,
    start_notifier,
    uses_shipped_rules,
)
from control.readiness import wait_until_ready
from control.security.logins import local_secure, service_login
from hosting.servers import influx, jaeger_install
from hosting.servers.influx import LocalInflux
from hosting.servers.ports import is_free
from shared.endpoints import resolve_bootstrap
from shared.kafka.inspect import consumer_groups, topic_views
from shared.kafka.security import client_security, local_ca
from shared.kafka.topics import declared_topics
from shared.local_process import stop_strays
from shared.settings import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    up_parser = subparsers.add_parser("up", help="start the local mesh (idempotent)")
    up_parser.add_argument(
        "--secure", action="store_true",
        help="a secure broker (SASL/SCRAM, ACLs) and every service as its own principal; "
        "needs a fresh MESH_HOME, and a broker made secure stays so (docs/security.md)",
    )  # fmt: skip
    up_parser.add_argument(
        "--brokers", type=node_count, metavar="N",
        help="nodes of a new MESH_HOME's local Kafka: 3 for a KRaft cluster that survives "
        "losing one (default MESH_BROKERS, 1; docs/reliability.md)",
    )  # fmt: skip
    add_wait_options(up_parser, until="once everything is started")
    up_parser.set_defaults(handler=up)
    subparsers.add_parser("down", help="stop what `mesh up` started").set_defaults(handler=down)
    subparsers.add_parser("describe", help="the topology: topics and consumer groups").set_defaults(
        handler=describe
    )


def up(args: argparse.Namespace, settings: Settings) -> int:
    if getattr(args, "secure", False):
        settings = replace(settings, broker_secure=True)
    if getattr(args, "brokers", None):
        settings = replace(settings, brokers=args.brokers)
    ensure_broker(settings)
    code = apply_declared(settings)

    if local_secure(settings):
        ca = local_ca(settings)
        over = f"SASL/SCRAM over TLS (the CA: {ca})" if ca else "SASL/SCRAM"
        print(f"secure: every service logs in as its own principal with {over}; passwords in "
              f"{settings.home / 'secrets'}, mode 0600")  # fmt: skip
    _start_influx(settings)
    _start_trace_backend(settings)
    info, started = start_ingest(settings, service_login(settings, "ingest"))
    state = "started" if started else "already running:"
    print(f"{state} ingest pid {info.pid} (log: {settings.home / 'ingest' / 'ingest.log'})")
    _start_aggregator(settings)
    _start_history(settings)
    lifecycle.up(settings)
    info, started = start_autoscaler(settings)
    state = "started" if started else "already running:"
    print(f"{state} autoscaler pid {info.pid} (log: {autoscaler_process(settings).log_file})")
    _start_notifier(settings)
    if args.wait and not wait_until_ready(settings, args.wait_timeout):
        return 1
    return code


def _start_influx(settings: Settings) -> None:
    """The local InfluxDB, unless MESH_INFLUX_URL names one or influxd is not installed."""

    dashboard = "infra/grafana/detector-mesh.json"
    if settings.influx_url:
        print(f"influxdb at {settings.influx_url} (MESH_INFLUX_URL), database {settings.influx_db}")
        return
    if not influx.installed():
        print(
            "influxdb not installed: metrics go to line-protocol files under "
            f"{settings.home / 'metrics'} only (install it as root: make influxdb)"
        )
        return
    url = LocalInflux(settings).start()
    print(f"influxdb {url}, database {settings.influx_db} (Grafana dashboard: {dashboard})")


def _start_trace_backend(settings: Settings) -> None:
    """The local Jaeger when built and no MESH_OTLP_ENDPOINT names a backend (the services
    find it: shared.endpoints.resolve_otlp_endpoint)."""
    from hosting.servers.jaeger import LocalJaeger

    if settings.otlp_endpoint:
        print(f"traces   to {settings.otlp_endpoint} (MESH_OTLP_ENDPOINT)")
        return
    if jaeger_install.installed(settings) is None:
        print("traces   no trace backend built: spans are not exported (make jaeger)")
        return
    info = LocalJaeger(settings).start()
    print(f"jaeger   {info.ui_url} (traces; OTLP at {info.otlp_endpoint})")


def _start_aggregator(settings: Settings) -> None:
    info, started = start_aggregator(settings, service_login(settings, "aggregator"))
    state = "started" if started else "already running:"
    log = aggregator_process(settings).log_file
    print(f"{state} metrics aggregator pid {info.pid} (log: {log})")


def _start_history(settings: Settings) -> None:
    info, started = start_history(settings, service_login(settings, "history"))
    state = "started" if started else "already running:"
    print(f"{state} history pid {info.pid} (log: {history_process(settings).log_file}; "
          "`mesh history` shows what it keeps)")  # fmt: skip


def _start_notifier(settings: Settings) -> None:
    """The notifier, and with the shipped rules the loopback receiver their webhook names."""

    if uses_shipped_rules(settings):
        address = f"127.0.0.1:{DEMO_RECEIVER_PORT}"
        running = receiver_process(settings).running()
        if running is None and not is_free("127.0.0.1", DEMO_RECEIVER_PORT):
            print(f"webhook receiver not started: {address} is in use (another mesh's receiver?); "
                  "the shipped rules' webhook deliveries go to whatever listens there "
                  "(set MESH_NOTIFIER_RULES to send elsewhere)")  # fmt: skip
        else:
            info, started = start_demo_receiver(settings)
            state = "started" if started else "already running:"
            print(f"{state} webhook receiver pid {info.pid} on {address} (the shipped rules' "
                  f"webhook; deliveries in {received_file(settings)})")  # fmt: skip

    info, started = start_notifier(settings, service_login(settings, "notifier"))
    state = "started" if started else "already running:"
    print(f"{state} notifier pid {info.pid} (log: {notifier_process(settings).log_file})")


def down(args: argparse.Namespace, settings: Settings) -> int:
    from hosting.servers.jaeger import LocalJaeger

    stopped = autoscaler_process(settings).stop()  # first: no step may race the detectors' stop
    print(f"stopped autoscaler pid {stopped.pid}" if stopped else "autoscaler was not running")
    lifecycle.down(settings)
    stopped = ingest_process(settings).stop()
    print(f"stopped ingest pid {stopped.pid}" if stopped else "ingest was not running")
    stopped = aggregator_process(settings).stop()
    print(f"stopped aggregator pid {stopped.pid}" if stopped else "aggregator was not running")
    stopped = history_process(settings).stop()
    print(f"stopped history pid {stopped.pid}" if stopped else "history was not running")
    stopped = notifier_process(settings).stop()
    print(f"stopped notifier pid {stopped.pid}" if stopped else "notifier was not running")
    if receiver_process(settings).stop():
        print("stopped the webhook receiver")
    if LocalInflux(settings).stop():
        print("stopped influxdb")
    if LocalJaeger(settings).stop():
        print("stopped jaeger")
    for pid in stop_strays(settings.home):
        print(f"stopped pid {pid}: started by this mesh, but no longer tracked by a pid file")
    stop_broker(settings)
    return 0


def describe(args: argparse.Namespace, settings: Settings) -> int:
    bootstrap = resolve_bootstrap(settings)
    specs = declared_topics(settings)
    live = {v.name: v for v in topic_views(bootstrap, login=client_security(settings))}
    print(f"cluster  {bootstrap}")
    for spec in specs:
        view = live.get(spec.name)
        state = f"{view.partitions} partitions" if view else "MISSING (run `mesh topics apply`)"
        group = f"  co-partitioned: {spec.copartition}" if spec.copartition else ""
        policy = spec.config.get("cleanup.policy", "delete")
        print(f"topic    {spec.name:<24} {state:<16} {policy:<8}{group}")
    for group_id in consumer_groups(bootstrap, login=client_security(settings)):
        print(f"group    {group_id}")
    return 0
