"""Domain router agent: the routing inbox through one ``DomainTable`` per partition.

Reads ``inbox-routing`` in batches, asks the partition's table (``streams.domains``) where each event
goes (``streams.domainrouter``), and forwards the InboxEvent, its source unchanged, to the scheduling
inbox under the domain's name; a copy that must not ask for an Ack, or that deletes a node moving out of
a domain, is the same envelope re-encoded. An event refused (a node two profiles select) becomes a dead
letter. An event asking for an Ack gets one here unless one of its forwards carries the request to a
domain, so ``koord apply --wait`` counts one Ack per routing partition the event reached
(``state.progress``). Forwards and Acks are delivered before the ``routing-state`` table is written, in
the shell every aggregate runs in (``streams.agents.aggregate``).
"""

from __future__ import annotations

import dataclasses

import faust

from streams import routing
from streams.agents.aggregate import Aggregate, Handled, register_aggregate
from streams.agents.journal import Prefixed
from streams.domainrouter import STAGE, Envelope, route_guarded, stored_envelope
from streams.domains import DomainTable
from streams.events import InboxEvent
from streams.topology import Topology

SEPARATOR = "|"


def register(app: faust.App, topology: Topology) -> None:
    register_aggregate(app, topology, Aggregate(
        stage=STAGE, agent="koord-domains", inbox=routing.ROUTING_INBOX, table="routing-state",
        core_of=lambda key, event: event.causation.inbox_partition,
        partition_of=lambda partition: partition,
        keys=lambda partition: Prefixed(f"{partition}{SEPARATOR}"),
        restore=DomainTable.restore, step=_route, outputs=("DeadLetter", "Ack"),
        forward_to=routing.SCHEDULING_INBOX))


def _route(state: DomainTable, event: InboxEvent, value: bytes) -> Handled:
    """The event routed: its refusal's dead letter, the event as acknowledged here, and its forwards (the
    every-domain objects a domain new to the partition catches up on, then the event's own copies)."""
    envelope = Envelope(value, event.ack)
    routed, outputs = route_guarded(state, event, envelope.stored)
    forwards = [(domain.encode(), stored_envelope(stored.envelope)) for domain, stored in routed.catch_up]
    forwards += [(forward.domain.encode(), envelope.forward(ack=forward.ack and event.ack, deleted=forward.deleted))
                 for forward in routed.forwards]
    acked_by_domain = event.ack and any(forward.ack for forward in routed.forwards)
    return Handled(outputs, dataclasses.replace(event, ack=False) if acked_by_domain else event, forwards)
