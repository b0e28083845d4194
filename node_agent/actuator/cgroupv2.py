"""Cgroup v2 backend: the v1-named settings written to their unified counterparts.

========================================  ==================  ===========================================
setting (canonical, v1 name)              v2 file             conversion
========================================  ==================  ===========================================
cpu.cfs_quota_us + cpu.cfs_period_us      cpu.max             ``"<quota|max> <period>"``, one write; a
                                                              missing half keeps the value in force
cpu.shares                                cpu.weight          ``1 + (shares - 2) * 9999 // 262142``;
                                                              read back ``2 + (weight - 1) * 262142 // 9999``
cpu.cfs_burst_us                          cpu.max.burst       microseconds, as v1
cpu.idle                                  cpu.idle
cpu.bvt_warp_ns                           cpu.bvt_warp_ns     unsupported where the file is missing
cpuset.cpus                               cpuset.cpus         needs the cpuset controller in the subtree
memory.limit_in_bytes                     memory.max          ``-1`` is ``max``
========================================  ==================  ===========================================

A file is missing when its controller is not enabled for the cgroup
(``cgroup.subtree_control`` of the parent); the setting is then reported
unsupported, as on a kernel without it. Shares read back through the weight
are approximate (1024 -> weight 39 -> 998): the acknowledgement says what
the kernel holds.
"""

from __future__ import annotations

from node_agent.actuator import limits
from node_agent.actuator.cgroup import CgroupBackend, Desired, ordered_bandwidth
from node_agent.actuator.files import Write, read_value
from node_agent.actuator.paths import PathProblem
from streams.actuation import (CPU_BURST, CPU_BVT_WARP, CPU_IDLE, CPU_PERIOD, CPU_QUOTA, CPU_SHARES, CPUSET_CPUS,
                               MEMORY_LIMIT)

FILES = {CPU_QUOTA: "cpu.max", CPU_PERIOD: "cpu.max", CPU_SHARES: "cpu.weight", CPU_BURST: "cpu.max.burst",
         CPU_IDLE: "cpu.idle", CPU_BVT_WARP: "cpu.bvt_warp_ns", CPUSET_CPUS: "cpuset.cpus",
         MEMORY_LIMIT: "memory.max"}
ORDER = (CPU_SHARES, CPU_IDLE, CPU_BVT_WARP, CPUSET_CPUS, MEMORY_LIMIT)
MAX = "max"


def parse_cpu_max(text: str) -> tuple[int, int] | None:
    """(quota, period) of a cpu.max text, quota -1 for ``max``."""
    parts = text.split()
    try:
        quota = limits.UNLIMITED if parts[0] == MAX else int(parts[0])
        period = int(parts[1]) if len(parts) > 1 else limits.DEFAULT_CFS_PERIOD_US
    except (IndexError, ValueError):
        return None
    return quota, period


def format_cpu_max(quota: int, period: int) -> str:
    return f"{MAX if quota < 0 else quota} {period}"


class CgroupV2Backend(CgroupBackend):
    version = "v2"

    def subsystem(self, setting: str) -> str:
        return ""

    def _path(self, rel: str, setting: str):
        return self.paths.file("", rel, FILES[setting])

    def read_current(self, rel: str, setting: str) -> object | None:
        try:
            text = read_value(self._path(rel, setting))
        except PathProblem:
            return None
        if text is None:
            return None
        if setting in (CPU_QUOTA, CPU_PERIOD):
            parsed = parse_cpu_max(text)
            return None if parsed is None else parsed[0 if setting == CPU_QUOTA else 1]
        try:
            if setting == CPUSET_CPUS:
                return limits.parse_cpulist(text)
            if setting == MEMORY_LIMIT:
                return limits.UNLIMITED if text == MAX else limits.memory_from_kernel(int(text))
            if setting == CPU_SHARES:
                return limits.weight_to_shares(int(text))
            return int(text)
        except ValueError:
            return None

    def allowed_cpus(self, parent: str) -> frozenset[int] | None:
        try:
            text = read_value(self.paths.file("", parent, "cpuset.cpus.effective"))
            return (limits.parse_cpulist(text) or None) if text is not None else None
        except (PathProblem, limits.ValueProblem):
            return None

    def writes(self, rel: str, desired: Desired) -> tuple[list[Write], dict[str, str]]:
        unsupported = {s: f"no {FILES[s]} in {self.paths.directory('', rel)} (controller not enabled or "
                          "not in this kernel)" for s in desired if not self._path(rel, s).is_file()}
        present = {s: v for s, v in desired.items() if s not in unsupported}
        bandwidth = []
        if CPU_QUOTA in present or CPU_PERIOD in present:
            quota = present.get(CPU_QUOTA, self.read_current(rel, CPU_QUOTA))
            period = present.get(CPU_PERIOD, self.read_current(rel, CPU_PERIOD)) or limits.DEFAULT_CFS_PERIOD_US
            quota = limits.UNLIMITED if quota is None else quota
            bandwidth.append(Write(self._path(rel, CPU_QUOTA), format_cpu_max(quota, period),
                                   same=lambda text, q=quota, p=period: parse_cpu_max(text) == (q, p)))
        burst = Write(self._path(rel, CPU_BURST), str(present[CPU_BURST])) if CPU_BURST in present else None
        writes = ordered_bandwidth(bandwidth, burst, self.read_current(rel, CPU_BURST), present.get(CPU_BURST))
        for setting in ORDER:
            if setting not in present:
                continue
            value, path = present[setting], self._path(rel, setting)
            if setting == CPU_SHARES:
                weight = limits.shares_to_weight(value)
                writes.append(Write(path, str(weight)))
            elif setting == CPUSET_CPUS:
                writes.append(Write(path, limits.format_cpulist(value),
                                    same=lambda text, v=value: _parses_to(text, v)))
            elif setting == MEMORY_LIMIT:
                writes.append(Write(path, MAX if value < 0 else str(value),
                                    same=lambda text, v=value: text == (MAX if v < 0 else str(v))))
            else:
                writes.append(Write(path, str(value)))
        return writes, unsupported


def _parses_to(text: str, cpus: frozenset[int]) -> bool:
    try:
        return limits.parse_cpulist(text) == cpus
    except limits.ValueProblem:
        return False
