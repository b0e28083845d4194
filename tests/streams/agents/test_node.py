"""The node agent's table layout: nodes by name, the slo-controller-config once per inbox partition, each
partition's journal of raw parts; a table written before the journal existed restores as it was."""

from __future__ import annotations

import pytest

from streams.agents.journal import RAW_PARTS, Journal
from streams.agents.node import NodeKeys
from streams.nodeaggregate.partition import CONFIG_KEY
from streams.partitioning import partition_for

PARTITIONS = 4
NODES = [f"node-{index}" for index in range(12)]


@pytest.mark.parametrize("key, partition, expected", [
    pytest.param("n1", 3, "n1", id="node-by-name"),
    pytest.param(CONFIG_KEY, 0, f"{CONFIG_KEY}/0", id="config-of-partition-0"),
    pytest.param(CONFIG_KEY, 3, f"{CONFIG_KEY}/3", id="config-of-partition-3"),
])
def test_table_key(key, partition, expected):
    assert NodeKeys(partition, PARTITIONS).table_key(key) == expected


def _table() -> dict:
    """A ``node-state`` table as the agent wrote it before the journal: node entries and one config per partition."""
    table = {name: name.encode() * 3 for name in NODES}
    table.update({f"{CONFIG_KEY}/{partition}": b"config-%d" % partition for partition in range(PARTITIONS)})
    return table


def test_a_table_written_before_the_journal_restores_each_partition_as_it_was():
    table = _table()
    for partition in range(PARTITIONS):
        restored = Journal(table, NodeKeys(partition, PARTITIONS), RAW_PARTS).restore()
        nodes = {name: name.encode() * 3 for name in NODES if partition_for(PARTITIONS, name) == partition}
        assert restored == {**nodes, CONFIG_KEY: b"config-%d" % partition}


def test_a_partition_journal_of_raw_bytes_is_restored_and_left_out_of_the_entries():
    table = _table()
    partition = partition_for(PARTITIONS, "node-0")
    journal = Journal(table, NodeKeys(partition, PARTITIONS), RAW_PARTS)
    entries = journal.restore()
    journal.write({"node-0": b"\x00changed", CONFIG_KEY: b"config-new"})
    assert entries["node-0"] == b"\x00changed", "the core's entries follow what is written"
    assert table[f"journal/{partition}/0"].startswith(b'{"seq":1,')
    assert table[f"{CONFIG_KEY}/{partition}"] == b"config-new"
    again = Journal(table, NodeKeys(partition, PARTITIONS), RAW_PARTS)
    assert again.seq == 1 and again.restore() == entries
    others = [Journal(table, NodeKeys(other, PARTITIONS), RAW_PARTS)
              for other in range(PARTITIONS) if other != partition]
    assert all(other.seq == 0 and "journal" not in str(other.restore()) for other in others)


def test_every_prefix_of_a_partition_batch_restores_the_partition_before_or_after_it():
    from tests.streams.agents.test_journal import Changelog, recovered

    table, partition = Changelog(), partition_for(PARTITIONS, "node-0")
    keys = NodeKeys(partition, PARTITIONS)
    Journal(table, keys, RAW_PARTS).write({"node-0": b"a", CONFIG_KEY: b"c1"})
    Journal(table, keys, RAW_PARTS).restore()
    first = len(table.records)
    journal = Journal(recovered(table.records), keys, RAW_PARTS)
    journal.restore()
    journal.table = table
    journal.write({"node-0": b"b", CONFIG_KEY: None})
    restored = {tuple(sorted(Journal(recovered(table.records[:cut]), keys, RAW_PARTS).restore().items()))
                for cut in range(first, len(table.records) + 1)}
    assert restored == {((CONFIG_KEY, b"c1"), ("node-0", b"a")), (("node-0", b"b"),)}
