"""The webhook's CA and serving certificate: made once, kept, rotated before they end."""

from __future__ import annotations

import datetime
import ssl

from streams.webhook import certs

NOW = datetime.datetime(2026, 11, 29, tzinfo=datetime.timezone.utc)


def test_first_run_makes_both_and_a_second_run_keeps_them(tmp_path):
    paths = certs.WebhookCerts(tmp_path, certs.service_names("koordstream", "koordstream-webhook"))
    assert certs.ensure(paths, NOW) == {"ca", "serving"}
    before = paths.serving[0].read_bytes(), paths.ca.read_bytes()
    assert certs.ensure(paths, NOW + datetime.timedelta(days=4)) == set()
    assert (paths.serving[0].read_bytes(), paths.ca.read_bytes()) == before


def test_the_serving_certificate_is_reissued_two_days_before_its_end_under_the_same_ca(tmp_path):
    paths = certs.WebhookCerts(tmp_path)
    certs.ensure(paths, NOW)
    ca, serving = paths.ca.read_bytes(), paths.serving[0].read_bytes()
    assert certs.ensure(paths, NOW + certs.SERVING_VALIDITY - certs.ROTATE_BEFORE
                        + datetime.timedelta(minutes=1)) == {"serving"}
    assert paths.ca.read_bytes() == ca and paths.serving[0].read_bytes() != serving


def test_a_ca_near_its_end_is_replaced_with_the_serving_certificate(tmp_path):
    paths = certs.WebhookCerts(tmp_path)
    certs.ensure(paths, NOW)
    assert certs.ensure(paths, NOW + certs.CA_VALIDITY - datetime.timedelta(days=29)) == {"ca", "serving"}


def test_the_serving_certificate_verifies_against_the_bundle_for_every_name(tmp_path):
    names = certs.service_names("koordstream", "koordstream-webhook")
    paths = certs.WebhookCerts(tmp_path, ("localhost",) + names)
    certs.ensure(paths)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(*map(str, paths.serving))
    client = ssl.create_default_context(cadata=paths.ca_bundle().decode())
    for name in ("localhost", "koordstream-webhook.koordstream.svc"):
        a, b = ssl.MemoryBIO(), ssl.MemoryBIO()
        c, d = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls_client = client.wrap_bio(a, b, server_hostname=name)
        tls_server = server.wrap_bio(c, d, server_side=True)
        for _ in range(10):
            for side, out, into in ((tls_client, b, c), (tls_server, d, a)):
                try:
                    side.do_handshake()
                except ssl.SSLWantReadError:
                    pass
                into.write(out.read())
        tls_client.do_handshake()
        assert tls_client.getpeercert()["subjectAltName"]
