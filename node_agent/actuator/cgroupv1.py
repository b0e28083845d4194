"""Cgroup v1 backend: the canonical setting names are the v1 file names, one hierarchy per subsystem.

=====================  ==========  =========================================
setting                hierarchy   notes
=====================  ==========  =========================================
cpu.cfs_period_us      cpu         written before the quota
cpu.cfs_quota_us       cpu         ``-1`` unlimited
cpu.cfs_burst_us       cpu         before the quota when it shrinks, after when it grows
cpu.shares             cpu
cpu.idle               cpu         kernels >= 5.15; unsupported where the file is missing
cpu.bvt_warp_ns        cpu         Alibaba Cloud Linux group identity; unsupported elsewhere
cpuset.cpus            cpuset
memory.limit_in_bytes  memory      an unlimited limit reads back as 2^63 - 4096: reported as -1
=====================  ==========  =========================================

The v1 kernel also refuses a child quota above its parent's; that error
comes back in the acknowledgement and the previous values stay.

A v1 cpuset must lie within its parent's, and a parent cannot drop CPUs a
child still uses (EBUSY). A target with child cgroups (a pod's containers, the
besteffort tier's pods) therefore gets the set on its whole subtree, as
koordlet's ``writeBECgroupsCPUSet``: first the union of the old and new sets
from the target down, then the new set from the deepest cgroup up.
"""

from __future__ import annotations

import os

from node_agent.actuator import limits
from node_agent.actuator.cgroup import CgroupBackend, Desired, ordered_bandwidth
from node_agent.actuator.files import Write, read_value
from node_agent.actuator.paths import PathProblem, confined
from streams.actuation import (CPU_BURST, CPU_BVT_WARP, CPU_IDLE, CPU_PERIOD, CPU_QUOTA, CPU_SHARES, CPUSET_CPUS,
                               MEMORY_LIMIT)

SUBSYSTEMS = {CPUSET_CPUS: "cpuset", MEMORY_LIMIT: "memory"}
"""Every other setting lives in the ``cpu`` hierarchy."""
ORDER = (CPU_SHARES, CPU_IDLE, CPU_BVT_WARP, CPUSET_CPUS, MEMORY_LIMIT)
"""Settings without ordering constraints, written after the bandwidth files."""


class CgroupV1Backend(CgroupBackend):
    version = "v1"

    def subsystem(self, setting: str) -> str:
        return SUBSYSTEMS.get(setting, "cpu")

    def _path(self, rel: str, setting: str):
        return self.paths.file(self.subsystem(setting), rel, setting)

    def read_current(self, rel: str, setting: str) -> object | None:
        try:
            text = read_value(self._path(rel, setting))
        except PathProblem:
            return None
        if text is None:
            return None
        try:
            if setting == CPUSET_CPUS:
                return limits.parse_cpulist(text)
            value = int(text)
        except ValueError:
            return None
        return limits.memory_from_kernel(value) if setting == MEMORY_LIMIT else value

    def allowed_cpus(self, parent: str) -> frozenset[int] | None:
        for name in ("cpuset.effective_cpus", CPUSET_CPUS):
            try:
                text = read_value(self.paths.file("cpuset", parent, name))
                cpus = limits.parse_cpulist(text) if text is not None else None
            except (PathProblem, limits.ValueProblem):
                cpus = None
            if cpus:
                return cpus
        return None

    def writes(self, rel: str, desired: Desired) -> tuple[list[Write], dict[str, str]]:
        unsupported = {s: f"no {s} in {self.paths.directory(self.subsystem(s), rel)} on this host"
                       for s in desired if not self._path(rel, s).is_file()}
        present = {s: v for s, v in desired.items() if s not in unsupported}

        def write(setting: str) -> Write | None:
            if setting not in present:
                return None
            value = present[setting]
            path = self._path(rel, setting)
            if setting == MEMORY_LIMIT:
                return Write(path, str(value), same=lambda text, v=value: _memory_is(text, v))
            return Write(path, str(value))

        bandwidth = [w for w in (write(CPU_PERIOD), write(CPU_QUOTA)) if w is not None]
        writes = ordered_bandwidth(bandwidth, write(CPU_BURST), self.read_current(rel, CPU_BURST),
                                   present.get(CPU_BURST))
        for setting in ORDER:
            if setting == CPUSET_CPUS and setting in present:
                writes += self._cpuset_writes(rel, present[setting])
            elif (w := write(setting)) is not None:
                writes.append(w)
        return writes, unsupported

    def _cpuset_writes(self, rel: str, cpus: frozenset[int]) -> list[Write]:
        """``cpus`` on ``rel`` and every cgroup below it, in an order the v1 kernel accepts at each step."""
        below = self._cpuset_descendants(rel)
        final = _cpuset_write(self._path(rel, CPUSET_CPUS), cpus)
        if not below:
            return [final]
        loose = (self.read_current(rel, CPUSET_CPUS) or frozenset()) | cpus
        widen = [_cpuset_write(self._path(child, CPUSET_CPUS), loose) for child in [rel, *below]]
        narrow = [_cpuset_write(self._path(child, CPUSET_CPUS), cpus) for child in reversed(below)]
        return [*widen, *narrow, final]

    def _cpuset_descendants(self, rel: str) -> list[str]:
        """The cgroups below ``rel`` in the cpuset hierarchy, parents before children (symlinks not followed)."""
        hierarchy = self.paths.hierarchy("cpuset")
        top = self.paths.directory("cpuset", rel)
        found = []
        for directory, subdirs, _ in os.walk(top, followlinks=False):
            subdirs.sort()
            if directory != str(top):
                child = os.path.relpath(directory, hierarchy)
                confined(hierarchy, child)
                found.append(child)
        return found


def _cpuset_write(path, cpus: frozenset[int]) -> Write:
    return Write(path, limits.format_cpulist(cpus), same=lambda text, v=cpus: _parses_to(text, v))


def _parses_to(text: str, cpus: frozenset[int]) -> bool:
    try:
        return limits.parse_cpulist(text) == cpus
    except limits.ValueProblem:
        return False


def _memory_is(text: str, limit: int) -> bool:
    try:
        return limits.memory_from_kernel(int(text)) == limit
    except ValueError:
        return False
