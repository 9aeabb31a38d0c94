"""TLS for the secure broker's client listener: a certificate authority made on this machine and
the broker's certificate signed by it, so logins and records never cross the wire in the clear.

Both are made once per MESH_HOME with the ``openssl`` command (the only tool that needs to be
there; a clear error says how to get it) and kept until 30 days before they run out:

* ``$MESH_HOME/secrets/ca.pem``: the CA's certificate, what every client trusts
  (:func:`shared.kafka.security.trusted_ca` finds it); its key ``ca.key`` beside it (0600), used
  only to sign the broker's certificate;
* ``<broker folder>/tls/broker.pem``: the broker's key (PKCS#8) and certificate chain, 0600, in
  the PEM keystore form Kafka reads since 2.7 (KIP-651).

The broker's certificate names ``IP:127.0.0.1``, ``DNS:localhost`` and the advertised host:
librdkafka and the Java client both check the name (``ssl.endpoint.identification.algorithm``
is ``https`` by default), and the broker itself connects to its own listener as a client.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from shared.errors import MeshError

#: Days the local CA and the broker's certificate are valid (a new MESH_HOME makes new ones).
CA_DAYS, BROKER_DAYS = 3650, 825


@dataclass(frozen=True)
class BrokerTls:
    #: the CA certificate clients (and the broker, as its own client) trust
    ca: Path
    #: the broker's key and certificate chain (PEM keystore)
    keystore: Path

    def properties(self) -> dict[str, str]:
        """The broker's TLS keys (its only TLS listener is the client one, so unprefixed)."""
        return {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(self.keystore),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.ca),
            "ssl.client.auth": "none",  # clients prove who they are with SCRAM, not certificates
            "ssl.enabled.protocols": "TLSv1.3,TLSv1.2",
        }


def ensure_broker_tls(ca: Path, broker_dir: Path, hosts: list[str]) -> BrokerTls:
    """The CA at ``ca`` (``shared.kafka.security.ca_file``) and the broker's keystore in
    ``broker_dir``: those there, or new ones. A keystore whose certificate lacks one of ``hosts``
    is made again."""
    keystore = broker_dir / "tls" / "broker.pem"
    names = sorted({"127.0.0.1", "localhost", *hosts})
    if not ca.exists() or _expires_soon(ca):
        _make_ca(ca)
    # What the keystore was made for: its names and the CA that signed it (a CA made again, say
    # after secrets/ was removed, must not leave a certificate no client can verify).
    wanted = [hashlib.sha256(ca.read_bytes()).hexdigest(), *names]
    stamp = keystore.with_suffix(".made-for")
    if (not keystore.exists() or not stamp.exists() or stamp.read_text().split() != wanted
            or _expires_soon(keystore)):  # fmt: skip
        _make_broker_keystore(ca, keystore, names)
        stamp.write_text(" ".join(wanted) + "\n")
    return BrokerTls(ca, keystore)


def _expires_soon(certificate: Path) -> bool:
    """The (first) certificate in ``certificate`` runs out within 30 days: time for a new one."""
    return _openssl("x509", "-checkend", str(30 * 86400), "-noout", "-in", str(certificate),
                    may_fail=True) != 0  # fmt: skip


def _make_ca(ca: Path) -> None:
    ca.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = ca.with_suffix(".key")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
             "-out", str(ca), "-days", str(CA_DAYS), "-subj", "/CN=Detector Mesh local CA",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign")  # fmt: skip
    key.chmod(0o600)


def _make_broker_keystore(ca: Path, keystore: Path, names: list[str]) -> None:
    keystore.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    alt = ",".join(f"IP:{n}" if _is_ip(n) else f"DNS:{n}" for n in names)
    with tempfile.TemporaryDirectory(dir=keystore.parent) as scratch:
        key, request, cert = (Path(scratch) / n for n in ("broker.key", "broker.csr", "broker.crt"))
        extensions = Path(scratch) / "ext.cnf"
        extensions.write_text(f"subjectAltName={alt}\nextendedKeyUsage=serverAuth\n"
                              "keyUsage=critical,digitalSignature,keyEncipherment\n")  # fmt: skip
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                 str(request), "-subj", "/CN=detector-mesh-broker")  # fmt: skip
        _openssl("x509", "-req", "-in", str(request), "-CA", str(ca), "-CAkey",
                 str(ca.with_suffix(".key")), "-CAcreateserial", "-out", str(cert), "-days",
                 str(BROKER_DAYS), "-extfile", str(extensions))  # fmt: skip
        descriptor = os.open(keystore, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as out:
            out.write(key.read_text() + cert.read_text() + ca.read_text())
    keystore.chmod(0o600)
    ca.with_suffix(".srl").unlink(missing_ok=True)


def _openssl(*arguments: str, may_fail: bool = False) -> int:
    """Run ``openssl ARGUMENTS``; its exit code if ``may_fail``, else a failure is one line."""
    if shutil.which("openssl") is None:
        raise MeshError("a secure broker needs the `openssl` command to make its TLS "
                        "certificates: install it (as root: apt-get install openssl)")  # fmt: skip
    done = subprocess.run(["openssl", *arguments], capture_output=True, text=True)
    if done.returncode != 0 and not may_fail:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        raise MeshError(f"openssl {arguments[0]} failed making the broker's TLS files: {last}")
    return done.returncode


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True
