"""``mesh topics apply|list``: the declared topics (infra/topics.yaml) against the cluster."""

from __future__ import annotations

import argparse
from pathlib import Path

from confluent_kafka.admin import AdminClient

from shared.endpoints import resolve_bootstrap
from shared.kafka.apply import Action, Reassign, apply_topics
from shared.kafka.config import admin_config
from shared.kafka.inspect import topic_views
from shared.kafka.reassignment import Plan, request_reassignment, wait_reassigned
from shared.kafka.security import client_security
from shared.kafka.topics import TopicSpec, declared_topics, load_topics, with_prefix
from shared.settings import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("topics", help="apply or list the declared topics")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    apply = actions.add_parser("apply", help="create or update topics to match the declaration")
    apply.add_argument("--file", help="declaration to apply (default: MESH_TOPICS_FILE)")
    apply.add_argument(
        "--raise-replication", action="store_true",
        help="give topics with fewer replicas than declared their missing replicas (a partition "
        "reassignment; waits until they are in sync)",
    )  # fmt: skip
    apply.set_defaults(handler=run_apply)
    actions.add_parser("list", help="declared topics with live partitions and record counts")
    actions.choices["list"].set_defaults(handler=run_list)


def apply_declared(
    settings: Settings, path: str | None = None, raise_replication: bool = False
) -> int:
    """Apply the declaration and print one line per topic; exit 1 when drift remains."""

    source = settings.topics_file if path is None else Path(path)
    # Under the mesh's prefix either way: a private mesh applies its own names.
    specs = with_prefix(load_topics(source), settings.topic_prefix)
    admin = AdminClient(admin_config(settings, log_level=2))
    reassign = _reassigner(settings, admin) if raise_replication else None
    outcomes = apply_topics(admin, specs, reassign=reassign)
    _warn_small_cluster(admin, specs)
    for outcome in outcomes:
        print(outcome.line())
    drift = [o for o in outcomes if o.action is Action.DRIFT]
    if drift:
        print(f"{len(drift)} topic(s) drifted from {source.name}; see above")
        return 1
    return 0


def _warn_small_cluster(admin: AdminClient, specs: list[TopicSpec]) -> None:
    """A cluster of two (or a declaration above the brokers there are) gets less than declared:
    said once, not an error (the embedded single broker is the documented default)."""
    brokers = len(admin.list_topics(timeout=10).brokers)
    asked = max((s.durability.replication for s in specs), default=1)
    if 1 < brokers < asked:
        fitted = specs[0].on_cluster(brokers)
        print(f"warning: this cluster has {brokers} brokers: topics get replication "
              f"{fitted.replication_factor} and min.insync.replicas "
              f"{fitted.config['min.insync.replicas']}, not the declared {asked}; add brokers "
              "for a cluster that keeps every acknowledged record when one is lost")  # fmt: skip


def _reassigner(settings: Settings, admin: AdminClient) -> Reassign:
    bootstrap, login = resolve_bootstrap(settings), client_security(settings)

    def reassign(plan: Plan) -> None:
        print(f"raising replication: {len(plan)} partition(s) get new replicas ...", flush=True)
        request_reassignment(bootstrap, login, plan)
        wait_reassigned(admin, plan, REASSIGN_TIMEOUT_S)

    return reassign


#: How long a raise may take to copy and bring the new replicas in sync (the mesh's topics are
#: small; a production topic's copy can take longer: a later apply goes on where it stopped).
REASSIGN_TIMEOUT_S = 300.0


def run_apply(args: argparse.Namespace, settings: Settings) -> int:
    return apply_declared(settings, args.file, args.raise_replication)


def run_list(args: argparse.Namespace, settings: Settings) -> int:
    specs = declared_topics(settings)
    live = {
        v.name: v for v in topic_views(resolve_bootstrap(settings), login=client_security(settings))
    }
    print(f"{'topic':<24} {'declared':>8} {'live':>5} {'records':>10}  cleanup")
    for spec in specs:
        view = live.get(spec.name)
        partitions = str(view.partitions) if view else "-"
        records = str(view.records) if view else "missing"
        cleanup = spec.config.get("cleanup.policy", "delete")
        print(f"{spec.name:<24} {spec.partitions:>8} {partitions:>5} {records:>10}  {cleanup}")
    return 0
