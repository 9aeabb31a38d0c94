"""The notifier as a local mesh service, and the demo's webhook receiver beside it.

The notifier runs as ``python -m services.notifier`` under its own supervisor (restarted with
backoff if it dies; its last error shows in `mesh status`), in a :class:`LocalProcess` called
``notifier``. It resumes from its group's committed offsets and its changelog, so a restart
neither loses nor repeats a delivery beyond the idempotency key.

The shipped rules (``infra/notifier/rules.yaml``) send high-severity alerts to a webhook on
127.0.0.1:8787: `mesh up` starts a receiver there (``python -m tools.webhook_receiver``, which
records each delivery under ``$MESH_HOME/webhook_receiver/``), so the demo ends at a notified
"person". With MESH_NOTIFIER_RULES set to rules of your own, no receiver is started.
"""

from __future__ import annotations

import sys
from pathlib import Path

from control.launch.ingest import service_env
from control.supervised_service import start_supervised
from shared.local_process import LocalProcess, ProcessInfo
from shared.service_files import NOTIFIER, notifier_status_file
from shared.settings import PROJECT_ROOT, Settings

#: The rules the mesh ships, and the port of the receiver their webhook channel names.
SHIPPED_RULES = PROJECT_ROOT / "infra" / "notifier" / "rules.yaml"
DEMO_RECEIVER, DEMO_RECEIVER_PORT = "webhook_receiver", 8787


def notifier_process(settings: Settings) -> LocalProcess:
    return LocalProcess(NOTIFIER, settings.home)


def start_notifier(
    settings: Settings, extra_env: dict[str, str] | None = None
) -> tuple[ProcessInfo, bool]:
    """Start the notifier against the mesh's Kafka (no-op if it runs); (supervisor, started).
    Its name outlives each process, so a restart takes its partitions back at once (a static
    group member, shared/kafka/static_membership.py)."""
    command = [sys.executable, "-m", "services.notifier", "--instance-id", NOTIFIER]
    return start_supervised(notifier_process(settings), command,
                            service_env(settings, extra_env),
                            child_status=notifier_status_file(settings.home))  # fmt: skip


def uses_shipped_rules(settings: Settings) -> bool:
    configured = settings.environment.get("MESH_NOTIFIER_RULES")
    return not configured or Path(configured).resolve() == SHIPPED_RULES.resolve()


def receiver_process(settings: Settings) -> LocalProcess:
    return LocalProcess(DEMO_RECEIVER, settings.home)


def received_file(settings: Settings) -> Path:
    """Where the demo receiver appends each delivery it took (one JSON line each)."""
    return settings.home / DEMO_RECEIVER / "received.jsonl"


def start_demo_receiver(settings: Settings) -> tuple[ProcessInfo, bool]:
    """The loopback receiver the shipped rules' webhook names (no-op if it runs)."""
    port, record = str(DEMO_RECEIVER_PORT), str(received_file(settings))
    command = [sys.executable, "-m", "tools.webhook_receiver", "--port", port, "--record", record]
    return receiver_process(settings).start(command, service_env(settings))
