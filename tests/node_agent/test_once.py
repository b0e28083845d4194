"""``koord node-agent --once`` on this machine: capacity and topology against sysfs read independently here."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from streams.cli.nodeagent import node_agent
from streams.objects import Document, parse_quantity, to_record

SYS_CPU = Path("/sys/devices/system/cpu")


def _cpu_list(text: str) -> list[int]:
    cpus = []
    for part in text.strip().split(","):
        first, _, last = part.partition("-")
        cpus.extend(range(int(first), int(last or first) + 1))
    return cpus


def _numa_node(cpu: int) -> int:
    """The NUMA node from the ``cpuN/nodeK`` link (another source than node*/cpulist the agent reads)."""
    links = [name for name in os.listdir(SYS_CPU / f"cpu{cpu}") if re.fullmatch(r"node\d+", name)]
    return int(links[0][4:]) if links else 0


@pytest.fixture(scope="module")
def once() -> dict[str, dict]:
    if not (SYS_CPU / "online").exists() or not Path("/proc/meminfo").exists():
        pytest.skip("needs Linux /proc and /sys")
    result = CliRunner().invoke(node_agent, ["--once", "-o", "json", "--collect-interval", "0.5"])
    assert result.exit_code == 0, result.output
    return {item["kind"]: item for item in json.loads(result.output)["items"]}


def test_capacity_is_online_cpus_and_memtotal(once):
    online = _cpu_list((SYS_CPU / "online").read_text())
    memtotal_kib = int(re.search(r"^MemTotal:\s+(\d+) kB", Path("/proc/meminfo").read_text(), re.M).group(1))
    capacity = once["Node"]["status"]["capacity"]
    assert parse_quantity(capacity["cpu"]) == len(online)
    assert parse_quantity(capacity["memory"]) == memtotal_kib * 1024
    assert once["Node"]["status"]["allocatable"] == capacity


def test_topology_matches_sysfs(once):
    detail = {c["id"]: c for c in
              json.loads(once["Node"]["metadata"]["annotations"]["node.koordinator.sh/cpu-topology"])["detail"]}
    online = _cpu_list((SYS_CPU / "online").read_text())
    assert sorted(detail) == online
    physical_core = {}
    for cpu in online:
        topo = SYS_CPU / f"cpu{cpu}" / "topology"
        assert detail[cpu]["socket"] == int((topo / "physical_package_id").read_text())
        assert detail[cpu]["node"] == _numa_node(cpu)
        physical_core[cpu] = (detail[cpu]["socket"], int((topo / "core_id").read_text()))
        for sibling in _cpu_list((topo / "thread_siblings_list").read_text()):
            if sibling in detail:
                assert detail[sibling]["core"] == detail[cpu]["core"], f"SMT siblings {cpu} and {sibling}"
    # one reported core per physical (socket, core_id), and no two physical cores merged
    pairs = {(physical_core[cpu], detail[cpu]["core"]) for cpu in online}
    assert len(pairs) == len({p for p, _ in pairs}) == len({c for _, c in pairs})


def test_cpu_basic_info_matches_cpuinfo(once):
    info = json.loads(once["Node"]["metadata"]["annotations"]["node.koordinator.sh/cpu-basic-info"])
    model = re.search(r"^model name\s*:\s*(.*)$", Path("/proc/cpuinfo").read_text(), re.M)
    assert info.get("cpuModel", "") == (model.group(1).strip() if model else "")
    smt = SYS_CPU / "smt/active"
    if smt.exists():
        assert info.get("hyperThreadEnabled", False) == (smt.read_text().strip() == "1")


def test_every_object_is_what_koord_apply_would_send(once):
    for manifest in once.values():
        to_record(Document("<test>", 0, 1, manifest))
    usage = once["NodeMetric"]["status"]["nodeMetric"]["nodeUsage"]["resources"]
    assert 0 < parse_quantity(usage["memory"]) <= parse_quantity(once["Node"]["status"]["capacity"]["memory"])


def test_numa_zones_match_sysfs(once):
    nodes = Path("/sys/devices/system/node")
    if not nodes.is_dir() or "NodeResourceTopology" not in once:
        pytest.skip("no NUMA nodes in sysfs")
    zones = {zone["name"]: {r["name"]: r["allocatable"] for r in zone["resources"]}
             for zone in once["NodeResourceTopology"]["zones"]}
    online = set(_cpu_list((SYS_CPU / "online").read_text()))
    for zone, resources in zones.items():
        node = int(zone.removeprefix("node-"))
        listed = (nodes / f"node{node}/cpulist").read_text().strip()
        cpus = online & set(_cpu_list(listed)) if listed else set()
        memtotal = re.search(r"MemTotal:\s+(\d+) kB", (nodes / f"node{node}/meminfo").read_text()).group(1)
        assert (parse_quantity(resources["cpu"]), parse_quantity(resources["memory"])) == (len(cpus), int(memtotal) * 1024)
