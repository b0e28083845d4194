"""Reading an inbox: records back into the events the pure core reads.

An inbox record that does not decode (it can only come from a bug or a
foreign producer) is dead-lettered and skipped, so the aggregate keeps going.
"""

from __future__ import annotations

import contextlib
import logging
import weakref
from typing import AsyncIterator, Iterator

from streams import routing
from streams.agents.deadletters import send_dead_letter
from streams.events import Causation, InboxEvent
from streams.metrics import INBOX_SKIPPED
from streams.schemas import codec


def decode_inbox_event(message, topic_ids: dict[str, str]) -> InboxEvent:
    """``message`` is a Faust message of an inbox; raises CodecError if it is not one."""
    name, envelope = codec.decode(message.value)
    if name != "InboxEvent":
        raise codec.CodecError(f"expected an InboxEvent, got a {name}")
    cause = Causation(message.topic, message.partition, message.offset, envelope["sourceTopic"],
                      envelope["sourcePartition"], envelope["sourceOffset"])
    payload = envelope["payload"]
    if payload is None:
        source_id = topic_ids[envelope["sourceTopic"]]
        kind, record = routing.kind_of_deletion(source_id, envelope["key"]), None
    else:
        kind, record = codec.decode(payload)
    return InboxEvent(cause, envelope["timestamp"], envelope["key"], kind, record, envelope["ack"])


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
            event.message.acked = True
        raise


log = logging.getLogger(__name__)


class DeliveryOrder:
    """Watches that the consumer hands each inbox partition over in offset order.

    The pure core's decisions are those of the inbox order; replay assumes it. Going back is normal
    (after a seek, records are read again and the core drops them as seen); a jump forward within one
    consumer generation means records were passed over and will be processed late, out of order. That
    happened through a Faust race that ``streams.faust_seek_fix`` closes; this makes any other cause
    visible (log and ``koord_inbox_skipped_total``) instead of silent.

    A ``read_committed`` consumer (exactly-once) never sees the offsets that transaction markers and
    aborted records occupy, so its jumps are normal: with ``contiguous=False`` nothing is counted.
    """

    def __init__(self, stage: str, contiguous: bool = True) -> None:
        self.stage, self.contiguous = stage, contiguous
        self.last: dict[int, tuple[int | None, int]] = {}

    def check(self, message) -> int:
        """Record ``message``'s offset; return how many records were passed over before it."""
        generation, offset = self.last.get(message.partition, (None, -1))
        self.last[message.partition] = (message.generation_id, message.offset)
        if not self.contiguous:
            return 0
        skipped = message.offset - offset - 1 if generation == message.generation_id else 0
        if skipped > 0:
            INBOX_SKIPPED.labels(self.stage).inc(skipped)
            log.warning("%s/%d: the consumer passed over offsets %d..%d; they will be processed out of "
                        "inbox order", message.topic, message.partition, offset + 1, message.offset - 1)
        return max(skipped, 0)


async def inbox_batches(stream, topic_ids: dict[str, str], dead_letters, stage: str,
                        batches) -> AsyncIterator[list[tuple[str, InboxEvent, object]]]:
    """Yield batches of (record key, event, Faust event) for the good records of an inbox stream;
    a batch is acknowledged once the consumer has processed it, and only then, inside
    ``batches.scope`` (a ``streams.agents.transactions.Batches``)."""
    order = DeliveryOrder(stage, contiguous=not batches.exactly_once)
    async for events in stream.take_events(BATCH_MAX, within=BATCH_WITHIN_S):
        async with batches.scope(events):
            batch = []
            for faust_event in events:
                message = faust_event.message
                order.check(message)
                try:
                    batch.append((message.key.decode(), decode_inbox_event(message, topic_ids), faust_event))
                except codec.CodecError as error:
                    await send_dead_letter(batches, dead_letters, stage, message, f"undecodable inbox record: {error}")
            if batch:
                yield batch


def write_as(faust_event) -> None:
    """Make ``faust_event`` the current event for the table writes that follow.

    Faust sends a table write to the changelog partition of the current event
    (a context variable). After a batch, the writes of each partition are made
    with one of that partition's events current. Only the context variable is
    set: ``Stream._set_current_event`` would also change the stream's own
    ``current_event``, which ``take_events`` reads while buffering the next
    batch, and an event would be lost.
    """
    from faust.streams import _current_event

    _current_event.set(weakref.ref(faust_event))


def forget_on_rebalance(app, cache: dict) -> None:
    """Empty ``cache`` (an aggregate's in-memory states) whenever partitions move: the table may
    have changed under it, and the states are rebuilt from the table on next use."""

    @app.on_partitions_revoked.connect
    async def forget_revoked(sender, revoked, **kwargs):
        cache.clear()

    @app.on_partitions_assigned.connect
    async def forget_assigned(sender, assigned, **kwargs):
        cache.clear()
