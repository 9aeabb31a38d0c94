"""How a client logs in to a secure cluster: SASL/SCRAM with a principal's password read from a
file, over TLS when it trusts a CA (the local secure mesh makes its own), and an authentication
failure turned into one clear error instead of endless retries.

librdkafka reports a refused login only to the ``error_cb`` and then retries for ever, so a
service with a wrong password would hang, looking healthy. ``raise_on_auth_failure`` is installed
as the error callback of every client in a secure mesh: confluent-kafka re-raises what a callback
raises from the next ``poll()``/``consume()``/``flush()``, so the service stops with
:class:`AuthenticationFailed`, a one-line MeshError naming the principal (never the password).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any, NamedTuple

from confluent_kafka import KafkaError

from shared.errors import ConfigError, MeshError
from shared.settings import Settings

MECHANISM = "SCRAM-SHA-512"
#: Without and with TLS (the local secure broker speaks only the second since issue 19).
PROTOCOL, TLS_PROTOCOL = "SASL_PLAINTEXT", "SASL_SSL"
#: The local secure broker's super user, whose password ``mesh`` keeps under MESH_HOME.
ADMIN = "admin"


class AuthenticationFailed(MeshError):
    """The cluster refused this client's login (unknown principal or wrong password)."""


class Credentials(NamedTuple):
    username: str
    password: str


def secrets_dir(settings: Settings) -> Path:
    """Where ``mesh`` keeps the local secure mesh's passwords, one file per principal (0600)."""
    return settings.home / "secrets"


def password_file(settings: Settings, principal: str) -> Path:
    return secrets_dir(settings) / f"{principal}.password"


def ca_file(settings: Settings) -> Path:
    """The local secure mesh's CA certificate, which signed its broker's (not a secret)."""
    return secrets_dir(settings) / "ca.pem"


def local_ca(settings: Settings) -> Path | None:
    """The local secure mesh's CA certificate once its broker made it; None before (a broker
    made secure before TLS, still running, has none and speaks SASL_PLAINTEXT)."""
    ca = ca_file(settings)
    return ca if ca.is_file() else None


def trusted_ca(settings: Settings) -> Path | None:
    """The CA this process trusts for TLS: MESH_KAFKA_CA_FILE; else the local secure mesh's, when
    it logs in to that mesh (as :func:`credentials` decides); else None (no TLS)."""
    if settings.kafka_ca_file is not None:
        if not settings.kafka_ca_file.is_file():
            raise ConfigError(f"MESH_KAFKA_CA_FILE={settings.kafka_ca_file}: no such file (the "
                              "CA certificate, PEM, that signed the cluster's)")  # fmt: skip
        return settings.kafka_ca_file
    if settings.broker_secure or not settings.bootstrap_servers:
        return local_ca(settings)
    return None


def credentials(settings: Settings) -> Credentials | None:
    """Who this process logs in as: MESH_KAFKA_USERNAME with MESH_KAFKA_PASSWORD_FILE; else the
    local secure broker's admin (MESH_BROKER_SECURE, or a secure broker in this MESH_HOME used
    through it, not through MESH_BOOTSTRAP_SERVERS); else nobody (a plaintext cluster)."""
    if settings.kafka_username:
        if settings.kafka_password_file is None:
            raise ConfigError(f"MESH_KAFKA_USERNAME={settings.kafka_username!r} needs "
                              "MESH_KAFKA_PASSWORD_FILE, the file with its password")  # fmt: skip
        return Credentials(settings.kafka_username,
                           _read_password(settings.kafka_password_file,
                                          "MESH_KAFKA_PASSWORD_FILE"))  # fmt: skip
    if settings.broker_secure or (not settings.bootstrap_servers and _local_secure(settings)):
        where = password_file(settings, ADMIN)
        return Credentials(ADMIN, _read_password(where, "the secure broker's admin password"))
    return None


def client_security(settings: Settings) -> dict[str, Any]:
    """The librdkafka settings that log a client in (nothing for a plaintext cluster)."""
    login = credentials(settings)
    return {} if login is None else login_config(login, trusted_ca(settings))


def login_config(login: Credentials, ca: Path | None = None) -> dict[str, Any]:
    """The librdkafka settings that log ``login`` in, over TLS trusting ``ca`` if given."""
    config: dict[str, Any] = {
        "security.protocol": PROTOCOL,
        "sasl.mechanism": MECHANISM,
        "sasl.username": login.username,
        "sasl.password": login.password,
        "error_cb": raise_on_auth_failure(login.username),
    }
    if ca is not None:
        config |= {"security.protocol": TLS_PROTOCOL, "ssl.ca.location": str(ca)}
    return config


def spark_kafka_options(settings: Settings) -> dict[str, str]:
    """The options that log a Spark Kafka source or sink in (client settings prefixed with
    ``kafka.``), over TLS when there is a CA to trust; none for a plaintext cluster. The
    password is in the JAAS line, which Spark redacts where it shows options (its redaction
    pattern matches "password")."""
    login = credentials(settings)
    if login is None:
        return {}
    quoted = login.password.replace("\\", "\\\\").replace('"', '\\"')
    options = {
        "kafka.security.protocol": PROTOCOL,
        "kafka.sasl.mechanism": MECHANISM,
        "kafka.sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{login.username}" password="{quoted}";'
        ),
    }
    ca = trusted_ca(settings)
    if ca is not None:  # the Java client reads a PEM truststore file since Kafka 2.7
        options |= {"kafka.security.protocol": TLS_PROTOCOL,
                    "kafka.ssl.truststore.type": "PEM",
                    "kafka.ssl.truststore.location": str(ca)}  # fmt: skip
    return options


def raise_on_auth_failure(username: str) -> Any:
    """An ``error_cb`` that raises AuthenticationFailed on a refused login and ignores the rest
    (librdkafka's transient errors are retried and logged by librdkafka itself)."""

    def on_error(error: Any) -> None:
        if error.code() == KafkaError._AUTHENTICATION and not interrupted_login(error.str()):
            raise AuthenticationFailed(
                f"Kafka refused the login of principal {username!r} (SASL {MECHANISM}): check "
                "its password file, or ask for the principal to be created (mesh up --secure)"
                f" [{error.str()}]"
            )

    return on_error


def interrupted_login(reason: str) -> bool:
    """Whether an authentication failure is librdkafka's own, not the broker's answer: it
    reports a SASL handshake whose request failed locally (the connection dropped or timed out,
    or the client was closed mid-login) as an authentication failure too, with the local error
    in the text ("... handshake failed: Local: Broker handle destroyed"). Such a login is simply
    retried. A refusal is the broker's ("Authentication failed during authentication due to
    invalid credentials ...") and never says "Local:"."""
    return "Local: " in reason


def ensure_password(path: Path) -> str:
    """The password in ``path``, or a new random one written there first (mode 0600, in a 0700
    folder): how ``mesh`` makes the passwords of the local secure mesh's principals."""
    if path.exists():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    value = secrets.token_urlsafe(24)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(value + "\n")
    return value


def _local_secure(settings: Settings) -> bool:
    """The local broker of this MESH_HOME was made secure (it stays so: docs/security.md)."""
    return password_file(settings, ADMIN).exists()


def unanswered(client: Any, bootstrap: str, error: Any) -> MeshError:
    """The one-line error for a client call that failed with ``error`` (a KafkaException): the
    refused login if that is why (an admin client's error callback runs only when polled, so it
    is polled here), else the cluster not answering."""
    try:
        client.poll(0)
    except AuthenticationFailed as refused:
        return refused
    reason = error.args[0].str() if error.args and hasattr(error.args[0], "str") else str(error)
    return ConfigError(f"Kafka at {bootstrap} did not answer within 10 s ({reason}): is the "
                       "broker up?")  # fmt: skip


def _read_password(path: Path, what: str) -> str:
    try:
        password = path.read_text().strip()
    except OSError as error:
        raise ConfigError(f"cannot read {what} at {path}: {error.strerror}") from None
    if not password:
        raise ConfigError(f"{what} at {path} is empty")
    return password
