"""Reading an inbox in a Faust agent: batches of checked events, acknowledged only once processed.

The records are read and checked by ``streams.inbox`` (the Faust-free contract the replay reads with
too); what is Faust's is here: taking the stream in batches, the consumer's high watermarks, and
forgetting the in-memory cores of partitions that moved.
"""

from __future__ import annotations

import contextlib
import time
from typing import AsyncIterator, Callable, Hashable, Iterator

from streams import sources
from streams.agents.deadletters import send_dead_letter
from streams.faustcompat.events import mark_acked
from streams.events import InboxEvent
from streams.handoff import HANDOFF
from streams.inbox import DeliveryOrder, InboxReader, Rejected, inbox_incarnation
from streams.signing import signer
from streams.topology import Topology


def bootstrap_of(app) -> str:
    """The bootstrap servers a Faust app was created with, as ``host:port,...``."""
    return ",".join(f"{url.host}:{url.port}" for url in app.conf.broker)


BATCH_MAX = 500
BATCH_WITHIN_S = 0.005
"""Events are taken in batches of up to BATCH_MAX, waiting at most BATCH_WITHIN_S for more:
per-event costs in Faust (acks, delivery waits, table writes) are paid once per batch."""


@contextlib.contextmanager
def uncommitted_on_failure(events: list) -> Iterator[None]:
    """Keep a batch's offsets from being committed unless the code inside finished.

    Faust's ``take_events`` acknowledges a batch in a ``finally``: also when the agent fails or is
    stopped (a worker shutting down, a rebalance) in the middle of it, so the consumer commits
    offsets whose outputs were never delivered and the records are lost (seen in the kill -9
    test: a stopping worker's router committed pods it had not forwarded). Marking the messages
    acknowledged first makes that ``finally`` skip them; they stay uncommitted and are read again.
    """
    try:
        yield
    except BaseException:
        for event in events:
            mark_acked(event.message)
        raise


async def inbox_batches(app, topology: Topology, inbox_id: str, stream, dead_letters, stage: str,
                        batches, source_ids: dict[str, str] | None = None
                        ) -> AsyncIterator[list[tuple[str, InboxEvent, object]]]:
    """Yield batches of (record key, event, Faust event) for the good records of ``inbox_id``'s stream;
    a batch is acknowledged once the consumer has processed it, and only then, inside
    ``batches.scope`` (a ``streams.agents.transactions.Batches``). Every other record is dead-lettered:
    read by an :class:`InboxReader` of the inbox's incarnation that verifies the records' signatures (and
    refuses an event timed too far past its record's own timestamp). A record of a source topic the stream also
    reads (``source_ids``: topic name -> topology id) is checked as the router checks it (``streams.sources``;
    a compacted topic's offsets have gaps, so its delivery order is not watched); the step leaves what was decoded
    of it for the reader of the inbox it forwards it to, as the router does (``streams.handoff``)."""
    reader = InboxReader.of(topology, inbox_id, await inbox_incarnation(bootstrap_of(app), topology.name(inbox_id)),
                            signer(), HANDOFF)
    order = DeliveryOrder(stage, contiguous=not batches.exactly_once)
    source_ids = source_ids or {}
    async for events in stream.take_events(BATCH_MAX, within=BATCH_WITHIN_S):
        async with batches.scope(events):
            batch, now_ms = [], int(time.time() * 1000)
            for faust_event in events:
                message = faust_event.message
                source_id = source_ids.get(message.topic)
                if source_id is not None:
                    try:
                        source = sources.read(source_id, message, now_ms)
                    except sources.Refused as refused:
                        await send_dead_letter(batches, dead_letters, sources.STAGE, message, str(refused))
                        continue
                    batch.append((source.key, source.event(message), faust_event))
                    continue
                order.check(message)
                try:
                    inbox_key, event = reader.read(message, written_ms=int(message.timestamp * 1000))
                except Rejected as error:
                    await send_dead_letter(batches, dead_letters, stage, message, str(error))
                    continue
                batch.append((inbox_key, event, faust_event))
            if batch:
                yield batch


def forget_moved(app, topic: str, cores: dict, partition_of: Callable[[Hashable], int]) -> None:
    """Drop from ``cores`` (an aggregate's in-memory states by key) at every rebalance those whose partition of
    ``topic`` (``partition_of(key)``) this worker did not hold both before and after it: the table under a
    partition that moved may have changed, and its cores are rebuilt from the table on next use. A partition
    held throughout keeps its cores, since only its holder writes its table."""
    held: set[int] = set()

    @app.on_partitions_assigned.connect
    async def forget_moved_cores(sender, assigned, **kwargs):
        nonlocal held
        now = {tp.partition for tp in assigned if tp.topic == topic}
        kept = held & now
        for key in [key for key in cores if partition_of(key) not in kept]:
            del cores[key]
        held = now
