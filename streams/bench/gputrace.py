"""Alibaba's GPU cluster trace (cluster-trace-gpu-v2023, "openb") replayed as the FGD paper replays it: the pure
part of ``koord bench trace``.

Protocol (``shared/data/openb/BENCHMARK.md`` §1.2 and §4, from the paper's simulator):

- **Cluster**: every row of the node list (GPU nodes): cpu, memory, GPUs of 1000 milli, model; as Koordinator
  objects a Node (cpu, memory, ``nvidia.com/gpu``, pods 1001) and a Device with one GPU per card (gpu-core 100,
  gpu-memory-ratio 100) labelled with the model.
- **Nodes are renamed per seed** with a random four-digit prefix, as the simulator does: equal scores go to the
  name that sorts first, so this makes ties fall on a random, fixed node order.
- **Pods**: every row of the pod list; per seed shuffled (``random.Random(seed)``, over the name-sorted list),
  then copies drawn uniformly with replacement appended until the GPU asked for would pass 1.3 x capacity (the
  simulator's stop test adds the copy's per-GPU share, its running total the copy's whole request). A shared
  pod (one GPU, under 1000 milli) asks for ``gpu.shared`` 1 with gpu-core and gpu-memory-ratio of its share; a
  whole-GPU pod for ``nvidia.com/gpu``; cpu and memory as listed; the trace's QoS as the ``qosClass`` label
  (LS, BE; Kubernetes' own classes need no label). A pod that fits nowhere is dropped, never retried.
- **Measure** after every pod: arrived = GPU asked for so far / capacity, allocated = GPU placed / capacity; the
  unallocated GPU at arrived = 100 % is 100 - the mean allocation of the pods whose rounded arrived % is 100
  (99 and 101 when none is); the fragmentation (F summed over nodes, with the typical pods of the untuned list:
  the most frequent shapes covering 95 % of the pods) as a % of capacity at the same points.

Python's random differs from Go's, so orders differ from the paper's: compare medians over seeds.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import random
from collections import Counter
from pathlib import Path

import numpy as np

from streams.koordinator.classes import QOS_BE, QOS_LS
from streams.koordinator.labels import LABEL_GPU_MODEL, LABEL_POD_QOS
from streams.koordinator.resources import (
    DEVICE_GPU, GPU_CORE, GPU_MEMORY_RATIO, GPU_SHARED, NVIDIA_GPU)
from streams.scheduler.plugins.gpufragmentation import FragmentModel

MILLI_PER_GPU = 1000
TUNE = 1.3
COVERAGE = 0.95
NAMESPACE = "openb"
QOS_LABELS = (QOS_LS, QOS_BE)
"""The trace's QoS values that are Koordinator classes; Burstable and Guaranteed are Kubernetes' own."""
BASELINES = {"Random": 13.75, "DotProd": 9.45, "GpuClustering": 8.42, "GpuPacking": 8.20, "BestFit": 7.09,
             "FGD": 4.77}
"""The paper's unallocated GPU % at arrived = 100 % on the default trace (medians of 10 seeds, BENCHMARK.md §3.2)."""


class TraceError(ValueError):
    """A trace file that cannot be read: the message names file, line and field."""


@dataclasses.dataclass(frozen=True)
class TraceNode:
    name: str
    cpu: int
    memory_mib: int
    gpus: int
    model: str


@dataclasses.dataclass(frozen=True)
class TracePod:
    name: str
    cpu: int
    memory_mib: int
    gpus: int
    milli: int
    qos: str

    @property
    def gpu_milli(self) -> int:
        """GPU asked for, in milli-GPU."""
        return self.gpus * self.milli

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.cpu, self.milli if self.gpus else 0, self.gpus


def _rows(path: Path, fields: tuple[str, ...]) -> list[tuple[int, dict]]:
    try:
        with open(path, newline="") as handle:
            reader = csv.DictReader(handle)
            missing = [f for f in fields if f not in (reader.fieldnames or ())]
            if missing:
                raise TraceError(f"{path}: line 1: missing column(s) {', '.join(missing)}")
            return [(reader.line_num, row) for row in reader]
    except OSError as error:
        raise TraceError(f"{path}: {error.strerror}") from None


def _int(path: Path, line: int, row: dict, field: str, low: int = 0, high: int | None = None) -> int:
    text = (row.get(field) or "").strip()
    try:
        value = int(text)
    except ValueError:
        raise TraceError(f"{path}: line {line}: {field}: expected an integer, got {text!r}") from None
    if value < low or (high is not None and value > high):
        raise TraceError(f"{path}: line {line}: {field}: {value} is out of range")
    return value


def read_nodes(path: Path) -> list[TraceNode]:
    """The node list (sn, cpu_milli, memory_mib, gpu, model), name-sorted."""
    nodes = []
    for line, row in _rows(path, ("sn", "cpu_milli", "memory_mib", "gpu", "model")):
        nodes.append(TraceNode(row["sn"].strip(), _int(path, line, row, "cpu_milli", 1),
                               _int(path, line, row, "memory_mib", 1), _int(path, line, row, "gpu", 0, 64),
                               (row.get("model") or "").strip()))
    if not nodes:
        raise TraceError(f"{path}: no nodes")
    return sorted(nodes, key=lambda n: n.name)


def read_pods(path: Path) -> list[TracePod]:
    """The pod list (name, cpu_milli, memory_mib, num_gpu, gpu_milli, qos, ...), name-sorted."""
    pods = []
    for line, row in _rows(path, ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")):
        gpus = _int(path, line, row, "num_gpu", 0, 64)
        milli = _int(path, line, row, "gpu_milli", 0, MILLI_PER_GPU)
        if gpus > 1 and milli != MILLI_PER_GPU:
            raise TraceError(f"{path}: line {line}: gpu_milli: {milli} with num_gpu {gpus} (multi-GPU pods take "
                             f"whole GPUs)")
        if milli % 10:
            raise TraceError(f"{path}: line {line}: gpu_milli: {milli} is not a whole percent of a GPU")
        pods.append(TracePod(row["name"].strip(), _int(path, line, row, "cpu_milli"),
                             _int(path, line, row, "memory_mib"), gpus, milli if gpus else 0,
                             (row.get("qos") or "").strip()))
    if not pods:
        raise TraceError(f"{path}: no pods")
    return sorted(pods, key=lambda p: p.name)


def capacity(nodes: list[TraceNode]) -> int:
    return sum(n.gpus for n in nodes) * MILLI_PER_GPU


def seeded(pods: list[TracePod], nodes: list[TraceNode], seed: int) -> tuple[list[TraceNode], list[TracePod]]:
    """One seed's cluster and arrival order: the nodes renamed ``<NNNN>-<name>`` with a random permutation as
    the prefix (the simulator's, so that ties between equal scores, which go to the name that sorts first, fall
    on a random but fixed node order), and ``workload``."""
    rng = random.Random(seed)
    order = workload(pods, nodes, rng)
    prefixes = list(range(len(nodes)))
    rng.shuffle(prefixes)
    renamed = [dataclasses.replace(node, name=f"{prefix:04d}-{node.name}") for node, prefix in zip(nodes, prefixes)]
    return renamed, order


def workload(pods: list[TracePod], nodes: list[TraceNode], rng: random.Random) -> list[TracePod]:
    """An arrival order: the shuffled pods, then copies until 1.3 x the GPU capacity has arrived."""
    order = list(pods)
    rng.shuffle(order)
    target = TUNE * capacity(nodes)
    total = sum(p.gpu_milli for p in pods)
    copies = 0
    while True:
        pick = pods[rng.randrange(len(pods))]
        if total + pick.milli > target:
            break
        copies += 1
        order.append(dataclasses.replace(pick, name=f"{pick.name}-tuned-{copies}"))
        total += pick.gpu_milli
    return order


def typical_pods(pods: list[TracePod]) -> list[tuple[tuple[int, int, int], int]]:
    """The most frequent shapes of the untuned list, until they cover 95 % of it (ties by shape)."""
    counts = Counter(p.shape for p in pods)
    chosen, covered = [], 0
    for shape, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        if covered >= COVERAGE * len(pods):
            break
        chosen.append((shape, count))
        covered += count
    return chosen


def fragmentation_args(pods: list[TracePod], memory: bool = False) -> dict:
    """GPUFragmentation's args for this trace's mix; with ``memory``, each shape also states the mean memory of
    its pods."""
    means: dict[tuple[int, int, int], list[int]] = {}
    for pod in pods:
        means.setdefault(pod.shape, []).append(pod.memory_mib)
    out = []
    for (cpu, milli, gpus), count in typical_pods(pods):
        shape = {"cpu": f"{cpu}m", "gpuMilli": milli, "gpus": gpus, "weight": count}
        if memory:
            shape["memory"] = f"{sum(means[cpu, milli, gpus]) // len(means[cpu, milli, gpus])}Mi"
        out.append(shape)
    return {"typicalPods": out}


# -- Koordinator objects ----------------------------------------------------------------------

def node_manifests(node: TraceNode) -> list[dict]:
    allocatable = {"cpu": f"{node.cpu}m", "memory": f"{node.memory_mib}Mi", "pods": "1001"}
    if node.gpus:
        allocatable[NVIDIA_GPU] = str(node.gpus)
    labels = {LABEL_GPU_MODEL: node.model} if node.model else {}
    out = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": node.name, "labels": labels},
            "status": {"capacity": allocatable, "allocatable": allocatable}}]
    if node.gpus:
        devices = [{"type": DEVICE_GPU, "minor": minor, "id": f"{node.name}-gpu-{minor}", "health": True,
                    "resources": {GPU_CORE: "100", GPU_MEMORY_RATIO: "100"}} for minor in range(node.gpus)]
        out.append({"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Device",
                    "metadata": {"name": node.name, "labels": labels}, "spec": {"devices": devices}})
    return out


def pod_manifest(pod: TracePod) -> dict:
    requests = {"cpu": f"{pod.cpu}m", "memory": f"{pod.memory_mib}Mi"}
    if pod.gpus == 1 and pod.milli < MILLI_PER_GPU:
        share = str(pod.milli // 10)
        requests.update({GPU_SHARED: "1", GPU_CORE: share, GPU_MEMORY_RATIO: share})
    elif pod.gpus:
        requests[NVIDIA_GPU] = str(pod.gpus)
    labels = {LABEL_POD_QOS: pod.qos} if pod.qos in QOS_LABELS else {}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod.name, "namespace": NAMESPACE, "labels": labels},
            "spec": {"containers": [{"name": "main", "image": "trace",
                                     "resources": {"requests": requests, "limits": requests}}]}}


# -- measures ---------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Placement:
    """Where a pod went: its node and the GPU minors it got (with the share of each), or no node."""

    node: str | None
    gpus: tuple[tuple[int, int], ...] = ()
    """(minor, milli) per allocated GPU."""


def at_level(levels: np.ndarray, values: np.ndarray, level: int) -> float:
    """The simulator's resampling: the mean of ``values`` where the rounded arrived % is ``level`` (else ±1)."""
    rounded = np.floor(levels + 0.5)
    for wanted in ([level], [level - 1, level + 1]):
        chosen = np.isin(rounded, wanted)
        if chosen.any():
            return float(values[chosen].mean())
    return math.nan


def measure(nodes: list[TraceNode], order: list[TracePod], placements: dict[str, Placement],
            model: FragmentModel, level: int = 100) -> dict:
    """Unallocated GPU % and fragmentation % of capacity at ``level`` % arrived, and the failures."""
    total = capacity(nodes)
    index = {n.name: i for i, n in enumerate(nodes)}
    slots = max(n.gpus for n in nodes) or 1
    gpus = np.full((slots, len(nodes)), -1, dtype=np.int64)
    for i, n in enumerate(nodes):
        gpus[: n.gpus, i] = MILLI_PER_GPU
    cpu = np.array([n.cpu for n in nodes], dtype=np.int64)
    arrived = allocated = 0
    levels, ratios, frags = [], [], []
    failed = 0
    for pod in order:
        arrived += pod.gpu_milli
        placement = placements.get(pod.name)
        if placement is None or placement.node is None:
            failed += 1
        else:
            row = index[placement.node]
            cpu[row] -= pod.cpu
            for minor, milli in placement.gpus:
                gpus[minor, row] -= milli
                allocated += milli
        percent = 100.0 * arrived / total
        levels.append(percent)
        ratios.append(100.0 * allocated / total)
        frags.append(float(model.fragment(gpus, cpu).sum()) * 100.0 / total
                     if abs(percent - level) < 1.5 else math.nan)
    levels_a, ratios_a, frags_a = np.array(levels), np.array(ratios), np.array(frags)
    return {"unallocated_gpu_pct": round(100.0 - at_level(levels_a, ratios_a, level), 2),
            "fragmentation_pct": round(at_level(levels_a, frags_a, level), 2),
            "failed_pods": failed, "pods": len(order),
            "arrived_pct_at_end": round(levels[-1], 1) if levels else 0.0}
