"""The HTTPS server: real TLS on loopback, AdmissionReviews in, answers and errors out."""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import ssl

from streams.webhook import certs
from streams.webhook.review import ClusterView
from streams.webhook.server import MAX_BODY, serve, tls_context


def exchange(tmp_path, requests: list[tuple[str, str, bytes, dict]]) -> list[tuple[int, bytes]]:
    """Send ``requests`` over one keep-alive HTTPS connection, verifying the server against the bundle."""
    paths = certs.WebhookCerts(tmp_path)
    certs.ensure(paths)

    async def main():
        server = await serve("127.0.0.1", 0, tls_context(*map(str, paths.serving)), ClusterView())
        port = server.sockets[0].getsockname()[1]

        def client():
            context = ssl.create_default_context(cadata=paths.ca_bundle().decode())
            connection = http.client.HTTPSConnection("localhost", port, context=context, timeout=10)
            answers = []
            for method, path, body, headers in requests:
                connection.request(method, path, body=body, headers=headers)
                response = connection.getresponse()
                answers.append((response.status, response.read()))
                if response.will_close:
                    connection.close()
            connection.close()
            return answers

        try:
            return await asyncio.to_thread(client)
        finally:
            server.close()
            await server.wait_closed()

    return asyncio.run(main())


def review(kind: str) -> bytes:
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": {"uid": "u", "kind": {"kind": kind}, "operation": "CREATE",
                                   "object": {"apiVersion": "v1", "kind": kind, "metadata": {"name": "x"}}}}).encode()


def test_reviews_health_and_bad_requests_over_one_connection(tmp_path):
    answers = exchange(tmp_path, [
        ("GET", "/healthz", b"", {}),
        ("POST", "/validate", review("Secret"), {"Content-Type": "application/json"}),
        ("POST", "/mutate", b"{not json", {}),
        ("POST", "/elsewhere", b"{}", {}),
        ("GET", "/mutate", b"", {}),
    ])
    assert [status for status, _ in answers] == [200, 200, 400, 404, 405]
    assert answers[0][1] == b"ok"
    assert json.loads(answers[1][1])["response"] == {"uid": "u", "allowed": True,
                                                      "warnings": ["koordstream does not validate Secret; allowed"]}
    assert b"not an AdmissionReview" in answers[2][1]


def test_a_body_over_the_limit_is_refused_without_reading_it(tmp_path):
    answers = exchange(tmp_path, [("POST", "/validate", b"", {"Content-Length": str(MAX_BODY + 1)})])
    assert answers[0][0] == 413


def test_a_rotated_serving_certificate_is_served_to_the_next_connection(tmp_path):
    """What ``koord webhook`` does every hour: a serving certificate with a day left is reissued by
    ``certs.ensure`` and swapped into the running server's TLS context by ``load_cert_chain``."""
    import datetime

    from cryptography import x509

    paths = certs.WebhookCerts(tmp_path)
    issued = datetime.datetime.now(datetime.timezone.utc) - certs.SERVING_VALIDITY + datetime.timedelta(days=1)
    certs.ensure(paths, issued)

    async def main():
        context = tls_context(*map(str, paths.serving))
        server = await serve("127.0.0.1", 0, context, ClusterView())
        port = server.sockets[0].getsockname()[1]

        def served_serial() -> int:
            client = ssl.create_default_context(cadata=paths.ca_bundle().decode())
            with client.wrap_socket(socket.create_connection(("127.0.0.1", port)),
                                    server_hostname="localhost") as sock:
                return x509.load_der_x509_certificate(sock.getpeercert(binary_form=True)).serial_number

        try:
            before = await asyncio.to_thread(served_serial)
            assert certs.ensure(paths) == {"serving"}
            context.load_cert_chain(*map(str, paths.serving))
            after = await asyncio.to_thread(served_serial)
        finally:
            server.close()
            await server.wait_closed()
        return before, after

    before, after = asyncio.run(main())
    new = x509.load_pem_x509_certificate(paths.serving[0].read_bytes()).serial_number
    assert before != after == new
