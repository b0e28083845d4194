"""Domain router agent: the routing inbox and the pods through one ``DomainTable`` per partition.

Reads ``inbox-routing`` in batches, and the pods' source topic beside it (``routing.DOMAIN_ROUTER_SOURCES``:
partition p of both goes to the table of partition p; a pod is checked as the router checks it,
``streams.sources``). Asks the partition's table (``streams.domains``) where each event goes
(``streams.domainrouter``) and forwards the InboxEvent, its source unchanged, to the scheduling inbox under
the domain's name: a pod in the envelope the router would have made, naming the last routing-inbox record the
table applied before it (``Causation.routed_after``, for the replay); a copy that must not ask for an Ack,
or that deletes a node moving out of a domain, is the same envelope re-encoded. An event refused (a node two
profiles select) becomes a dead letter. An event asking for an Ack gets one here unless one of its forwards
carries the request to a domain, so ``koord apply --wait`` counts one Ack per routing partition the event
reached (``state.progress``). Forwards and Acks are delivered before the ``routing-state`` table is written,
in the shell every aggregate runs in (``streams.agents.aggregate``).
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
from streams.handoff import HANDOFF
from streams.partitioning import partition_for
from streams.topology import Topology, TopologyError

SEPARATOR = "|"


def register(app: faust.App, topology: Topology) -> None:
    check_copartitioned(topology)
    scheduling = topology.name(routing.SCHEDULING_INBOX), topology.spec(routing.SCHEDULING_INBOX).partitions
    register_aggregate(app, topology, Aggregate(
        stage=STAGE, agent="koord-domains", inbox=routing.ROUTING_INBOX, table="routing-state",
        core_of=lambda key, event: event.causation.inbox_partition,
        partition_of=lambda partition: partition,
        keys=lambda partition: Prefixed(f"{partition}{SEPARATOR}"),
        restore=DomainTable.restore, step=lambda state, event, value: _route(state, event, value, scheduling),
        outputs=("DeadLetter", "Ack"), forward_to=routing.SCHEDULING_INBOX, sources=routing.DOMAIN_ROUTER_SOURCES))


def check_copartitioned(topology: Topology) -> None:
    """Refuse a topology where a source topic the domain router reads itself and its inbox differ in partition
    count: partition p of both must reach the table of partition p (the worker's assignor gives one worker
    partition p of every topic of a count, ``streams.faustcompat.assignor``)."""
    inbox = topology.spec(routing.ROUTING_INBOX)
    for source_id in routing.DOMAIN_ROUTER_SOURCES:
        source = topology.spec(source_id)
        if source.partitions != inbox.partitions:
            raise TopologyError(f"{source.name} has {source.partitions} partitions and {inbox.name} "
                                f"{inbox.partitions}: the domain router reads them partition for partition, so "
                                f"give both the same count")


def _route(state: DomainTable, event: InboxEvent, value: bytes, scheduling: tuple[str, int] | None = None) -> Handled:
    """The event routed: its refusal's dead letter, the event as acknowledged here, and its forwards (the
    every-domain objects a domain new to the partition catches up on, then the event's own copies). ``value`` is
    the routing-inbox record's, or for a pod read from its source topic the source record's, forwarded in the
    envelope the router would have made, naming where the table applied it; such a pod's decoded record is left
    for the reader of the scheduling inbox (``scheduling``: its topic name and partition count) in this worker,
    when it reads a partition the pod goes to (``streams.handoff``)."""
    cause = event.causation
    forwarded = value if not cause.direct else routing.envelope(
        cause.source_topic, cause.source_partition, cause.source_offset, event.timestamp_ms, event.key, value,
        event.ack, routed_after=state.routed_after)
    envelope = Envelope(forwarded, event.ack)
    routed, outputs = route_guarded(state, event, envelope.stored)
    if cause.direct and event.record is not None and scheduling is not None:
        topic, partitions = scheduling
        HANDOFF.put(value, event.kind, event.record,
                    ((topic, partition_for(partitions, forward.domain)) for forward in routed.forwards
                     if not forward.deleted))
    forwards = [(domain.encode(), stored_envelope(stored.envelope)) for domain, stored in routed.catch_up]
    forwards += [(forward.domain.encode(), envelope.forward(ack=forward.ack and event.ack, deleted=forward.deleted))
                 for forward in routed.forwards]
    acked_by_domain = event.ack and any(forward.ack for forward in routed.forwards)
    return Handled(outputs, dataclasses.replace(event, ack=False) if acked_by_domain else event, forwards)
