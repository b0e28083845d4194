"""Issue 17 end to end on the embedded broker: each GPU example of the Koordinator v1.6 article applied with
``koord apply`` places as the article says — GPUs on one PCIe switch, on one NUMA node, by the Device's
partition table with a Restricted pod, GPU + RDMA joint allocation with a VF, HAMi-isolated sharing of 50 % of a
GPU. The pods are the article's, plus a toleration of this scenario's tainted nodes (the session cluster is
shared); the Device objects are applied like the node agent reports them. Results are read from the decision
stream (``device-allocated``)."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from streams import kafka
from streams.schemas import codec

pytestmark = [pytest.mark.integration, pytest.mark.scenario]

TAINT = "e2e-devices"
TOLERATION = {"key": "e2e-scenario", "operator": "Equal", "value": TAINT, "effect": "NoSchedule"}


def gpu_node(name: str, labels: dict | None = None) -> dict:
    resources = {"cpu": "96", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"e2e-scenario": TAINT, "e2e-node": name, **(labels or {})}},
            "spec": {"taints": [{"key": "e2e-scenario", "value": TAINT, "effect": "NoSchedule"}]},
            "status": {"capacity": resources, "allocatable": resources}}


def device(name: str, gpus: int = 8, rdmas: int = 0, labels: dict | None = None, annotations: dict | None = None) -> dict:
    devices = [{"type": "gpu", "minor": m, "id": f"GPU-{name}-{m}", "health": True,
                "resources": {"koordinator.sh/gpu-core": "100", "koordinator.sh/gpu-memory": "80Gi",
                              "koordinator.sh/gpu-memory-ratio": "100"},
                "topology": {"socketID": 0, "nodeID": m // 4, "pcieID": str(m // 2), "busID": f"0000:{m:02x}:00.0"}}
               for m in range(gpus)]
    devices += [{"type": "rdma", "minor": m, "id": f"NIC-{name}-{m}", "health": True,
                 "resources": {"koordinator.sh/rdma": "100"},
                 "topology": {"socketID": 0, "nodeID": m // 2, "pcieID": str(m), "busID": f"0000:{0x80 + m:02x}:00.0"},
                 "vfGroups": [{"labels": {"type": "general"},
                               "vfs": [{"minor": v, "busID": f"0000:{0x90 + m:02x}:00.{v + 1}"} for v in range(2)]}]}
                for m in range(rdmas)]
    return {"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Device",
            "metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}},
            "spec": {"devices": devices}}


def article_pod(name: str, node: str, annotations: dict | None = None, labels: dict | None = None,
                requests: dict | None = None, limits: dict | None = None) -> dict:
    resources = {key: value for key, value in (("requests", requests), ("limits", limits)) if value}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "e2e-devices", "annotations": annotations or {},
                         "labels": labels or {}},
            "spec": {"nodeSelector": {"e2e-node": node}, "tolerations": [TOLERATION],
                     "containers": [{"name": "main", "image": "app", "resources": resources}]}}


PARTITIONS = """{
  "1": [{"NVLINK": {"minors": [0], "gpuLinkType": "NVLink", "ringBusBandwidth": "400Gi", "allocationScore": "1"}}],
  "2": [], "4": [], "8": []
}"""


async def _decisions(bootstrap: str, topic: str, pods: set[str], timeout_s: float = 60) -> dict[str, dict]:
    consumer = AIOKafkaConsumer(**kafka.client_settings(bootstrap), **kafka.consumer_settings(), group_id=None,
                                enable_auto_commit=False, auto_offset_reset="earliest")
    await consumer.start()
    found: dict[str, dict] = {}
    try:
        consumer.assign([TopicPartition(topic, p) for p in await kafka.partitions_for(consumer, topic)])
        deadline = time.monotonic() + timeout_s
        while set(found) != pods and time.monotonic() < deadline:
            for messages in (await consumer.getmany(timeout_ms=200)).values():
                for message in messages:
                    schema, record = codec.decode(message.value)
                    if schema == "SchedulingDecision" and record["pod"]["name"] in pods:
                        found[record["pod"]["name"]] = record
        return found
    finally:
        await consumer.stop()


def minors(decision: dict, kind: str = "gpu") -> list[int]:
    allocated = json.loads(decision["annotations"]["scheduling.koordinator.sh/device-allocated"])
    return [entry["minor"] for entry in allocated[kind]]


def test_the_v1_6_articles_gpu_examples_place_as_it_says(cluster):
    setup = [gpu_node("dev-pcie"), device("dev-pcie"), gpu_node("dev-numa"), device("dev-numa"),
             gpu_node("dev-part"), device("dev-part", gpus=2, labels={"node.koordinator.sh/gpu-partition-policy": "Honor"},
                                         annotations={"scheduling.koordinator.sh/gpu-partitions": PARTITIONS}),
             gpu_node("dev-rdma"), device("dev-rdma", rdmas=4),
             gpu_node("dev-hami", {"koordinator.sh/gpu-isolation-provider": "HAMi-core"}), device("dev-hami", gpus=1)]
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input="\n".join(json.dumps(m) for m in setup))
    hint = "scheduling.koordinator.sh/device-allocate-hint"
    pods = [
        article_pod("same-pcie", "dev-pcie", {hint: '{"gpu": {"requiredTopologyScope": "PCIe"}}'},
                    limits={"koordinator.sh/gpu": "200"}),
        article_pod("same-numa", "dev-numa", {hint: '{"gpu": {"requiredTopologyScope": "NUMANode"}}'},
                    limits={"koordinator.sh/gpu": "400"}),
        article_pod("hello-gpu", "dev-part", {"scheduling.koordinator.sh/gpu-partition-spec":
                                              '{"allocatePolicy": "Restricted"}'}, limits={"koordinator.sh/gpu": "100"}),
        article_pod("pod-vf01", "dev-rdma", {"scheduling.koordinator.sh/device-joint-allocate":
                                             '{"deviceTypes": ["gpu","rdma"]}', hint: '{"rdma": {"vfSelector": {}}}'},
                    requests={"koordinator.sh/gpu": "100", "koordinator.sh/rdma": "100"},
                    limits={"koordinator.sh/gpu": "100", "koordinator.sh/rdma": "100"}),
        article_pod("pod-example", "dev-hami", labels={"koordinator.sh/gpu-isolation-provider": "hami-core"},
                    requests={"cpu": "40m", "memory": "40Mi", "koordinator.sh/gpu-shared": "1",
                              "koordinator.sh/gpu-core": "50", "koordinator.sh/gpu-memory-ratio": "50"},
                    limits={"cpu": "40m", "memory": "40Mi", "koordinator.sh/gpu-shared": "1",
                            "koordinator.sh/gpu-core": "50", "koordinator.sh/gpu-memory-ratio": "50"}),
    ]
    cluster.koord("apply", "-f", "-", input="\n".join(json.dumps(p) for p in pods))
    names = cluster.topology.names()
    found = asyncio.run(_decisions(cluster.bootstrap, names["decisions"], {p["metadata"]["name"] for p in pods}))
    assert {name: d["result"] for name, d in found.items()} == {p["metadata"]["name"]: "Scheduled" for p in pods}
    same_pcie = minors(found["same-pcie"])
    assert len(same_pcie) == 2 and same_pcie[0] // 2 == same_pcie[1] // 2, "one PCIe switch"
    same_numa = minors(found["same-numa"])
    assert len(same_numa) == 4 and len({m // 4 for m in same_numa}) == 1, "one NUMA node"
    assert minors(found["hello-gpu"]) == [0], "the only 1-GPU partition of the table"
    gpu, nic = minors(found["pod-vf01"]), json.loads(
        found["pod-vf01"]["annotations"]["scheduling.koordinator.sh/device-allocated"])["rdma"]
    assert len(gpu) == 1 and nic[0]["minor"] == gpu[0] // 2 and len(nic[0]["extension"]["vfs"]) == 1
    shared = json.loads(found["pod-example"]["annotations"]["scheduling.koordinator.sh/device-allocated"])["gpu"]
    assert shared[0]["resources"] == {"koordinator.sh/gpu-core": "50", "koordinator.sh/gpu-memory": "40Gi",
                                      "koordinator.sh/gpu-memory-ratio": "50"}
    assert found["pod-example"]["annotations"]["hami.io/vgpu-node"] == "dev-hami"
    _assert_shown_with(cluster, "pod-example", found["pod-example"]["annotations"])


def _assert_shown_with(cluster, name: str, annotations: dict[str, str], timeout_s: float = 60) -> None:
    """`koord get pods` shows the pod with the annotations its decision wrote, once the read model has it."""
    deadline = time.monotonic() + timeout_s
    while True:
        shown = {pod["metadata"]["name"]: pod for pod in cluster.koord_json("get", "pods", "-n", "e2e-devices")["items"]}
        held = (shown.get(name) or {}).get("metadata", {}).get("annotations") or {}
        if all(held.get(key) == value for key, value in annotations.items()):
            return
        assert time.monotonic() < deadline, f"koord get pods shows {name} with {held}, not {annotations}"
        time.sleep(0.5)
