"""``partition_for`` puts a key where the producers' default partitioner does, given a count or the ids."""

from __future__ import annotations

from aiokafka.partitioner import DefaultPartitioner

from streams.partitioning import partition_for


def test_partition_is_the_producers_partition():
    for name in ("node-a", "compose-node", "fake-node", "n" * 63):
        producers = DefaultPartitioner()(name.encode(), [0, 1, 2, 3], [0, 1, 2, 3])
        assert partition_for([3, 0, 2, 1], name) == partition_for(4, name) == partition_for(4, name.encode()) == producers
