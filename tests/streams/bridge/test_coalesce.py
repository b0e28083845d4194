"""``streams.bridge.coalesce``: each HTTP/1.1 request the bridge's client sends is one write, the bytes h11
makes of it, and a request that failed before its end leaves nothing behind."""

from __future__ import annotations

import asyncio

import h11
import httpcore2
import httpx2
from httpcore2._async.http11 import AsyncHTTP11Connection
from httpcore2._backends.mock import AsyncMockBackend, AsyncMockStream

from streams.bridge import coalesce

RESPONSE = [b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n", b"{}"]


class Recording(AsyncMockBackend):
    """httpcore's mock backend, each connection's writes recorded and its canned response read again."""

    def __init__(self) -> None:
        super().__init__([])
        self.writes: list[bytes] = []

    async def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        writes = self.writes

        class Stream(AsyncMockStream):
            async def write(self, buffer, timeout=None):
                writes.append(bytes(buffer))

            async def read(self, max_bytes, timeout=None):
                if not self._buffer:
                    self._buffer.extend(RESPONSE)
                return await super().read(max_bytes, timeout)

        return Stream([])


def _parsed(data: bytes) -> list:
    server = h11.Connection(h11.SERVER)
    server.receive_data(data)
    events = []
    while (event := server.next_event()) not in (h11.NEED_DATA, h11.PAUSED):
        events.append(event)
    return events


def test_the_installed_httpcore_is_the_one_the_patch_was_checked_against():
    assert httpcore2.__version__ == coalesce.HTTPCORE_VERSION


def test_a_request_with_a_body_and_one_without_are_one_write_each():
    coalesce.install()
    backend = Recording()

    async def main():
        async with httpx2.AsyncClient(base_url="http://api") as client:
            client._transport._pool = httpcore2.AsyncConnectionPool(network_backend=backend)
            await client.post("/api/v1/namespaces/default/pods/a/binding", content=b'{"target": "n1"}',
                              headers={"Content-Type": "application/json"})
            await client.get("/api/v1/nodes")

    asyncio.run(main())
    assert len(backend.writes) == 2
    post, get = (_parsed(write) for write in backend.writes)
    assert [type(event) for event in post] == [h11.Request, h11.Data, h11.EndOfMessage]
    assert post[0].method == b"POST" and post[1].data == b'{"target": "n1"}'
    assert [type(event) for event in get] == [h11.Request, h11.EndOfMessage] and get[0].target == b"/api/v1/nodes"


def test_bytes_held_by_a_request_that_failed_are_not_sent_with_the_next():
    coalesce.install()

    class Stream:
        def __init__(self):
            self.writes = []

        async def write(self, data, timeout=None):
            self.writes.append(data)

    connection = AsyncHTTP11Connection.__new__(AsyncHTTP11Connection)
    connection._h11_state = h11.Connection(h11.CLIENT)
    connection._network_stream = Stream()
    request = h11.Request(method="POST", target="/a", headers=[("Host", "api"), ("Content-Length", "2")])
    asyncio.run(connection._send_event(request))
    connection._h11_state = h11.Connection(h11.CLIENT)
    asyncio.run(connection._send_event(h11.Request(method="GET", target="/b", headers=[("Host", "api")])))
    asyncio.run(connection._send_event(h11.EndOfMessage()))
    [(only)] = connection._network_stream.writes
    assert only.startswith(b"GET /b ")
