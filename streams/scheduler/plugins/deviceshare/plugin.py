"""DeviceShare (``plugins/deviceshare``): GPUs, RDMA and FPGAs placed per device, the result written on the pod.

- **PreFilter** validates and converts the pod's device requests (``requests``): a refused combination is
  UnschedulableAndUnresolvable with Koordinator's message; a pod asking for no device skips the plugin.
- **Filter** tries the allocation on every candidate node (``allocator``): a node with no Device object passes
  (NodeResourcesFit then judges its allocatable), one without a device of the asked type fails for good
  ("Insufficient gpu devices"). A shared GPU pod labelled ``koordinator.sh/gpu-isolation-provider`` fails on a
  node whose label differs ("GPUIsolationProviderHAMICore not found on the node"; the source's ``HAMi-core``
  and the v1.6 article's ``hami-core`` are the same provider). Plain GPU pods (no hint,
  no partition spec, on nodes that do not honour partitions) take a vectorized path: a node fits when at
  least ``count`` of its GPUs each have the per-GPU request free, which is exactly when every allocator stage
  succeeds.
- **Score**: the scoring strategy over the node's device totals (``Scorer.node`` of the per-device request),
  summed over device types and normalized so the best node scores 100 (Koordinator's DefaultNormalizeScore).
- **Reserve/PreBind**: the chosen node's allocation is written as ``scheduling.koordinator.sh/device-allocated``
  (and ``hami.io/vgpu-node`` for HAMi-isolated pods); the devices are counted used from the assignment on,
  also after a restore (from the pods' annotations).

Args: ``scoringStrategy`` {type LeastAllocated (default) | MostAllocated, resources [{name, weight}]}, default
weights gpu-memory-ratio 1, gpu-memory 1, rdma 1, fpga 1 (each in (0, 100]).

Not implemented: GPU shared-resource templates (Huawei NPU), preemption of device holders, reservations'
devices, ``exclusivePolicy`` (whose PCIe filtering Koordinator computes and discards), ``gpuShareUnsupportedModels``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

import numpy as np

from streams.koordinator.annotations import ANNOTATION_DEVICE_ALLOCATED, ANNOTATION_HAMI_VGPU_NODE
from streams.koordinator.labels import GPU_ISOLATION_HAMI, LABEL_GPU_ISOLATION_PROVIDER
from streams.koordinator.resources import DEVICE_GPU, FPGA, GPU_MEMORY, GPU_MEMORY_RATIO, RDMA
from streams.objects.args import ArgsError, ArgsReader
from streams.objects.podinfo import PodInfo
from streams.objects.quantity import format_quantity
from streams.scheduler.framework import (
    ASSIGNED_POD_DELETE, NODE_ADD, NODE_UPDATE, SKIP, SUCCESS, Code, CycleState, FilterResult, Status, every_action,
    register)
from streams.scheduler.plugins.deviceshare.allocator import (
    LEAST_ALLOCATED, MOST_ALLOCATED, PREFERRED, PodDevices, Scorer, Unfit, allocate, prepare)
from streams.scheduler.plugins.deviceshare.devices import device_sync
from streams.scheduler.plugins.deviceshare.ledger import FAST, SLOTS, DeviceLedger
from streams.scheduler.plugins.deviceshare.requests import DeviceRequestError
from streams.scheduler.state import Cluster

NAME = "DeviceShare"
KIND = "Device"
REASON_HAMI = "GPUIsolationProviderHAMICore not found on the node"
DEFAULT_WEIGHTS = ((GPU_MEMORY_RATIO, 1), (GPU_MEMORY, 1), (RDMA, 1), (FPGA, 1))


@dataclasses.dataclass(frozen=True)
class DeviceShareArgs:
    scoring_type: str = LEAST_ALLOCATED
    """``scoringStrategy.type``: LeastAllocated spreads over nodes and devices, MostAllocated packs."""
    weights: tuple[tuple[str, int], ...] = DEFAULT_WEIGHTS
    """``scoringStrategy.resources``: Koordinator's default gpu-memory-ratio, gpu-memory, rdma, fpga at 1."""

    @classmethod
    def from_config(cls, raw: Mapping | None) -> "DeviceShareArgs":
        reader = ArgsReader(NAME, raw, {"scoringStrategy", "allocator", "gpuSharedResourceTemplatesCache",
                                        "gpuSharedResourceTemplatesMatchedResources",
                                        "disableDeviceNUMATopologyAlignment", "gpuShareUnsupportedModels"})
        strategy = reader.mapping("scoringStrategy")
        if strategy is None:
            return cls()
        sub = ArgsReader(NAME, strategy, {"type", "resources"})
        kind = sub.string("type", LEAST_ALLOCATED)
        if kind not in (LEAST_ALLOCATED, MOST_ALLOCATED):
            raise sub.fail("type", f"must be LeastAllocated or MostAllocated, got {kind}")
        weights = DEFAULT_WEIGHTS
        resources = sub.sequence("resources")
        if resources is not None:
            pairs = []
            for item in resources:
                if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                    raise ArgsError(f"{NAME}: scoringStrategy.resources: each entry needs a name, got {item!r}")
                weight = item.get("weight", 1)
                if isinstance(weight, bool) or not isinstance(weight, int) or not 0 < weight <= 100:
                    raise ArgsError(f"{NAME}: scoringStrategy.resources[{item['name']}].weight must be in "
                                    f"(0, 100], got {weight!r}")
                pairs.append((item["name"], weight))
            weights = tuple(pairs)
        return cls(kind, weights)


def annotation(allocations: Mapping[str, list[dict]]) -> str:
    """The ``device-allocated`` JSON: quantities as Kubernetes writes them, keys sorted."""
    out = {kind: [{**entry, "resources": {name: format_quantity(name, value)
                                          for name, value in sorted(entry["resources"].items())}}
                  for entry in entries] for kind, entries in sorted(allocations.items())}
    return json.dumps(out, sort_keys=True, separators=(",", ":"))


class DeviceShare:
    name = NAME
    Args = DeviceShareArgs
    watched_kinds = frozenset({KIND})
    overlay_kinds = frozenset({KIND})
    events_to_register = register(NODE_ADD, NODE_UPDATE, ASSIGNED_POD_DELETE, *every_action(KIND))

    @staticmethod
    def overlay_node(kind: str, record: dict) -> tuple[dict[str, int], dict[str, str]]:
        """What koord-manager syncs from a node's Device to the node (``NodeOverlay``)."""
        synced = device_sync(record)
        return dict(synced.allocatable), dict(synced.labels)

    def __init__(self, args: DeviceShareArgs, cluster: Cluster) -> None:
        self.args = args
        self.cluster = cluster
        self.scorer = Scorer(args.scoring_type, args.weights)
        self.ledger = DeviceLedger(cluster, f"{NAME}#{id(self)}")
        self.nodes = self.ledger.nodes

    def close(self) -> None:
        self.ledger.close()

    def observe(self, change: object) -> None:
        self.ledger.observe(change)

    # -- the cycle ---------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo) -> Status:
        try:
            devices = prepare(pod.requests, pod.annotations)
        except (DeviceRequestError, ValueError) as error:
            return Status.unschedulable(str(error), NAME, resolvable=False)
        if devices is None:
            return SKIP
        state[NAME] = devices
        return SUCCESS

    def _fast(self, pod: PodDevices) -> bool:
        return (set(pod.requests) == {DEVICE_GPU} and not pod.hints and not pod.partition_spec
                and set(pod.gpu.per_gpu) <= set(FAST))

    def _hami_refused(self, pod: PodInfo, devices: PodDevices, node: str) -> bool:
        wanted = pod.labels.get(LABEL_GPU_ISOLATION_PROVIDER)
        if not wanted or devices.gpu is None or not devices.gpu.shared:
            return False
        return (self.cluster.nodes[node].labels.get(LABEL_GPU_ISOLATION_PROVIDER) or "").lower() != wanted.lower()

    def filter(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> FilterResult:
        devices: PodDevices | None = state.get(NAME)
        if devices is None:
            return FilterResult(candidates)
        columns = self.cluster.columns
        count = len(candidates)
        names = columns.names
        failures: dict[tuple[str, Code], np.ndarray] = {}
        passed = candidates.copy()
        allocated: dict[int, dict] = {}
        state[NAME + "/allocated"] = allocated

        def fail(row: int, reason: str, code: Code) -> None:
            mask = failures.setdefault((reason, code), np.zeros(count, dtype=bool))
            mask[row] = True
            passed[row] = False

        rows_mask = candidates & self.ledger.present(count)
        hami = bool(pod.labels.get(LABEL_GPU_ISOLATION_PROVIDER)) and devices.gpu is not None and devices.gpu.shared
        if self._fast(devices):
            fast = rows_mask & ~self.ledger.slow(count)
            rows_mask &= ~fast
            if hami:
                for row in np.flatnonzero(fast):
                    if self._hami_refused(pod, devices, names[row]):
                        fail(row, REASON_HAMI, Code.ERROR)
                        fast[row] = False
            free = self.ledger.free(count)
            fits = np.ones((SLOTS, count), dtype=bool)
            for index, resource in enumerate(FAST):
                fits &= free[index] >= devices.gpu.per_gpu.get(resource, 0)
            enough = fits.sum(axis=0) >= devices.gpu.count
            no_gpu = fast & (self.ledger.totals(count)[0] <= 0)
            short = fast & ~no_gpu & ~enough
            reason = f"Insufficient {DEVICE_GPU} devices"
            if no_gpu.any():
                failures[(reason, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)] = no_gpu
            if short.any():
                failures[(reason, Code.UNSCHEDULABLE)] = short
            passed &= ~(no_gpu | short)
        rows = np.flatnonzero(rows_mask)
        for row in rows:
            name = names[row]
            if self._hami_refused(pod, devices, name):
                fail(row, REASON_HAMI, Code.ERROR)
                continue
            try:
                allocated[row] = allocate(devices, self.nodes[name], self.cluster.nodes[name].labels, self.scorer)
            except Unfit as unfit:
                fail(row, unfit.reason, Code.UNSCHEDULABLE if unfit.resolvable else Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        resolvable = [(reason, mask) for (reason, code), mask in failures.items() if code == Code.UNSCHEDULABLE]
        hard = [(reason, mask) for (reason, code), mask in failures.items() if code != Code.UNSCHEDULABLE]
        if hard and not resolvable:
            return FilterResult(passed, tuple(hard), Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        return FilterResult(passed, tuple(resolvable + hard))

    def score(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> np.ndarray | int:
        devices: PodDevices | None = state.get(NAME)
        if devices is None:
            return 0
        count = len(candidates)
        scores = np.zeros(count, dtype=np.int64)
        columns = self.cluster.columns
        if self._fast(devices):
            scores = self._fast_scores(devices, count)
            scores[~candidates] = 0
        else:
            for row in np.flatnonzero(candidates):
                node = self.nodes.get(columns.names[row])
                if node is None:
                    continue
                total = 0
                for kind in devices.requests:
                    if node.devices.get(kind):
                        per = devices.gpu.per_gpu if kind == DEVICE_GPU else _instance(devices, kind)
                        total += self.scorer.node(per, node, kind)
                scores[row] = total
        best = int(scores[candidates].max()) if candidates.any() else 0
        if best <= 0:
            return np.zeros(count, dtype=np.int64)
        return scores * 100 // best

    def _fast_scores(self, devices: PodDevices, count: int) -> np.ndarray:
        """``Scorer.node`` over every node at once, from the vectorized totals."""
        free = self.ledger.free(count)
        totals = self.ledger.totals(count)
        score = np.zeros(count, dtype=np.int64)
        weights = np.zeros(count, dtype=np.int64)
        for name, weight in self.scorer.weights:
            if name not in FAST:
                continue
            index = FAST.index(name)
            capacity = totals[index]
            available = np.where(free[index] > 0, free[index], 0).sum(axis=0)
            used = np.where(capacity >= available, capacity - available + devices.gpu.per_gpu.get(name, 0), capacity)
            safe = np.maximum(capacity, 1)
            if self.scorer.type == MOST_ALLOCATED:
                part = np.minimum(used, capacity) * 100 // safe
            else:
                part = np.where(used > capacity, 0, (capacity - used) * 100 // safe)
            present = capacity > 0
            score += np.where(present, part * weight, 0)
            weights += np.where(present, weight, 0)
        return np.where(weights > 0, score // np.maximum(weights, 1), 0)

    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        devices: PodDevices | None = state.get(NAME)
        if devices is None or node not in self.nodes:
            return SUCCESS
        row = self.cluster.columns.row[node]
        preferred = state.get(PREFERRED, {}).get(row)
        allocations = None if preferred else state.get(NAME + "/allocated", {}).get(row)
        if allocations is None:
            try:
                allocations = allocate(devices, self.nodes[node], self.cluster.nodes[node].labels, self.scorer,
                                       preferred)
            except Unfit as unfit:
                return Status.unschedulable(unfit.reason, NAME)
        state[NAME + "/chosen"] = allocations
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        state.pop(NAME + "/chosen", None)

    def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> dict[str, str]:
        allocations = state.get(NAME + "/chosen")
        if not allocations:
            return {}
        out = {ANNOTATION_DEVICE_ALLOCATED: annotation(allocations)}
        if (pod.labels.get(LABEL_GPU_ISOLATION_PROVIDER) or "").lower() == GPU_ISOLATION_HAMI.lower():
            out[ANNOTATION_HAMI_VGPU_NODE] = node
        return out


def _instance(devices: PodDevices, kind: str) -> dict[str, int]:
    resource = RDMA if kind != "fpga" else FPGA
    value = devices.requests[kind][resource]
    return {resource: 100 if value > 100 and value % 100 == 0 else value}
