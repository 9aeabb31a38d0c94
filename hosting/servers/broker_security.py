"""The local broker's secure mode: no listener takes an anonymous client.

Two listeners, both SASL on 127.0.0.1 (verified on Kafka 4.1 here; docs/security.md):

* **CLIENT** (the broker's port): SCRAM-SHA-512 only, over TLS (SASL_SSL) with a certificate
  signed by a CA made for this MESH_HOME (:mod:`hosting.servers.broker_tls`). Every client logs
  in as its principal; the ``StandardAuthorizer`` allows each only what its ACLs say (no ACL, no
  access). The broker talks to itself over it as ``admin``, the super user whose SCRAM
  credential is written into the metadata log when the storage is formatted (``--add-scram``):
  SCRAM credentials live there, so the first one cannot be created over the wire.
* **CONTROLLER**: PLAIN with a static ``controller`` user (the KRaft quorum must log in before
  the metadata log, and so any SCRAM credential, exists). librdkafka cannot use this listener at
  all; it stays on loopback and its password is random, in the 0600 ``server.properties`` only.

Once formatted secure, a broker folder stays secure: :func:`secure_start` refuses to start it
plain (that would open every topic to anyone) and refuses to make a plain one secure (its admin
credential can only be added at format time).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from hosting.servers.broker_tls import BrokerTls
from shared.errors import MeshError
from shared.kafka.security import ADMIN, MECHANISM, ensure_password, password_file
from shared.settings import Settings

#: In the broker's folder: this broker was formatted secure.
MARKER = "secure"
CONTROLLER = "controller"


class Passwords(NamedTuple):
    admin: str
    controller: str


def secure_start(settings: Settings, broker_dir: Path, formatted: bool) -> bool:
    """Whether the broker in ``broker_dir`` starts secure (see the module doc)."""
    marked = (broker_dir / MARKER).exists()
    if formatted and settings.broker_secure and not marked:
        raise MeshError(
            f"the broker in {broker_dir} was made without security and cannot "
            "be made secure in place: use a fresh MESH_HOME for a secure mesh"
        )
    return marked or settings.broker_secure


def passwords(settings: Settings, broker_dir: Path) -> Passwords:
    """The admin's password (in MESH_HOME/secrets, where clients read it) and the controller's
    (in the broker's folder): the ones already there, or new random ones, files 0600."""
    return Passwords(ensure_password(password_file(settings, ADMIN)),
                     ensure_password(broker_dir / f"{CONTROLLER}.password"))  # fmt: skip


def mark_secure(broker_dir: Path) -> None:
    (broker_dir / MARKER).write_text("formatted with SASL/SCRAM and ACLs; stays secure\n")


def format_arguments(secret: Passwords) -> list[str]:
    """What the storage format adds: the admin's SCRAM credential."""
    return ["--add-scram", f"{MECHANISM}=[name={ADMIN},password={secret.admin}]"]


def secure_properties(
    listen: str, advertised: str, voters: str, port: int | str, controller_port: int | str,
    secret: Passwords, tls: BrokerTls,
) -> dict[str, str]:  # fmt: skip
    """The listener, TLS, login and authorizer keys of a secure broker (they replace the plain
    broker's listener keys); ``voters``: the controller quorum, every node of a cluster."""
    scram = "org.apache.kafka.common.security.scram.ScramLoginModule"
    plain = "org.apache.kafka.common.security.plain.PlainLoginModule"
    return {
        "listeners": f"CLIENT://{listen}:{port},CONTROLLER://{listen}:{controller_port}",
        "advertised.listeners": f"CLIENT://{advertised}:{port}",
        "listener.security.protocol.map": "CLIENT:SASL_SSL,CONTROLLER:SASL_PLAINTEXT",
        "controller.quorum.voters": voters,
        "inter.broker.listener.name": "CLIENT",
        "sasl.mechanism.inter.broker.protocol": MECHANISM,
        "sasl.mechanism.controller.protocol": "PLAIN",
        "sasl.enabled.mechanisms": MECHANISM,
        "listener.name.client.sasl.enabled.mechanisms": MECHANISM,
        "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
        f"listener.name.client.{MECHANISM.lower()}.sasl.jaas.config": (
            f'{scram} required username="{ADMIN}" password="{secret.admin}";'),
        "listener.name.controller.plain.sasl.jaas.config": (
            f'{plain} required username="{CONTROLLER}" password="{secret.controller}" '
            f'user_{CONTROLLER}="{secret.controller}";'),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": f"User:{CONTROLLER};User:{ADMIN}",
        "allow.everyone.if.no.acl.found": "false",
        **tls.properties(),
    }  # fmt: skip
