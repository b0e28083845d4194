"""Exactly-once on Kafka: a batch's outputs, table writes and consumed offsets in one transaction.

With ``processing_guarantee="exactly_once"`` Faust (faust-streaming 0.15.3, checked against it) reads
``read_committed``, keeps one transactional producer per assigned partition of each topic group
(transactional id ``<app id>-<group>-<partition>``; every 4-partition topic here is one group, so
the router's source partition p, both inboxes' partition p and both changelogs' partition p share one
producer), starts them on assignment (fencing a dead owner's open transaction), and every
``broker_commit_interval`` commits each producer's transaction with the offsets acknowledged on its
partitions. Three things in it do not fit agents that batch and send with ``force=True``:

1. A send joins the transaction of its *destination* partition, looked up in the consumer's metadata.
   Outputs to topics the worker does not consume (decisions, acks, ...) are not in that metadata and
   go out outside any transaction; a forward to an inbox partition another worker owns fails. Here
   every send of an event joins the transaction of the partition the event was *read from*, the one
   its offset commits in (:meth:`Batches.send`).
2. The commit runs on a timer, in the middle of a batch as likely as between two: the outputs already
   sent commit without the offsets of their events, and a crash then makes them twice. Here commits
   (``Consumer.force_commit``, patched by ``streams.faustcompat.commits``) wait for a :class:`BatchGate`:
   no batch of any agent is between its first send and its acknowledgement while offsets are chosen
   and committed, and batches wait while a commit runs.
3. Table writes reach the producer through Faust's send buffer, after the commit has been decided:
   a changelog write could land in the next transaction. Here table writes are records of the batch
   like its outputs (``streams.agents.states.BatchedTable``), delivered before it acknowledges its events.
4. Table recovery takes a changelog's highwater from ``last_stable_offset``, which aiokafka knows only
   once it has fetched from the partition: a worker starting or taking over read -1 and restored
   nothing (found by the kill -9 test: the restarted worker had forgotten every node).
   ``streams.faustcompat.highwaters`` asks the broker instead (ListOffsets, read_committed: the last
   stable offset); Faust's recovery already ends at it when markers hide the last offsets.
5. The offset to commit is the end of the first run of consecutive acknowledged offsets, bridged
   only over gaps Faust noticed in a way that misses some: after an assignment or seek, or after
   offset 0. A ``read_committed`` consumer never sees the offsets of markers and aborted records,
   so a partition's commits could stop short (seen in the kill -9 test: the router's committed
   offset on ``koord.decisions`` stayed behind, and the next owner forwarded decisions again).
   Each partition is consumed by one agent that acknowledges its batches in delivery order, so
   every acknowledged offset ends a processed prefix: ``streams.faustcompat.commits`` commits after
   the highest.
6. A rebalance revokes every partition, and Faust forgets their uncommitted acknowledgements before
   it commits; a worker that keeps a partition keeps its transaction, with the outputs of events it
   then reads again. ``streams.faustcompat.commits`` commits before Faust forgets.

Outputs become visible to ``read_committed`` readers at the next commit, so under exactly-once the
worker commits every ``EXACTLY_ONCE_COMMIT_INTERVAL_S``; each hop (router, aggregate) adds up to that.
Under at-least-once nothing here changes how Faust runs: sends go out at once with ``force=True``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import AsyncIterator

import faust
from faust.types.enums import ProcessingGuarantee

from streams.agents.inbox import uncommitted_on_failure
from streams.faustcompat.produce import Outgoing, send_all

log = logging.getLogger(__name__)

EXACTLY_ONCE_COMMIT_INTERVAL_S = 0.1
"""Commit interval under exactly-once (Kafka Streams' default there): the latency each hop adds before
its outputs are readable, against one transaction commit per partition group per interval."""


class BatchGate:
    """Batches share it, a commit takes it alone: the commit waits until no batch is open, and batches
    arriving while a commit waits or runs wait for it to finish (so commits are not starved). Leaving
    the gate never yields to the event loop, so what follows a commit runs before any batch opens.

    A batch that fails or is stopped after it sent leaves its sends in the open transactions, which
    other batches share; committing them would publish that half batch without its offsets, and the
    next owner of the partitions would make it again. So the gate is then ``broken``: this worker
    commits nothing more, its open transactions are aborted when the partitions' next owner starts
    their producers, and everything since the last commit is read again."""

    def __init__(self) -> None:
        self.open_batches = 0
        self.committing = False
        self.broken = False
        self._waiters: list[asyncio.Future] = []

    async def _until(self, condition) -> None:
        while not condition():
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)

    def _changed(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    @contextlib.asynccontextmanager
    async def batch(self) -> AsyncIterator[None]:
        await self._until(lambda: not self.committing)
        self.open_batches += 1
        try:
            yield
        finally:
            self.open_batches -= 1
            self._changed()

    @contextlib.asynccontextmanager
    async def commit(self) -> AsyncIterator[None]:
        await self._until(lambda: not self.committing)
        self.committing = True
        try:
            await self._until(lambda: self.open_batches == 0)
            yield
        finally:
            self.committing = False
            self._changed()


def exactly_once(app: faust.App) -> bool:
    return ProcessingGuarantee(app.conf.processing_guarantee) == ProcessingGuarantee.EXACTLY_ONCE


def batch_gate(app: faust.App) -> BatchGate:
    """The app's one gate (every agent's batches and the consumer's commits meet there)."""
    if getattr(app, "koord_batch_gate", None) is None:
        app.koord_batch_gate = BatchGate()
    return app.koord_batch_gate


def transactional_id(app: faust.App, topic: str, partition: int) -> str:
    """The transactional id Faust commits ``topic``'s ``partition`` offsets with
    (``TransactionManager.commit``)."""
    return f"{app.conf.id}-{app.assignor.group_for_topic(topic)}-{partition}"


class Batches:
    """How one agent processes a batch under the app's processing guarantee."""

    def __init__(self, app: faust.App) -> None:
        self.app = app
        self.exactly_once = exactly_once(app)
        self.gate = batch_gate(app) if self.exactly_once else None
        self._outgoing: list[Outgoing] = []

    @contextlib.asynccontextmanager
    async def scope(self, events: list) -> AsyncIterator[None]:
        """Around one batch of Faust events, from before its first send until it is acknowledged.

        A batch that fails stays unacknowledged (:func:`uncommitted_on_failure`). Under exactly-once
        the batch holds the gate, delivers its records (table writes too) and acknowledges its events itself,
        inside the gate, so that a commit sees either all of the batch or none of it; ``take_events``'s
        own acknowledgement afterwards finds them acknowledged and only updates its sensors."""
        if not self.exactly_once:
            with uncommitted_on_failure(events):
                yield
            return
        async with self.gate.batch():
            try:
                with uncommitted_on_failure(events):
                    yield
            except BaseException as error:
                self.gate.broken = True
                if isinstance(error, Exception):
                    log.error("a batch failed under exactly-once; the worker stops without committing: %r", error)
                    asyncio.get_running_loop().create_task(self.app.crash(error))
                raise
            for event in events:
                message = event.message
                if event.ack():
                    self.app.sensors.on_message_out(message.tp, message.offset, message)

    def add(self, topic: faust.TopicT, key: bytes | None, value: bytes | None, source: tuple[str, int],
            partition: int | None = None, headers: list[tuple[str, bytes]] | None = None,
            timestamp_ms: int | None = None) -> int:
        """Queue a record for :meth:`deliver`; under exactly-once it joins the transaction of the ``source``
        (topic, partition) the event was read from. Returns its place in what :meth:`deliver` returns."""
        tid = transactional_id(self.app, *source) if self.exactly_once else None
        self._outgoing.append(Outgoing(topic.get_topic_name(), key, value, partition, headers, tid, timestamp_ms))
        return len(self._outgoing) - 1

    async def deliver(self) -> list[tuple[int, int]]:
        """Send every queued record as record batches (``streams.faustcompat.produce``), wait until all are
        delivered and return the (partition, offset) of each, in the order they were queued."""
        outgoing, self._outgoing = self._outgoing, []
        return await send_all(self.app, outgoing)


async def send_outside_transactions(app: faust.App, topic: faust.TopicT, key: bytes, value: bytes) -> None:
    """Send a record no consumed event caused (a clock tick) at once. Under exactly-once Faust would put
    it in the transaction of its destination partition, invisible until that partition next commits
    offsets, and absent on a worker that does not own the partition; it goes out on the plain producer."""
    if exactly_once(app):
        await app.producer.send(topic.get_topic_name(), key, value, None, None, None)
    else:
        await topic.send(key=key, value=value, force=True)

