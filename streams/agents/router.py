"""Router: forwards source events into the aggregates' inboxes.

Each source record but the pods (the domain router reads those itself, ``routing.DOMAIN_ROUTER_SOURCES``) is
decoded and checked once here (``streams.sources``, as the domain router checks a pod), and what was decoded is
handed to this worker's inbox reader (``streams.handoff``), which need not decode it again; a good one is wrapped
unchanged in an InboxEvent (with its topic, partition, offset and timestamp,
the latter at most ``streams.events.MAX_AHEAD_MS`` past the router's clock)
and sent to every inbox that needs it (``streams.routing``); a bad one goes
to the dead-letter topic with its reason (one over the record size limit,
``streams.limits``, too: forwarded in its envelope it would be too big to
send). Records are taken in batches, and
a batch's forwards are delivered before Faust acknowledges its records, so
a crash re-forwards rather than loses (the aggregates drop re-forwarded
events by source offset).

That dedupe keeps only the highest source offset per source partition, which
is exact as long as every router instance forwards a partition in offset
order without gaps from wherever it starts: copies from two instances may
interleave, but a record is never first seen after a later one. Faust broke
that after rebalances; ``streams.faustcompat.seek`` is what restores it.

Every forward is signed (``streams.signing``): the aggregates act on what a forward claims, its source
offset and domain, so they take only signed ones. The pipeline's outputs do not go through the router a
second time: the aggregate that makes a decision, node resource or usage copies it to its inboxes itself, so
the router does not read those topics (``routing.ROUTED_SOURCES``), nor the Evictions on the decisions topic,
which go to no inbox.

Under exactly-once the forwards of a source record join the transaction its
offset commits in (``streams.agents.transactions``), so a crash re-forwards
only what no ``read_committed`` reader saw.
"""

from __future__ import annotations

import time

import faust

from streams import routing, sources
from streams.agents.deadletters import send_dead_letter
from streams.agents.inbox import BATCH_MAX, BATCH_WITHIN_S
from streams.agents.topics import raw_topic
from streams.agents.transactions import Batches
from streams.handoff import HANDOFF
from streams.signing import signer
from streams.topology import Topology

STAGE = sources.STAGE


def register(app: faust.App, topology: Topology) -> None:
    ids = {topology.name(source_id): source_id for source_id in routing.ROUTED_SOURCES}
    source_topics = raw_topic(app, *ids)
    inboxes = {inbox: raw_topic(app, topology.name(inbox)) for inbox in routing.ROUTER_INBOXES}
    dead_letters = raw_topic(app, topology.name("deadletters"))
    partitions = {inbox: topology.spec(inbox).partitions for inbox in inboxes}
    inbox_names = {inbox: topology.name(inbox) for inbox in inboxes}
    batches = Batches(app)

    @app.agent(source_topics, name="koord-router")
    async def route(stream):
        sign = signer()
        async for events in stream.take_events(BATCH_MAX, within=BATCH_WITHIN_S):
            async with batches.scope(events):
                await _forward(events, sign)

    async def _forward(events, sign) -> None:
        now_ms = int(time.time() * 1000)
        for event in events:
            message = event.message
            source_id = ids[message.topic]
            try:
                source = sources.read(source_id, message, now_ms)
                try:
                    targets = routing.routes(source_id, source.key, source.kind, source.record, partitions)
                except Exception as error:
                    raise sources.failed(message, error) from None
            except sources.Refused as refused:
                await send_dead_letter(batches, dead_letters, STAGE, message, str(refused))
                continue
            if source.record is not None and targets:
                HANDOFF.put(message.value, source.kind, source.record,
                            ((inbox_names[target.inbox], target.partition_in(partitions[target.inbox]))
                             for target in targets))
            envelope = routing.envelope(message.topic, message.partition, message.offset, source.timestamp_ms,
                                        source.key, message.value, source.ack)
            for target in targets:
                forward_key = target.key.encode()
                batches.add(inboxes[target.inbox], forward_key, envelope, (message.topic, message.partition),
                            partition=target.partition, headers=[sign.header(target.inbox, forward_key, envelope)])
        await batches.deliver()
