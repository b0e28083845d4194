"""Scheduling aggregate agent: one serial decision stream per domain.

Reads the scheduling inbox in batches, hands each event to the pure core
(``streams.scheduler.domain``), sends the outputs, then writes the changed
state entries to the ``scheduling-state`` table, each batch's behind a
journal that restores them all or nothing (``streams.agents.journal``).
Outputs are delivered before the table is written: after a crash the
events are processed again and re-emit the same outputs (same ids), which
readers deduplicate.

The core's in-memory state for a domain is rebuilt from the table on first
use and dropped on every rebalance, when the table may have moved. After a
rebuild the long-lived objects are moved out of the garbage collector's way
(``gc.freeze``), which the scheduler's benchmark shows is worth ~15 %.
"""

from __future__ import annotations

import gc

import faust

from streams.agents.inbox import inbox_batches, write_as
from streams.agents.states import JournaledStates
from streams.agents.outputs import send_outputs
from streams.agents.topics import raw_topic
from streams.agents.transactions import Batches
from streams.inbox import handle_guarded
from streams.metrics import PLUGIN_STATS_INTERVAL_S, export_plugin_stats
from streams.outputs import OUTPUT_TOPICS
from streams.scheduler.domain import SchedulingDomain
from streams.topology import Topology

STAGE = "scheduling"
SEPARATOR = "|"


def register(app: faust.App, topology: Topology) -> None:
    inbox_spec = topology.spec("inbox-scheduling")
    outputs = {schema: raw_topic(app, topology.name(topic_id)) for schema, topic_id in OUTPUT_TOPICS.items()}
    batches = Batches(app)
    states = JournaledStates(app, "scheduling-state", inbox_spec.partitions, batches, lambda domain: domain + SEPARATOR,
                             _restore)

    @app.timer(interval=PLUGIN_STATS_INTERVAL_S)
    async def plugin_stats() -> None:
        for state in states.cores():
            for framework in state.frameworks.values():
                export_plugin_stats(framework.stats)

    @app.agent(raw_topic(app, inbox_spec.name), name="koord-scheduling")
    async def schedule(stream):
        async for batch in inbox_batches(app, topology, "inbox-scheduling", stream, outputs["DeadLetter"], STAGE, batches):
            caused, touched = [], {}
            for domain, event, faust_event in batch:
                state, journal = states.load(domain)
                caused.append((event, handle_guarded(STAGE, event, state.handle)))
                touched[domain] = (state, journal, faust_event)
            await send_outputs(batches, outputs, STAGE, "inbox-scheduling", caused)
            # The states of this batch, not states.load(): a rebalance during the send empties the cache, and a
            # state loaded again would have none of the batch's changes to write.
            for state, journal, faust_event in touched.values():
                write_as(faust_event)
                journal.write(state.take_changes())


def _restore(domain: str, entries: dict) -> SchedulingDomain:
    """The domain's core from its entries, its long-lived objects then moved out of the collector's way."""
    state = SchedulingDomain.restore(domain, entries)
    gc.freeze()
    return state
