"""Case 7: an input topic deleted and re-created while its detector runs.

The echo detector reads ``records.transactions``; a first run of records is fed and alerted.
Then the topic is deleted and created again under the same name (``mesh topics apply``), and a
second run, three times as many records as the first, is fed into the new topic at once.

The danger is silence: the consumer's position and the group's committed offsets belong to the
old topic, and a position N on the new topic would skip its first N records without a word once
the new topic holds more than N (or stall, with some librdkafka versions). The instance must
notice (the topic's id changed, KIP-516), say so in its log and status, and read the new topic
from its start: every record of both runs alerted, none skipped.
"""

from __future__ import annotations

import contextlib
import io
import time
from dataclasses import fields
from pathlib import Path

from confluent_kafka.admin import AdminClient

from chaos.case_mesh import CaseMesh, stop
from chaos.case_run import Load
from chaos.offsets import OffsetWatch
from chaos.report import CaseResult
from chaos.smoke import SmokeDriver, SmokeFigures, check
from chaos.tap import AlertTap
from control.cli.topics import apply_declared
from shared.kafka.config import admin_config
from shared.kafka.security import client_security
from shared.settings import Settings

#: How long the topic stays deleted before it is created again.
GONE_S = 3.0
#: What the instance must write when it notices (its log and its status file's last error).
REPORT = "was deleted and re-created"


def topic_recreated(settings: Settings, work: Path, short: bool) -> CaseResult:
    load = Load.of(short)
    first_count = int(load.rate * load.seconds / 4)
    mesh = CaseMesh.create(settings, work)
    status = work / "echo-a.status.json"
    failures: list[str] = []
    tap = AlertTap(mesh.settings, mesh.names.alerts).start()
    first = SmokeDriver(mesh.settings, mesh.source, mesh.run, load.rate)
    second = SmokeDriver(mesh.settings, mesh.source, mesh.run + "x", load.rate)
    group = mesh.names.detector_group("echo")
    watches = [OffsetWatch(settings.bootstrap_servers, group, [mesh.source],
                           client_security(settings)).start()]  # fmt: skip
    instance = mesh.instance("a", extra=["--status-file", str(status)])
    recover = None
    try:
        instance.wait_for_log(f"assigned {mesh.source}[", 60)
        first.fill(first_count)
        mid_run = tap.wait_for(set(first.acknowledged), time.monotonic(), 60) is not None
        watches[0].stop()  # committed offsets of the old topic end here
        _delete(mesh.settings, mesh.source)
        time.sleep(GONE_S)  # as an operator would: deleted now, created again a little later
        with contextlib.redirect_stdout(io.StringIO()):
            apply_declared(mesh.settings)
        recreated_at = time.monotonic()
        watches.append(OffsetWatch(settings.bootstrap_servers, group, [mesh.source],
                                   client_security(settings)).start())  # fmt: skip
        second.fill(3 * first_count)
        recover = tap.wait_for(set(second.acknowledged), recreated_at, 90)
        time.sleep(3)  # duplicates still on their way
        log = instance.log_text()
        if REPORT not in log:
            failures.append(f"the instance never said its input {REPORT}")
        said = status.read_text() if status.exists() else ""
        if REPORT not in said:
            failures.append("the instance's status file does not report the re-created topic")
        if instance.process.poll() is not None:
            failures.append(f"the instance exited (code {instance.process.poll()})")
    finally:
        stop(instance)
        for watch in watches:
            watch.stop()
        tap.stop()
    alerts = tap.in_partition_order()
    figures = _sum(check(first, alerts), check(second, alerts))
    back = [r for w in watches for r in w.regressions]
    notes = [f"{first_count} records before, {3 * first_count} after the topic was re-created",
             f"offsets sampled {sum(w.samples for w in watches)} times (the new topic's from "
             f"scratch); steps back: {back[:3]}"]  # fmt: skip
    regressions = sum(len(w.regressions) for w in watches)
    return CaseResult("topic_recreated", figures, recover, mid_run, 0, regressions, notes,
                      failures)  # fmt: skip


def _delete(settings: Settings, topic: str, timeout_s: float = 30.0) -> None:
    """Delete ``topic`` and wait until the cluster no longer lists it."""

    admin = AdminClient(admin_config(settings, log_level=2))
    for future in admin.delete_topics([topic]).values():
        future.result(timeout_s)
    deadline = time.monotonic() + timeout_s
    while topic in admin.list_topics(timeout=10).topics and time.monotonic() < deadline:
        time.sleep(0.2)


def _sum(a: SmokeFigures, b: SmokeFigures) -> SmokeFigures:
    return SmokeFigures(**{f.name: getattr(a, f.name) + getattr(b, f.name) for f in fields(a)})
