"""Domain router agent: the routing inbox through one ``DomainTable`` per partition.

Reads ``inbox-routing`` in batches, asks the partition's table (``streams.domains``) where each event
goes, and sends the forwarded InboxEvent, its source unchanged, to the scheduling inbox under the
domain's name; a copy that must not ask for an Ack, or that deletes a node moving out of a domain, is
the same envelope re-encoded. An event refused (a node two profiles select) becomes a dead letter. An
event asking for an Ack gets one here unless one of its forwards carries the request to a domain,
so ``koord apply --wait`` counts one Ack per routing partition the event reached
(``state.progress``). Forwards and Acks are delivered before the table is written, as in
``agents/scheduling.py``; the tables are rebuilt from the ``routing-state`` table after a rebalance.
"""

from __future__ import annotations

import base64
import dataclasses
from typing import Callable

import faust

from streams import routing
from streams.agents.inbox import handle_guarded, inbox_batches, write_as
from streams.agents.outputs import OUTPUT_TOPICS, send_outputs
from streams.agents.states import JournaledStates
from streams.agents.topics import raw_topic
from streams.agents.transactions import Batches
from streams.deadletter import dead_letter_record
from streams.domains import EVERY_DOMAIN, DomainTable, Routed
from streams.schemas import codec
from streams.topology import Topology

STAGE = "domains"
SEPARATOR = "|"


def register(app: faust.App, topology: Topology) -> None:
    inbox_spec = topology.spec(routing.ROUTING_INBOX)
    scheduling = raw_topic(app, topology.name(routing.SCHEDULING_INBOX))
    outputs = {schema: raw_topic(app, topology.name(OUTPUT_TOPICS[schema])) for schema in ("DeadLetter", "Ack")}
    batches = Batches(app)
    states = JournaledStates(app, "routing-state", inbox_spec.partitions, batches,
                             lambda partition: f"{partition}{SEPARATOR}", DomainTable.restore)

    @app.agent(raw_topic(app, inbox_spec.name), name="koord-domains")
    async def route(stream):
        async for batch in inbox_batches(app, topology, routing.ROUTING_INBOX, stream, outputs["DeadLetter"], STAGE,
                                         batches):
            caused, touched, pending = [], {}, []
            for _, event, faust_event in batch:
                message = faust_event.message
                partition = event.causation.inbox_partition
                state, journal = states.load(partition)
                envelope = Envelope(message.value, event.ack)
                routed, outs = route_guarded(state, event, envelope.stored)
                source = (message.topic, message.partition)
                for domain, stored in routed.catch_up:
                    pending.append(await batches.send(scheduling, domain.encode(), base64.b64decode(stored.envelope),
                                                      source))
                for forward in routed.forwards:
                    value = envelope.forward(ack=forward.ack and event.ack, deleted=forward.deleted)
                    pending.append(await batches.send(scheduling, forward.domain.encode(), value, source))
                acked_by_domain = event.ack and any(f.ack for f in routed.forwards)
                caused.append((dataclasses.replace(event, ack=False) if acked_by_domain else event, outs))
                touched[partition] = (state, journal, faust_event)
            for future in pending:
                await future
            await send_outputs(batches, outputs, STAGE, routing.ROUTING_INBOX, caused)
            for state, journal, faust_event in touched.values():
                write_as(faust_event)
                journal.write(state.take_changes())


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
