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
        return codec.encode("InboxEvent", {**fields, "ack": ack, "payload": None if deleted else fields["payload"]})

    def stored(self) -> str:
        """The envelope without its Ack request, base64, as ``DomainTable`` keeps every-domain objects."""
        return base64.b64encode(self.forward(ack=False)).decode()


def route_guarded(state: DomainTable, event, stored: Callable[[], str]) -> tuple[Routed, list[tuple[str, dict]]]:
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
