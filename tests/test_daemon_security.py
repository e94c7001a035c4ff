"""TLS with client certificates, a password file and an ACL confining the daemon's user."""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import signal
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.harness.broker import Broker
from tests.harness.daemon import DaemonProc, wait_log
from tests.harness.ports import free_port
from tests.harness.watcher import Watcher

_PASSWORD = "s3cret-Pw-9f1c"
_ADMIN_PASSWORD = "adm1n-pw"


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _issue(ca_key: Any, ca_name: Any, cn: str, usage: Any, san: Any = None) -> Any:
    now = dt.datetime.now(dt.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(ca_name)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - dt.timedelta(minutes=5))
               .not_valid_after(now + dt.timedelta(days=2))
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
    if san:
        builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
    return key, builder.sign(ca_key, hashes.SHA256())


def _write_pki(d: Path) -> None:
    """A throwaway CA, a server certificate for 127.0.0.1 and a client certificate."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name("edged-test-ca"))
          .issuer_name(_name("edged-test-ca")).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number())
          .not_valid_before(now - dt.timedelta(minutes=5))
          .not_valid_after(now + dt.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    (d / "ca.crt").write_bytes(ca.public_bytes(pem))
    pairs = {
        "server": _issue(ca_key, ca.subject, "localhost", ExtendedKeyUsageOID.SERVER_AUTH,
                         [x509.DNSName("localhost"),
                          x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
        "client": _issue(ca_key, ca.subject, "edged-client", ExtendedKeyUsageOID.CLIENT_AUTH),
    }
    for name, (key, cert) in pairs.items():
        (d / f"{name}.crt").write_bytes(cert.public_bytes(pem))
        (d / f"{name}.key").write_bytes(key.private_bytes(
            pem, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()))


@pytest.fixture
def secure_broker(tmp_path: Path, unique_prefix: str):
    """mosquitto with TLS (client certificates required), passwords and an ACL that lets
    user `edged` touch only `<prefix>/#` and its two Home Assistant discovery topics."""
    pki = tmp_path / "pki"
    pki.mkdir()
    _write_pki(pki)
    passwd, acl = tmp_path / "passwd", tmp_path / "acl"
    subprocess.run(["mosquitto_passwd", "-c", "-b", str(passwd), "edged", _PASSWORD], check=True)
    subprocess.run(["mosquitto_passwd", "-b", str(passwd), "admin", _ADMIN_PASSWORD], check=True)
    # Beside its prefix, Home Assistant discovery (on by default): its device config, HA's status.
    acl.write_text(f"user edged\ntopic readwrite {unique_prefix}/#\n"
                   "topic write homeassistant/device/test/config\n"
                   "topic read homeassistant/status\n\n"
                   "user admin\ntopic readwrite #\n")
    port = free_port()
    broker = Broker(tmp_path / "broker", (
        f"per_listener_settings false\nallow_anonymous false\npassword_file {passwd}\n"
        f"acl_file {acl}\nlistener {port} 127.0.0.1\ncafile {pki}/ca.crt\n"
        f"certfile {pki}/server.crt\nkeyfile {pki}/server.key\nrequire_certificate true\n"
        "tls_version tlsv1.2\n"), [port]).start()
    broker.pki = pki
    yield broker
    broker.stop()


def _daemon(tmp_path: Path, broker: Broker, prefix: str, voice: Path,
            password: str) -> DaemonProc:
    (tmp_path / "mqtt-password").write_text(password + "\n")
    pki = broker.pki
    return DaemonProc(tmp_path / "d", broker.port, prefix, voice, log_level="debug", mqtt={
        "username": "edged", "password_file": str(tmp_path / "mqtt-password"),
        "tls": {"ca_file": str(pki / "ca.crt"), "cert_file": str(pki / "client.crt"),
                "key_file": str(pki / "client.key")},
    })


def test_daemon_works_over_tls_with_password_inside_its_acl(
        tmp_path: Path, secure_broker: Broker, unique_prefix: str, tiny_voice_path: Path) -> None:
    """Over TLS with a client certificate and a password file, under an ACL limited to its
    prefix, the daemon serves requests; the password shows up in no log and no topic."""
    pki = secure_broker.pki
    w = Watcher(secure_broker.port, unique_prefix, username="admin", password=_ADMIN_PASSWORD,
                tls_ca=pki / "ca.crt", tls_cert=pki / "client.crt", tls_key=pki / "client.key")
    d = _daemon(tmp_path, secure_broker, unique_prefix, tiny_voice_path, _PASSWORD)
    try:
        d.start(w)
        rid = f"tls-{uuid.uuid4().hex[:6]}"
        w.say({"text": "Encrypted hello.", "id": rid})
        assert w.final(rid)["event"] == "finished"
        assert w.audio(rid).payload[:4] == b"RIFF"
        state = w.wait(lambda m: m.topic.endswith("/state")).json()
        assert _PASSWORD not in json.dumps(state)
        d.signal(signal.SIGTERM)
        assert d.wait(10) == 0
        log = d.log_text()
        assert "DEBUG" in log  # the most verbose level was on, and still no secret
        assert _PASSWORD not in log
        assert "refused" not in log.lower()  # every topic it uses is inside its ACL
        assert _PASSWORD not in "".join(m.payload.decode("latin-1") for m in w.messages)
    finally:
        d.stop()
        w.close()


def test_wrong_password_is_reported_and_the_daemon_keeps_trying(
        tmp_path: Path, secure_broker: Broker, unique_prefix: str, tiny_voice_path: Path) -> None:
    """A refused login is logged once, clearly, without the password; the daemon stays up
    (the broker may be fixed) and still stops cleanly."""
    d = _daemon(tmp_path, secure_broker, unique_prefix, tiny_voice_path, "wrong-Pw-77")
    try:
        d.start()
        wait_log(d, "The broker refused the connection: Not authorized")
        assert d.alive()
        d.signal(signal.SIGTERM)
        assert d.wait(10) == 0
        log = d.log_text()
        assert "wrong-Pw-77" not in log
        assert log.count("The broker refused the connection") == 1
    finally:
        d.stop()


def test_wrong_ca_is_reported(tmp_path: Path, secure_broker: Broker, unique_prefix: str,
                              tiny_voice_path: Path) -> None:
    """A server certificate the configured CA does not vouch for is named in the log."""
    d = _daemon(tmp_path, secure_broker, unique_prefix, tiny_voice_path, _PASSWORD)
    other = tmp_path / "other-pki"
    other.mkdir()
    _write_pki(other)
    d.config["mqtt"]["tls"]["ca_file"] = str(other / "ca.crt")
    try:
        d.start()
        wait_log(d, "certificate verify failed")
        assert d.alive()
    finally:
        d.stop()
