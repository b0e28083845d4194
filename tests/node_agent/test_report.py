"""Manifest building blocks: Go durations, metav1 times, quantities as resource.Quantity writes them."""

import pytest

from node_agent.report import (GPUDevice, PodReport, RDMADevice, Usage, device_manifest, go_duration,
                               node_metric_manifest, node_resource_topology_manifest, rfc3339)
from streams.objects import Document, to_record


@pytest.mark.parametrize("seconds, expected", [(300, "5m0s"), (1800, "30m0s"), (3600, "1h0m0s"), (90.5, "1m30.5s"),
                                               (5, "5s")], ids=["5m", "30m", "1h", "fraction", "seconds"])
def test_go_duration(seconds, expected):
    assert go_duration(seconds) == expected


def test_rfc3339_whole_seconds_utc():
    assert rfc3339(1_700_000_000.9) == "2023-11-14T22:13:20Z"


@pytest.mark.parametrize("usage, expected", [
    (Usage(1.23456, 1024.9), {"cpu": "1234m", "memory": "1Ki"}),
    (Usage(2.0, None), {"cpu": "2"}),
    (Usage(-0.1, float("nan")), {"cpu": "0"}),
], ids=["truncated", "missing-memory", "negative-and-nan"])
def test_usage_resources(usage, expected):
    assert usage.resources() == expected


def test_no_device_no_device_object():
    assert device_manifest("n1", [], []) is None


def test_device_topology_names_socket_numa_pcie_and_the_vfs_by_minor():
    gpu = GPUDevice("GPU-1", 0, 80 << 30, 1, "pci0000:80", "0000:81:00.0", socket=1)
    nic = RDMADevice("0000:82:00.0", 0, True, 1, "pci0000:80", ("0000:82:00.2", "0000:82:00.3"), socket=1)
    devices = device_manifest("n1", [gpu], [nic], "A100")["spec"]["devices"]
    assert devices[0]["topology"] == {"socketID": 1, "nodeID": 1, "pcieID": "pci0000:80", "busID": "0000:81:00.0"}
    assert devices[1]["vfGroups"] == [{"vfs": [{"minor": 0, "busID": "0000:82:00.2"},
                                               {"minor": 1, "busID": "0000:82:00.3"}]}]


def test_node_resource_topology_as_koordlet_reports_it():
    manifest = node_resource_topology_manifest("n1", [(1, 26, 64 << 30), (0, 26, 63 << 30)])
    assert (manifest["metadata"], manifest["topologyPolicies"]) == (
        {"name": "n1", "labels": {"app.kubernetes.io/managed-by": "Koordinator"}}, ["None"])
    assert manifest["zones"][0] == {"name": "node-0", "type": "Node", "resources": [
        {"name": "cpu", "capacity": "26", "allocatable": "26", "available": "26"},
        {"name": "hugepages-1Gi", "capacity": "0", "allocatable": "0", "available": "0"},
        {"name": "hugepages-2Mi", "capacity": "0", "allocatable": "0", "available": "0"},
        {"name": "memory", "capacity": "63Gi", "allocatable": "63Gi", "available": "63Gi"}]}
    record = to_record(Document("<test>", 0, 1, manifest))
    assert (record.topic, record.key) == ("noderesourcetopologies", "n1")
    assert [(z["name"], z["resources"][0]["allocatable"], z["resources"][3]["allocatable"])
            for z in record.record["zones"]] == [("node-0", 26_000, 63 << 30), ("node-1", 26_000, 64 << 30)]
    assert node_resource_topology_manifest("n1", []) is None


def test_node_metric_carries_throttling_cold_pages_and_the_memory_policy():
    pods = [PodReport("u1", "ns", "web", None, "LS", Usage(1.0, 1e9), throttled_ratio=0.25, cold_page_bytes=4096),
            PodReport("u2", "ns", "idle", None, "LS", Usage(0.1, 1e8))]
    manifest = node_metric_manifest("n1", 0, Usage(2.0, 4e9), Usage(0.5, 1e9), [], [], pods, [],
                                    memory_policy="usageWithPageCache", cold_page_bytes=1 << 20)
    assert manifest["spec"] == {"metricCollectPolicy": {"nodeMemoryCollectPolicy": "usageWithPageCache"}}
    assert manifest["status"]["nodeMetric"]["coldPageBytes"] == 1 << 20
    idle, web = manifest["status"]["podsMetric"]
    assert (web["throttledRatio"], web["coldPageBytes"]) == (0.25, 4096)
    assert "throttledRatio" not in idle and "coldPageBytes" not in idle
