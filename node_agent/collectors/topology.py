"""CPU topology from sysfs and the CPU basic info CPU normalization needs.

Per online CPU (``/sys/devices/system/cpu/online``):
``cpuN/topology/physical_package_id`` (socket), ``core_id`` and
``thread_siblings_list`` (SMT siblings); its NUMA node is the
``/sys/devices/system/node/nodeK`` whose ``cpulist`` holds it (node 0 when the
kernel has no NUMA directory). Core ids repeat across sockets, so cores are
numbered in (socket, core_id) order as ``lscpu``'s CORE column does. Each
NUMA node's memory is the ``MemTotal`` of its ``nodeK/meminfo``
(``Node K MemTotal: N kB``).

CPU basic info, as koordlet reports it in the ``node.koordinator.sh/cpu-basic-info``
annotation (``pkg/koordlet/util/cpuinfo.go``, ``apis/extension/cpu_normalization.go``):

- cpuModel: first "model name" of /proc/cpuinfo; vendorID: first "vendor_id";
- hyperThreadEnabled: ``cpu/smt/active`` is 1 (without the file: a CPU has
  more than one thread sibling);
- turboEnabled: ``cpu/intel_pstate/no_turbo`` is 0; koordlet reads only
  Intel's file, this also reads ``cpu/cpufreq/boost`` (AMD, acpi-cpufreq) when
  intel_pstate is absent;
- catL3CbmMask: ``/sys/fs/resctrl/info/L3/cbm_mask`` when resctrl is mounted.

The JSON keeps Go's ``omitempty``: false and empty fields are left out.

The kubelet's CPU manager policy, which koordlet reports in the
``kubelet.koordinator.sh/cpu-manager-policy`` annotation (``{"policy": "static"}``) and which decides
whether a Guaranteed pod without a QoS label is LSR (``static``) or LS: the ``policyName`` of the kubelet's
checkpoint ``<kubelet root>/cpu_manager_state`` (koordlet asks the kubelet's ``/configz``; the checkpoint
names the same policy and needs no kubelet credentials). Without a readable checkpoint the annotation is left
out and readers take kubelet's default, ``none``.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from node_agent.collectors.memory import parse_meminfo
from node_agent.hostfs import list_dirs, parse_cpu_list, read_int, read_text
from streams.koordinator.annotations import (
    ANNOTATION_CPU_BASIC_INFO, ANNOTATION_CPU_TOPOLOGY, ANNOTATION_KUBELET_CPU_MANAGER_POLICY)

_NODE_DIR = re.compile(r"^node(\d+)$")
CPU_MANAGER_STATE = "cpu_manager_state"


@dataclasses.dataclass(frozen=True, slots=True)
class LogicalCPU:
    id: int
    core: int
    """Machine-wide core index ((socket, core_id) order)."""
    socket: int
    node: int
    siblings: tuple[int, ...]
    """SMT siblings, itself included."""


@dataclasses.dataclass(frozen=True)
class Topology:
    cpus: tuple[LogicalCPU, ...]
    model_name: str = ""
    vendor_id: str = ""
    hyper_threading: bool = False
    turbo: bool = False
    cat_l3_cbm_mask: str = ""
    numa_memory: tuple[tuple[int, int], ...] = ()
    """(NUMA node id, MemTotal bytes) of each NUMA node sysfs lists, by id; empty without a NUMA directory."""
    cpu_manager_policy: str = ""
    """The kubelet's CPU manager policy (``policyName`` of its checkpoint); "" when unknown."""

    @property
    def sockets(self) -> int:
        return len({c.socket for c in self.cpus})

    @property
    def numa_nodes(self) -> int:
        return len({c.node for c in self.cpus})

    @property
    def cores(self) -> int:
        return len({c.core for c in self.cpus})

    def cpu_basic_info(self) -> dict:
        """Koordinator's CPUBasicInfo as Go's encoding/json writes it (omitempty)."""
        info = {"cpuModel": self.model_name, "hyperThreadEnabled": self.hyper_threading,
                "turboEnabled": self.turbo, "catL3CbmMask": self.cat_l3_cbm_mask, "vendorID": self.vendor_id}
        return {key: value for key, value in info.items() if value}

    def cpu_topology(self) -> dict:
        """Koordinator's CPUTopology: ``{"detail": [{id, core, socket, node}]}`` by CPU id."""
        return {"detail": [{"id": c.id, "core": c.core, "socket": c.socket, "node": c.node} for c in self.cpus]}

    def numa_zones(self) -> list[tuple[int, int, int]]:
        """(NUMA node id, online CPUs, MemTotal bytes) per NUMA node, by id; empty without NUMA nodes in sysfs."""
        if not self.numa_memory:
            return []
        cpus: dict[int, int] = {}
        for cpu in self.cpus:
            cpus[cpu.node] = cpus.get(cpu.node, 0) + 1
        memory = dict(self.numa_memory)
        return [(node, cpus.get(node, 0), memory.get(node, 0)) for node in sorted(set(memory) | set(cpus))]

    def socket_of_numa_node(self) -> dict[int, int]:
        """NUMA node id -> the socket of its CPUs (the Device topology's socketID)."""
        return {cpu.node: cpu.socket for cpu in sorted(self.cpus, key=lambda c: c.id)}

    def annotations(self) -> dict[str, str]:
        annotations = {ANNOTATION_CPU_BASIC_INFO: json.dumps(self.cpu_basic_info(), separators=(",", ":")),
                       ANNOTATION_CPU_TOPOLOGY: json.dumps(self.cpu_topology(), separators=(",", ":"))}
        if self.cpu_manager_policy:
            annotations[ANNOTATION_KUBELET_CPU_MANAGER_POLICY] = json.dumps({"policy": self.cpu_manager_policy},
                                                                             separators=(",", ":"))
        return annotations


def online_cpus(sys_root: Path) -> tuple[int, ...] | None:
    return parse_cpu_list(read_text(sys_root / "devices/system/cpu/online")) or None


def numa_of_cpus(sys_root: Path) -> dict[int, int]:
    """CPU id -> NUMA node id, from ``devices/system/node/node*/cpulist``."""
    owner: dict[int, int] = {}
    base = sys_root / "devices/system/node"
    for name in list_dirs(base):
        match = _NODE_DIR.match(name)
        if match:
            for cpu in parse_cpu_list(read_text(base / name / "cpulist")) or ():
                owner.setdefault(cpu, int(match.group(1)))
    return owner


def numa_memory(sys_root: Path) -> tuple[tuple[int, int], ...]:
    """(NUMA node id, MemTotal bytes) from ``devices/system/node/node*/meminfo``; 0 when unreadable."""
    base = sys_root / "devices/system/node"
    found = []
    for name in list_dirs(base):
        match = _NODE_DIR.match(name)
        if match:
            info = parse_meminfo(read_text(base / name / "meminfo"))
            found.append((int(match.group(1)), info.total if info is not None else 0))
    return tuple(sorted(found))


def cpu_manager_policy(kubelet_root: Path) -> str:
    """``policyName`` of ``<kubelet_root>/cpu_manager_state``; "" when it is missing or does not parse."""
    try:
        state = json.loads(read_text(kubelet_root / CPU_MANAGER_STATE) or "{}")
    except ValueError:
        return ""
    policy = state.get("policyName") if isinstance(state, dict) else None
    return policy if isinstance(policy, str) else ""


def read_topology(sys_root: Path, proc_root: Path, kubelet_root: Path | None = None) -> Topology:
    """The host's topology; missing files give socket/core = CPU id order and node 0, never an error.
    ``kubelet_root`` (default: ``var/lib/kubelet`` beside ``sys_root``, ``/var/lib/kubelet`` for ``/sys``)
    holds the kubelet's CPU manager checkpoint."""
    cpu_dir = sys_root / "devices/system/cpu"
    online = online_cpus(sys_root) or ()
    nodes = numa_of_cpus(sys_root)
    raw = []
    for cpu in online:
        topo = cpu_dir / f"cpu{cpu}" / "topology"
        socket = read_int(topo / "physical_package_id")
        core_id = read_int(topo / "core_id")
        siblings = parse_cpu_list(read_text(topo / "thread_siblings_list")) or (cpu,)
        raw.append((cpu, socket if socket is not None and socket >= 0 else 0,
                    core_id if core_id is not None and core_id >= 0 else cpu, siblings))
    core_index = {key: index for index, key in enumerate(sorted({(s, c) for _, s, c, _ in raw}))}
    cpus = tuple(LogicalCPU(id=cpu, core=core_index[(socket, core)], socket=socket, node=nodes.get(cpu, 0),
                            siblings=siblings) for cpu, socket, core, siblings in raw)
    cpuinfo = _cpuinfo_fields(read_text(proc_root / "cpuinfo"))
    return Topology(
        cpus=cpus,
        model_name=cpuinfo.get("model name", cpuinfo.get("Model Name", "")),
        vendor_id=cpuinfo.get("vendor_id", ""),
        hyper_threading=_hyper_threading(sys_root, cpus),
        turbo=_turbo(sys_root),
        cat_l3_cbm_mask=(read_text(sys_root / "fs/resctrl/info/L3/cbm_mask") or "").strip(),
        numa_memory=numa_memory(sys_root),
        cpu_manager_policy=cpu_manager_policy(kubelet_root or sys_root.parent / "var/lib/kubelet"),
    )


def _cpuinfo_fields(text: str | None) -> dict[str, str]:
    """First value of each ``key : value`` line of /proc/cpuinfo."""
    fields: dict[str, str] = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    return fields


def _hyper_threading(sys_root: Path, cpus: tuple[LogicalCPU, ...]) -> bool:
    active = read_int(sys_root / "devices/system/cpu/smt/active")
    if active is not None:
        return active == 1
    return any(len(c.siblings) > 1 for c in cpus)


def _turbo(sys_root: Path) -> bool:
    no_turbo = read_int(sys_root / "devices/system/cpu/intel_pstate/no_turbo")
    if no_turbo is not None:
        return no_turbo == 0
    return read_int(sys_root / "devices/system/cpu/cpufreq/boost") == 1
