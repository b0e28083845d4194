"""DeviceShare through the scheduling domain, starting from the v1.6 article's YAML: GPUs on one PCIe switch,
on one NUMA node, by the Device's partition table (Restricted), GPU + RDMA joint allocation with a VF, and
HAMi-isolated GPU sharing (50 % core, 50 % memory); plus the node sync, refusals and restores."""

import json

from streams.scheduler.domain import SchedulingDomain
from tests.streams.scheduler.support import applied, converted, decisions, k8s_node, run

K = "koordinator.sh/"
S = "scheduling.koordinator.sh/"
GI = 1 << 30


def gpu_node(name, gpus=8, labels=None):
    return k8s_node(name, {"cpu": "96", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": str(gpus)},
                    labels=labels)


def device(name, gpus=8, rdmas=0, labels=None, annotations=None, vfs=False):
    devices = [{"type": "gpu", "minor": m, "id": f"GPU-{name}-{m}", "health": True,
                "resources": {K + "gpu-core": "100", K + "gpu-memory": "80Gi", K + "gpu-memory-ratio": "100"},
                "topology": {"socketID": 0, "nodeID": m // 4, "pcieID": str(m // 2), "busID": f"0000:{m:02x}:00.0"}}
               for m in range(gpus)]
    for m in range(rdmas):
        nic = {"type": "rdma", "minor": m, "id": f"NIC-{m}", "health": True, "resources": {K + "rdma": "100"},
               "topology": {"socketID": 0, "nodeID": m // 2, "pcieID": str(m), "busID": f"0000:{0x80 + m:02x}:00.0"}}
        if vfs:
            nic["vfGroups"] = [{"labels": {"type": "general"},
                                "vfs": [{"minor": v, "busID": f"0000:{0x90 + m:02x}:00.{v + 1}"} for v in range(2)]}]
        devices.append(nic)
    return converted({"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Device",
                      "metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}},
                      "spec": {"devices": devices}})


def allocated(out, name):
    (decision,) = [d for d in decisions(out) if d["pod"]["name"] == name]
    assert decision["result"] == "Scheduled", decision
    return decision["nodeName"], json.loads(decision["annotations"][S + "device-allocated"])


def minors(allocation, kind="gpu"):
    return [entry["minor"] for entry in allocation[kind]]


def test_the_device_is_synced_to_the_nodes_allocatable_and_labels():
    domain, _ = run(gpu_node("g1"), device("g1", labels={"node.koordinator.sh/gpu-model": "H100"}))
    node = domain.cluster.nodes["g1"]
    assert node.allocatable[K + "gpu-core"] == 800 and node.allocatable[K + "gpu-memory"] == 640 * GI
    assert node.allocatable[K + "gpu"] == 800 and node.labels["node.koordinator.sh/gpu-model"] == "H100"


def test_gpus_on_the_same_pcie_switch():
    domain, _ = run(gpu_node("g1"), device("g1"))
    _, out = run(applied("""
        apiVersion: v1
        kind: Pod
        metadata:
          name: same-pcie
          annotations:
            scheduling.koordinator.sh/device-allocate-hint: |-
              {
                "gpu": {
                  "requiredTopologyScope": "PCIe"
                }
              }
        spec:
          containers:
            - resources:
                limits:
                  koordinator.sh/gpu: 200
    """), domain=domain)
    _, allocation = allocated(out, "same-pcie")
    assert minors(allocation) == [0, 1]
    assert allocation["gpu"][0]["resources"] == {K + "gpu-core": "100", K + "gpu-memory": "80Gi",
                                                 K + "gpu-memory-ratio": "100"}


NUMA_POD = """
    apiVersion: v1
    kind: Pod
    metadata:
      name: {name}
      annotations:
        scheduling.koordinator.sh/device-allocate-hint: |-
          {{
            "gpu": {{
              "requiredTopologyScope": "NUMANode"
            }}
          }}
    spec:
      containers:
        - resources:
            limits:
              koordinator.sh/gpu: 400
"""


def test_gpus_on_the_same_numa_node_and_a_pod_that_cannot_get_one_waits():
    domain, _ = run(gpu_node("g1"), device("g1"))
    _, out = run(applied(NUMA_POD.format(name="numa-a")), applied(NUMA_POD.format(name="numa-b")),
                 applied(NUMA_POD.format(name="numa-c")), domain=domain)
    assert minors(allocated(out, "numa-a")[1]) == [0, 1, 2, 3]
    assert minors(allocated(out, "numa-b")[1]) == [4, 5, 6, 7]
    (refused,) = [d for d in decisions(out) if d["pod"]["name"] == "numa-c"]
    assert refused["result"] == "Unschedulable"
    assert "Insufficient koordinator.sh/gpu" in refused["message"]


def test_partitions_from_the_articles_device_with_a_restricted_pod():
    table = """{
        "1": [{"NVLINK": {"minors": [0], "gpuLinkType": "NVLink", "ringBusBandwidth": "400Gi",
                          "allocationScore": "1"}}],
        "2": [], "4": [], "8": []
    }"""
    domain, _ = run(gpu_node("node-1", gpus=2), device("node-1", gpus=2,
                    labels={"node.koordinator.sh/gpu-partition-policy": "Honor"},
                    annotations={S + "gpu-partitions": table}))
    pod = """
        apiVersion: v1
        kind: Pod
        metadata:
          name: {name}
          annotations:
            scheduling.koordinator.sh/gpu-partition-spec: |
              {{
                "allocatePolicy": "Restricted"
              }}
        spec:
          containers:
            - name: main
              resources:
                limits:
                  koordinator.sh/gpu: 100
    """
    _, out = run(applied(pod.format(name="hello-gpu")), applied(pod.format(name="hello-gpu-2")), domain=domain)
    assert minors(allocated(out, "hello-gpu")[1]) == [0]
    (second,) = [d for d in decisions(out) if d["pod"]["name"] == "hello-gpu-2"]
    assert second["result"] == "Unschedulable" and "Insufficient Partitioned GPU Devices" in second["message"]


def test_the_articles_gpu_and_rdma_joint_allocation():
    domain, _ = run(k8s_node("rdma-1", {"cpu": "96", "memory": "512Gi", "pods": "110"}),
                    device("rdma-1", gpus=8, rdmas=4, vfs=True))
    _, out = run(applied("""
        apiVersion: v1
        kind: Pod
        metadata:
          name: pod-vf01
          namespace: kubeflow
          annotations:
            scheduling.koordinator.sh/device-joint-allocate: |-
              {
                "deviceTypes": ["gpu","rdma"]
              }
            scheduling.koordinator.sh/device-allocate-hint: |-
              {
                "rdma": {
                  "vfSelector": {}
                }
              }
        spec:
          schedulerName: koord-scheduler
          containers:
          - name: container-vf
            resources:
              requests:
                koordinator.sh/gpu: 100
                koordinator.sh/rdma: 100
              limits:
                koordinator.sh/gpu: 100
                koordinator.sh/rdma: 100
    """), domain=domain)
    _, allocation = allocated(out, "pod-vf01")
    (gpu,) = allocation["gpu"]
    (nic,) = allocation["rdma"]
    assert nic["minor"] == gpu["minor"] // 2, "the NIC sits on the GPU's PCIe switch"
    assert nic["extension"]["vfs"] == [{"minor": 0, "busID": f"0000:{0x90 + nic['minor']:02x}:00.1"}]


HAMI_POD = """
    apiVersion: v1
    kind: Pod
    metadata:
      name: {name}
      namespace: default
      labels:
        # Specify hami-core as the GPU isolation provider
        koordinator.sh/gpu-isolation-provider: hami-core
    spec:
      schedulerName: koord-scheduler
      containers:
      - command:
        - sleep
        - 365d
        image: busybox
        imagePullPolicy: IfNotPresent
        name: curlimage
        resources:
          limits:
            cpu: 40m
            memory: 40Mi
            koordinator.sh/gpu-shared: 1      # Request 1 shared GPU
            koordinator.sh/gpu-core: 50       # Request 50% of GPU cores
            koordinator.sh/gpu-memory-ratio: 50 # Request 50% of GPU memory
          requests:
            cpu: 40m
            memory: 40Mi
            koordinator.sh/gpu-shared: 1
            koordinator.sh/gpu-core: 50
            koordinator.sh/gpu-memory-ratio: 50
      restartPolicy: Always
"""


def test_hami_shared_gpu_fifty_fifty_only_on_a_hami_node():
    domain, _ = run(gpu_node("plain", gpus=1), device("plain", gpus=1),
                    gpu_node("hami", gpus=1, labels={K + "gpu-isolation-provider": "HAMi-core"}), device("hami", gpus=1))
    _, out = run(applied(HAMI_POD.format(name="pod-example")), applied(HAMI_POD.format(name="pod-example-2")),
                 applied(HAMI_POD.format(name="pod-example-3")), domain=domain)
    for name in ("pod-example", "pod-example-2"):
        node, allocation = allocated(out, name)
        assert node == "hami" and minors(allocation) == [0]
        assert allocation["gpu"][0]["resources"] == {K + "gpu-core": "50", K + "gpu-memory": "40Gi",
                                                     K + "gpu-memory-ratio": "50"}
    (decision,) = [d for d in decisions(out) if d["pod"]["name"] == "pod-example"]
    assert decision["annotations"]["hami.io/vgpu-node"] == "hami"
    (third,) = [d for d in decisions(out) if d["pod"]["name"] == "pod-example-3"]
    assert third["result"] == "Unschedulable"
    assert "GPUIsolationProviderHAMICore not found on the node" in third["message"]
    assert "Insufficient koordinator.sh/gpu-core" in third["message"], "the HAMi GPU is full"


def test_an_invalid_request_is_refused_with_koordinators_message():
    domain, _ = run(gpu_node("g1"), device("g1"))
    _, out = run(applied("""
        apiVersion: v1
        kind: Pod
        metadata: {name: bad}
        spec:
          containers:
          - resources:
              requests: {koordinator.sh/gpu-core: 100}
    """), domain=domain)
    (decision,) = decisions(out)
    assert decision["result"] == "Unschedulable"
    assert "invalid resource device requests: [koordinator.sh/gpu-core]" in decision["message"]


def test_shared_gpus_are_spread_by_default_and_restored_after_a_restart():
    domain, _ = run(gpu_node("g1", gpus=2), device("g1", gpus=2))
    pod = """
        apiVersion: v1
        kind: Pod
        metadata: {{name: {name}}}
        spec:
          containers:
          - resources:
              requests: {{koordinator.sh/gpu-core: 50, koordinator.sh/gpu-memory-ratio: 50}}
    """
    _, out = run(applied(pod.format(name="a")), applied(pod.format(name="b")), domain=domain)
    assert minors(allocated(out, "a")[1]) == [0] and minors(allocated(out, "b")[1]) == [1]
    plugin = domain.frameworks["default-scheduler"].plugins["DeviceShare"]
    assert plugin.nodes["g1"].free("gpu", 0)[K + "gpu-core"] == 50
    restored = SchedulingDomain.restore("default", domain.entries())
    assert restored.frameworks["default-scheduler"].plugins["DeviceShare"].nodes["g1"].free("gpu", 1)[
        K + "gpu-core"] == 50


def test_gpu_model_constraints_through_the_synced_node_label():
    domain, _ = run(gpu_node("v100"), device("v100", labels={"node.koordinator.sh/gpu-model": "V100"}),
                    gpu_node("a100"), device("a100", labels={"node.koordinator.sh/gpu-model": "A100"}))
    _, out = run(applied("""
        apiVersion: v1
        kind: Pod
        metadata: {name: wants-a100}
        spec:
          affinity:
            nodeAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
                nodeSelectorTerms:
                - matchExpressions:
                  - {key: node.koordinator.sh/gpu-model, operator: In, values: [A100]}
          containers:
          - resources:
              requests: {nvidia.com/gpu: 1}
    """), domain=domain)
    assert allocated(out, "wants-a100")[0] == "a100"


def test_a_deleted_pod_gives_its_gpu_back():
    domain, _ = run(gpu_node("g1", gpus=1), device("g1", gpus=1))
    pod = """
        apiVersion: v1
        kind: Pod
        metadata: {name: whole}
        spec:
          containers:
          - resources:
              requests: {nvidia.com/gpu: 1}
    """
    run(applied(pod), domain=domain)
    plugin = domain.frameworks["default-scheduler"].plugins["DeviceShare"]
    assert plugin.nodes["g1"].free("gpu", 0)[K + "gpu-core"] == 0
    from tests.streams.scheduler.support import deleted
    run(deleted("Pod", "default/whole"), domain=domain)
    assert plugin.nodes["g1"].free("gpu", 0)[K + "gpu-core"] == 100
