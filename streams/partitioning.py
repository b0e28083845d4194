"""Which partition of a topic holds a key.

Every producer of the project (Faust's and the plain aiokafka clients) leaves the partition to the
client's default partitioner, Kafka's murmur2: the nth of the topic's partitions, sorted, with
n = (murmur2(key) & 0x7fffffff) mod their count. Whoever must know where a key landed (the node
aggregate sorting its table by inbox partition, the node agent finding its own actuation partition,
the benchmarks spreading keys) asks :func:`partition_for`, so they all agree with the producers.
"""

from __future__ import annotations

from typing import Iterable

from aiokafka.partitioner import DefaultPartitioner

_PARTITIONER = DefaultPartitioner()


def partition_for(partitions: int | Iterable[int], key: str | bytes) -> int:
    """The partition a producer puts ``key`` in: ``partitions`` is the topic's partition count or its
    partition ids (in any order)."""
    ordered = list(range(partitions)) if isinstance(partitions, int) else sorted(partitions)
    return _PARTITIONER(key.encode() if isinstance(key, str) else key, ordered, ordered)
