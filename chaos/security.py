"""Case 14: a secure mesh refuses what it should and runs the normal path.

On a secure Kafka of its own (SASL/SCRAM over TLS, ACLs, no anonymous listener: one broker in the
short form, a cluster of three in the long one, whose every node shares the first's CA and
passwords and must refuse on its own listener), ``mesh``'s
principal code creates the echo detector's principal from its grants. Then:

* **the normal path once**: the smoke driver (as admin) feeds the echo detector, which runs as
  its own principal; every record must be alerted, as on a plain broker;
* **refusals**, each tried with a real client: a plaintext client; the admin's right login
  without TLS; a TLS client that does not trust the mesh's CA (the system's CAs); a login with
  an unknown
  principal; the echo principal with a wrong password; the echo principal reading another
  detector's input, writing another service's topic, joining another service's group; and a
  detector instance started with a wrong password, which must exit 2 with one line;
* **no secret leaks**: none of the passwords appears in the detector's log and status file, the
  broker's log, or the headers of a dead letter the detector wrote (a poison pill is sent for
  that).

A refusal that does not happen, or a password found where it should not be, fails the case.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from chaos.case_mesh import CaseMesh, stop
from chaos.case_run import CaseRun, Load
from chaos.report import CaseResult
from control.security.grants import detector_grants, detector_principal
from control.security.principals import ensure_principal
from hosting.servers.broker import LocalBroker
from hosting.servers.kafka_cluster import LocalKafka
from hosting.servers.ports import ephemeral_port
from shared.errors import MeshError
from shared.kafka.config import consumer_config, producer_config
from shared.kafka.inspect import group_members
from shared.kafka.security import ADMIN, ca_file, client_security, password_file
from shared.settings import Settings

#: How long a refusal may take to show (librdkafka answers in well under a second here).
REFUSAL_WAIT_S = 10.0
#: How long a metadata request of a refused connection runs: librdkafka waits its whole timeout
#: for metadata that cannot come, though the refusal itself shows in milliseconds here.
METADATA_REFUSAL_S = 3.0


def secure_mesh(settings: Settings, work: Path, short: bool) -> CaseResult:
    # The long form runs on a secure cluster of three (issue 48): every node must refuse, and
    # every node's log must keep the secrets.
    base = replace(settings, home=work / "broker", bootstrap_servers="", broker_secure=True,
                   broker_port=ephemeral_port("127.0.0.1"), brokers=1 if short else 3)  # fmt: skip
    kafka = LocalKafka(base)
    bootstrap, _ = kafka.ensure_started()
    admin = replace(settings, bootstrap_servers=bootstrap, kafka_username=ADMIN,
                    kafka_password_file=password_file(base, ADMIN),
                    kafka_ca_file=ca_file(base))  # fmt: skip
    failures: list[str] = []
    try:
        mesh = CaseMesh.create(admin, work)

        principal = detector_principal(mesh.names, "echo")
        secret = ensure_principal(admin, principal, detector_grants(mesh.names, "echo",
                                                                   ["transactions"]))  # fmt: skip
        echo = replace(admin, kafka_username=principal, kafka_password_file=secret)
        login = {"MESH_KAFKA_USERNAME": principal, "MESH_KAFKA_PASSWORD_FILE": str(secret),
                 "MESH_KAFKA_CA_FILE": str(ca_file(base))}  # fmt: skip
        status = work / "echo-a.status.json"
        with CaseRun(mesh, Load.of(short), poison_every=1000) as run:
            run.instance("a", ["--status-file", str(status)], env=login)
            run.start_load()
            run.sleep_until(0.5)
            mid_run = run.output_so_far() and run.driver.running
            failures += _refusals(bootstrap, echo, mesh, run.notes)
            for node, address in _other_nodes(kafka, bootstrap):
                failures += _transport_refusals(address, echo, run.notes, f"node {node}: ")
            mid_run &= run.finish()
            # The instance is a static member (its --instance-id): it left its group itself,
            # logged in over TLS as its principal (shared/kafka/wire.py), or it would still be
            # listed until its session timed out.
            group = mesh.names.detector_group("echo")
            stop(run.instances["a"])
            left = group_members(bootstrap, group, login=client_security(admin))
            if left:
                failures.append(f"{', '.join(sorted(left))} stayed in {group} after its stop")
            headers = [h for _, h in run.dead_letters.letters]
            nodes = kafka.nodes()
            texts = {"the detector's log": run.instances["a"].log_text(),
                     "its status file": status.read_text() if status.exists() else "",
                     "dead-letter headers": json.dumps(headers)}  # fmt: skip
            for node in nodes:
                texts[f"{node.name}'s log"] = node.log_file.read_text(errors="replace")
            failures += _leaks(
                texts,
                [
                    secret,
                    password_file(base, ADMIN),
                    *_controller_passwords(nodes),
                ],
            )
            if not run.dead_letters.letters:
                failures.append("no dead letter written: their headers were not checked")
    finally:
        kafka.stop()
    return run.result("secure_mesh", recover_s=None, mid_run=mid_run, duplicates_allowed=0,
                      failures=failures)  # fmt: skip


def _controller_passwords(nodes: list[LocalBroker]) -> list[Path]:
    """The controller password file of every node that keeps one (a cluster's nodes share
    the first's)."""
    return [path for node in nodes if (path := node.dir / "controller.password").exists()]


def _other_nodes(kafka: LocalKafka, bootstrap: str) -> list[tuple[int, str]]:
    """Every node but the first of the bootstrap list (which :func:`_refusals` asks): a
    cluster's nodes each have their own listener, and each must refuse on its own."""
    first = bootstrap.split(",")[0].strip()
    return [(state.node, state.address) for state in kafka.states() if state.address != first]


_REFUSALS = ("plaintext client", "a login without TLS", "a CA it does not trust",
             "unknown principal", "wrong password", "another's input",
             "another's topic", "another's group", "a detector with a wrong password")  # fmt: skip


def _refusals(bootstrap: str, echo: Settings, mesh: CaseMesh, notes: list[str]) -> list[str]:
    """Each refusal tried; a line for every one the cluster did not make (and in ``notes``, what
    the client was told for each it did)."""
    names = mesh.names
    wrong = mesh.work / "wrong.password"
    wrong.write_text("not-the-password\n")
    transactions, logins = names.records("transactions"), names.records("logins")
    own_group = names.detector_group("echo")
    stranger = replace(echo, kafka_username="nobody", kafka_password_file=wrong)
    mistyped = replace(echo, kafka_password_file=wrong)
    checks: dict[str, Callable[[], str | None]] = {
        **_transport_checks(bootstrap, echo),
        "unknown principal": lambda: _consume(stranger, transactions, "any"),
        "wrong password": lambda: _consume(mistyped, transactions, own_group),
        "another's input": lambda: _consume(echo, logins, own_group),
        "another's topic": lambda: _produce(echo, names.notifications),
        "another's group": lambda: _consume(echo, transactions, names.notifier_group),
        "a detector with a wrong password": lambda: _detector_refused(mesh, echo, wrong),
    }
    return _tried(checks, _REFUSALS, notes)


_TRANSPORT_REFUSALS = _REFUSALS[:3]


def _tried(
    checks: dict[str, Callable[[], str | None]], order: tuple[str, ...], notes: list[str],
    label: str = "",
) -> list[str]:  # fmt: skip
    """Each check in ``order``: a failure line for every refusal not made, a note for each
    made (what the client was told)."""
    failures = []
    for what in order:
        refusal = checks[what]()
        if refusal is None:
            failures.append(f"{label}{what}: not refused")
        else:
            notes.append(f"{label}{what}: refused ({_short(refusal)})")
    return failures


def _transport_checks(bootstrap: str, echo: Settings) -> dict[str, Callable[[], str | None]]:
    """The refusals of a node's listener itself: no TLS, a login without TLS, an untrusted CA."""
    right = {"bootstrap.servers": bootstrap, **client_security(echo)}
    right.pop("error_cb")  # the refusal is what this asks for, not a raised error
    return {
        "plaintext client": lambda: _metadata({"bootstrap.servers": bootstrap}),
        "a login without TLS": lambda: _metadata(
            {**right, "security.protocol": "SASL_PLAINTEXT"}, because="_TRANSPORT"
        ),
        "a CA it does not trust": lambda: _metadata(
            {**right, "ssl.ca.location": "probe"}, because="certificate verify failed"
        ),
    }


def _transport_refusals(address: str, echo: Settings, notes: list[str], label: str) -> list[str]:
    """The transport refusals tried at one node's address alone."""
    return _tried(_transport_checks(address, echo), _TRANSPORT_REFUSALS, notes, label)


def _short(error: str) -> str:
    """The gist of a client's error: its code, or its first words."""
    if "certificate verify failed" in error:
        return "certificate verify failed"
    for code in ("AUTHORIZATION_FAILED", "_TRANSPORT", "refused the login"):
        if code in error:
            start = error.find("code=")
            return error[start + 5 : error.find(",", start)] if start >= 0 else code.strip("_")
    return error[:80]


def _detector_refused(mesh: CaseMesh, echo: Settings, wrong: Path) -> str | None:
    """What a detector instance started with a wrong password says: it must exit 2 with one
    line naming its principal (no traceback, no hang)."""
    login = {"MESH_KAFKA_USERNAME": echo.kafka_username, "MESH_KAFKA_PASSWORD_FILE": str(wrong),
             "MESH_KAFKA_CA_FILE": str(echo.kafka_ca_file)}  # fmt: skip
    instance = mesh.instance("refused", env=login)
    try:
        code = instance.process.wait(60)
    except subprocess.TimeoutExpired:
        return None
    finally:
        stop(instance)
    said = [line for line in instance.log_text().splitlines() if line.startswith("error:")]
    if code != 2 or "Traceback" in instance.log_text() or len(said) != 1:
        return None
    return said[0] if "refused the login" in said[0] else None


def _metadata(config: dict[str, Any], because: str = "") -> str | None:
    """The error a client gets asking for metadata (with what librdkafka told its error
    callback, where a TLS failure's reason is), or None if it got the metadata or was refused
    for another reason than ``because``."""

    told: list[str] = []
    settings: dict[str, Any] = {**config, "log_level": 0}
    settings["error_cb"] = lambda e: told.append(e.str())
    client = AdminClient(settings)
    try:
        client.list_topics(timeout=METADATA_REFUSAL_S)
    except Exception as error:  # KafkaException: refused
        client.poll(0)  # hands the error callback what is pending
        said = "; ".join([str(error), *dict.fromkeys(told)])
        return said if because in said else None
    return None


def _consume(settings: Settings, topic: str, group: str) -> str | None:
    """The error a consumer gets (a refused login, topic or group), or None if none came."""

    consumer = Consumer(consumer_config(settings, group, log_level=0))
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + REFUSAL_WAIT_S
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is not None:
                return str(message.error())
        return None
    except MeshError as error:  # AuthenticationFailed, raised from the error callback
        return str(error)
    finally:
        consumer.close()


def _produce(settings: Settings, topic: str) -> str | None:
    """The error a delivery gets, or None if the broker took the record."""

    outcome: list[Any] = []
    producer = Producer(producer_config(settings, log_level=0, **{"message.timeout.ms": 10_000}))
    producer.produce(topic, b"not allowed", on_delivery=lambda error, _m: outcome.append(error))
    producer.flush(REFUSAL_WAIT_S + 5)
    return str(outcome[0]) if outcome and outcome[0] is not None else None


def _leaks(texts: dict[str, str], secrets: list[Path]) -> list[str]:
    """A line for every place a password shows up in."""
    found = []
    for secret in secrets:
        password = secret.read_text().strip()
        for where, text in texts.items():
            if password and password in text:
                found.append(f"the password of {secret.stem} is in {where}")
    return found
