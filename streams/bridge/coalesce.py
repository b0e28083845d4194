"""One socket write per HTTP/1.1 request from the bridge's client.

httpcore writes a request's head, each chunk of its body and its end as separate writes. Over TLS each write
is a TLS record and a ``send(2)``, so a Binding or a status patch cost two. In a profile of ``koord bench
bridge`` the head's write was 10.5 % of the bridge's CPU and the body's 9.4 %. :func:`install` makes an HTTP/1.1
connection keep what it has to send until the request's ``EndOfMessage``, then write it at once. The bridge's
bodies are small JSON documents; a streamed upload would be held whole, and the client sends none.

It replaces ``AsyncHTTP11Connection._send_event``, which only sends a request's events, so the bytes
and their order are h11's as before; a request that failed before its end leaves nothing for the next one
(httpcore closes its connection anyway). Checked against httpcore2 2.16.2 (pinned with httpx2).
"""

from __future__ import annotations

import h11

HTTPCORE_VERSION = "2.16.2"


def install() -> None:
    """Coalesce the writes of every HTTP/1.1 request this process sends (idempotent)."""
    from httpcore2._async.http11 import AsyncHTTP11Connection

    coalesce(AsyncHTTP11Connection)


def coalesce(cls: type) -> None:
    """Make ``cls._send_event`` (httpcore's HTTP/1.1 connection, or a class with its ``_h11_state`` and
    ``_network_stream``) hold a request's bytes until its end."""
    if getattr(cls, "_koord_coalesced", False):
        return

    async def _send_event(self, event: h11.Event, timeout: float | None = None) -> None:
        data = self._h11_state.send(event) or b""
        held = self.__dict__.pop("_koord_held", b"") if not isinstance(event, h11.Request) else b""
        if not isinstance(event, h11.EndOfMessage):
            self._koord_held = held + data
            return
        if held or data:
            await self._network_stream.write(held + data, timeout=timeout)

    cls._send_event = _send_event
    cls._koord_coalesced = True
