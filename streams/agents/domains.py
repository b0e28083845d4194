"""Domain router agent: the routing inbox through one ``DomainTable`` per partition.

Reads ``inbox-routing`` in batches, asks the partition's table (``streams.domains``) where each event
goes (``streams.domainrouter``), and sends the forwarded InboxEvent, its source unchanged, to the
scheduling inbox under the domain's name; a copy that must not ask for an Ack, or that deletes a node
moving out of a domain, is the same envelope re-encoded. An event refused (a node two profiles select)
becomes a dead letter. An event asking for an Ack gets one here unless one of its forwards carries the
request to a domain, so ``koord apply --wait`` counts one Ack per routing partition the event reached
(``state.progress``). Forwards and Acks are delivered before the table is written, as in
``agents/scheduling.py``; the tables are rebuilt from the ``routing-state`` table after a rebalance.
"""

from __future__ import annotations

import base64
import dataclasses

import faust

from streams import routing
from streams.agents.inbox import inbox_batches, write_as
from streams.agents.outputs import send_outputs
from streams.agents.states import JournaledStates
from streams.agents.topics import raw_topic
from streams.agents.transactions import Batches
from streams.domainrouter import STAGE, Envelope, route_guarded
from streams.domains import DomainTable
from streams.outputs import OUTPUT_TOPICS
from streams.topology import Topology

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
