"""The secure broker's TLS files: a local CA, and a broker certificate clients can check."""

from __future__ import annotations

import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from hosting.servers.broker import broker_properties
from hosting.servers.broker_security import Passwords
from hosting.servers.broker_tls import BrokerTls, ensure_broker_tls

needs_openssl = pytest.mark.skipif(
    shutil.which("openssl") is None, reason="makes real certificates with the openssl command"
)


def _certificate_text(keystore: Path) -> str:
    return subprocess.run(["openssl", "x509", "-noout", "-text", "-in", str(keystore)],
                          capture_output=True, text=True, check=True).stdout  # fmt: skip


@needs_openssl
def test_the_broker_certificate_names_loopback_and_is_signed_by_the_local_ca(tmp_path: Path):
    ca = tmp_path / "secrets" / "ca.pem"
    tls = ensure_broker_tls(ca, tmp_path / "broker", ["127.0.0.1"])
    assert stat.S_IMODE(tls.keystore.stat().st_mode) == 0o600
    assert stat.S_IMODE(tls.keystore.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(ca.with_suffix(".key").stat().st_mode) == 0o600
    text = _certificate_text(tls.keystore)
    assert "IP Address:127.0.0.1" in text and "DNS:localhost" in text
    assert "BEGIN PRIVATE KEY" in tls.keystore.read_text()  # PKCS#8, as Kafka's PEM store reads
    verified = subprocess.run(["openssl", "verify", "-CAfile", str(ca), str(tls.keystore)],
                              capture_output=True, text=True)  # fmt: skip
    assert verified.returncode == 0, verified.stderr


@needs_openssl
def test_the_files_are_kept_and_a_new_host_or_a_new_ca_gets_a_new_certificate(tmp_path: Path):
    ca = tmp_path / "secrets" / "ca.pem"
    first = ensure_broker_tls(ca, tmp_path / "broker", ["127.0.0.1"])
    made, authority = first.keystore.read_text(), ca.read_text()
    again = ensure_broker_tls(ca, tmp_path / "broker", ["127.0.0.1"])
    assert (again.keystore.read_text(), ca.read_text()) == (made, authority)
    moved = ensure_broker_tls(ca, tmp_path / "broker", ["broker.local"])
    assert moved.keystore.read_text() != made and ca.read_text() == authority
    assert "DNS:broker.local" in _certificate_text(moved.keystore)
    ca.unlink()  # secrets/ removed: a new CA, and a certificate it signed
    renewed = ensure_broker_tls(ca, tmp_path / "broker", ["broker.local"])
    verified = subprocess.run(["openssl", "verify", "-CAfile", str(ca), str(renewed.keystore)],
                              capture_output=True, text=True)  # fmt: skip
    assert verified.returncode == 0, verified.stderr


def test_a_secure_broker_takes_logins_over_tls_only_and_its_quorum_stays_on_loopback():
    tls = BrokerTls(Path("/home/secrets/ca.pem"), Path("/broker/tls/broker.pem"))
    text = broker_properties("127.0.0.1", 9092, 9093, "/d", secure=Passwords("a", "c"), tls=tls)
    lines = dict(line.split("=", 1) for line in text.splitlines())
    assert lines["listeners"] == "CLIENT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
    assert lines["listener.security.protocol.map"] == "CLIENT:SASL_SSL,CONTROLLER:SASL_PLAINTEXT"
    assert lines["ssl.keystore.type"] == "PEM"
    assert lines["ssl.keystore.location"] == "/broker/tls/broker.pem"
    assert lines["ssl.truststore.location"] == "/home/secrets/ca.pem"
    assert lines["ssl.client.auth"] == "none"  # clients prove who they are with SCRAM


def test_a_secure_broker_without_tls_files_is_refused():
    with pytest.raises(ValueError, match="TLS files"):
        broker_properties("127.0.0.1", 9092, 9093, "/d", secure=Passwords("a", "c"))
