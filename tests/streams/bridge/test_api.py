"""``streams.bridge.api.KubeApi`` over aiohttp, against a local HTTP server: a watch's events split anywhere
across chunks (one far past aiohttp's 64 KiB line buffer), credentials asked again after a 401 (a rotated
token file), API errors named by verb and resource, a server that is not there as a TransportError, and the
environment's proxy."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from streams.bridge.api import ApiError, KubeApi, TransportError
from streams.bridge.resources import WatchedResource

NODES = WatchedResource("Node", "", "v1", "nodes")
BIG = "x" * 300_000


def _kubeconfig(tmp_path, port: int):
    token = tmp_path / "token"
    token.write_text("old\n")
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "test",
        "clusters": [{"name": "test", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "test", "user": {"tokenFile": str(token)}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}]}))
    return path, token


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.asynccontextmanager
async def _serving(app: web.Application, port: int, kubeconfig) -> AsyncIterator[KubeApi]:
    """``app`` served on ``port``, and a KubeApi of ``kubeconfig``; both closed after."""
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    api = KubeApi(kubeconfig, None)
    try:
        yield api
    finally:
        await api.close()
        await runner.cleanup()


async def _watch(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse()
    await response.prepare(request)
    events = b"".join(json.dumps(event).encode() + b"\n" for event in (
        {"type": "ADDED", "object": {"metadata": {"name": "n1", "annotations": {"big": BIG}}}},
        {"type": "MODIFIED", "object": {"metadata": {"name": "n2"}}},
        {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}}))
    for start in range(0, len(events), 7_777):
        await response.write(events[start:start + 7_777])
    await response.write_eof()
    return response


def _binding(bodies: list):
    async def handle(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != "Bearer new":
            return web.json_response({"kind": "Status", "message": "Unauthorized"}, status=401)
        bodies.append(await request.json())
        return web.json_response({"kind": "Status", "status": "Success"}, status=201)
    return handle


async def _missing(request: web.Request) -> web.Response:
    return web.json_response({"kind": "Status", "message": 'pods "p" not found'}, status=404)


def test_watch_events_rotated_credentials_and_errors(tmp_path):
    port = _free_port()
    path, token = _kubeconfig(tmp_path, port)

    async def main():
        app, bodies = web.Application(), []
        app.router.add_get("/api/v1/nodes", _watch)
        app.router.add_post("/api/v1/namespaces/default/pods/p/binding", _binding(bodies))
        app.router.add_get("/api/v1/namespaces/default/pods/p", _missing)
        async with _serving(app, port, path) as api:
            events = [(kind, obj["metadata"].get("name")) async for kind, obj in api.watch(NODES, "1")]
            token.write_text("new\n")
            created = await api.call("create", "pods/binding", "POST", "/api/v1/namespaces/default/pods/p/binding",
                                     {"target": {"name": "n1"}})
            with pytest.raises(ApiError) as missing:
                await api.call("get", "pods", "GET", "/api/v1/namespaces/default/pods/p")
            return events, created, bodies, missing.value

    events, created, bodies, missing = asyncio.run(main())
    assert events == [("ADDED", "n1"), ("MODIFIED", "n2"), ("BOOKMARK", None)]
    assert created == {"kind": "Status", "status": "Success"} and bodies == [{"target": {"name": "n1"}}]
    assert (missing.verb, missing.resource, missing.code, missing.message) == ("get", "pods", 404,
                                                                               'pods "p" not found')


def test_a_server_that_is_not_there_is_a_transport_error(tmp_path):
    path, _ = _kubeconfig(tmp_path, _free_port())

    async def main():
        api = KubeApi(path, None)
        try:
            await api.call("list", "nodes", "GET", "/api/v1/nodes")
        finally:
            await api.close()

    with pytest.raises(TransportError, match="GET /api/v1/nodes: ClientConnectorError"):
        asyncio.run(main())


def test_the_proxy_the_environment_names_is_used(tmp_path, monkeypatch):
    """``HTTP_PROXY`` (looked up once, as aiohttp's ``trust_env`` would per request): the request goes to the
    proxy, which here answers itself."""
    port = _free_port()
    path, _ = _kubeconfig(tmp_path, port)
    path.write_text(path.read_text().replace(f"http://127.0.0.1:{port}", "http://api.invalid:6443"))
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    seen = []

    async def nodes(request: web.Request) -> web.Response:
        seen.append(request.host)
        return web.json_response({"metadata": {"resourceVersion": "5"}, "items": [{"metadata": {"name": "n1"}}]})

    async def main():
        app = web.Application()
        app.router.add_get("/api/v1/nodes", nodes)
        async with _serving(app, port, path) as api:
            return await api.list(NODES, 500)

    assert asyncio.run(main()) == ([{"metadata": {"name": "n1"}}], "5")
    assert [host.split(":")[0] for host in seen] == ["api.invalid"]
