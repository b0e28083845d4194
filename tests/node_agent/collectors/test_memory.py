"""Node and cgroup memory under koordlet's three page-cache policies."""

import pytest

from node_agent.collectors.memory import (MemInfo, MemoryStat, cgroup_usage, node_usage, parse_memory_stat,
                                          parse_meminfo)

KIB = 1024
MEMINFO = "MemTotal:       1000 kB\nMemFree:         300 kB\nMemAvailable:    600 kB\nCached:  200 kB\n"


@pytest.mark.parametrize("policy, cold, expected", [
    ("usageWithoutPageCache", None, 400 * KIB),
    ("usageWithPageCache", None, 700 * KIB),
    ("usageWithHotPageCache", 100 * KIB, 600 * KIB),
    ("usageWithHotPageCache", None, 400 * KIB),
], ids=["without-page-cache", "with-page-cache", "hot-page-cache", "hot-without-kidled-degrades"])
def test_node_usage_policies(policy, cold, expected):
    assert node_usage(parse_meminfo(MEMINFO), policy, cold) == expected


@pytest.mark.parametrize("policy, cold, expected", [
    ("usageWithoutPageCache", None, 300),
    ("usageWithPageCache", None, 400),
    ("usageWithHotPageCache", 150, 250),
    ("usageWithHotPageCache", 10_000, 0),
], ids=["without-page-cache", "with-page-cache", "hot-page-cache", "hot-clamped-at-zero"])
def test_cgroup_usage_policies(policy, cold, expected):
    assert cgroup_usage(MemoryStat(anon=300, file=100), policy, cold) == expected


@pytest.mark.parametrize("text, expected", [
    (MEMINFO, MemInfo(1000 * KIB, 300 * KIB, 600 * KIB)),
    ("MemTotal: 1000 kB\nMemFree: 300 kB\nBuffers: 50 kB\nCached: 200 kB\n", MemInfo(1000 * KIB, 300 * KIB, 550 * KIB)),
    ("Node 0 MemTotal: 1000 kB\nNode 0 MemFree: 300 kB\nNode 0 MemAvailable: 500 kB\n",
     MemInfo(1000 * KIB, 300 * KIB, 500 * KIB)),
    ("MemFree: 300 kB\n", None),
    ("MemTotal: lots\nMemFree: 1 kB\n", None),
    ("", None),
    (None, None),
], ids=["full", "no-memavailable-estimated", "numa-node-file", "no-memtotal", "garbage", "empty", "absent"])
def test_parse_meminfo(text, expected):
    assert parse_meminfo(text) == expected


@pytest.mark.parametrize("values, v1, expected", [
    ({"total_inactive_anon": 1, "total_active_anon": 2, "total_unevictable": 3, "total_active_file": 4,
      "total_inactive_file": 5}, True, MemoryStat(6, 9)),
    ({"inactive_anon": 1, "active_anon": 2, "unevictable": 3, "active_file": 4, "inactive_file": 5}, False,
     MemoryStat(6, 9)),
    ({"inactive_anon": 1, "active_anon": 2, "unevictable": 3, "active_file": 4, "inactive_file": 5}, True, None),
    ({"total_inactive_anon": 1}, True, None),
], ids=["v1-total-keys", "v2-keys", "v1-reading-v2-keys", "missing-keys"])
def test_parse_memory_stat(values, v1, expected):
    assert parse_memory_stat(values, v1) == expected
