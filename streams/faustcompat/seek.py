"""A fix for Faust's seek after a rebalance racing with its own message delivery.

After every rebalance Faust's recovery resumes the stream partitions and then
seeks them to their committed offsets (``Recovery._resume_streams``,
``Recovery.on_recovery_completed``). The consumer's flow is already active
then (table recovery resumed it), so the background loop that hands fetched
records to the streams (``Consumer._drain_messages``) keeps going while the
seek runs. Records fetched from the old position are still delivered after
the seek, and the loop records their offsets as read:

- a partition kept across the rebalance had its records processed out of
  order (a later record first, the earlier ones when re-read);
- records between the committed offset and a stale one were dropped as
  already read ("DROPPED MESSAGE ROFF") or marked as a gap and committed
  without being processed.

Found by the kill -9 test (``tests/integration/test_crash.py``): a router
forwarded a pod before its predecessors, and a scheduling worker skipped
inbox records, which left pods undecided and made replay diverge.

:func:`install_faust_seek_fix` makes a seek with an active flow stop the flow
first, wait until the delivery loop has handed over its last record, drop
what the streams' buffers hold (it is read again from the committed offsets),
seek, and resume. Faust's own callers resume the flow right after the seek,
so nothing else changes.

A partition the group has never committed is not moved by the seek (aiokafka
seeks only to committed offsets), so what was dropped from the buffers would
never be read again: the fix rewinds such stream partitions to their first
offset, which is where ``consumer_auto_offset_reset="earliest"`` starts them.
Found by the kill -9 and ``koord up`` restart tests on both brokers: a worker
that took over forwarded nothing from the pods partitions that had no
committed offset yet.

The rewind sets their positions to offset 0 and asks the broker nothing: a log
that no longer starts there answers the next fetch with OFFSET_OUT_OF_RANGE,
and aiokafka moves the position to the log's first offset by the same
``earliest`` policy. Asking first (``seek_to_beginning``, or a ListOffsets)
waited behind the fetch in flight on the same connection, which Kafka answers
only when records come or Faust's 1.5 s fetch wait runs out: a restarted worker
spent about 1 s there before it was ready. Checked against faust-streaming
0.15.3 (``FAUST_VERSION``) and aiokafka 0.14, which drops the answer of a fetch
made for a position moved meanwhile (``Fetcher._proc_fetch_request``).
"""

from __future__ import annotations

import asyncio
import logging

from aiokafka.structs import TopicPartition

DRAIN_POLL_S = 0.005
"""How often the seek checks whether the delivery loop has stopped; it stops after the record
it is handing over, or at once if it is waiting for a fetch."""

DRAIN_WAIT_MAX_S = 5.0
"""Seek anyway, as unpatched Faust does, if the delivery loop has not stopped by then: it is then
not running at all (Faust stops its fetcher only when the worker stops)."""

log = logging.getLogger(__name__)


def install_faust_seek_fix() -> None:
    """Patch Faust's consumer (idempotent)."""
    from faust.transport.consumer import Consumer

    if not getattr(Consumer, "_koord_seek_fix", False):
        patch_consumer(Consumer)


def patch_consumer(cls: type) -> None:
    """Wrap ``getmany`` and ``perform_seek`` of ``cls``, a class with Faust's consumer interface."""
    original_getmany, original_seek = cls.getmany, cls.perform_seek

    async def getmany(self, timeout: float):
        """Faust's getmany, flagging the consumer while it hands records to the delivery loop."""
        try:
            async for item in original_getmany(self, timeout):
                self._koord_delivering = True
                yield item
        finally:
            self._koord_delivering = False

    async def perform_seek(self) -> None:
        if not self.flow_active:
            await original_seek(self)
            return
        self.stop_flow()
        try:
            deadline = asyncio.get_running_loop().time() + DRAIN_WAIT_MAX_S
            while getattr(self, "_koord_delivering", False):
                if asyncio.get_running_loop().time() > deadline:
                    log.warning("seeking although the delivery loop has not stopped within %.0fs", DRAIN_WAIT_MAX_S)
                    break
                await asyncio.sleep(DRAIN_POLL_S)
            self.app.flow_control.clear()
            await original_seek(self)
            await rewind_uncommitted(self)
        finally:
            self.resume_flow()

    async def rewind_uncommitted(self) -> None:
        """Seek to offset 0, so to their first offset, the stream partitions the seek left alone: those whose
        committed offset is unknown (Faust then sets their read offset to None)."""
        uncommitted = sorted(tp for tp in self.assignment()
                             if self.app.topics.acks_enabled_for(tp.topic) and self._read_offset.get(tp) is None)
        if uncommitted:
            log.info("rewinding %d partitions without a committed offset to their first offset", len(uncommitted))
        for tp in uncommitted:
            self._thread.seek(TopicPartition(tp.topic, tp.partition), 0)

    cls.getmany = getmany
    cls.perform_seek = perform_seek
    cls._koord_seek_fix = True
