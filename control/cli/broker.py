"""``mesh broker start|stop|status``: the local single-node Kafka broker."""

from __future__ import annotations

import argparse

from hosting.servers.broker import LocalBroker
from shared.jar_cache import bundle, fetch
from shared.settings import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("broker", help="start, stop or inspect the local Kafka broker")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    actions.add_parser("start", help="start it (no-op if running)").set_defaults(handler=start)
    actions.add_parser("stop", help="stop the broker mesh started").set_defaults(handler=stop)
    actions.add_parser("status", help="is it running, and where").set_defaults(handler=status)


def ensure_broker(settings: Settings) -> str:
    """The bootstrap address to use, starting the local broker first when none is configured."""
    if settings.uses_external_kafka:
        print(
            f"using Kafka at {settings.bootstrap_servers} (MESH_BOOTSTRAP_SERVERS); nothing started"
        )
        return settings.bootstrap_servers
    fetch(bundle("kafka"), settings)
    info, started = LocalBroker(settings).ensure_started()
    if started:
        moved = (
            "" if info.port == settings.broker_port else f" (port {settings.broker_port} was busy)"
        )
        print(f"started Kafka broker pid {info.pid} on {info.bootstrap}{moved}")
    else:
        print(f"Kafka broker already running: pid {info.pid} on {info.bootstrap}")
    return info.bootstrap


def start(args: argparse.Namespace, settings: Settings) -> int:
    ensure_broker(settings)
    return 0


def stop_broker(settings: Settings) -> None:
    """Stop the local broker if mesh started one; an external cluster is never touched."""
    if settings.uses_external_kafka:
        print("MESH_BOOTSTRAP_SERVERS is set: mesh did not start that Kafka and will not stop it")
        return
    info = LocalBroker(settings).stop()
    print(f"stopped Kafka broker pid {info.pid}" if info else "no local Kafka broker was running")


def stop(args: argparse.Namespace, settings: Settings) -> int:
    stop_broker(settings)
    return 0


def status(args: argparse.Namespace, settings: Settings) -> int:
    if settings.uses_external_kafka:
        print(f"external Kafka: {settings.bootstrap_servers}")
        return 0
    info = LocalBroker(settings).running()
    if info is None:
        print("local Kafka broker: not running (start it with `mesh broker start`)")
        return 1
    print(f"local Kafka broker: running, pid {info.pid}, {info.bootstrap}, data in {settings.home}")
    return 0
