"""Reading an inbox: records back into the events the pure core reads.

An inbox record that does not decode (it can only come from a bug or a
foreign producer) is dead-lettered and skipped, so the aggregate keeps going.
"""

from __future__ import annotations

from typing import AsyncIterator

from streams import routing
from streams.agents.deadletters import send_dead_letter
from streams.events import Causation, InboxEvent
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


async def inbox_events(stream, topic_ids: dict[str, str], dead_letters, stage: str) -> AsyncIterator[tuple[str, InboxEvent]]:
    """Yield (record key, event) for each good record of an inbox stream."""
    async for event in stream.events():
        message = event.message
        try:
            inbox_event = decode_inbox_event(message, topic_ids)
        except codec.CodecError as error:
            await send_dead_letter(dead_letters, stage, message, f"undecodable inbox record: {error}")
            continue
        yield message.key.decode(), inbox_event
