"""``mesh broker start|stop|status [--node N]``: the local Kafka, one broker or a cluster."""

from __future__ import annotations

import argparse
from dataclasses import replace

from hosting.servers.kafka_cluster import MAX_NODES, LocalKafka
from shared.jar_cache import bundle, fetch
from shared.settings import Settings


def node_count(text: str) -> int:
    """``--brokers N``: a whole number of nodes a local Kafka may have."""
    if not text.isdigit() or not 1 <= int(text) <= MAX_NODES:
        raise argparse.ArgumentTypeError(
            f"give 1 to {MAX_NODES} nodes, not {text!r} (1: the embedded broker; 3: a cluster "
            "that survives losing one)"
        )
    return int(text)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "broker", help="start, stop or inspect the local Kafka (one broker or a cluster's nodes)"
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    for name, handler, text in (
        ("start", start, "start it, or one node (no-op if running)"),
        ("stop", stop, "stop what mesh started, or one node of a cluster"),
        ("status", status, "each node: running or not, where, its pid"),
    ):
        action = actions.add_parser(name, help=text)
        action.add_argument("--node", type=node_count, metavar="N",
                            help="only node N of a local cluster (1..size)")  # fmt: skip
        action.set_defaults(handler=handler)
    actions.choices["start"].add_argument(
        "--brokers", type=node_count, metavar="N",
        help="nodes of a new MESH_HOME's Kafka (default MESH_BROKERS, 1)",
    )  # fmt: skip


def ensure_broker(settings: Settings) -> str:
    """The bootstrap list to use, starting the local Kafka (every node) first when none is
    configured."""
    if settings.uses_external_kafka:
        print(
            f"using Kafka at {settings.bootstrap_servers} (MESH_BOOTSTRAP_SERVERS); nothing started"
        )
        return settings.bootstrap_servers
    fetch(bundle("kafka"), settings)
    kafka = LocalKafka(settings)
    bootstrap, started = kafka.ensure_started()
    size = kafka.size()
    what = "Kafka broker" if size == 1 else f"Kafka cluster of {size} KRaft nodes"
    moved = (
        f" (port {settings.broker_port} was busy)"
        if settings.broker_port and not bootstrap.endswith(f":{settings.broker_port}")
        and size == 1 else ""
    )  # fmt: skip
    if started:
        pids = ", ".join(f"node {s.node} pid {s.info.pid}" for s in started if s.info)
        print(f"started {what} on {bootstrap}{moved} ({pids})")
    else:
        print(f"{what} already running on {bootstrap}")
    return bootstrap


def start(args: argparse.Namespace, settings: Settings) -> int:
    if args.brokers:
        settings = replace(settings, brokers=args.brokers)
    if args.node is None or settings.uses_external_kafka:
        ensure_broker(settings)
        return 0
    fetch(bundle("kafka"), settings)
    info, started = LocalKafka(settings).start_node(args.node)
    print(f"{'started' if started else 'already running:'} Kafka node {args.node} "
          f"pid {info.pid} on {info.bootstrap}")  # fmt: skip
    return 0


def stop_broker(settings: Settings) -> None:
    """Stop the local Kafka if mesh started one; an external cluster is never touched."""
    if settings.uses_external_kafka:
        print("MESH_BOOTSTRAP_SERVERS is set: mesh did not start that Kafka and will not stop it")
        return
    kafka = LocalKafka(settings)
    cluster = kafka.plan is not None
    stopped = kafka.stop()
    for state in stopped:
        what = f"Kafka node {state.node}" if cluster else "Kafka broker"
        print(f"stopped {what} pid {state.info.pid if state.info else '?'} ({state.address})")
    if not stopped:
        print("no local Kafka broker was running")


def stop(args: argparse.Namespace, settings: Settings) -> int:
    if args.node is None or settings.uses_external_kafka:
        stop_broker(settings)
        return 0
    info = LocalKafka(settings).node(args.node).stop()
    print(f"stopped Kafka node {args.node} pid {info.pid}" if info
          else f"Kafka node {args.node} was not running")  # fmt: skip
    return 0


def status(args: argparse.Namespace, settings: Settings) -> int:
    if settings.uses_external_kafka:
        print(f"external Kafka: {settings.bootstrap_servers}")
        return 0
    kafka = LocalKafka(settings)
    if args.node is not None:
        kafka.node(args.node)  # one line when there is no such node
    states = [s for s in kafka.states() if args.node in (None, s.node)]
    if len(states) == 1 and kafka.plan is None:
        info = states[0].info
        if info is None:
            print("local Kafka broker: not running (start it with `mesh broker start`)")
            return 1
        print(f"local Kafka broker: running, pid {info.pid}, {info.bootstrap}, "
              f"data in {settings.home}")  # fmt: skip
        return 0
    for state in states:
        how = (
            f"running, pid {state.info.pid}"
            if state.info
            else (f"NOT RUNNING (bring it back: mesh broker start --node {state.node})")
        )
        print(f"Kafka node {state.node} of {kafka.size()}: {state.address:<21} {how}")
    return 0 if all(s.info for s in states) else 1
