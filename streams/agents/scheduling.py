"""Scheduling aggregate agent: one serial decision stream per domain.

Reads the scheduling inbox, hands each event to the pure core
(``streams.scheduler.domain``), sends the decisions, then writes the changed
state entries to the ``scheduling-state`` table. Decisions are delivered
before the table is written: after a crash the event is processed again and
re-emits the same decisions (same ids), which readers deduplicate.

The core's in-memory state for a domain is rebuilt from the table on first
use and dropped on every rebalance, when the table may have moved.
"""

from __future__ import annotations

import faust

from streams.agents.inbox import inbox_events
from streams.app import raw_topic
from streams.scheduler.domain import SchedulingDomain
from streams.schemas import codec
from streams.topology import Topology

STAGE = "scheduling"
SEPARATOR = "|"


def register(app: faust.App, topology: Topology) -> None:
    inbox_spec = topology.spec("inbox-scheduling")
    decisions = raw_topic(app, topology.name("decisions"))
    dead_letters = raw_topic(app, topology.name("deadletters"))
    topic_ids = {name: topic_id for topic_id, name in topology.names().items()}
    table = app.Table("scheduling-state", partitions=inbox_spec.partitions)
    """Values are JSON (Faust's table default): internal state, not a public contract."""
    domains: dict[str, SchedulingDomain] = {}

    def load(domain: str) -> SchedulingDomain:
        if domain not in domains:
            prefix = domain + SEPARATOR
            entries = {key[len(prefix):]: value for key, value in table.items() if key.startswith(prefix)}
            domains[domain] = SchedulingDomain.restore(domain, entries)
        return domains[domain]

    @app.on_partitions_revoked.connect
    async def forget_revoked(sender, revoked, **kwargs):
        domains.clear()

    @app.on_partitions_assigned.connect
    async def forget_assigned(sender, assigned, **kwargs):
        domains.clear()

    @app.agent(raw_topic(app, inbox_spec.name), name="koord-scheduling")
    async def schedule(stream):
        async for domain, event in inbox_events(stream, topic_ids, dead_letters, STAGE):
            state = load(domain)
            pending = [await decisions.send(key=_pod_key(d).encode(), value=codec.encode("SchedulingDecision", d))
                       for d in state.handle(event)]
            for future in pending:
                await future
            for key, value in state.take_changes().items():
                if value is None:
                    table.pop(domain + SEPARATOR + key, None)
                else:
                    table[domain + SEPARATOR + key] = value


def _pod_key(decision: dict) -> str:
    return f"{decision['pod']['namespace']}/{decision['pod']['name']}"
