"""The node agent's core: sample the host, keep bounded history, build the reports.

``collect`` (every collect interval): node CPU (/proc/stat delta) and memory
(/proc/meminfo under the memory policy); CPU (delta of cumulative CPU time) and
memory of every pod cgroup and host application; then::

    system = max(node - sum(pods) - sum(host applications), 0)   per resource

(koordlet's system resource collector). Each series goes into a ring buffer
sized for the longest window, one per pod while its cgroup exists.

``refresh`` (every report): what is cumulative or slow to change - cold page
bytes, per-container usage, CFS throttling and PSI (to Prometheus), capacity,
topology and devices.

``node_metric``, ``node``, ``device``, ``node_resource_topology``: the manifests (``node_agent.report``).
NodeMetric usages are means over ``aggregate_duration_s``; the windows carry
avg/p50/p90/p95/p99. No Kafka and no sleeping here: the clocks are injected
and ``node_agent.run`` drives the cadence.
"""

from __future__ import annotations

import dataclasses
import math
import platform
import socket
import time
from collections.abc import Callable

from node_agent import metrics
from node_agent.collectors import coldmemory, rdma
from node_agent.collectors.capacity import node_capacity
from node_agent.collectors.cgroups import PodCgroup, Pressure, Throttling, throttled_ratio
from node_agent.collectors.gpu import NVML, model_label
from node_agent.collectors.hostapps import HostApplication, load_host_applications
from node_agent.collectors.yarn import with_yarn
from node_agent.collectors.memory import (WITH_HOT_PAGE_CACHE, WITHOUT_PAGE_CACHE, cgroup_usage, node_usage,
                                          parse_meminfo)
from node_agent.collectors.procstat import NodeCPU
from node_agent.collectors.topology import Topology, read_topology
from node_agent.counters import RateMeter
from node_agent.hostfs import read_text
from node_agent.kubeletconfig import detect_layout
from node_agent.pods import PodDirectory
from node_agent.report import (GPUDevice, HostAppReport, PodReport, RDMADevice, Usage, Window, device_manifest,
                               node_manifest, node_metric_manifest, node_resource_topology_manifest)
from node_agent.ringbuffer import RingBuffer
from node_agent.settings import AgentSettings
from streams.koordinator.resources import GPU_CORE, GPU_MEMORY, GPU_MEMORY_RATIO
from streams.objects import format_quantity

NODE_CGROUP = ""
"""The root cgroup: the node's own cold page bytes."""
_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "ppc64le": "ppc64le", "s390x": "s390x"}


@dataclasses.dataclass(frozen=True)
class Sample:
    """One collection round (cores and bytes; None where a value could not be read)."""

    time: float
    node: Usage
    system: Usage
    pods: dict[str, Usage]
    host_apps: dict[str, Usage]


@dataclasses.dataclass(frozen=True)
class PodDetails:
    """What a report round learned about a pod beyond NodeMetric."""

    throttled_ratio: float | None
    pressure: dict[str, Pressure]
    cold_bytes: int | None
    containers: dict[str, Usage]


class NodeAgent:
    def __init__(self, settings: AgentSettings, *, monotonic: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time, nvml: NVML | None = None,
                 pods: PodDirectory | None = None) -> None:
        self.settings = settings.validate()
        self.node_name = settings.node_name or socket.gethostname()
        self.layout = detect_layout(settings.proc_root, settings.cgroup_root, settings.kubepods_dir,
                                    settings.cgroup_driver, settings.cgroup_version)
        self.host_apps: tuple[HostApplication, ...] = with_yarn(load_host_applications(settings.host_applications_file),
                                                                settings.yarn_cgroup_dir)
        self.pods = pods if pods is not None else PodDirectory(self.node_name)
        self.nvml = nvml if nvml is not None else NVML(settings.sys_root)
        self.kidled = coldmemory.kidled_present(settings.sys_root)
        self._monotonic, self._wall_clock = monotonic, wall_clock
        self._node_cpu = NodeCPU(settings.proc_root, monotonic)
        self._cpu = RateMeter(per_second=1e9)
        self._container_cpu = RateMeter(per_second=1e9)
        self._throttling: dict[str, Throttling] = {}
        self._history = math.ceil(settings.history_s / settings.collect_interval_s) + 2
        self._window = math.ceil(settings.aggregate_duration_s / settings.collect_interval_s) + 2
        self._node_series = RingBuffer(self._history, 4)
        """Columns: node cpu, node memory, system cpu, system memory."""
        self._pod_series: dict[str, RingBuffer] = {}
        self._pod_cgroups: dict[str, PodCgroup] = {}
        self._app_series: dict[str, RingBuffer] = {}
        self._cold: dict[str, int] = {}
        self._containers_seen: dict[str, list[str]] = {}
        self.details: dict[str, PodDetails] = {}
        self.topology: Topology = read_topology(settings.sys_root, settings.proc_root)
        self._gpus = self.nvml.discover()

    # Every collect interval.

    def collect(self) -> Sample:
        started = time.perf_counter()
        now = self._monotonic()
        policy = self.settings.memory_policy
        node_cpu = self._node_cpu.sample()
        meminfo = parse_meminfo(read_text(self.settings.proc_root / "meminfo"))
        node_memory = node_usage(meminfo, policy, self._cold.get(NODE_CGROUP)) if meminfo else None

        pods: dict[str, Usage] = {}
        found = self.layout.discover_pods()
        for pod in found:
            pods[pod.uid] = self._cgroup_usage(pod.dir, now)
        apps = {app.name: self._cgroup_usage(app.cgroup_dir(self.layout), now) for app in self.host_apps}
        self._cpu.keep_only([pod.dir for pod in found] + [app.cgroup_dir(self.layout) for app in self.host_apps])
        self._track_pods({pod.uid: pod for pod in found})

        system = Usage(_remainder(node_cpu, [u.cpu for u in pods.values()] + [u.cpu for u in apps.values()]),
                       _remainder(node_memory, [u.memory for u in pods.values()] + [u.memory for u in apps.values()]))
        node = Usage(node_cpu, None if node_memory is None else float(node_memory))
        self._node_series.append(now, (node.cpu, node.memory, system.cpu, system.memory))
        for uid, usage in pods.items():
            self._pod_series[uid].append(now, (usage.cpu, usage.memory))
        for name, usage in apps.items():
            series = self._app_series.setdefault(name, RingBuffer(self._window, 2))
            series.append(now, (usage.cpu, usage.memory))
        metrics.POD_CGROUPS.set(len(found))
        metrics.COLLECT_SECONDS.set(time.perf_counter() - started)
        return Sample(now, node, system, pods, apps)

    def _cgroup_usage(self, rel: str, now: float) -> Usage:
        counter = self.layout.cpu_usage_ns(rel)
        cpu = None if counter is None else self._cpu.rate(rel, counter, now)
        stat = self.layout.memory_stat(rel)
        memory = None if stat is None else float(cgroup_usage(stat, self.settings.memory_policy, self._cold.get(rel)))
        return Usage(cpu, memory)

    def _track_pods(self, current: dict[str, PodCgroup]) -> None:
        for uid in [u for u in self._pod_cgroups if u not in current]:
            gone = self._pod_cgroups.pop(uid)
            self._pod_series.pop(uid, None)
            self.details.pop(uid, None)
            self._throttling.pop(gone.dir, None)
            self._cold.pop(gone.dir, None)
            metrics.forget_pod(uid, self._containers_seen.pop(uid, []))
        for uid, pod in current.items():
            if uid not in self._pod_series:
                self._pod_series[uid] = RingBuffer(self._window, 2)
            self._pod_cgroups[uid] = pod

    # Every report.

    def refresh(self) -> None:
        """Cold memory, containers, throttling and PSI of every pod; topology and devices."""
        now = self._monotonic()
        containers_of = {uid: self.layout.discover_containers(pod) for uid, pod in self._pod_cgroups.items()}
        if self.kidled:
            self._refresh_cold([c.dir for found in containers_of.values() for c in found])
        for uid, pod in self._pod_cgroups.items():
            containers = {container.id: self._container_usage(uid, container.dir, container.id, now)
                          for container in containers_of[uid]}
            for stale in set(self._containers_seen.get(uid, ())) - set(containers):
                metrics.forget_container(uid, stale)
            self._containers_seen[uid] = list(containers)
            ratio = self._throttled_ratio(pod.dir)
            pressure = self.layout.pressure(pod.dir)
            if ratio is not None:
                metrics.THROTTLED_RATIO.labels(uid).set(ratio)
            for resource, psi in pressure.items():
                metrics.PRESSURE.labels(uid, resource, "some").set(psi.some_avg10)
                if psi.full_avg10 is not None:
                    metrics.PRESSURE.labels(uid, resource, "full").set(psi.full_avg10)
            self.details[uid] = PodDetails(ratio, pressure, self._cold.get(pod.dir), containers)
        self._container_cpu.keep_only(c.dir for found in containers_of.values() for c in found)
        self.topology = read_topology(self.settings.sys_root, self.settings.proc_root)
        self._gpus = self.nvml.discover()

    def _container_usage(self, uid: str, rel: str, container_id: str, now: float) -> Usage:
        counter = self.layout.cpu_usage_ns(rel)
        stat = self.layout.memory_stat(rel)
        usage = Usage(None if counter is None else self._container_cpu.rate(rel, counter, now),
                      None if stat is None else float(cgroup_usage(stat, self.settings.memory_policy,
                                                                   self._cold.get(rel))))
        if usage.cpu is not None:
            metrics.CONTAINER_CPU.labels(uid, container_id).set(usage.cpu)
        if usage.memory is not None:
            metrics.CONTAINER_MEMORY.labels(uid, container_id).set(usage.memory)
        return usage

    def _refresh_cold(self, container_dirs: list[str]) -> None:
        dirs = [NODE_CGROUP, *(pod.dir for pod in self._pod_cgroups.values()), *container_dirs,
                *(app.cgroup_dir(self.layout) for app in self.host_apps)]
        self._cold = {rel: value for rel in dirs if (value := self.layout.cold_bytes(rel)) is not None}
        if NODE_CGROUP in self._cold:
            metrics.COLD_PAGE_BYTES.labels("").set(self._cold[NODE_CGROUP])
        for uid, pod in self._pod_cgroups.items():
            if pod.dir in self._cold:
                metrics.COLD_PAGE_BYTES.labels(uid).set(self._cold[pod.dir])

    def _throttled_ratio(self, rel: str) -> float | None:
        """Throttled periods / periods since the previous report (``cgroups.throttled_ratio``)."""
        current = self.layout.throttling(rel)
        previous = self._throttling.pop(rel, None)
        if current is not None:
            self._throttling[rel] = current
        return throttled_ratio(previous, current)

    # Reports.

    def node_metric(self) -> dict:
        end = self._monotonic()
        duration = self.settings.aggregate_duration_s
        node_cpu, node_memory, system_cpu, system_memory = self._node_series.mean(end, duration)
        node_windows, system_windows = [], []
        for seconds in self.settings.aggregate_windows_s:
            stats = self._node_series.aggregate(end, seconds)
            node_windows.append(Window(seconds, None if stats is None else
                                       {stat: Usage(values[0], values[1]) for stat, values in stats.items()}))
            system_windows.append(Window(seconds, None if stats is None else
                                         {stat: Usage(values[2], values[3]) for stat, values in stats.items()}))
        pods = []
        for uid, series in self._pod_series.items():
            cpu, memory = series.mean(end, duration)
            if cpu is None and memory is None:
                continue
            who = self.pods.lookup(uid, self._pod_cgroups[uid].kube_qos)
            details = self.details.get(uid)
            pods.append(PodReport(uid, who.namespace, who.name, who.priority, who.qos, Usage(cpu, memory),
                                  None if details is None else details.throttled_ratio,
                                  None if details is None else details.cold_bytes))
        apps = []
        for app in self.host_apps:
            series = self._app_series.get(app.name)
            cpu, memory = series.mean(end, duration) if series is not None else (None, None)
            if cpu is not None or memory is not None:
                apps.append(HostAppReport(app.name, app.priority, app.qos, Usage(cpu, memory)))
        return node_metric_manifest(self.node_name, self._wall_clock(), Usage(node_cpu, node_memory),
                                    Usage(system_cpu, system_memory), node_windows, system_windows, pods, apps,
                                    self._gpu_usage(), self.memory_policy(), self._cold.get(NODE_CGROUP))

    def memory_policy(self) -> str:
        """The policy the node's memory usage is measured under: the configured one, except that
        usageWithHotPageCache without the node's cold page bytes is measured as usageWithoutPageCache
        (``collectors.memory``)."""
        policy = self.settings.memory_policy
        if policy == WITH_HOT_PAGE_CACHE and NODE_CGROUP not in self._cold:
            return WITHOUT_PAGE_CACHE
        return policy

    def _gpu_usage(self) -> list[dict]:
        usage = self.nvml.usage() if self._gpus else {}
        devices = []
        for gpu in self._gpus:
            if gpu.uuid not in usage:
                continue
            used = usage[gpu.uuid]
            devices.append({"type": "gpu", "id": gpu.uuid, "minor": gpu.minor, "resources": {
                GPU_CORE: str(used.core_percent),
                GPU_MEMORY: format_quantity(GPU_MEMORY, used.memory_used),
                GPU_MEMORY_RATIO: str(100 * used.memory_used // gpu.memory_total if gpu.memory_total else 0)}})
        return devices

    def node(self) -> dict:
        s = self.settings
        capacity = node_capacity(s.sys_root, s.proc_root, s.max_pods, gpus=len(self._gpus))
        machine = platform.machine()
        labels = {"kubernetes.io/hostname": self.node_name, "kubernetes.io/os": "linux",
                  "kubernetes.io/arch": _ARCH.get(machine, machine)}
        return node_manifest(self.node_name, capacity, labels, self.topology.annotations())

    def node_resource_topology(self) -> dict | None:
        """The NUMA zones of the last refreshed topology; None when sysfs lists no NUMA node."""
        return node_resource_topology_manifest(self.node_name, self.topology.numa_zones())

    def device(self) -> dict | None:
        socket_of = self.topology.socket_of_numa_node()
        gpus = [GPUDevice(g.uuid, g.minor, g.memory_total, g.numa_node, g.pcie_root, g.bus_id,
                          socket=socket_of.get(g.numa_node, -1)) for g in self._gpus]
        rdmas = [RDMADevice(d.bus_id, d.minor, d.healthy, d.numa_node, d.pcie_root, d.virtual_functions,
                            socket=socket_of.get(d.numa_node, -1))
                 for d in rdma.discover(self.settings.sys_root)]
        return device_manifest(self.node_name, gpus, rdmas, model_label([g.model for g in self._gpus]),
                               self.nvml.driver_version)


def _remainder(total: float | int | None, parts: list[float | None]) -> float | None:
    if total is None:
        return None
    return max(float(total) - sum(p for p in parts if p is not None), 0.0)

