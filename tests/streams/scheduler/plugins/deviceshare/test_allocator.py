"""DeviceShare's allocator: Koordinator's default allocation (DS-7..9), ``TestAllocateByTopology`` (DS-10..12),
the Filter cases of ``Test_Plugin_Filter``, GPU partitions (built-in Hopper table, the v1.6 article's table),
GPU + RDMA joint allocation with VFs, and memory completion."""

import json

import pytest

from streams.scheduler.plugins.deviceshare.allocator import Scorer, Unfit, allocate, prepare
from streams.scheduler.plugins.deviceshare.devices import NodeDevices, node_allocatable

GI = 1 << 30
K = "koordinator.sh/"
CORE, MEM, RATIO = K + "gpu-core", K + "gpu-memory", K + "gpu-memory-ratio"
LEAST = Scorer("LeastAllocated", ((RATIO, 1), (MEM, 1), (K + "rdma", 1), (K + "fpga", 1)))
MOST = Scorer("MostAllocated", LEAST.weights)
NONE = Scorer("LeastAllocated", ())


def gpu(minor, memory="8Gi", numa=None, pcie=None, health=True):
    device = {"type": "gpu", "minor": minor, "id": f"GPU-{minor}", "health": health,
              "resources": {CORE: "100", MEM: memory, RATIO: "100"}}
    if numa is not None:
        device["topology"] = {"socketID": 0, "nodeID": numa, "pcieID": str(pcie), "busID": f"0000:{minor:02x}:00.0"}
    return device


def rdma(minor, numa, pcie, vfs=()):
    device = {"type": "rdma", "minor": minor, "id": f"RDMA-{minor}", "health": True, "resources": {K + "rdma": "100"},
              "topology": {"socketID": 0, "nodeID": numa, "pcieID": str(pcie), "busID": f"0000:{0x80 + minor:02x}:00.0"}}
    if vfs:
        device["vfGroups"] = [{"labels": {"type": "general"},
                               "vfs": [{"minor": i, "busID": bus} for i, bus in enumerate(vfs)]}]
    return device


def node_devices(devices, labels=None, annotations=None):
    manifest = {"metadata": {"name": "n1", "labels": labels or {}, "annotations": annotations or {}},
                "spec": {"devices": devices}}
    return NodeDevices.from_record({"manifest": json.dumps(manifest)})


def use(node, minor, core, ratio):
    """Another pod's allocation, completed with its gpu-memory as Koordinator records it (8Gi GPUs)."""
    node.apply({"gpu": [{"minor": minor, "resources": {CORE: core, RATIO: ratio, MEM: ratio * 8 * GI // 100}}]}, 1)


def pod(requests, annotations=None):
    return prepare(requests, annotations or {})


def minors(result, kind="gpu"):
    return [entry["minor"] for entry in result[kind]]


FOUR = [gpu(m) for m in (1, 2, 3, 4)]


def test_DS_7_least_allocated_takes_the_emptiest_gpu_lowest_minor_first():
    node = node_devices(FOUR)
    use(node, 1, 50, 50)
    use(node, 2, 50, 50)
    the_pod = pod({CORE: 50, RATIO: 50})
    assert LEAST.device(the_pod.gpu.per_gpu, node.total("gpu", 3), node.free("gpu", 3)) == 75
    assert LEAST.device(the_pod.gpu.per_gpu, node.total("gpu", 1), node.free("gpu", 1)) == 25
    result = allocate(the_pod, node, {}, LEAST)
    assert result == {"gpu": [{"minor": 3, "id": "GPU-3", "resources": {CORE: 50, RATIO: 50, MEM: 4 * GI}}]}


def test_DS_8_most_allocated_packs_onto_the_used_gpu():
    node = node_devices(FOUR)
    use(node, 3, 50, 50)
    use(node, 4, 50, 50)
    assert minors(allocate(pod({CORE: 50, RATIO: 50}), node, {}, MOST)) == [3]


def test_DS_9_without_a_scorer_the_lowest_free_minor():
    node = node_devices(FOUR)
    assert minors(allocate(pod({CORE: 50, RATIO: 50}), node, {}, NONE)) == [1]


EIGHT = [gpu(m, numa=m // 4, pcie=m // 2) for m in range(8)]
RDMA_4 = [rdma(m, m // 2, m) for m in range(4)]


def topology_node():
    node = node_devices(EIGHT + RDMA_4)
    return node


@pytest.mark.parametrize("count, hint, used, expected", [
    pytest.param(1, None, [5], [4], id="DS-10-same-pcie-as-the-used-gpu"),
    pytest.param(2, None, [5], [6, 7], id="DS-11"),
    pytest.param(2, "PCIe", [5], [6, 7], id="DS-11-required-pcie"),
    pytest.param(4, "NUMANode", [5], [0, 1, 2, 3], id="DS-12-required-numa"),
])
def test_topology(count, hint, used, expected):
    node = topology_node()
    for minor in used:
        use(node, minor, 100, 100)
    annotations = {"scheduling.koordinator.sh/device-allocate-hint": json.dumps(
        {"gpu": {"requiredTopologyScope": hint}})} if hint else {}
    assert minors(allocate(pod({"nvidia.com/gpu": count}, annotations), node, {}, LEAST)) == expected


def test_DS_12_no_numa_node_with_four_free_gpus_is_unschedulable():
    node = topology_node()
    use(node, 5, 100, 100)
    use(node, 0, 100, 100)
    annotations = {"scheduling.koordinator.sh/device-allocate-hint": '{"gpu": {"requiredTopologyScope": "NUMANode"}}'}
    with pytest.raises(Unfit) as failure:
        allocate(pod({"nvidia.com/gpu": 4}, annotations), node, {}, LEAST)
    assert failure.value.reason == "Insufficient Topology Scoped GPU Devices" and failure.value.resolvable


def test_filter_node_without_gpus_is_unresolvable():
    node = node_devices([{"type": "fpga", "minor": 0, "resources": {K + "fpga": "100"}}])
    with pytest.raises(Unfit) as failure:
        allocate(pod({CORE: 100, RATIO: 100}), node, {}, LEAST)
    assert (failure.value.reason, failure.value.resolvable) == ("Insufficient gpu devices", False)


def test_filter_gpu_with_75_free_cannot_take_100():
    node = node_devices([gpu(0)])
    use(node, 0, 25, 25)
    with pytest.raises(Unfit) as failure:
        allocate(pod({CORE: 100, RATIO: 100}), node, {}, LEAST)
    assert (failure.value.reason, failure.value.resolvable) == ("Insufficient gpu devices", True)


def test_filter_free_fpga_passes():
    node = node_devices([{"type": "fpga", "minor": 0, "resources": {K + "fpga": "100"}}])
    assert allocate(pod({K + "fpga": 100}), node, {}, LEAST) == {
        "fpga": [{"minor": 0, "resources": {K + "fpga": 100}}]}


def test_unhealthy_gpus_are_never_allocated_and_not_synced_to_the_node():
    node = node_devices([gpu(0, health=False), gpu(1)])
    assert minors(allocate(pod({"nvidia.com/gpu": 1}), node, {}, LEAST)) == [1]
    assert node_allocatable(node)[CORE] == 100 and node_allocatable(node)[K + "gpu"] == 100


HOPPER = {"node.koordinator.sh/gpu-model": "H100"}


def test_hopper_nodes_use_the_built_in_table_and_bin_pack_partitions():
    node = node_devices([gpu(m) for m in range(8)], labels={"node.koordinator.sh/gpu-partition-policy": "Honor"})
    use(node, 0, 100, 100)
    # bin-pack score: {2,3} leaves {4-7} (100) + {4,5}, {6,7} (2); {4,5} or {6,7} leave {2,3} + one pair only (2).
    assert minors(allocate(pod({"nvidia.com/gpu": 2}), node, HOPPER, LEAST)) == [2, 3]
    with pytest.raises(Unfit) as failure:
        allocate(pod({"nvidia.com/gpu": 3}), node, HOPPER, LEAST)
    assert failure.value.reason == "node(s) Unsupported number of GPU requests"


def test_honoured_partitions_need_a_table():
    node = node_devices([gpu(m) for m in range(2)], labels={"node.koordinator.sh/gpu-partition-policy": "Honor"})
    with pytest.raises(Unfit) as failure:
        allocate(pod({"nvidia.com/gpu": 1}), node, {"node.koordinator.sh/gpu-model": "A100"}, LEAST)
    assert (failure.value.reason, failure.value.resolvable) == ("node(s) missing GPU Partition Table", False)


ARTICLE_TABLE = """{
  "1": [{"NVLINK": {"minors": [0], "gpuLinkType": "NVLink", "ringBusBandwidth": "400Gi", "allocationScore": "1"}}],
  "2": [], "4": [], "8": []
}"""


def test_the_articles_partition_table_allows_only_gpu_0_for_one_gpu():
    node = node_devices([gpu(m) for m in range(2)], labels={"node.koordinator.sh/gpu-partition-policy": "Honor"},
                        annotations={"scheduling.koordinator.sh/gpu-partitions": ARTICLE_TABLE})
    restricted = {"scheduling.koordinator.sh/gpu-partition-spec": '{"allocatePolicy": "Restricted"}'}
    assert minors(allocate(pod({K + "gpu": 100}, restricted), node, {}, LEAST)) == [0]
    use(node, 0, 100, 100)
    with pytest.raises(Unfit) as failure:
        allocate(pod({K + "gpu": 100}, restricted), node, {}, LEAST)
    assert failure.value.reason == "Insufficient Partitioned GPU Devices"


def test_partitions_not_honoured_are_ignored():
    node = node_devices([gpu(m) for m in range(2)],
                        annotations={"scheduling.koordinator.sh/gpu-partitions": ARTICLE_TABLE})
    use(node, 0, 100, 100)
    assert minors(allocate(pod({K + "gpu": 100}), node, {}, LEAST)) == [1]


JOINT = {"scheduling.koordinator.sh/device-joint-allocate": '{"deviceTypes": ["gpu","rdma"]}',
         "scheduling.koordinator.sh/device-allocate-hint": '{"rdma": {"vfSelector": {}}}'}


def test_the_articles_gpu_rdma_joint_allocation_takes_a_vf_on_the_gpus_pcie_switch():
    devices = EIGHT + [rdma(m, m // 2, m, vfs=[f"0000:{0x90 + m:02x}:00.{i}" for i in (2, 1)]) for m in range(4)]
    node = node_devices(devices)
    use(node, 0, 100, 100)
    result = allocate(pod({K + "gpu": 100, K + "rdma": 100}, JOINT), node, {}, LEAST)
    assert minors(result) == [1]
    (nic,) = result["rdma"]
    assert nic["minor"] == 0 and nic["extension"] == {"vfs": [{"minor": 1, "busID": "0000:90:00.1"}]}


def test_same_pcie_joint_allocation_raises_the_rdma_count_to_the_gpus_switches():
    node = node_devices(EIGHT + RDMA_4)
    annotations = {"scheduling.koordinator.sh/device-joint-allocate":
                   '{"deviceTypes": ["gpu","rdma"], "requiredScope": "SamePCIe"}'}
    result = allocate(pod({"nvidia.com/gpu": 4, K + "rdma": 100}, annotations), node, {}, LEAST)
    assert minors(result) == [0, 1, 2, 3] and minors(result, "rdma") == [0, 1]


def test_vf_selector_on_a_device_without_vfs_is_unresolvable():
    node = node_devices(EIGHT + RDMA_4)
    with pytest.raises(Unfit) as failure:
        allocate(pod({K + "gpu": 100, K + "rdma": 100}, JOINT), node, {}, LEAST)
    assert (failure.value.reason, failure.value.resolvable) == ("Insufficient rdma VirtualFunctions", False)


def test_gpu_memory_only_requests_are_completed_with_the_ratio():
    node = node_devices([gpu(0, memory="16Gi")])
    result = allocate(pod({MEM: 4 * GI}), node, {}, LEAST)
    assert result["gpu"][0]["resources"] == {MEM: 4 * GI, RATIO: 25}
