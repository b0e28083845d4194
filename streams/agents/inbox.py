"""Decoding an inbox record back into the event the pure core reads."""

from __future__ import annotations

from streams import routing
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
    return InboxEvent(cause, envelope["timestamp"], envelope["key"], kind, record)
