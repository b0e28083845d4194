"""Scheduling aggregate agent: one serial decision stream per domain.

Reads the scheduling inbox in batches and hands each event to its domain's pure core
(``streams.scheduler.domain``), in the shell every aggregate runs in (``streams.agents.aggregate``):
outputs delivered, then the changed entries written to the ``scheduling-state`` table under the
domain's prefix, behind its journal. A domain is made for any name its inbox records carry: they are signed
by the domain router (``streams.signing``), which names only the domains of the ElasticQuotaProfiles it read.

After a core is rebuilt from the table, the long-lived objects are moved out of the garbage collector's
way (``gc.freeze``), which the scheduler's benchmark shows is worth ~15 %.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable

import faust

from streams.agents.aggregate import Aggregate, Handled, register_aggregate
from streams.agents.journal import Prefixed
from streams.inbox import handle_guarded
from streams.partitioning import partition_for
from streams.scheduler.domain import SchedulingDomain
from streams.topology import Topology

STAGE = "scheduling"
SEPARATOR = "|"


def register(app: faust.App, topology: Topology) -> None:
    partitions = topology.spec("inbox-scheduling").partitions
    register_aggregate(app, topology, Aggregate(
        stage=STAGE, agent="koord-scheduling", inbox="inbox-scheduling", table="scheduling-state",
        core_of=lambda domain, event: domain,
        partition_of=lambda domain: partition_for(partitions, domain),
        keys=lambda domain: Prefixed(domain + SEPARATOR),
        restore=_restore,
        step=lambda state, event, value: Handled(handle_guarded(STAGE, event, state.handle), event),
        stats=lambda state: [framework.stats for framework in state.frameworks.values()],
        held=lambda table_keys, held_partitions: sorted(domain for domain in domains_in(table_keys)
                                                        if partition_for(partitions, domain) in held_partitions)))


def domains_in(table_keys: Iterable[str]) -> set[str]:
    """The domains whose entries are among ``table_keys`` (``domain|entry``; a domain's name, a quota tree's
    id, is a label value and has no ``|``)."""
    return {key.partition(SEPARATOR)[0] for key in table_keys if SEPARATOR in key}


def _restore(domain: str, entries: dict) -> SchedulingDomain:
    """The domain's core from its entries, its long-lived objects then moved out of the collector's way."""
    state = SchedulingDomain.restore(domain, entries)
    gc.freeze()
    return state
