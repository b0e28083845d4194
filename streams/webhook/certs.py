"""The webhook's certificates: a CA of its own and a serving certificate it signs, rotated before expiry.

The API server trusts the webhook through the CA bundle written into the webhook configurations, so the CA
lives long (``CA_VALIDITY``, a year) and is kept across restarts: restarting ``koord webhook`` does not
change the bundle. The serving certificate lives ``SERVING_VALIDITY`` (7 days) for ``localhost``,
``127.0.0.1`` and the Service's DNS names, and is reissued when less than ``ROTATE_BEFORE`` (2 days) of
it remains; ``koord webhook`` checks every ``CHECK_EVERY_S`` (an hour) and reloads it into its TLS
context, so connections opened afterwards get the new one. A CA within ``ROTATE_BEFORE_CA`` (30 days) of
its end is replaced with the serving certificate and the configurations re-registered with the new
bundle. Keys are ECDSA P-256, written 0600 (the shape of ``streams.kube.pki``).
"""

from __future__ import annotations

import dataclasses
import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_VALIDITY = datetime.timedelta(days=365)
SERVING_VALIDITY = datetime.timedelta(days=7)
ROTATE_BEFORE = datetime.timedelta(days=2)
ROTATE_BEFORE_CA = datetime.timedelta(days=30)
CHECK_EVERY_S = 3600.0


@dataclasses.dataclass(frozen=True)
class WebhookCerts:
    directory: Path
    dns_names: tuple[str, ...] = ("localhost",)

    @property
    def ca(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.directory / "ca.key"

    @property
    def serving(self) -> tuple[Path, Path]:
        return self.directory / "tls.crt", self.directory / "tls.key"

    def ca_bundle(self) -> bytes:
        return self.ca.read_bytes()


def service_names(namespace: str, name: str) -> tuple[str, ...]:
    """The DNS names the API server uses for a ``clientConfig.service``."""
    return (name, f"{name}.{namespace}", f"{name}.{namespace}.svc", f"{name}.{namespace}.svc.cluster.local")


def _not_after(path: Path) -> datetime.datetime | None:
    if not path.exists():
        return None
    return x509.load_pem_x509_certificate(path.read_bytes()).not_valid_after_utc


def ensure(certs: WebhookCerts, now: datetime.datetime | None = None) -> set[str]:
    """Create or rotate what is missing or near its end; returns what changed: ``{"ca", "serving"}``."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    certs.directory.mkdir(parents=True, exist_ok=True)
    changed = set()
    ca_end = _not_after(certs.ca)
    if ca_end is None or not certs.ca_key.exists() or ca_end - now < ROTATE_BEFORE_CA:
        _issue_ca(certs, now)
        changed.add("ca")
    serving_end = _not_after(certs.serving[0])
    if "ca" in changed or serving_end is None or serving_end - now < ROTATE_BEFORE or not _covers(certs):
        _issue_serving(certs, now)
        changed.add("serving")
    return changed


def _covers(certs: WebhookCerts) -> bool:
    cert = x509.load_pem_x509_certificate(certs.serving[0].read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return set(certs.dns_names) <= set(names.get_values_for_type(x509.DNSName))


def _issue_ca(certs: WebhookCerts, now: datetime.datetime) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "koordstream-webhook-ca")])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + CA_VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    _write(certs.ca, certs.ca_key, cert, key)


def _issue_serving(certs: WebhookCerts, now: datetime.datetime) -> None:
    ca = x509.load_pem_x509_certificate(certs.ca.read_bytes())
    ca_key = serialization.load_pem_private_key(certs.ca_key.read_bytes(), password=None)
    key = ec.generate_private_key(ec.SECP256R1())
    sans = [x509.DNSName(n) for n in dict.fromkeys(("localhost",) + certs.dns_names)]
    sans.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    end = min(now + SERVING_VALIDITY, ca.not_valid_after_utc)
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, certs.dns_names[0])]))
            .issuer_name(ca.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .sign(ca_key, hashes.SHA256()))
    _write(*certs.serving, cert, key)


def _write(cert_path: Path, key_path: Path, cert: x509.Certificate, key) -> None:
    """Key first, then certificate, each through a rename, so a reader never pairs a new cert with an old key
    for long (the TLS context reloads both after ``ensure``)."""
    for path, data in ((key_path, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                    serialization.NoEncryption())),
                       (cert_path, cert.public_bytes(serialization.Encoding.PEM))):
        temporary = path.with_suffix(path.suffix + ".new")
        temporary.write_bytes(data)
        temporary.chmod(0o600)
        temporary.replace(path)
