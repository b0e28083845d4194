"""GPUFragmentation (optional score plugin): place a pod where it least increases the expected GPU
fragmentation of the cluster's pod mix — the idea of "Beware of Fragmentation" (Weng et al., USENIX ATC '23,
FGD), not a Koordinator plugin.

The pod mix M (``typicalPods``: cpu request, per-GPU share in milli-GPU, number of GPUs, weight) is what the
cluster usually runs; the weights are normalized to probabilities p_m. For a node with free GPU shares g_j
(milli, per GPU) and free cpu c, shape m leaves as fragment::

    f(m) = Σ_j g_j                    if m asks for no GPU, c < cpu_m, free memory < memory_m (when the mix
                                      states memory), or fewer than num_m GPUs have g_j >= milli_m
         = Σ_{j: g_j < milli_m} g_j   otherwise
    F = Σ_m p_m f(m)

Placing the pod turns F into F' (a shared pod on the GPU that gives the least F', whole-GPU pods on the lowest
free minors, the cpu taken in both); the node's score is the fragmentation it avoids, Δ = F - F', as the
paper scores it: int(100 x sigmoid(Δ / 1000)) (Δ in milli-GPU). The coarse integer lets nearby nodes tie, and
ties go to the node whose name sorts first: a fixed order that packs; finer scales (100 - the milli-GPU behind
the best; min-max over the candidates) left more GPU unallocated on Alibaba's trace. For shared pods the chosen GPU is handed to DeviceShare as its
preferred device (``PREFERRED``), so the device DeviceShare allocates is the one scored. F and F' are cached
per node and pod shape until the node's devices, use or cpu change, so a pod costs one node's worth of work
once the cache is warm.

Without ``typicalPods`` the plugin scores every node 0. The mix is configuration, not learned from the
stream, so a restored domain scores as the live one did.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from streams.koordinator.resources import DEVICE_GPU, GPU_CORE
from streams.objects.args import ArgsError, ArgsReader
from streams.objects.podinfo import PodInfo
from streams.objects.quantity import QuantityError, to_canonical
from streams.scheduler.columns import CPU, MEMORY
from streams.scheduler.framework import CycleState
from streams.scheduler.plugins.deviceshare.allocator import PREFERRED
from streams.scheduler.plugins.deviceshare.ledger import FAST, SLOTS, DeviceLedger
from streams.scheduler.plugins.deviceshare.requests import DeviceRequestError, device_requests, gpu_requirements
from streams.scheduler.state import Cluster, NodeChanged, ObjectChanged, PodAssigned, PodUnassigned

NAME = "GPUFragmentation"
MILLI_PER_GPU = 1000
MAX_SCORE = 100
CORE = FAST.index(GPU_CORE)
Shape = tuple[int, int, int, int]
"""(cpu milli-cores, per-GPU share in milli-GPU, number of GPUs, memory bytes)."""


@dataclasses.dataclass(frozen=True)
class GPUFragmentationArgs:
    typical_pods: tuple[tuple[Shape, float], ...] = ()
    """``typicalPods``: [{cpu, memory, gpuMilli, gpus, weight}]: the pod mix fragmentation is measured against
    (memory optional)."""

    @classmethod
    def from_config(cls, raw: Mapping | None) -> "GPUFragmentationArgs":
        reader = ArgsReader(NAME, raw, {"typicalPods"})
        shapes = []
        for index, item in enumerate(reader.sequence("typicalPods") or ()):
            where = f"typicalPods[{index}]"
            if not isinstance(item, dict) or set(item) - {"cpu", "memory", "gpuMilli", "gpus", "weight"}:
                raise ArgsError(f"{NAME}: {where} must be {{cpu, memory, gpuMilli, gpus, weight}}, got {item!r}")
            try:
                cpu = to_canonical("cpu", item.get("cpu", 0))
                memory = to_canonical("memory", item.get("memory", 0))
            except QuantityError as error:
                raise ArgsError(f"{NAME}: {where}: {error}") from None
            milli, gpus, weight = item.get("gpuMilli", 0), item.get("gpus", 0), item.get("weight", 1)
            if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (milli, gpus)) \
                    or milli > MILLI_PER_GPU:
                raise ArgsError(f"{NAME}: {where}: gpuMilli (0..1000) and gpus must be non-negative integers")
            if not isinstance(weight, (int, float)) or isinstance(weight, bool) or weight <= 0:
                raise ArgsError(f"{NAME}: {where}.weight must be positive, got {weight!r}")
            shapes.append(((cpu, milli, gpus, memory), float(weight)))
        return cls(tuple(shapes))


def shape_of(pod: PodInfo) -> Shape | None:
    """The pod's (cpu, per-GPU milli, GPUs, memory); None when its device requests are invalid or not plain
    GPUs."""
    try:
        requests = device_requests(pod.requests)
    except DeviceRequestError:
        return None
    cpu, memory = pod.requests.get("cpu", 0), pod.requests.get("memory", 0)
    if not requests:
        return cpu, 0, 0, memory
    if set(requests) != {DEVICE_GPU} or GPU_CORE not in requests[DEVICE_GPU]:
        return None
    need = gpu_requirements(requests[DEVICE_GPU])
    return cpu, need.per_gpu[GPU_CORE] * MILLI_PER_GPU // 100, need.count, memory


class FragmentModel:
    """F over many node states at once: ``gpus`` (..., SLOTS, n) free milli (-1 absent), ``cpu`` and
    ``memory`` (..., n) free."""

    def __init__(self, typical: tuple[tuple[Shape, float], ...]) -> None:
        total = sum(weight for _, weight in typical) or 1.0
        self.shapes = [(shape, weight / total) for shape, weight in typical]

    def fragment(self, gpus: np.ndarray, cpu: np.ndarray, memory: np.ndarray | None = None) -> np.ndarray:
        free = np.where(gpus > 0, gpus, 0)
        everything = free.sum(axis=-2).astype(np.float64)
        out = np.zeros(everything.shape, dtype=np.float64)
        for (cpu_m, milli_m, num_m, memory_m), p in self.shapes:
            if num_m == 0:
                out += p * everything
                continue
            fits = ((gpus >= milli_m).sum(axis=-2) >= num_m) & (cpu >= cpu_m)
            if memory_m and memory is not None:
                fits &= memory >= memory_m
            stranded = np.where(free < milli_m, free, 0).sum(axis=-2)
            out += p * np.where(fits, stranded, everything)
        return out


class GPUFragmentation:
    name = NAME
    Args = GPUFragmentationArgs

    def __init__(self, args: GPUFragmentationArgs, cluster: Cluster) -> None:
        self.cluster = cluster
        self.model = FragmentModel(args.typical_pods)
        self.ledger = DeviceLedger(cluster, f"{NAME}#{id(self)}")
        self.owner = f"{NAME}/cache#{id(self)}"
        self._columns: dict[Shape, int] = {}
        self._width = 0
        self._stale: set[str] = set(cluster.columns.names)
        self._attach(64)

    def close(self) -> None:
        self.ledger.close()
        self.cluster.columns.detach(self.owner)

    def _attach(self, width: int) -> None:
        columns = self.cluster.columns
        columns.detach(self.owner)
        columns.attach(self.owner, "base", None, np.float64, np.nan)
        columns.attach(self.owner, "after", width, np.float64, np.nan)
        columns.attach(self.owner, "slot", width, np.int64, -1)
        self._width = width
        self._columns = {}
        self._stale = set(columns.names)

    def observe(self, change: object) -> None:
        self.ledger.observe(change)
        if isinstance(change, (PodAssigned, PodUnassigned)):
            self._stale.add(change.node)
        elif isinstance(change, NodeChanged):
            self._stale.add(change.name)
            if change.moved:
                self._stale.add(change.moved)
        elif isinstance(change, ObjectChanged):
            self._stale.add(change.name)

    def _column(self, shape: Shape) -> int:
        if shape not in self._columns:
            if len(self._columns) == self._width:
                self._attach(self._width * 2)
            self._columns[shape] = len(self._columns)
        return self._columns[shape]

    def _refresh(self, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        columns = self.cluster.columns
        base = columns.attached(self.owner, "base")[:count]
        after = columns.attached(self.owner, "after")[:, :count]
        slot = columns.attached(self.owner, "slot")[:, :count]
        rows = [columns.row[name] for name in sorted(self._stale) if name in columns.row]
        self._stale.clear()
        if rows:
            rows = np.array(rows, dtype=np.int64)
            base[rows] = self.model.fragment(self._gpus(count)[:, rows], self._cpu(count)[rows],
                                             self._memory(count)[rows])
            after[:, rows] = np.nan
            slot[:, rows] = -1
        return base, after, slot

    def _gpus(self, count: int) -> np.ndarray:
        core = self.ledger.free(count)[CORE]
        return np.where(core >= 0, core * (MILLI_PER_GPU // 100), -1)

    def _cpu(self, count: int) -> np.ndarray:
        columns = self.cluster.columns
        return columns.allocatable[CPU, :count] - columns.requested[CPU, :count]

    def _memory(self, count: int) -> np.ndarray:
        columns = self.cluster.columns
        return columns.allocatable[MEMORY, :count] - columns.requested[MEMORY, :count]

    def _place(self, shape: Shape, rows: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        """(F', GPU slot or -1) after placing ``shape`` on each of ``rows``."""
        cpu_p, milli_p, num_p, memory_p = shape
        gpus = self._gpus(count)[:, rows]
        cpu = self._cpu(count)[rows] - cpu_p
        memory = self._memory(count)[rows] - memory_p
        if num_p == 0:
            return self.model.fragment(gpus, cpu, memory), np.full(len(rows), -1)
        if milli_p < MILLI_PER_GPU and num_p == 1:
            trials = np.repeat(gpus[None], SLOTS, axis=0)
            index = np.arange(SLOTS)
            trials[index, index, :] -= milli_p
            frag = self.model.fragment(trials, cpu[None], memory[None])
            frag[gpus < milli_p] = np.inf
            best = np.argmin(frag, axis=0)
            return frag[best, np.arange(len(rows))], np.where(np.isfinite(frag.min(axis=0)), best, -1)
        whole = gpus >= MILLI_PER_GPU
        take = whole & (np.cumsum(whole, axis=0) <= num_p)
        placed = np.where(take, 0, gpus)
        return self.model.fragment(placed, cpu, memory), np.full(len(rows), -1)

    def score(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> np.ndarray:
        count = len(candidates)
        shape = shape_of(pod) if self.model.shapes else None
        if shape is None or not candidates.any():
            return np.zeros(count, dtype=np.int64)
        column = self._column(shape)
        base, after, slot = self._refresh(count)
        missing = np.flatnonzero(candidates & np.isnan(after[column]))
        if len(missing):
            after[column, missing], slot[column, missing] = self._place(shape, missing, count)
        gain = base - after[column]
        rows = np.flatnonzero(candidates & np.isfinite(gain))
        if shape[2] == 1 and shape[1] < MILLI_PER_GPU:
            state[PREFERRED] = _Preferred(self.ledger, slot[column].copy())
        scores = np.zeros(count, dtype=np.int64)
        if len(rows):
            scores[rows] = (MAX_SCORE / (1.0 + np.exp(-gain[rows] / MILLI_PER_GPU))).astype(np.int64)
        return scores


class _Preferred:
    """PREFERRED's value: the GPU (by minor) this plugin scored on each node row."""

    def __init__(self, ledger: DeviceLedger, slots: np.ndarray) -> None:
        self.ledger, self.slots = ledger, slots

    def get(self, row: int, default=None):
        slot = int(self.slots[row]) if row < len(self.slots) else -1
        if slot < 0:
            return default
        node = self.ledger.nodes.get(self.ledger.cluster.columns.names[row])
        minors = sorted(node.devices.get(DEVICE_GPU, {})) if node is not None else []
        return {DEVICE_GPU: frozenset({minors[slot]})} if slot < len(minors) else default
