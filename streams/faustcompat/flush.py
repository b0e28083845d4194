"""A flush of Faust's producer buffer that waits until the buffer is empty.

Under at-least-once Faust's consumer flushes the producer before it commits offsets
(``Consumer._commit_offsets``), so that the records an event caused (outputs, table writes) reach the
broker before the event counts as processed. The buffer's flush (``ProducerBuffer.flush_atmost``)
returns as soon as 100 ms pass without a record handed to the driver, and does not count the record
being handed over: under load the offsets were committed ahead of table writes still in the buffer,
and a worker killed then left a changelog without them (found by the kill -9 test: the survivor had
forgotten assignments and overbooked a node).

:func:`install_full_flush` makes the flush wait until no record is waiting or being handed over.
Waiting longer than :data:`STALL_S` without progress raises, so the commit fails rather than getting
ahead. Checked against faust-streaming 0.15.3 (``FAUST_VERSION``).
"""

from __future__ import annotations

import asyncio

STALL_S = 60.0
"""How long a flush waits for the next record to be handed over before it gives up (and so does the
commit that called it)."""

POLL_S = 0.1


def install_full_flush() -> None:
    """Patch Faust's producer buffer (idempotent)."""
    from faust.transport.producer import ProducerBuffer

    if not getattr(ProducerBuffer, "_koord_full_flush", False):
        patch_buffer(ProducerBuffer)


def patch_buffer(cls: type) -> None:
    """Wrap ``_send_pending`` and replace ``flush`` of ``cls``, a class with the interface of Faust's
    ``ProducerBuffer`` (``size``, ``state``, ``message_sent``)."""
    original_send = cls._send_pending

    async def _send_pending(self, fut) -> None:
        self._koord_sending = getattr(self, "_koord_sending", 0) + 1
        try:
            await original_send(self, fut)
        finally:
            self._koord_sending -= 1

    async def flush(self) -> None:
        """Wait until every record put in the buffer has been handed to the driver."""
        loop = asyncio.get_running_loop()
        stalled_at = loop.time() + STALL_S
        while self.size or getattr(self, "_koord_sending", 0):
            if self.state != "running":
                if self.size:
                    raise RuntimeError("Cannot flush: Producer not Running")
                return
            if loop.time() > stalled_at:
                raise RuntimeError(f"producer buffer flush: nothing handed over for {STALL_S:.0f}s, "
                                   f"{self.size} records waiting")
            self.message_sent.clear()
            try:
                await asyncio.wait_for(self.message_sent.wait(), timeout=POLL_S)
                stalled_at = loop.time() + STALL_S
            except asyncio.TimeoutError:
                pass

    cls._send_pending = _send_pending
    cls.flush = flush
    cls._koord_full_flush = True
