"""Replaying the domain router: its inbox through a fresh ``DomainTable`` per partition, compared with
the routes the scheduling inbox holds.

The pods the domain router reads from their source topic (``routing.DOMAIN_ROUTER_SOURCES``) have no
routing-inbox record: the replay takes them from their forwards in the scheduling inbox, each applied where its
forward says the table applied it (after the routing-inbox record of ``Causation.routed_after``). So the replay
checks every pod's domain against the table as it stood then; a pod that reached no domain is not seen.

A *route* is one record the domain router sends to the scheduling inbox: the domain it is keyed by,
the source record it forwards (topic, partition, offset) and whether it carries no object (a deletion,
or a node moving out of the domain). The replay applies every routing-inbox event the agent would
(read and checked as the agent reads them, ``run.decode``), in inbox order, with the agent's own
guarded step (``streams.domainrouter.route_guarded``): an event the table refuses or fails on goes nowhere
and is a dead letter here too. The Ack request a copy carries is not compared: it says who
acknowledges an event, not where it goes.

The comparison (:func:`compare`), per domain:

- *missing*: a route the replay makes that the scheduling inbox does not hold;
- *extra*: a scheduling-inbox record forwarding a source the replayed events forwarded, that the replay
  does not make (records of sources the replay did not read, written after it read the inbox, are left
  out);
- *out of order*: the routes one routing partition sent one domain, held in another order than the
  replay's. Routing partitions interleave freely in a domain; each keeps its own order.

Copies that at-least-once delivery repeats count at their first occurrence, as the scheduling domain's
dedupe by source offset applies them.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Iterable

from streams.domainrouter import route_guarded
from streams.domains import DomainTable
from streams.events import Causation, InboxEvent
from streams.replay.run import in_inbox_order

ROUTING = "routing"


@dataclasses.dataclass(frozen=True, order=True)
class Route:
    domain: str
    source: tuple[str, int, int]
    """(topic, partition, offset) of the forwarded source record."""
    empty: bool = False
    """The forward carries no object: a deletion, or a node moving out of ``domain``."""


@dataclasses.dataclass(frozen=True)
class Replayed:
    """The routes of the replayed events, in the order each routing partition made them."""

    routes: tuple[tuple[int, Route], ...]
    """(routing partition, route)."""
    sources: frozenset[tuple[str, int, int]]
    """The sources of every replayed event."""
    dead_letters: int
    events: int


@dataclasses.dataclass(frozen=True)
class DomainReport:
    reproduced: int
    missing: tuple[Route, ...]
    extra: tuple[Route, ...]
    out_of_order: tuple[int, ...]
    """The routing partitions whose routes to the domain are held in another order."""

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.out_of_order)

    def to_dict(self) -> dict:
        return {"reproduced": self.reproduced, "missing": len(self.missing), "extra": len(self.extra),
                "outOfOrderPartitions": list(self.out_of_order), "ok": self.ok,
                "missingRoutes": [_describe(r) for r in self.missing], "extraRoutes": [_describe(r) for r in self.extra]}


def replay(events: Iterable[tuple[str, InboxEvent]], domain: str | None = None,
           held: Iterable[tuple[str, InboxEvent]] = ()) -> Replayed:
    """Run ``events`` (routing-inbox key, event) through one fresh ``DomainTable`` per partition, with the pods the
    domain router read from their source topic, which ``held`` (the scheduling inbox, as ``recorded`` takes it)
    holds; ``domain`` keeps only the routes to that domain."""
    tables: dict[int, DomainTable] = {}
    routes, sources, dead_letters, count = [], set(), 0, 0
    for event in _as_applied(events, held):
        cause = event.causation
        partition = cause.inbox_partition
        table = tables.setdefault(partition, DomainTable(partition))
        routed, outs = route_guarded(table, event, lambda: "")
        count += 1
        dead_letters += sum(1 for schema, _ in outs if schema == "DeadLetter")
        source = (cause.source_topic, cause.source_partition, cause.source_offset)
        sources.add(source)
        made = [Route(new_domain, stored.source) for new_domain, stored in routed.catch_up]
        made += [Route(f.domain, source, f.deleted or event.deleted) for f in routed.forwards]
        routes += [(partition, route) for route in made if domain is None or route.domain == domain]
    return Replayed(tuple(routes), frozenset(sources), dead_letters, count)


def _as_applied(events: Iterable[tuple[str, InboxEvent]], held: Iterable[tuple[str, InboxEvent]]) -> list[InboxEvent]:
    """The routing-inbox events and the pods the domain router read itself, in the order each partition's table
    applied them: a pod's forward names the last routing-inbox record applied before it
    (``Causation.routed_after``), and the pods of a partition came in source-offset order. A pod is taken back
    as the domain router read it: from partition p of its source topic, for the table of partition p."""
    pending: dict[int, list[tuple[int, int, InboxEvent]]] = {}
    for _, event in held:
        cause = event.causation
        if cause.routed_after is None:
            continue
        read = Causation(cause.source_topic, cause.source_partition, cause.source_offset,
                         cause.source_topic, cause.source_partition, cause.source_offset)
        pending.setdefault(cause.source_partition, []).append(
            (cause.routed_after, cause.source_offset, dataclasses.replace(event, causation=read)))
    queues = {partition: collections.deque(sorted(items, key=lambda item: item[:2]))
              for partition, items in pending.items()}
    applied = []
    for _, event in in_inbox_order(events):
        cause = event.causation
        queue = queues.get(cause.inbox_partition, ())
        while queue and queue[0][0] < cause.inbox_offset:
            applied.append(queue.popleft()[2])
        applied.append(event)
    for partition in sorted(queues):
        applied += [item[2] for item in queues[partition]]
    return applied


def recorded(events: Iterable[tuple[str, InboxEvent]], domain: str | None = None) -> list[Route]:
    """The routes of scheduling-inbox ``events`` (inbox key, event: as the scheduling agent reads them,
    ``run.decode``), in inbox order."""
    return [Route(key, (e.causation.source_topic, e.causation.source_partition, e.causation.source_offset), e.deleted)
            for key, e in in_inbox_order(events) if domain is None or key == domain]


def compare(replayed: Replayed, held: Iterable[Route]) -> dict[str, DomainReport]:
    """Per domain, the replayed routes against the ``held`` ones (``recorded``)."""
    made: dict[Route, int] = {}
    for partition, route in replayed.routes:
        made.setdefault(route, partition)
    seen: dict[Route, None] = {}
    for route in held:
        if route.source in replayed.sources:
            seen.setdefault(route, None)
    reports = {}
    for domain in sorted({r.domain for r in made} | {r.domain for r in seen}):
        ours = [r for r in made if r.domain == domain]
        theirs = [r for r in seen if r.domain == domain]
        found = set(theirs)
        out_of_order = tuple(sorted(
            partition for partition in {made[r] for r in ours}
            if [r for r in theirs if made.get(r) == partition] != [r for r in ours if made[r] == partition and r in found]))
        reports[domain] = DomainReport(sum(1 for r in ours if r in found), tuple(r for r in ours if r not in found),
                                       tuple(r for r in theirs if r not in made), out_of_order)
    return reports


def _describe(route: Route) -> str:
    topic, partition, offset = route.source
    return f"{route.domain} <- {topic}[{partition}]@{offset}" + (" (no object)" if route.empty else "")
