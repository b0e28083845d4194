"""CPU topology (cpu_topology.go, the T(S,N,C,P) builder of cpu_accumulator_test.go) and the cpu list format."""

import re

import pytest

from streams.scheduler.plugins.nodenumaresource.topology import CPUInfo, CPUTopology, format_cpuset, parse_cpuset


def test_build_t2142_lays_ids_out_sequentially():
    topology = CPUTopology.build(2, 1, 4, 2)
    assert topology.details[0] == CPUInfo(cpu_id=0, core_id=0, socket_id=0, node_id=0)
    assert topology.details[7] == CPUInfo(cpu_id=7, core_id=3, socket_id=0, node_id=0)
    assert topology.details[8] == CPUInfo(cpu_id=8, core_id=4, socket_id=1, node_id=1)
    assert topology.cpus_in_socket(1) == frozenset(range(8, 16))
    assert (topology.num_cpus, topology.num_cores, topology.num_nodes, topology.num_sockets) == (16, 8, 2, 2)
    assert (topology.cpus_per_core, topology.cpus_per_node, topology.cpus_per_socket) == (2, 8, 8)
    assert topology.is_valid


def test_build_t2242_has_two_nodes_per_socket():
    topology = CPUTopology.build(2, 2, 4, 2)
    nodes = {node: [i.cpu_id for i in topology.cpus if i.node_id == node] for node in range(4)}
    assert nodes == {0: list(range(0, 8)), 1: list(range(8, 16)), 2: list(range(16, 24)), 3: list(range(24, 32))}
    assert [topology.details[cpu].socket_id for cpu in (15, 16)] == [0, 1]
    assert (topology.cpus_per_core, topology.cpus_per_node, topology.cpus_per_socket) == (2, 8, 16)


def test_from_details_shifts_core_ids_by_socket():
    """convertCPUTopology: Linux numbers cores per socket, so core 0 of socket 1 becomes 1 << 16."""
    details = [
        {"id": 2, "core": 0, "socket": 1, "node": 1}, {"id": 0, "core": 0, "socket": 0, "node": 0},
        {"id": 3, "core": 0, "socket": 1, "node": 1}, {"id": 1, "core": 0, "socket": 0, "node": 0},
    ]
    topology = CPUTopology.from_details(details)
    assert [info.cpu_id for info in topology.cpus] == [0, 1, 2, 3]
    assert [info.core_id for info in topology.cpus] == [0, 0, 1 << 16, 1 << 16]
    assert (topology.num_cores, topology.num_nodes, topology.num_sockets) == (2, 2, 2)
    assert (topology.cpus_per_core, topology.cpus_per_node, topology.cpus_per_socket) == (2, 2, 2)


def test_from_details_rejects_duplicate_cpu_ids():
    details = [{"id": 0, "core": 0, "socket": 0, "node": 0}, {"id": 0, "core": 1, "socket": 0, "node": 0}]
    with pytest.raises(ValueError, match=r"duplicate cpu ids in topology: \[0\]"):
        CPUTopology.from_details(details)


def test_empty_topology_is_invalid():
    topology = CPUTopology.from_details([])
    assert not topology.is_valid
    assert (topology.cpus_per_core, topology.cpus_per_node, topology.cpus_per_socket) == (0, 0, 0)


@pytest.mark.parametrize("ids, text", [
    ([], ""), ([5], "5"), ([0, 1, 2, 3], "0-3"), ([8, 0, 3, 1, 2], "0-3,8"), ([1, 3, 5], "1,3,5"),
    ([0, 1, 4, 5, 6, 9], "0-1,4-6,9"), ([2, 2, 3], "2-3"),
])
def test_format_cpuset(ids, text):
    assert format_cpuset(ids) == text


@pytest.mark.parametrize("text, ids", [
    ("", []), ("7", [7]), ("0-3,8", [0, 1, 2, 3, 8]), ("8,0-2", [0, 1, 2, 8]), ("1-1", [1]), ("0-2,1-3", [0, 1, 2, 3]),
    ("4096", [4096]),
])
def test_parse_cpuset(text, ids):
    assert parse_cpuset(text) == ids


@pytest.mark.parametrize("text, reason", [
    ("a", "bad part 'a'"), ("1,", "bad part ''"), ("1-", "bad part '1-'"), ("-1", "bad part '-1'"),
    ("1-2-3", "bad part '1-2-3'"), (" 1", "bad part ' 1'"), ("+1", "bad part '+1'"), ("١", "bad part '١'"),
    ("3-1", "range '3-1' ends before it starts"), ("0-4097", "4097 exceeds the maximum cpu id 4096"),
])
def test_parse_cpuset_rejects_bad_input(text, reason):
    with pytest.raises(ValueError, match=re.escape(f"invalid cpu list {text!r}: {reason}")):
        parse_cpuset(text)


def test_format_then_parse_round_trips():
    ids = [0, 1, 2, 5, 7, 8, 9, 30]
    assert parse_cpuset(format_cpuset(ids)) == ids
