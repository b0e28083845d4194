"""Whether koordstream's consumer groups keep up: caught up, lagging, or stuck.

A process can be alive and still decide nothing: an agent waiting on a
record it cannot get past, a consumer that stopped committing. What tells is
the group's committed offsets against the partitions' end offsets, sampled
twice: records waiting (lag) while no committed offset moved between the two
samples is *stuck*; lag with progress is *lagging*. ``koord status`` reports
it for the worker's group (routers and aggregates) and the projection's.
"""

from __future__ import annotations

import asyncio
import dataclasses

from streams import kafka
from streams.topology import Topology

Offsets = dict[tuple[str, int], tuple[int, int]]
"""(topic, partition) -> (committed offset, end offset) of one group."""


@dataclasses.dataclass(frozen=True)
class Progress:
    group: str
    state: str
    """``caught up``, ``lagging``, ``stuck`` or ``no offsets`` (the group has committed nothing yet)."""
    waiting: int
    """Records between the committed offsets and the ends, summed over the group's partitions."""
    stuck_on: tuple[tuple[str, int, int], ...] = ()
    """(topic, partition, committed offset) of every partition with records waiting and no progress."""

    def describe(self) -> str:
        if self.state == "stuck":
            where = ", ".join(f"{topic}[{partition}]@{offset}" for topic, partition, offset in self.stuck_on[:3])
            return f"STUCK: {self.waiting} records waiting, committed offset not moving at {where}"
        if self.state == "lagging":
            return f"lagging: {self.waiting} records waiting, committing"
        return self.state


def judge(group: str, first: Offsets, second: Offsets) -> Progress:
    """The verdict on ``group`` from two samples of its offsets, taken some seconds apart."""
    if not second:
        return Progress(group, "no offsets", 0)
    waiting = {tp: end - committed for tp, (committed, end) in second.items() if end > committed}
    if not waiting:
        return Progress(group, "caught up", 0)
    stuck = tuple(sorted((topic, partition, second[(topic, partition)][0]) for topic, partition in waiting
                         if (topic, partition) in first and first[(topic, partition)][0] == second[(topic, partition)][0]
                         and first[(topic, partition)][1] > first[(topic, partition)][0]))
    return Progress(group, "stuck" if stuck else "lagging", sum(waiting.values()), stuck)


async def sample(bootstrap: str, group: str, topology: Topology) -> Offsets:
    """The committed and end offsets of every partition of ``topology`` that ``group`` has committed on.
    (The partitions are named: Tansu drops the connection on an OffsetFetch for all of a group's.)"""
    from aiokafka.structs import TopicPartition

    everything = [TopicPartition(spec.name, partition) for spec in topology.topics for partition in range(spec.partitions)]
    async with kafka.admin_client(bootstrap) as admin:
        committed = await admin.list_consumer_group_offsets(group, partitions=everything)
    partitions = sorted((tp.topic, tp.partition) for tp, meta in committed.items() if meta.offset >= 0)
    if not partitions:
        return {}
    ends = await kafka.read_end_offsets(bootstrap, partitions)
    by_tp = {(tp.topic, tp.partition): meta.offset for tp, meta in committed.items()}
    return {tp: (by_tp[tp], ends[tp]) for tp in partitions}


async def progress(bootstrap: str, groups: list[str], topology: Topology, interval_s: float) -> list[Progress]:
    """Each group's verdict from two samples ``interval_s`` apart (one, when nothing is waiting). The
    interval must exceed the groups' commit interval (a worker's is ``streams.app.COMMIT_INTERVAL_S``, Faust's
    default 2.8 s)."""
    first = [await sample(bootstrap, group, topology) for group in groups]
    if all(end <= committed for offsets in first for committed, end in offsets.values()):
        return [judge(group, offsets, offsets) for group, offsets in zip(groups, first)]
    await asyncio.sleep(interval_s)
    second = [await sample(bootstrap, group, topology) for group in groups]
    return [judge(group, a, b) for group, a, b in zip(groups, first, second)]
