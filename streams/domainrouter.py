"""The domain router's step, without Faust: where one routing-inbox event goes and the envelopes it is
forwarded as.

Both the live agent (``streams.agents.domains``) and the replay (``streams.replay.routes``) route with
:func:`route_guarded`, so they route alike; the table that decides is ``streams.domains.DomainTable``.
"""

from __future__ import annotations

import base64
from typing import Callable

from streams.deadletter import dead_letter_record
from streams.domains import EVERY_DOMAIN, DomainTable, Routed
from streams.inbox import handle_guarded
from streams.schemas import codec

STAGE = "domains"


class Envelope:
    """A routing-inbox record's InboxEvent envelope (``ack``: whether it asks for an Ack), decoded only
    when a copy must differ from it."""

    def __init__(self, value: bytes, ack: bool) -> None:
        self.value, self.ack = value, ack

    def forward(self, ack: bool, deleted: bool = False) -> bytes:
        """The envelope to send: unchanged, or without its Ack request, or deleting its object."""
        if ack == self.ack and not deleted:
            return self.value
        fields = codec.decode(self.value)[1]
        return codec.encode_own("InboxEvent", {**fields, "ack": ack, "payload": None if deleted else fields["payload"]})

    def stored(self) -> dict:
        """The envelope without its Ack request as ``DomainTable`` keeps every-domain objects: its fields with
        the payload decoded (``{"fields", "kind", "record"}``), JSON the table keeps without base64, so the
        entry is as big as the object's stored form (``streams.objects.size.state_problem``)."""
        fields = codec.decode(self.value)[1]
        kind, record = codec.decode(fields["payload"]) if fields["payload"] is not None else (None, None)
        return {"fields": {**{k: v for k, v in fields.items() if k != "payload"}, "ack": False},
                "kind": kind, "record": record}


def stored_envelope(stored: str | dict) -> bytes:
    """The InboxEvent a stored every-domain object is sent as to a new domain: ``Envelope.stored``'s form
    encoded again, or the base64 envelope entries written before it hold."""
    if isinstance(stored, str):
        return base64.b64decode(stored)
    record = stored["record"]
    payload = None if record is None else codec.encode(stored["kind"], record)
    return codec.encode("InboxEvent", {**stored["fields"], "payload": payload})


def route_guarded(state: DomainTable, event, stored: Callable[[], dict | str]) -> tuple[Routed, list[tuple[str, dict]]]:
    """Where ``state`` routes ``event``, and its outputs (a refusal's dead letter); if the table fails on the
    event, it goes nowhere and its outputs are that failure's dead letter (``handle_guarded``). ``stored``
    gives the envelope an every-domain object is kept as (``Envelope.stored``); the replay keeps none."""
    found: list[Routed] = []

    def step(event) -> list[tuple[str, dict]]:
        routed = state.route(event, stored() if event.kind in EVERY_DOMAIN else "")
        found.append(routed)
        return [_refusal(event, routed.refused)] if routed.refused else []

    outs = handle_guarded(STAGE, event, step)
    return (found[0] if found else Routed()), outs


def _refusal(event, reason: str) -> tuple[str, dict]:
    cause = event.causation
    payload = None
    if event.record is not None:
        try:
            payload = codec.encode(event.kind, event.record)
        except codec.CodecError:
            payload = None
    return "DeadLetter", dead_letter_record(STAGE, cause.source_topic, cause.source_partition, cause.source_offset,
                                            event.key.encode(), payload, reason, event.timestamp_ms)
