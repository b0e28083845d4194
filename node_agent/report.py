"""The Node, NodeMetric, Device and NodeResourceTopology objects a node reports, as Kubernetes-form manifests.

Pure: values in, manifest dicts out. They are what ``koord apply`` would take
(``streams.objects.to_record`` converts them), in Koordinator's shapes:
NodeMetric ``status.nodeMetric.{nodeUsage, systemUsage, aggregatedNodeUsages,
aggregatedSystemUsages}``, ``status.podsMetric[]``, ``status.hostApplicationMetric[]``,
``status.updateTime``, and koordstream's additions: the memory policy the
usages were measured under (``spec.metricCollectPolicy.nodeMemoryCollectPolicy``,
Koordinator's field), kidled cold page bytes (``status.nodeMetric.coldPageBytes``,
``podsMetric[].coldPageBytes``) and each pod's CFS throttled ratio over the last
report interval (``podsMetric[].throttledRatio``); Device ``spec.devices[]`` as koordlet's device informer
builds them; NodeResourceTopology ``zones[]`` as koordlet's
``calTopologyZoneList``. Quantities are formatted like resource.Quantity: CPU
from cores as truncated milli-cores, memory as truncated bytes.
"""

from __future__ import annotations

import dataclasses
import math
from datetime import datetime, timezone

from streams.koordinator.labels import LABEL_GPU_DRIVER_VERSION, LABEL_GPU_MODEL, LABEL_GPU_VENDOR
from streams.koordinator.resources import GPU_CORE, GPU_MEMORY, GPU_MEMORY_RATIO, RDMA
from streams.objects import format_quantity



@dataclasses.dataclass(frozen=True, slots=True)
class Usage:
    cpu: float | None
    """Cores."""
    memory: float | None
    """Bytes."""

    def resources(self) -> dict[str, str]:
        """``{cpu, memory}`` quantities; a missing value is left out."""
        out = {}
        if self.cpu is not None and math.isfinite(self.cpu):
            out["cpu"] = format_quantity("cpu", max(int(self.cpu * 1000), 0))
        if self.memory is not None and math.isfinite(self.memory):
            out["memory"] = format_quantity("memory", max(int(self.memory), 0))
        return out


@dataclasses.dataclass(frozen=True, slots=True)
class PodReport:
    uid: str
    namespace: str
    name: str
    priority: str | None
    qos: str | None
    usage: Usage
    throttled_ratio: float | None = None
    """Throttled CFS periods / periods since the previous report; None when not measured."""
    cold_page_bytes: int | None = None
    """kidled cold page bytes of the pod cgroup; None without kidled."""


@dataclasses.dataclass(frozen=True, slots=True)
class HostAppReport:
    name: str
    priority: str | None
    qos: str | None
    usage: Usage


@dataclasses.dataclass(frozen=True, slots=True)
class Window:
    """One aggregation window: None stats while the window is in cold start."""

    seconds: float
    stats: dict[str, Usage] | None


def go_duration(seconds: float) -> str:
    """A duration as Go's time.Duration.String writes it: 300 -> "5m0s", 3600 -> "1h0m0s"."""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    secs_text = f"{secs:.9f}".rstrip("0").rstrip(".") if secs != int(secs) else str(int(secs))
    if hours:
        return f"{int(hours)}h{int(minutes)}m{secs_text}s"
    if minutes:
        return f"{int(minutes)}m{secs_text}s"
    return f"{secs_text}s"


def rfc3339(epoch_seconds: float) -> str:
    """metav1.Time's JSON form: UTC, whole seconds."""
    return datetime.fromtimestamp(int(epoch_seconds), tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _aggregated(windows: list[Window]) -> list[dict]:
    return [{"duration": go_duration(w.seconds),
             "usage": {stat: ({"resources": usage.resources()} if w.stats else {})
                       for stat, usage in (w.stats or dict.fromkeys(("avg", "p50", "p90", "p95", "p99"),
                                                                    Usage(None, None))).items()}}
            for w in windows]


def node_metric_manifest(node_name: str, update_time: float, node_usage: Usage, system_usage: Usage,
                         node_windows: list[Window], system_windows: list[Window], pods: list[PodReport],
                         host_apps: list[HostAppReport], gpu_usage: list[dict] | None = None,
                         memory_policy: str | None = None, cold_page_bytes: int | None = None) -> dict:
    node_usage_map: dict = {"resources": node_usage.resources()}
    if gpu_usage:
        node_usage_map["devices"] = gpu_usage
    pods_metric = []
    for pod in sorted(pods, key=lambda p: (p.namespace, p.name)):
        entry = {"namespace": pod.namespace, "name": pod.name, "uid": pod.uid,
                 "podUsage": {"resources": pod.usage.resources()}}
        if pod.priority:
            entry["priority"] = pod.priority
        if pod.qos:
            entry["qos"] = pod.qos
        if pod.throttled_ratio is not None and math.isfinite(pod.throttled_ratio):
            entry["throttledRatio"] = min(max(pod.throttled_ratio, 0.0), 1.0)
        if pod.cold_page_bytes is not None:
            entry["coldPageBytes"] = pod.cold_page_bytes
        pods_metric.append(entry)
    apps_metric = []
    for app in sorted(host_apps, key=lambda a: a.name):
        entry = {"name": app.name, "usage": {"resources": app.usage.resources()}}
        if app.priority:
            entry["priority"] = app.priority
        if app.qos:
            entry["qos"] = app.qos
        apps_metric.append(entry)
    node_metric = {
        "nodeUsage": node_usage_map,
        "systemUsage": {"resources": system_usage.resources()},
        "aggregatedNodeUsages": _aggregated(node_windows),
        "aggregatedSystemUsages": _aggregated(system_windows),
    }
    if cold_page_bytes is not None:
        node_metric["coldPageBytes"] = cold_page_bytes
    manifest = {
        "apiVersion": "slo.koordinator.sh/v1alpha1",
        "kind": "NodeMetric",
        "metadata": {"name": node_name},
        "status": {
            "updateTime": rfc3339(update_time),
            "nodeMetric": node_metric,
            "podsMetric": pods_metric,
            "hostApplicationMetric": apps_metric,
        },
    }
    if memory_policy:
        manifest["spec"] = {"metricCollectPolicy": {"nodeMemoryCollectPolicy": memory_policy}}
    return manifest


def node_manifest(node_name: str, capacity: dict[str, int], labels: dict[str, str],
                  annotations: dict[str, str]) -> dict:
    """A Node with allocatable = capacity (canonical integers in, quantities out)."""
    resources = {name: format_quantity(name, value) for name, value in sorted(capacity.items())}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node_name, "labels": dict(sorted(labels.items())),
                     "annotations": dict(sorted(annotations.items()))},
        "status": {"capacity": resources, "allocatable": dict(resources)},
    }


LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
HUGEPAGES = ("hugepages-1Gi", "hugepages-2Mi")


def node_resource_topology_manifest(node_name: str, zones: list[tuple[int, int, int]]) -> dict | None:
    """The node's NodeResourceTopology from (NUMA node id, CPUs, MemTotal bytes) per NUMA node; None without.

    As koordlet writes it (``calTopologyZoneList`` with its default feature gates): zone ``node-<id>`` of
    type Node, cpu = the node's CPUs, memory = its MemTotal, hugepages-1Gi/2Mi 0 (HugePageReport is off by
    default), allocatable = available = capacity: like the Node's allocatable here, nothing is reserved
    (koordlet deducts kubelet reservations only on nodes labelled for NUMA reservation), resources sorted
    by name, topology policy None.
    """
    if not zones:
        return None
    listed = []
    for node, cpus, memory in sorted(zones):
        values = {"cpu": format_quantity("cpu", cpus * 1000), "memory": format_quantity("memory", memory),
                  **dict.fromkeys(HUGEPAGES, "0")}
        listed.append({"name": f"node-{node}", "type": "Node", "resources": [
            {"name": name, "capacity": values[name], "allocatable": values[name], "available": values[name]}
            for name in sorted(values)]})
    return {"apiVersion": "topology.node.k8s.io/v1alpha1", "kind": "NodeResourceTopology",
            "metadata": {"name": node_name, "labels": {LABEL_MANAGED_BY: "Koordinator"}},
            "topologyPolicies": ["None"], "zones": listed}


@dataclasses.dataclass(frozen=True, slots=True)
class GPUDevice:
    uuid: str
    minor: int
    memory_total: int
    numa_node: int
    pcie_root: str
    bus_id: str
    healthy: bool = True
    socket: int = -1


@dataclasses.dataclass(frozen=True, slots=True)
class RDMADevice:
    bus_id: str
    minor: int
    healthy: bool
    numa_node: int
    pcie_root: str
    virtual_functions: tuple[str, ...] = ()
    """Bus ids of the SR-IOV VFs in ``virtfnN`` order: N is the VF's minor."""
    socket: int = -1


def device_manifest(node_name: str, gpus: list[GPUDevice], rdmas: list[RDMADevice], gpu_model: str = "",
                    driver_version: str = "") -> dict | None:
    """The node's Device object; None when it has no device (koordlet then reports none either)."""
    if not gpus and not rdmas:
        return None
    devices = []
    for gpu in sorted(gpus, key=lambda g: g.minor):
        device = {"type": "gpu", "id": gpu.uuid, "minor": gpu.minor, "health": gpu.healthy,
                  "resources": {GPU_CORE: "100",
                                GPU_MEMORY: format_quantity(GPU_MEMORY, gpu.memory_total),
                                GPU_MEMORY_RATIO: "100"}}
        if gpu.pcie_root and gpu.bus_id:
            device["topology"] = {"socketID": gpu.socket, "nodeID": gpu.numa_node, "pcieID": gpu.pcie_root,
                                  "busID": gpu.bus_id}
        devices.append(device)
    for rdma in sorted(rdmas, key=lambda r: r.minor):
        device = {"type": "rdma", "id": rdma.bus_id, "minor": rdma.minor, "health": rdma.healthy,
                  "resources": {RDMA: "100"},
                  "topology": {"socketID": rdma.socket, "nodeID": rdma.numa_node, "pcieID": rdma.pcie_root,
                               "busID": rdma.bus_id}}
        if rdma.virtual_functions:
            device["vfGroups"] = [{"vfs": [{"minor": minor, "busID": vf}
                                           for minor, vf in enumerate(rdma.virtual_functions)]}]
        devices.append(device)
    labels = {}
    if gpus:
        labels[LABEL_GPU_VENDOR] = "nvidia"
        if gpu_model:
            labels[LABEL_GPU_MODEL] = gpu_model
        if driver_version:
            labels[LABEL_GPU_DRIVER_VERSION] = driver_version
    metadata: dict = {"name": node_name}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Device", "metadata": metadata,
            "spec": {"devices": devices}}
