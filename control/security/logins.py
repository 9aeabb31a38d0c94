"""The login each service of the local mesh runs with, when its broker is secure.

``mesh up`` (and ``mesh deploy``) ask here before starting a service: on a secure local broker
the service's principal is made (or brought in line) with its grants, and the service is told
who it is by two environment variables, the principal and the *file* holding its password, and
by a third which CA to trust (the broker takes logins over TLS only). On a
plaintext mesh, or a cluster named by MESH_BOOTSTRAP_SERVERS, nothing is added.
"""

from __future__ import annotations

from collections.abc import Iterable

from control.security import grants
from control.security.principals import ensure_principal
from hosting.servers.broker import LocalBroker
from shared.kafka.security import local_ca
from shared.settings import Settings
from shared.topic_names import TopicNames


def local_secure(settings: Settings) -> bool:
    """The mesh runs on this MESH_HOME's broker, and that broker is secure."""

    return not settings.uses_external_kafka and LocalBroker(settings).secure


def login_env(
    settings: Settings, principal: str, granted: Iterable[grants.Grant]
) -> dict[str, str]:
    """Create ``principal`` with exactly ``granted``; the environment that logs a service in."""
    secret = ensure_principal(settings, principal, granted)
    login = {"MESH_KAFKA_USERNAME": principal, "MESH_KAFKA_PASSWORD_FILE": str(secret)}
    ca = local_ca(settings)
    return login | ({"MESH_KAFKA_CA_FILE": str(ca)} if ca else {})


def service_login(settings: Settings, service: str) -> dict[str, str]:
    """The login of ``ingest``, ``aggregator``, ``notifier`` or ``history``; empty on a
    plaintext mesh."""
    if not local_secure(settings):
        return {}
    names = TopicNames.of(settings)
    principal, granted = {
        "ingest": (grants.ingest_principal(names), grants.ingest_grants(names)),
        "aggregator": (grants.aggregator_principal(names), grants.aggregator_grants(names)),
        "notifier": (grants.notifier_principal(names), grants.notifier_grants(names)),
        "history": (grants.history_principal(names), grants.history_grants(names)),
    }[service]
    return login_env(settings, principal, granted)


def detector_login(settings: Settings, detector: str, inputs: Iterable[str]) -> dict[str, str]:
    """The login of a detector reading ``inputs`` (record types); empty on a plaintext mesh."""
    if not local_secure(settings):
        return {}
    names = TopicNames.of(settings)
    return login_env(settings, grants.detector_principal(names, detector),
                     grants.detector_grants(names, detector, inputs))  # fmt: skip
