"""The HTTPS server: real TLS on loopback, AdmissionReviews in, answers and errors out."""

from __future__ import annotations

import asyncio
import http.client
import json
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
