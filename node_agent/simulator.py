"""A synthetic fleet for the embedded default and for benchmarks: nodes, pods, usage, actuation acks.

Deterministic for a seed (and the simulated start time): the same arguments
give the same nodes, pods, lifetimes and usage. Time is simulated in whole
seconds; the caller decides how fast it runs.

- **Nodes** are drawn from real CPU models with their socket, core, SMT and
  NUMA layouts (cloud VMs and bare metal, x86 and Arm); a fraction carry
  NVIDIA GPUs and publish a Device. Each Node carries the
  ``node.koordinator.sh/cpu-basic-info`` and ``cpu-topology`` annotations.
- **Pods** start at the steady-state population (``nodes x pods_per_node``),
  then arrive at the rate that keeps it and finish (phase Succeeded) after an
  exponential lifetime. LS pods (koord-prod, qosClass LS) request cpu/memory;
  BE pods (koord-batch, qosClass BE) request ``kubernetes.io/batch-cpu`` and
  ``batch-memory``. Pods are created unbound; the scheduler's decisions
  (``apply_decision``) place them, as a kubelet would learn its pods.
- **Usage** of an LS pod follows the day: request x (base + amplitude x
  diurnal(t)) plus noise, diurnal(t) = (1 - cos(2 pi (hour - 4) / 24)) / 2 (lowest
  at 04:00, highest at 16:00); a BE pod runs near its request. Node usage =
  sum of its pods + system daemons, capped at capacity; system usage is the
  daemons' share. Noise is a hash of (seed, pod, second), so usage does not
  depend on when decisions arrive.
- **NodeMetrics**: one per node per report interval, sampled at that interval
  (coarser than the real agent's 1 s samples) into the same ring buffers and
  aggregations the node agent uses.
- **Actuations** addressed to the fleet's nodes are acknowledged as a node
  would after applying them: values read back = desired values; one not newer
  than the last applied to the same target is refused as stale.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import uuid
from collections import OrderedDict

from node_agent.collectors.topology import LogicalCPU, Topology
from node_agent.report import (GPUDevice, PodReport, Usage, Window, device_manifest, node_manifest,
                               node_metric_manifest)
from node_agent.ringbuffer import RingBuffer
from streams.koordinator.classes import PRIORITY_BATCH, PRIORITY_CLASS_VALUES, PRIORITY_PROD, QOS_BE, QOS_LS
from streams.koordinator.labels import LABEL_POD_QOS
from streams.koordinator.resources import BATCH_CPU, BATCH_MEMORY, NVIDIA_GPU
from streams.sloconfig.document import CONFIG_NAME, CONFIG_NAMESPACE

GIB = 1 << 30
DAY_S = 86_400
NAMESPACE = "sim"
AGGREGATE_WINDOWS_S = (300.0, 600.0, 1800.0)
AGGREGATE_DURATION_S = 300.0


@dataclasses.dataclass(frozen=True)
class CPUModel:
    name: str
    vendor: str
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    numa_per_socket: int
    memory_gib: int
    turbo: bool
    arch: str = "amd64"

    @property
    def cpus(self) -> int:
        return self.sockets * self.cores_per_socket * self.threads_per_core


CPU_MODELS = (
    CPUModel("Intel(R) Xeon(R) Platinum 8369B CPU @ 2.70GHz", "GenuineIntel", 1, 8, 2, 1, 64, True),
    CPUModel("AMD EPYC 7K62 48-Core Processor", "AuthenticAMD", 1, 16, 2, 1, 128, True),
    CPUModel("Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz", "GenuineIntel", 2, 20, 2, 1, 192, True),
    CPUModel("Intel(R) Xeon(R) Platinum 8269CY CPU @ 2.50GHz", "GenuineIntel", 2, 26, 2, 1, 384, True),
    CPUModel("Intel(R) Xeon(R) CPU E5-2682 v4 @ 2.50GHz", "GenuineIntel", 2, 16, 2, 1, 256, False),
    CPUModel("AMD EPYC 7742 64-Core Processor", "AuthenticAMD", 2, 64, 2, 2, 512, True),
    CPUModel("Ampere Altra Q80-30", "ARM", 1, 80, 1, 1, 256, False, arch="arm64"),
)
"""Cloud VM and bare-metal shapes; numa_per_socket 2 is AMD's NPS2."""

GPU_MODELS = (("NVIDIA A100-SXM4-80GB", 8, 80), ("Tesla T4", 4, 16), ("NVIDIA L40S", 4, 48))
"""(model, GPUs per node, GiB per GPU)."""
GPU_HOSTS = ("Intel(R) Xeon(R) Platinum 8269CY CPU @ 2.50GHz", "AMD EPYC 7742 64-Core Processor")


@dataclasses.dataclass(frozen=True)
class FleetArgs:
    nodes: int = 5
    pods_per_node: int = 4
    """Steady-state pods per node: the initial population and the arrival rate keep it."""
    seed: int = 1
    mean_lifetime_s: int = 600
    """Mean pod lifetime in simulated seconds (exponential)."""
    be_fraction: float = 0.35
    """Share of arriving pods that are BE (koord-batch)."""
    gpu_node_fraction: float = 0.2
    report_interval_s: int = 10
    start_time: float = 0.0
    """Wall-clock time (epoch seconds) of simulated second 0: the time of day of the diurnal curve."""


@dataclasses.dataclass
class SimNode:
    name: str
    model: CPUModel
    gpu: tuple[str, int, int] | None
    system_cpu: float
    """Cores the system daemons use on average."""
    system_memory: float
    series: RingBuffer

    @property
    def cpu(self) -> float:
        return float(self.model.cpus)

    @property
    def memory(self) -> float:
        return float(self.model.memory_gib * GIB)


@dataclasses.dataclass
class SimPod:
    index: int
    uid: str
    name: str
    qos: str
    cpu_milli: int
    memory: int
    base: float
    amplitude: float
    phase_s: float
    ends_at: int
    node: str | None = None
    started_at: int | None = None


def diurnal(epoch_s: float) -> float:
    hour = (epoch_s % DAY_S) / 3600
    return (1 - math.cos(2 * math.pi * (hour - 4) / 24)) / 2


def noise(*key: int) -> float:
    """A uniform value in [-1, 1) from a splitmix64 hash of ``key``."""
    x = 0x9E3779B97F4A7C15
    for part in key:
        x = (x ^ (part & 0xFFFFFFFFFFFFFFFF)) * 0xBF58476D1CE4E5B9 & 0xFFFFFFFFFFFFFFFF
        x = (x ^ (x >> 27)) * 0x94D049BB133111EB & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 31
    return x / 2**63 - 1.0


def topology_of(model: CPUModel) -> Topology:
    """Linux's numbering: first thread of every core across sockets, then the siblings."""
    cores = model.sockets * model.cores_per_socket
    per_numa = model.cores_per_socket // model.numa_per_socket
    cpus = []
    for thread in range(model.threads_per_core):
        for core in range(cores):
            socket, local = divmod(core, model.cores_per_socket)
            node = socket * model.numa_per_socket + local // per_numa
            siblings = tuple(t * cores + core for t in range(model.threads_per_core))
            cpus.append(LogicalCPU(id=thread * cores + core, core=core, socket=socket, node=node, siblings=siblings))
    return Topology(cpus=tuple(sorted(cpus, key=lambda c: c.id)), model_name=model.name, vendor_id=model.vendor,
                    hyper_threading=model.threads_per_core > 1, turbo=model.turbo)


class Fleet:
    def __init__(self, args: FleetArgs) -> None:
        self.args = args
        self.random = random.Random(args.seed)
        self.next_pod = 0
        self.pods: dict[str, SimPod] = {}
        self.ending: dict[int, list[str]] = {}
        self.evicted: dict[str, str] = {}
        """uid -> decision id of the Eviction that ends it (at the next step)."""
        self._evictions_seen: set[str] = set()
        samples = math.ceil(max(AGGREGATE_WINDOWS_S) / args.report_interval_s) + 2
        self._nodes: dict[str, SimNode] = {}
        for i in range(args.nodes):
            gpu = None
            if self.random.random() < args.gpu_node_fraction:
                host = self.random.choice(GPU_HOSTS)
                model = next(m for m in CPU_MODELS if m.name == host)
                gpu = self.random.choice(GPU_MODELS)
            else:
                model = self.random.choice(CPU_MODELS)
            name = f"sim-node-{i:03d}"
            self._nodes[name] = SimNode(name, model, gpu, system_cpu=0.2 + 0.01 * model.cpus,
                                        system_memory=1.5 * GIB + 0.01 * model.memory_gib * GIB,
                                        series=RingBuffer(samples, 4))
        self._applied: OrderedDict[tuple, tuple[int, dict[str, str]]] = OrderedDict()
        self._max_applied = 10 * max(args.nodes * args.pods_per_node, 100)

    @property
    def node_names(self) -> list[str]:
        return list(self._nodes)

    # Objects.

    def nodes(self) -> list[dict]:
        manifests = []
        for node in self._nodes.values():
            capacity = {"cpu": node.model.cpus * 1000, "memory": node.model.memory_gib * GIB, "pods": 110}
            if node.gpu:
                capacity[NVIDIA_GPU] = node.gpu[1]
            labels = {"kubernetes.io/hostname": node.name, "kubernetes.io/os": "linux",
                      "kubernetes.io/arch": node.model.arch}
            manifests.append(node_manifest(node.name, capacity, labels, topology_of(node.model).annotations()))
        return manifests

    def slo_config(self) -> dict:
        """The demo's slo-controller-config: co-location on with Koordinator's defaults (batch resources from
        what the LS pods leave), and the resource thresholds on (BE suppressed when an LS burst pushes the
        node over 65 % cpu), so a first run shows batch-cpu appear, BE pods placed on it, and suppression."""
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": CONFIG_NAME, "namespace": CONFIG_NAMESPACE},
                "data": {"colocation-config": json.dumps({"enable": True}),
                         "resource-threshold-config": json.dumps({"clusterStrategy": {"enable": True}})}}

    def devices(self) -> list[dict]:
        manifests = []
        for node in self._nodes.values():
            if not node.gpu:
                continue
            model, count, gib = node.gpu
            numa_nodes = node.model.sockets * node.model.numa_per_socket
            rng = random.Random(f"{self.args.seed}/{node.name}/gpu")
            gpus = [GPUDevice(uuid=f"GPU-{uuid.UUID(int=rng.getrandbits(128), version=4)}", minor=minor,
                              memory_total=gib * GIB, numa_node=minor * numa_nodes // count,
                              pcie_root=f"pci0000:{minor // 2 * 0x20 + 0x17:02x}",
                              bus_id=f"0000:{minor * 0x10 + 0x1a:02x}:00.0") for minor in range(count)]
            manifests.append(device_manifest(node.name, gpus, [], model.removeprefix("NVIDIA ").replace(" ", "-"),
                                             "535.161.08"))
        return manifests

    def step(self, second: int) -> list[dict]:
        """Pod manifests to apply at simulated ``second``: the initial population at 0, then arrivals and endings."""
        out = [self._pod_manifest(self.pods.pop(uid), "Failed") for uid in sorted(self.evicted) if uid in self.pods]
        self.evicted.clear()
        out += [self._pod_manifest(self.pods.pop(uid), "Succeeded") for uid in self.ending.pop(second, [])
                if uid in self.pods]
        if second == 0:
            arrivals = self.args.nodes * self.args.pods_per_node
        else:
            rate = self.args.nodes * self.args.pods_per_node / self.args.mean_lifetime_s
            arrivals = int(rate) + (1 if self.random.random() < rate - int(rate) else 0)
        for _ in range(arrivals):
            pod = self._new_pod(second)
            self.pods[pod.uid] = pod
            self.ending.setdefault(pod.ends_at, []).append(pod.uid)
            out.append(self._pod_manifest(pod))
        return out

    def _new_pod(self, second: int) -> SimPod:
        index = self.next_pod
        self.next_pod += 1
        be = self.random.random() < self.args.be_fraction
        lifetime = max(1, int(self.random.expovariate(1 / self.args.mean_lifetime_s)))
        return SimPod(
            index=index, uid=str(uuid.UUID(int=self.random.getrandbits(128), version=4)),
            name=f"sim-{'be' if be else 'ls'}-{index:06d}", qos=QOS_BE if be else QOS_LS,
            cpu_milli=self.random.choice((250, 500, 1000, 2000, 4000)),
            memory=self.random.choice((256, 512, 1024, 4096)) << 20,
            base=self.random.uniform(0.6, 0.8) if be else self.random.uniform(0.1, 0.3),
            amplitude=0.0 if be else self.random.uniform(0.2, 0.6),
            phase_s=self.random.uniform(-3600, 3600), ends_at=second + lifetime)

    def _pod_manifest(self, pod: SimPod, phase: str | None = None) -> dict:
        be = pod.qos == QOS_BE
        klass = PRIORITY_BATCH if be else PRIORITY_PROD
        cpu, memory = ((BATCH_CPU, str(pod.cpu_milli)), (BATCH_MEMORY, f"{pod.memory >> 20}Mi")) if be \
            else (("cpu", f"{pod.cpu_milli}m"), ("memory", f"{pod.memory >> 20}Mi"))
        requests = {cpu[0]: cpu[1], memory[0]: memory[1]}
        limits = dict(requests) if be else {"cpu": f"{2 * pod.cpu_milli}m", "memory": f"{pod.memory >> 20}Mi"}
        manifest = {"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": pod.name, "namespace": NAMESPACE, "uid": pod.uid,
                                 "labels": {"app": "sim", LABEL_POD_QOS: pod.qos}},
                    "spec": {"priorityClassName": klass, "priority": PRIORITY_CLASS_VALUES[klass],
                             "containers": [{"name": "main", "image": "sim",
                                             "resources": {"requests": requests, "limits": limits}}]}}
        if phase:
            manifest["status"] = {"phase": phase}
        return manifest

    # What the nodes learn and do.

    def apply_decision(self, record: dict, second: int = 0) -> None:
        """A SchedulingDecision: bind (or release) one of the fleet's pods."""
        uid = (record.get("pod") or {}).get("uid")
        pod = self.pods.get(uid) if uid else None
        if pod is None:
            return
        node = record.get("nodeName")
        if record.get("result") in ("Scheduled", "Bound") and node in self._nodes:
            if pod.node != node:
                pod.node, pod.started_at = node, second
        elif record.get("result") == "Released" or node is None:
            pod.node = None

    def evict(self, record: dict) -> bool:
        """An Eviction decision (descheduler, node-side memory or CPU eviction, preemption): the pod ends Failed at
        the next step, as a kubelet ends an evicted pod, and its deletion releases its resources. Each decision
        id is carried out once, so a duplicated or replayed decision never evicts twice."""
        uid = (record.get("pod") or {}).get("uid")
        decision = record.get("decisionId")
        if not uid or uid not in self.pods or decision in self._evictions_seen or uid in self.evicted:
            return False
        self._evictions_seen.add(decision)
        self.evicted[uid] = decision
        return True

    def pod_usage(self, pod: SimPod, second: int) -> Usage:
        t = self.args.start_time + second
        jitter = noise(self.args.seed, pod.index, second)
        if pod.qos == QOS_BE:
            cpu = pod.cpu_milli / 1000 * min(max(pod.base + 0.25 * jitter, 0.05), 1.0)
            age = second - (pod.started_at or second)
            memory = pod.memory * min(0.3 + 0.6 * min(age / 120, 1.0) + 0.02 * jitter, 1.0)
        else:
            level = pod.base + pod.amplitude * diurnal(t + pod.phase_s) + 0.08 * jitter
            cpu = pod.cpu_milli / 1000 * min(max(level, 0.02), 2.0)
            memory = pod.memory * min(max(0.45 + 0.15 * diurnal(t + pod.phase_s) + 0.02 * jitter, 0.1), 1.0)
        return Usage(cpu, memory)

    def node_metrics(self, second: int) -> list[dict]:
        """One NodeMetric per node for simulated ``second``; samples every node's usage into its history."""
        running: dict[str, list[SimPod]] = {name: [] for name in self._nodes}
        for pod in self.pods.values():
            if pod.node in running:
                running[pod.node].append(pod)
        manifests = []
        for number, node in enumerate(self._nodes.values()):
            pods = [PodReport(p.uid, NAMESPACE, p.name, PRIORITY_BATCH if p.qos == QOS_BE else PRIORITY_PROD, p.qos,
                              self.pod_usage(p, second)) for p in running[node.name]]
            jitter = noise(self.args.seed, -1 - number, second)
            system = Usage(max(node.system_cpu * (1 + 0.2 * jitter), 0.0), node.system_memory * (1 + 0.02 * jitter))
            used = Usage(min(system.cpu + sum(p.usage.cpu for p in pods), node.cpu),
                         min(system.memory + sum(p.usage.memory for p in pods), node.memory))
            node.series.append(second, (used.cpu, used.memory, system.cpu, system.memory))
            node_windows, system_windows = [], []
            for window in AGGREGATE_WINDOWS_S:
                stats = node.series.aggregate(second, window)
                node_windows.append(Window(window, None if stats is None else
                                           {s: Usage(v[0], v[1]) for s, v in stats.items()}))
                system_windows.append(Window(window, None if stats is None else
                                             {s: Usage(v[2], v[3]) for s, v in stats.items()}))
            mean = node.series.mean(second, AGGREGATE_DURATION_S)
            manifests.append(node_metric_manifest(
                node.name, self.args.start_time + second, Usage(mean[0], mean[1]), Usage(mean[2], mean[3]),
                node_windows, system_windows, pods, []))
        return manifests

    def acknowledge(self, actuation: dict, now_ms: int) -> dict | None:
        """The ActuationAck a node of the fleet sends after applying ``actuation``; None when not ours."""
        node = actuation.get("nodeName")
        if node not in self._nodes:
            return None
        target = (node, actuation["targetKind"], actuation["targetId"], actuation["mechanism"])
        sequence = actuation["sequence"]
        last = self._applied.get(target)
        if last is not None and sequence <= last[0]:
            applied, values, error = False, dict(last[1]), f"stale: sequence {sequence} is not newer than {last[0]}"
        else:
            applied, values, error = True, dict(actuation.get("values") or {}), None
            self._applied[target] = (sequence, values)
            self._applied.move_to_end(target)
            while len(self._applied) > self._max_applied:
                self._applied.popitem(last=False)
        return {"actuationId": actuation["decisionId"], "nodeName": node, "sequence": sequence, "applied": applied,
                "status": "applied" if applied else "rejected", "values": values, "error": error,
                "timestamp": now_ms}

