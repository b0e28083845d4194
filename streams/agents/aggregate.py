"""The one shell every aggregate agent runs in: its inbox in batches, each event through the core of its
key, the outputs delivered, then the state written behind a journal.

An aggregate (the domain router, the scheduling domains, the node partitions) is declared by an
:class:`Aggregate` and registered by :func:`register_aggregate`, which owns the loop:

1. a batch of checked inbox events (``streams.agents.inbox.inbox_batches``), with the records of the source
   topics it reads itself (``Aggregate.sources``: the domain router's pods);
2. each event to the core of its key (``core_of``), restored from the aggregate's table on first use
   (``streams.agents.states.JournaledStates``), through ``step``, which guards the core
   (``streams.inbox.handle_guarded``: a failure becomes the event's dead letter);
3. the records a step forwards (the domain router's), every event's outputs and the Acks asked for sent
   together as record batches (``streams.agents.outputs.send_outputs``), all delivered, then the outputs
   the pipeline reads again (decisions, node resources and usages) copied to their inboxes and delivered;
4. the changes of each core the batch touched written behind its journal (``streams.agents.journal``),
   their changelog records sent as record batches (``streams.agents.states.BatchedTable``) and delivered
   before the batch is acknowledged.

Outputs are delivered before the table is written: after a crash the events are processed again and
re-emit the same outputs (same ids), which readers deduplicate. The cores of one batch are written as the
batch touched them, not loaded again: a rebalance during the sends may forget a core, and one loaded again
would have none of the batch's changes to write.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Generic, Hashable, Iterable, NamedTuple, Sequence, TypeVar

import faust

from streams.agents.inbox import inbox_batches
from streams.agents.journal import Keys
from streams.agents.outputs import Inboxes, send_outputs
from streams.agents.states import JournaledStates
from streams.agents.topics import raw_topic
from streams.agents.transactions import Batches
from streams.events import InboxEvent
from streams.metrics import PLUGIN_STATS_INTERVAL_S, export_plugin_stats
from streams.outputs import OUTPUT_TOPICS, WRITTEN_TO_INBOXES
from streams.routing import INBOXES
from streams.pluginstats import PluginStats
from streams.signing import signer
from streams.topology import Topology

K = TypeVar("K", bound=Hashable)
S = TypeVar("S")


class Handled(NamedTuple):
    """What one event did: its outputs, the event as its Ack is decided (the domain router leaves an Ack to the
    domain it forwards the request to) and the (key, value) records to forward."""

    outputs: list[tuple[str, dict]]
    event: InboxEvent
    forwards: Sequence[tuple[bytes, bytes]] = ()


@dataclasses.dataclass(frozen=True)
class Aggregate(Generic[K, S]):
    """One aggregate agent, declared."""

    stage: str
    """Its name in dead letters and metrics."""
    agent: str
    """The Faust agent's name."""
    inbox: str
    """Topology id of the inbox it reads."""
    table: str
    """Name of its state table (its changelog is named after it)."""
    core_of: Callable[[str, InboxEvent], K]
    """The key of the core an event goes to, from the inbox record's key and the event."""
    partition_of: Callable[[K], int]
    """The inbox partition a core's events come from (a rebalance that moves it forgets the core)."""
    keys: Callable[[K], Keys]
    """Where a core's entries sit in the table."""
    restore: Callable[[K, dict], S]
    """A core from its table entries."""
    step: Callable[[S, InboxEvent, bytes], Handled]
    """An event (and its inbox record's value) through a core."""
    outputs: tuple[str, ...] = tuple(OUTPUT_TOPICS)
    """The output schemas it sends."""
    forward_to: str | None = None
    """Topology id of the topic ``Handled.forwards`` go to."""
    sources: tuple[str, ...] = ()
    """Topology ids of source topics it reads itself beside its inbox, partition p to the core of inbox partition
    p, each record checked as the router checks it (``streams.sources``); ``step`` gets the source record's
    value."""
    raw_values: bool = False
    """Whether the table's values are raw bytes (else JSON)."""
    stats: Callable[[S], Iterable[PluginStats]] = lambda core: ()
    """The plugin counts a core keeps, exported every ``PLUGIN_STATS_INTERVAL_S``."""
    held: Callable[[Iterable[str], set[int]], Iterable[K]] = lambda table_keys, partitions: sorted(partitions)
    """The keys of the cores the table holds of the given inbox partitions, from the table's keys; restored as
    soon as a rebalance has recovered the table. The default is for cores keyed by their inbox partition."""


def register_aggregate(app: faust.App, topology: Topology, aggregate: Aggregate) -> JournaledStates:
    """Register ``aggregate``'s agent, table and timers on ``app``; its states."""
    inbox = topology.spec(aggregate.inbox)
    outputs = {schema: raw_topic(app, topology.name(OUTPUT_TOPICS[schema])) for schema in aggregate.outputs}
    forward = raw_topic(app, topology.name(aggregate.forward_to)) if aggregate.forward_to else None
    inboxes = Inboxes({inbox_id: raw_topic(app, topology.name(inbox_id)) for inbox_id in INBOXES},
                      {inbox_id: topology.spec(inbox_id).partitions for inbox_id in INBOXES}) \
        if set(aggregate.outputs) & set(WRITTEN_TO_INBOXES) else None
    batches = Batches(app)
    states = JournaledStates(app, aggregate.table, inbox.partitions, batches, aggregate.keys, aggregate.restore,
                             inbox.name, aggregate.partition_of, aggregate.held, raw_values=aggregate.raw_values)

    @app.timer(interval=PLUGIN_STATS_INTERVAL_S, name=f"{aggregate.table}-plugin-stats")
    async def plugin_stats() -> None:
        for core in states.cores():
            for stats in aggregate.stats(core):
                export_plugin_stats(stats)

    sources = {topology.name(source_id): source_id for source_id in aggregate.sources}

    @app.agent(raw_topic(app, inbox.name, *sources), name=aggregate.agent)
    async def run(stream):
        sign = signer()
        async for batch in inbox_batches(app, topology, aggregate.inbox, stream, outputs["DeadLetter"],
                                         aggregate.stage, batches, sources):
            caused, touched = [], {}
            for record_key, event, faust_event in batch:
                message = faust_event.message
                key = aggregate.core_of(record_key, event)
                core, journal = states.load(key)
                handled = aggregate.step(core, event, message.value)
                for forward_key, value in handled.forwards:
                    batches.add(forward, forward_key, value, (message.topic, message.partition),
                                headers=[sign.header(aggregate.forward_to, forward_key, value)])
                caused.append((handled.event, handled.outputs))
                touched[key] = (core, journal)
            await send_outputs(batches, outputs, aggregate.stage, aggregate.inbox, caused, sign, inboxes)
            for core, journal in touched.values():
                journal.write(core.take_changes())
            await batches.deliver()

    return states
