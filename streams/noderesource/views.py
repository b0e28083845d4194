"""Frozen views of the inputs a calculation reads, built from the decoded Avro records.

- ``NodeView`` — a Node record: capacity, allocatable, labels and the
  Koordinator annotations the plugins read, parsed once per Node event
  (``node.koordinator.sh/reservation`` with ``reservedCPUs``,
  ``node.koordinator.sh/cpu-basic-info``,
  ``node.koordinator.sh/thirdPartyAllocations``,
  ``node.koordinator.sh/raw-allocatable``, the colocation-strategy
  annotation and the ``node.koordinator.sh/cpu-normalization-enabled`` label).
- ``PodView`` — a pod bound to the node, from its SchedulingDecision; a
  ``PodTable`` holds a node's pods and memoises what depends on them alone
  (the HP and Prod request totals).
- ``Zone`` — a NUMA zone of the node's NodeResourceTopology (``zones_of``):
  its cpu and memory allocatable, what the NUMA-level batch calculation reads.
- ``MetricView`` — a NodeMetric record; pod metrics are plain tuples
  ``(cpu milli-cores, memory bytes, priority class or None)`` keyed
  ``namespace/name`` because a node builds twenty of them per report; the
  pods' cold page bytes and throttled ratios, when reported, beside them.
- ``DeviceView`` — the node's Device (``device_view``): each device's type, health and resources, and the
  object's labels (GPU vendor, model and driver version), what the device resource plugins read.
- ``Snapshot`` — everything one calculation reads.

Units: cpu milli-cores, memory bytes (the records' canonical integers).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

from streams.koordinator.annotations import (
    ANNOTATION_COLOCATION_STRATEGY, ANNOTATION_CPU_BASIC_INFO, ANNOTATION_KUBELET_CPU_MANAGER_POLICY,
    ANNOTATION_NODE_RESERVATION, ANNOTATION_RAW_ALLOCATABLE, ANNOTATION_RESOURCE_STATUS,
    ANNOTATION_THIRD_PARTY_ALLOCATIONS)
from streams.koordinator.classes import PRIORITY_BATCH, PRIORITY_FREE, PRIORITY_MID
from streams.koordinator.labels import (
    LABEL_CPU_NORMALIZATION_ENABLED, LABEL_GPU_DRIVER_VERSION, LABEL_GPU_MODEL, LABEL_GPU_VENDOR)
from streams.koordinator.resources import BATCH_CPU, BATCH_MEMORY, BATCH_RESOURCES, EXTENDED_RESOURCES
from streams.objects.quantity import QuantityError, to_canonical
from streams.sloconfig.colocation import ColocationStrategy
from streams.sloconfig.cpunormalization import CPUNormalizationStrategy


KEPT_ANNOTATIONS = (ANNOTATION_NODE_RESERVATION, ANNOTATION_CPU_BASIC_INFO, ANNOTATION_THIRD_PARTY_ALLOCATIONS,
                    ANNOTATION_RAW_ALLOCATABLE, ANNOTATION_COLOCATION_STRATEGY, ANNOTATION_KUBELET_CPU_MANAGER_POLICY)
"""The node annotations a calculation or the node-QoS plan reads (the kubelet's CPU manager policy decides
Guaranteed -> LSR or LS); the others are not kept in the state."""

PodMetric = tuple[int, int, "str | None"]
"""(cpu milli-cores, memory bytes, priority class reported with the metric)."""

_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


@dataclasses.dataclass(frozen=True)
class CPUBasicInfo:
    """``extension.CPUBasicInfo`` (the node agent reports it; Koordinator keeps it on the NRT)."""

    cpu_model: str = ""
    hyper_thread_enabled: bool = False
    turbo_enabled: bool = False


@dataclasses.dataclass(frozen=True)
class NodeView:
    name: str
    capacity: Mapping[str, int]
    allocatable: Mapping[str, int]
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    """Only the keys in ``KEPT_ANNOTATIONS``."""
    kubelet_reserved: tuple[int, int]
    """``GetNodeReservationFromKubelet``: max(capacity - allocatable, 0) of cpu and memory."""
    annotation_reserved: tuple[int | None, int | None]
    """``GetNodeReservationFromAnnotation``: cpu (``reservedCPUs`` counts CPUs and wins) and memory."""
    cpu_basic_info: CPUBasicInfo | None
    cpu_basic_info_error: str | None
    cpu_normalization_enabled: bool | None
    """The ``cpu-normalization-enabled`` label; None when absent."""
    cpu_normalization_enabled_error: str | None
    third_party_batch: tuple[int, int] | None
    """Sum of the koord-batch third-party allocations (batch-cpu, batch-memory); None when absent/invalid."""
    raw_allocatable: tuple[int, int]
    """cpu and memory of ``node.koordinator.sh/raw-allocatable`` when present, else of allocatable."""
    base_capacity: Mapping[str, int] = dataclasses.field(default_factory=dict, compare=False, repr=False)
    """capacity without the batch/mid resources (what a calculation starts from)."""
    base_allocatable: Mapping[str, int] = dataclasses.field(default_factory=dict, compare=False, repr=False)
    cache: list = dataclasses.field(default_factory=list, compare=False, repr=False)
    """Per-config memo (config, strategy, cpu normalization strategy); not part of the state."""

    @property
    def node_reserved(self) -> tuple[int, int]:
        """``quotav1.Max(kubeletReserved, annotationReserved)`` on cpu and memory."""
        cpu, memory = self.annotation_reserved
        return (max(self.kubelet_reserved[0], cpu if cpu is not None else 0),
                max(self.kubelet_reserved[1], memory if memory is not None else 0))

    @property
    def capacity_cpu(self) -> int:
        return self.capacity.get("cpu", 0)

    @property
    def capacity_memory(self) -> int:
        return self.capacity.get("memory", 0)


@dataclasses.dataclass(frozen=True, slots=True)
class PodView:
    request_cpu: int
    request_memory: int
    priority_class: str
    """With default (``GetPodPriorityClassWithDefault``)."""
    qos: str
    """With default (``GetPodQoSClassWithDefault``)."""
    since_ms: int
    """When the node aggregate first saw the pod bound (its age for the prediction's cold start)."""
    numa_nodes: tuple[int, ...] = ()
    """NUMA nodes of ``scheduling.koordinator.sh/resource-status``; empty: shared by all zones."""
    uid: str | None = None
    """The pod UID (node-QoS actuations address pod cgroups by it)."""
    limit_cpu: int = 0
    """The pod's cpu limit (sum over containers with a limit); 0: none."""
    request_batch_cpu: int = 0
    """The pod's ``kubernetes.io/batch-cpu`` request (milli-cores), what a BE pod asks for."""
    priority: int | None = None
    """``spec.priority``; None when unset."""
    labels: tuple[tuple[str, str], ...] = ()
    """The node-QoS labels of the pod (``streams.decisions.LABELS``), sorted."""
    annotations: tuple[tuple[str, str], ...] = ()
    """The node-QoS annotations of the pod (``streams.decisions.ANNOTATIONS``), sorted."""
    cpuset: str = ""
    """``cpuset`` of ``scheduling.koordinator.sh/resource-status`` as written (parsed by the plan, which reports
    a bad one); empty: none; ``BAD_RESOURCE_STATUS`` when the annotation is not a JSON object with a string
    cpuset (``cpuset_of``)."""
    request_batch_memory: int = 0
    """The pod's ``kubernetes.io/batch-memory`` request (bytes): with ``request_batch_cpu``, what a BE pod holds of
    the batch pool that it shares with YARN (``yarnshare``)."""

    def label(self, key: str) -> str | None:
        return next((value for name, value in self.labels if name == key), None)

    def annotation(self, key: str) -> str | None:
        return next((value for name, value in self.annotations if name == key), None)


@dataclasses.dataclass(frozen=True, slots=True)
class Zone:
    """A zone of the node's NodeResourceTopology as the batch calculation reads it: name and allocatable."""

    name: str
    cpu: int
    """milli-cores; 0 when the zone lists no cpu."""
    memory: int
    """bytes; 0 when the zone lists no memory."""


def zones_of(record: Mapping | None) -> tuple[Zone, ...]:
    """The zones of a decoded NodeResourceTopology record, in its order; none unless some zone lists cpu or
    memory (Koordinator's ``isNRTResourcesCreated``: otherwise the NUMA level is not calculated)."""
    if record is None:
        return ()
    zones, listed = [], False
    for zone in record.get("zones") or ():
        allocatable = {entry["name"]: entry["allocatable"] for entry in zone.get("resources") or ()
                       if entry["name"] in ("cpu", "memory")}
        listed = listed or bool(allocatable)
        zones.append(Zone(zone["name"], allocatable.get("cpu", 0), allocatable.get("memory", 0)))
    return tuple(zones) if listed else ()


def numa_nodes_of(annotations: Mapping[str, str] | None) -> tuple[int, ...]:
    """``numaNodeResources[].node`` of the pod's ``scheduling.koordinator.sh/resource-status`` annotation,
    as listed; none when absent or malformed (``extension.GetResourceStatus`` failing: the pod then shares
    every zone)."""
    text = (annotations or {}).get(ANNOTATION_RESOURCE_STATUS)
    if not text:
        return ()
    try:
        status = json.loads(text)
    except ValueError:
        return ()
    resources = status.get("numaNodeResources") if isinstance(status, dict) else None
    if not isinstance(resources, list):
        return ()
    nodes = []
    for entry in resources:
        node = 0 if entry is None else entry.get("node", 0) if isinstance(entry, dict) else None
        if isinstance(node, bool) or not isinstance(node, int) or not -2**31 <= node < 2**31:
            return ()
        nodes.append(node)
    return tuple(nodes)


BAD_RESOURCE_STATUS = "!resource-status"
"""``PodView.cpuset`` of a resource status that does not parse (never a CPU list, so never applied)."""


def cpuset_of(annotations: Mapping[str, str] | None) -> str:
    """The ``cpuset`` the scheduler pinned the pod to (``ResourceStatus.CPUSet``), unparsed: empty when the
    annotation or its cpuset is absent, ``BAD_RESOURCE_STATUS`` when ``extension.GetResourceStatus`` would fail
    on it (not a JSON object, or a cpuset that is not a string)."""
    text = (annotations or {}).get(ANNOTATION_RESOURCE_STATUS)
    if not text:
        return ""
    try:
        status = json.loads(text)
    except ValueError:
        return BAD_RESOURCE_STATUS
    if status is None:
        return ""
    if not isinstance(status, dict):
        return BAD_RESOURCE_STATUS
    cpuset = status.get("cpuset")
    if cpuset is None:
        return ""
    return cpuset if isinstance(cpuset, str) else BAD_RESOURCE_STATUS


@dataclasses.dataclass(frozen=True, slots=True)
class PodTotals:
    """Sums over the pods of a node that do not depend on metrics."""

    high_priority_request: tuple[int, int]
    """Requests of the pods whose class with default is not koord-batch/koord-free (batch's HP pods)."""
    prod_allocated: tuple[int, int]
    """Requests of the pods whose class with default is Prod or None (mid's ProdAllocated)."""


def _pod_totals(pods: Mapping[str, PodView]) -> PodTotals:
    hp_cpu = hp_mem = prod_cpu = prod_mem = 0
    for pod in pods.values():
        if pod.priority_class in (PRIORITY_BATCH, PRIORITY_FREE):
            continue
        hp_cpu += pod.request_cpu
        hp_mem += pod.request_memory
        if pod.priority_class != PRIORITY_MID:
            prod_cpu += pod.request_cpu
            prod_mem += pod.request_memory
    return PodTotals((hp_cpu, hp_mem), (prod_cpu, prod_mem))


class PodTable(dict):
    """The pods of a node by ``namespace/name``; never changed after it is built, so what is derived from
    it alone (totals, the pods a predictor reads) is memoised."""

    __slots__ = ("_memo",)

    def memo(self, name: str, derive):
        try:
            memo = self._memo
        except AttributeError:
            memo = self._memo = {}
        if name not in memo:
            memo[name] = derive(self)
        return memo[name]

    def totals(self) -> PodTotals:
        return self.memo("totals", _pod_totals)


def pod_totals(pods: Mapping[str, PodView]) -> PodTotals:
    return pods.totals() if isinstance(pods, PodTable) else _pod_totals(pods)


@dataclasses.dataclass(frozen=True, slots=True)
class HostAppMetric:
    priority: str | None
    cpu: int
    memory: int
    name: str = ""
    qos: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class MetricView:
    update_time_ms: int | None
    node_usage: tuple[int, int] | None
    """None when cpu or memory is missing (``IsValidNodeUsage`` false)."""
    system_usage: tuple[int, int]
    host_apps: tuple[HostAppMetric, ...]
    prod_reclaimable: tuple[int, int] | None
    """``status.prodReclaimableMetric.resource``; None when not reported."""
    pods: Mapping[str, PodMetric]
    memory_policy: str | None = None
    """The ``NodeMemoryCollectPolicy`` the memory usages were measured under; None when not reported."""
    cold_page_bytes: int | None = None
    """kidled cold page bytes of the node; None when not reported."""
    pod_cold_page_bytes: Mapping[str, int] = dataclasses.field(default_factory=dict)
    """kidled cold page bytes by pod key, for the pods that report them."""
    throttled_ratio: Mapping[str, float] = dataclasses.field(default_factory=dict)
    """CFS throttled periods / periods over the report interval by pod key, for the pods that report it."""


@dataclasses.dataclass(frozen=True, slots=True)
class Snapshot:
    strategy: ColocationStrategy
    cpu_normalization: CPUNormalizationStrategy
    node: NodeView
    pods: Mapping[str, PodView]
    metric: MetricView | None
    now_ms: int
    zones: tuple[Zone, ...] = ()
    """The NodeResourceTopology zones (empty: no NUMA-level calculation)."""
    device: "DeviceView | None" = None
    """The node's Device; None: the node has none."""


DEVICE_LABELS = (LABEL_GPU_VENDOR, LABEL_GPU_MODEL, LABEL_GPU_DRIVER_VERSION)
"""The Device labels a calculation reads (the node gets them); the others are not kept in the state."""


@dataclasses.dataclass(frozen=True)
class DeviceView:
    """A Device record as the device resource plugins read it (Koordinator's ``DeviceSpec``)."""

    devices: tuple[tuple[str, bool, tuple[tuple[str, int], ...]], ...] = ()
    """(type, health, resources sorted by name) of each device, in the Device's order."""
    labels: tuple[tuple[str, str], ...] = ()
    """The Device object's labels of ``DEVICE_LABELS``, sorted."""

    def to_json(self) -> list:
        return [[[kind, health, [list(r) for r in resources]] for kind, health, resources in self.devices],
                [list(label) for label in self.labels]]

    @classmethod
    def from_json(cls, value: list) -> "DeviceView":
        devices, labels = value
        return cls(tuple((kind, health, tuple((name, amount) for name, amount in resources))
                         for kind, health, resources in devices), tuple((k, v) for k, v in labels))


def device_view(record: Mapping) -> DeviceView:
    """The DeviceView of a Device record (``streams/schemas/Device.avsc``)."""
    devices = tuple((info["type"], bool(info.get("health", True)), tuple(sorted((info.get("resources") or {}).items())))
                    for info in record.get("devices") or ())
    labels = (record.get("metadata") or {}).get("labels") or {}
    return DeviceView(devices, tuple(sorted((k, v) for k, v in labels.items() if k in DEVICE_LABELS)))


def _resources(raw: object, names: tuple[str, ...]) -> dict[str, int]:
    """Canonical integers of the named resources in a JSON ResourceList; ValueError when malformed."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ValueError("resources must be an object")
    result = {}
    for name in names:
        if name in raw:
            try:
                result[name] = to_canonical(name, raw[name])
            except QuantityError as exc:
                raise ValueError(f"{name}: {exc}") from None
    return result


def cpuset_size(text: str) -> int:
    """Number of CPUs in a Linux cpuset list such as ``0-3,8,10-11`` (k8s ``cpuset.Parse``)."""
    cpus: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        low_text, dash, high_text = part.partition("-")
        if not low_text.isdigit() or (dash and not high_text.isdigit()):
            raise ValueError(f"invalid cpuset {text!r}")
        low = int(low_text)
        high = int(high_text) if dash else low
        if high < low:
            raise ValueError(f"invalid cpuset range {part!r}")
        cpus.update(range(low, high + 1))
    return len(cpus)


def annotation_reserved(annotations: Mapping[str, str]) -> tuple[int | None, int | None]:
    """``GetNodeReservationFromAnnotation``: nothing when the annotation is absent or does not parse."""
    text = annotations.get(ANNOTATION_NODE_RESERVATION)
    if not text:
        return None, None
    try:
        reservation = json.loads(text)
        if not isinstance(reservation, dict):
            return None, None
        resources = _resources(reservation.get("resources"), ("cpu", "memory"))
        reserved_cpus = reservation.get("reservedCPUs") or ""
        if not isinstance(reserved_cpus, str):
            return None, None
        if reserved_cpus:
            resources["cpu"] = cpuset_size(reserved_cpus) * 1000
    except ValueError:
        return None, None
    return resources.get("cpu"), resources.get("memory")


def kubelet_reserved(capacity: Mapping[str, int], allocatable: Mapping[str, int]) -> tuple[int, int]:
    """``GetNodeReservationFromKubelet``: ``quotav1.Max(quotav1.Subtract(capacity, allocatable), 0)``."""
    result = []
    for name in ("cpu", "memory"):
        if name not in capacity:
            result.append(0)
        else:
            result.append(max(capacity[name] - allocatable.get(name, 0), 0))
    return result[0], result[1]


def _cpu_basic_info(annotations: Mapping[str, str]) -> tuple[CPUBasicInfo | None, str | None]:
    text = annotations.get(ANNOTATION_CPU_BASIC_INFO)
    if text is None:
        return None, None
    try:
        raw = json.loads(text)
        if not isinstance(raw, dict):
            raise ValueError("not an object")
        model, ht, turbo = raw.get("cpuModel", ""), raw.get("hyperThreadEnabled", False), raw.get("turboEnabled", False)
        if not isinstance(model, str) or not isinstance(ht, bool) or not isinstance(turbo, bool):
            raise ValueError("cpuModel must be a string, hyperThreadEnabled and turboEnabled booleans")
    except ValueError as exc:
        return None, f"unmarshal cpu basic info failed, err: {exc}"
    return CPUBasicInfo(model, ht, turbo), None


def _third_party_batch(annotations: Mapping[str, str]) -> tuple[int, int] | None:
    """``GetThirdPartyAllocatedResByPriority(annotations, koord-batch)``."""
    text = annotations.get(ANNOTATION_THIRD_PARTY_ALLOCATIONS)
    if text is None:
        return None
    try:
        raw = json.loads(text)
        if not isinstance(raw, dict):
            return None
        allocations = raw.get("allocations") or []
        if not isinstance(allocations, list):
            return None
        cpu = memory = 0
        for allocation in allocations:
            if not isinstance(allocation, dict) or allocation.get("priority") != PRIORITY_BATCH:
                continue
            resources = _resources(allocation.get("resources"), BATCH_RESOURCES)
            cpu += resources.get(BATCH_CPU, 0)
            memory += resources.get(BATCH_MEMORY, 0)
    except ValueError:
        return None
    return cpu, memory


def _raw_allocatable(annotations: Mapping[str, str], allocatable: Mapping[str, int]) -> tuple[int, int]:
    """``getNodeAllocatable`` of the predictor: the raw-allocatable annotation, else allocatable."""
    text = annotations.get(ANNOTATION_RAW_ALLOCATABLE)
    if text is not None:
        try:
            resources = _resources(json.loads(text), ("cpu", "memory"))
            return resources.get("cpu", 0), resources.get("memory", 0)
        except ValueError:
            pass
    return allocatable.get("cpu", 0), allocatable.get("memory", 0)


def node_view(record: Mapping) -> NodeView:
    """The NodeView of a decoded Node record."""
    metadata = record["metadata"]
    labels = dict(metadata.get("labels") or {})
    all_annotations = metadata.get("annotations") or {}
    annotations = {key: all_annotations[key] for key in KEPT_ANNOTATIONS if key in all_annotations}
    capacity = dict(record.get("capacity") or {})
    allocatable = dict(record.get("allocatable") or {})
    return build_node_view(metadata["name"], capacity, allocatable, labels, annotations)


def build_node_view(name: str, capacity: dict[str, int], allocatable: dict[str, int], labels: dict[str, str],
                    annotations: dict[str, str]) -> NodeView:
    info, info_error = _cpu_basic_info(annotations)
    enabled_text = labels.get(LABEL_CPU_NORMALIZATION_ENABLED)
    enabled, enabled_error = None, None
    if enabled_text is not None:
        if enabled_text in _GO_TRUE:
            enabled = True
        elif enabled_text in _GO_FALSE:
            enabled = False
        else:
            enabled_error = f"parse cpu normalization enabled failed, err: invalid syntax {enabled_text!r}"
    return NodeView(
        name=name, capacity=capacity, allocatable=allocatable, labels=labels, annotations=annotations,
        kubelet_reserved=kubelet_reserved(capacity, allocatable),
        annotation_reserved=annotation_reserved(annotations),
        cpu_basic_info=info, cpu_basic_info_error=info_error,
        cpu_normalization_enabled=enabled, cpu_normalization_enabled_error=enabled_error,
        third_party_batch=_third_party_batch(annotations),
        raw_allocatable=_raw_allocatable(annotations, allocatable),
        base_capacity={k: v for k, v in capacity.items() if k not in EXTENDED_RESOURCES},
        base_allocatable={k: v for k, v in allocatable.items() if k not in EXTENDED_RESOURCES},
    )


def metric_view(record: Mapping) -> MetricView:
    """The MetricView of a decoded NodeMetric record (v3; older versions decode with its defaults)."""
    node_usage = record.get("nodeUsage") or {}
    system = record.get("systemUsage") or {}
    reclaimable = record.get("prodReclaimable") or {}
    pods, cold, throttled = {}, {}, {}
    for pod in record.get("podsMetric") or ():
        usage = pod["usage"]
        key = f"{pod['namespace']}/{pod['name']}"
        pods[key] = (usage.get("cpu", 0), usage.get("memory", 0), pod.get("priority"))
        if pod.get("coldPageBytes") is not None:
            cold[key] = pod["coldPageBytes"]
        if pod.get("throttledRatio") is not None:
            throttled[key] = pod["throttledRatio"]
    return MetricView(
        update_time_ms=record.get("updateTime"),
        node_usage=(node_usage["cpu"], node_usage["memory"])
        if "cpu" in node_usage and "memory" in node_usage else None,
        system_usage=(system.get("cpu", 0), system.get("memory", 0)),
        host_apps=tuple(HostAppMetric(app.get("priority"), app["usage"].get("cpu", 0), app["usage"].get("memory", 0),
                                      app.get("name") or "", app.get("qos"))
                        for app in record.get("hostApplicationMetric") or ()),
        prod_reclaimable=(reclaimable.get("cpu", 0), reclaimable.get("memory", 0)) if reclaimable else None,
        pods=pods,
        memory_policy=record.get("memoryCollectPolicy"),
        cold_page_bytes=record.get("coldPageBytes"),
        pod_cold_page_bytes=cold,
        throttled_ratio=throttled,
    )
