"""Certificates of the local control plane, as controller-runtime's envtest makes them (``tinyca.go``).

One ECDSA P-256 CA signs the API server's serving certificate (``localhost`` and ``127.0.0.1``) and the
client certificates, whose common name is the user and whose organisations are the groups: the admin
is in ``system:masters``, which RBAC lets do anything. The service-account signer is a key pair of its
own. Everything is valid for a week; ``koord kube up`` makes a new set each time it starts.
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

VALIDITY = datetime.timedelta(days=7)


@dataclasses.dataclass(frozen=True)
class Pki:
    """Paths of the files :func:`create` writes."""

    directory: Path

    @property
    def ca(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.directory / "ca.key"

    @property
    def serving(self) -> tuple[Path, Path]:
        return self.directory / "apiserver.crt", self.directory / "apiserver.key"

    def client(self, user: str) -> tuple[Path, Path]:
        return self.directory / f"{user}.crt", self.directory / f"{user}.key"

    @property
    def service_account(self) -> tuple[Path, Path]:
        """(public key, private key) of the service-account token signer."""
        return self.directory / "sa.pub", self.directory / "sa.key"


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(path: Path, key) -> None:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    path.chmod(0o600)


def _name(common_name: str, organisations: tuple[str, ...] = ()) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name),
                      *(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organisations)])


def _certificate(subject: x509.Name, public_key, issuer: x509.Name, issuer_key, now: datetime.datetime,
                 extensions: list[tuple[x509.ExtensionType, bool]]) -> x509.Certificate:
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + VALIDITY))
    for extension, critical in extensions:
        builder = builder.add_extension(extension, critical)
    return builder.sign(issuer_key, hashes.SHA256())


def create(directory: Path, clients: dict[str, tuple[str, ...]]) -> Pki:
    """Write a CA, the API server's serving pair, one client pair per ``user -> groups`` (see
    :func:`issue_client`) and the service-account signer into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    pki = Pki(directory)
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, ca_name = _key(), _name("koordstream-kube-ca", ("koordstream",))
    ca = _certificate(ca_name, ca_key.public_key(), ca_name, ca_key, now, [
        (x509.BasicConstraints(ca=True, path_length=None), True),
        (x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                       key_encipherment=False, data_encipherment=False, key_agreement=False,
                       encipher_only=False, decipher_only=False), True)])
    pki.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    _write_key(pki.ca_key, ca_key)

    _leaf(pki, pki.serving, _name("localhost"), ExtendedKeyUsageOID.SERVER_AUTH,
          [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    for user, groups in clients.items():
        issue_client(pki, user, groups)
    signer = _key()
    public, private = pki.service_account
    public.write_bytes(signer.public_key().public_bytes(serialization.Encoding.PEM,
                                                        serialization.PublicFormat.SubjectPublicKeyInfo))
    _write_key(private, signer)
    return pki


def issue_client(pki: Pki, user: str, groups: tuple[str, ...] = ()) -> tuple[Path, Path]:
    """A client certificate and key signed by the CA: the API server authenticates the holder as
    ``user`` in ``groups``."""
    _leaf(pki, pki.client(user), _name(user, groups), ExtendedKeyUsageOID.CLIENT_AUTH)
    return pki.client(user)


def _leaf(pki: Pki, paths: tuple[Path, Path], subject: x509.Name, usage, sans: list | None = None) -> None:
    ca = x509.load_pem_x509_certificate(pki.ca.read_bytes())
    ca_key = serialization.load_pem_private_key(pki.ca_key.read_bytes(), password=None)
    key = _key()
    extensions = [(x509.ExtendedKeyUsage([usage]), False), (x509.BasicConstraints(ca=False, path_length=None), True)]
    if sans:
        extensions.append((x509.SubjectAlternativeName(sans), False))
    cert = _certificate(subject, key.public_key(), ca.subject, ca_key, datetime.datetime.now(datetime.timezone.utc),
                        extensions)
    paths[0].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(paths[1], key)
