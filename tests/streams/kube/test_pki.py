"""The control plane's certificates: who the API server will take each client for."""

import ssl

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from streams.kube import pki


def test_clients_carry_user_and_groups_and_chain_to_the_ca(tmp_path):
    files = pki.create(tmp_path, {"admin": ("system:masters",)})
    cert_path, key_path = pki.issue_client(files, "koord-bridge", ("koordstream", "bridges"))
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "koord-bridge"
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == ["koordstream", "bridges"]
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    ca = x509.load_pem_x509_certificate(files.ca.read_bytes())
    cert.verify_directly_issued_by(ca)
    context = ssl.create_default_context(cafile=str(files.ca))
    context.load_cert_chain(str(cert_path), str(key_path))


def test_the_serving_certificate_names_localhost_and_the_loopback_address(tmp_path):
    files = pki.create(tmp_path, {})
    cert = x509.load_pem_x509_certificate(files.serving[0].read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert oct(files.ca_key.stat().st_mode & 0o777) == "0o600"
