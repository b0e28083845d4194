"""The HTTPS admission server: HTTP/1.1 over the standard library's asyncio and ssl.

The API server POSTs an AdmissionReview to ``/mutate`` or ``/validate`` and reads the answer; ``/healthz``
answers ``ok``. It speaks HTTP/1.1 (no h2 is offered in ALPN, so the API server does not use it) with
keep-alive, one request at a time per connection. A body that is not an AdmissionReview gets a 400 with
the reason, a body over ``MAX_BODY`` (the API server's own request limit) a 413; neither stops the server.
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
from collections.abc import Awaitable, Callable

from streams.webhook.review import ClusterView, mutate, validate

log = logging.getLogger(__name__)
MAX_BODY = 3 * 1024 * 1024
"""Bytes: the API server refuses bigger requests, so no AdmissionReview is bigger."""
MAX_HEADER_LINES = 100
IDLE_S = 120.0
"""A connection without a request for this long is closed."""

ROUTES: dict[str, Callable[[dict, ClusterView], dict]] = {"/mutate": mutate, "/validate": validate}
REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 413: "Payload Too Large"}


NamespaceLookup = Callable[[str], Awaitable[None]]
"""Reads a namespace the view lacks into it (one created just before its first pod, not yet watched)."""


async def answer(method: str, path: str, body: bytes, view: ClusterView,
                 lookup: NamespaceLookup | None = None) -> tuple[int, bytes]:
    """(status, JSON body) of one HTTP request."""
    path = path.split("?", 1)[0]
    if path == "/healthz":
        return 200, b"ok"
    handler = ROUTES.get(path)
    if handler is None:
        return 404, json.dumps({"error": f"no route {path}; use /mutate or /validate"}).encode()
    if method != "POST":
        return 405, json.dumps({"error": f"{method} {path}: only POST"}).encode()
    try:
        review = json.loads(body)
        request = review["request"]
        if not isinstance(request, dict):
            raise TypeError("request must be an object")
    except (ValueError, KeyError, TypeError) as error:
        return 400, json.dumps({"error": f"not an AdmissionReview: {error}"}).encode()
    namespace = request.get("namespace")
    if handler is mutate and lookup and isinstance(namespace, str) and namespace and namespace not in view.namespaces:
        await lookup(namespace)
    result = handler(request, view)
    if not result["response"]["allowed"]:
        log.info("refused %s %s %s/%s: %s", request.get("operation"), (request.get("kind") or {}).get("kind"),
                 request.get("namespace") or "", request.get("name") or "", result["response"]["status"]["message"])
    return 200, json.dumps(result).encode()


async def _serve_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, view: ClusterView,
                            lookup: NamespaceLookup | None) -> None:
    try:
        while True:
            line = await asyncio.wait_for(reader.readline(), IDLE_S)
            if not line:
                return
            method, path, *_ = line.decode("latin-1").split(" ") + ["", ""]
            headers: dict[str, str] = {}
            for _ in range(MAX_HEADER_LINES):
                header = await reader.readline()
                if header in (b"\r\n", b"\n", b""):
                    break
                key, _, value = header.decode("latin-1").partition(":")
                headers[key.strip().lower()] = value.strip()
            length = int(headers.get("content-length") or 0)
            if length > MAX_BODY:
                status, body = 413, json.dumps({"error": f"body of {length} bytes is over {MAX_BODY}"}).encode()
                close = True
            else:
                status, body = await answer(method, path, await reader.readexactly(length), view, lookup)
                close = headers.get("connection", "").lower() == "close"
            kind = "text/plain" if body == b"ok" else "application/json"
            writer.write(f"HTTP/1.1 {status} {REASONS[status]}\r\nContent-Type: {kind}\r\n"
                         f"Content-Length: {len(body)}\r\n{'Connection: close' + chr(13) + chr(10) if close else ''}"
                         f"\r\n".encode() + body)
            await writer.drain()
            if close:
                return
    except (asyncio.TimeoutError, asyncio.IncompleteReadError, ConnectionError, ssl.SSLError, ValueError) as error:
        log.debug("connection closed: %s", error)
    except asyncio.CancelledError:
        pass  # the server is stopping: an idle keep-alive connection ends here, not as a logged error
    finally:
        writer.close()


def tls_context(cert: str, key: str) -> ssl.SSLContext:
    """A server context holding the serving pair; ``load_cert_chain`` again to rotate it in place."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["http/1.1"])
    context.load_cert_chain(cert, key)
    return context


async def serve(host: str, port: int, context: ssl.SSLContext, view: ClusterView,
                lookup: NamespaceLookup | None = None) -> asyncio.Server:
    return await asyncio.start_server(lambda r, w: _serve_connection(r, w, view, lookup), host, port, ssl=context)
