"""What the two cgroup backends share: target directories, value range checks, the protected LS tier.

Targets (``streams.actuation``): ``qos`` LSR/LS -> the kubepods root, BE -> its
besteffort tier; ``pod`` -> the pod's directory in whichever kube-QoS tier
holds it; ``container`` -> the container's directory (its scope under the
systemd driver); ``hostapp`` -> the validated relative ``cgroup.path``.

Values are checked by ``limits.py`` (out of range: ``bad-value``, never
clamped). The kubepods root holds every pod, so on the LSR/LS ``qos``
targets only settings that cannot starve LS pods are accepted: quota and memory limit ``-1``, ``cpu.idle`` 0, ``cpu.bvt_warp_ns`` >= 0,
no cpuset (``protected-target`` otherwise). The version modules
(``cgroupv1.py``, ``cgroupv2.py``) say which files carry each setting.

``core_sched.group`` (pod targets) is not a file: after the files are
written, the pod's thread groups (``cgroup.procs`` of its directory and all
below, in the cpu hierarchy) are put in the group's core-scheduling cookie
(``coresched.py``); a kernel without core scheduling makes it unsupported.
"""

from __future__ import annotations

from collections.abc import Callable

import os
from pathlib import Path

from node_agent.actuator import limits
from node_agent.actuator.backend import Outcome, Plan
from node_agent.actuator.coresched import GROUP, CoreScheduling
from node_agent.actuator.files import Write, apply_writes, read_value, write_value
from node_agent.actuator.paths import CgroupPaths, PathProblem, confined
from node_agent.actuator.verify import BAD_TARGET, BAD_VALUE, PROTECTED_TARGET, TARGET_NOT_FOUND, Rejected, Target
from node_agent.collectors.cgroups import CgroupLayout
from node_agent.hostfs import read_text
from streams import actuation as contract
from streams.actuation import (CGROUP_SETTINGS, CORE_SCHED_GROUP, CPU_BURST, CPU_BVT_WARP, CPU_IDLE, CPU_PERIOD, CPU_QUOTA, CPU_SHARES,
                               CPUSET_CPUS, MEMORY_LIMIT)
from streams.koordinator.classes import QOS_LS, QOS_LSR

Desired = dict[str, object]
"""Canonical setting -> checked value (int, or a frozenset of CPUs for cpuset.cpus)."""


class CgroupBackend:
    mechanism = contract.MECHANISM_CGROUP
    version = ""

    def __init__(self, layout: CgroupLayout, writer: Callable = write_value,
                 core_sched: CoreScheduling | None = None) -> None:
        self.layout = layout
        self.paths = CgroupPaths(layout)
        self.writer = writer
        self.core_sched = core_sched or CoreScheduling()

    # Version specifics.

    def subsystem(self, setting: str) -> str:
        raise NotImplementedError

    def read_current(self, rel: str, setting: str) -> object | None:
        """The value in force in canonical units, None when the file is missing or unreadable."""
        raise NotImplementedError

    def allowed_cpus(self, parent: str) -> frozenset[int] | None:
        """The CPUs a child of ``parent`` may use; None when unknown."""
        raise NotImplementedError

    def writes(self, rel: str, desired: Desired) -> tuple[list[Write], dict[str, str]]:
        """(ordered writes, unsupported settings) turning ``desired`` into files."""
        raise NotImplementedError

    def format_current(self, setting: str, value: object) -> str:
        return limits.format_cpulist(value) if setting == CPUSET_CPUS else str(value)

    # Shared.

    def target_dir(self, target: Target) -> str:
        try:
            if target.kind == contract.TARGET_QOS:
                rel = self.paths.qos_dir(target.qos)
            elif target.kind == contract.TARGET_POD:
                rel = self.paths.pod_dir(target.pod_uid)
            elif target.kind == contract.TARGET_CONTAINER:
                rel = self.paths.container_dir(target.pod_uid, target.container_id)
            else:
                rel = target.cgroup_path
            if rel is None or not self.paths.directory("cpu", rel).is_dir():
                raise Rejected(TARGET_NOT_FOUND, f"no cgroup for {target.kind} {target.id} under {self.layout.root}")
            return rel
        except PathProblem as err:
            raise Rejected(BAD_TARGET, str(err)) from None

    def plan(self, target: Target, values: dict[str, str]) -> Plan:
        rel = self.target_dir(target)
        group = values.get(CORE_SCHED_GROUP)
        if group is not None and not GROUP.match(group):
            raise Rejected(BAD_VALUE, f"{CORE_SCHED_GROUP}={group!r} is not a label value or a pod UID")
        desired = self.normalize(rel, values, target.kind)
        if target.kind == contract.TARGET_QOS and target.qos in (QOS_LSR, QOS_LS):
            protect_ls(target, desired)
        writes, unsupported = self.writes(rel, desired)
        actions = [f"write {w.value!r} to {w.path}" for w in writes if not w.satisfied_by(read_value(w.path))]
        if group is not None:
            why = self.core_sched.unsupported()
            if why is not None:
                unsupported[CORE_SCHED_GROUP] = why
                group = None
            else:
                actions.append(f"core-scheduling group {group!r} for the tasks of {rel}")
        requested = tuple(s for s in CGROUP_SETTINGS if s in desired and s not in unsupported)
        requested += (CORE_SCHED_GROUP,) if group is not None else ()
        return Plan(target, requested, actions, unsupported, payload=(rel, writes, group))

    def execute(self, plan: Plan) -> Outcome:
        rel, writes, group = plan.payload
        error = apply_writes(writes, self.writer).error
        if error is None and group is not None:
            error = self.core_sched.apply(group, self.processes(rel))
        return Outcome(error)

    def read_back(self, plan: Plan) -> dict[str, str]:
        rel, _, group = plan.payload
        result = {}
        for setting in plan.requested:
            if setting == CORE_SCHED_GROUP:
                value = self.core_sched.read(self.processes(rel), group)
                if value is not None:
                    result[setting] = value
                continue
            value = self.read_current(rel, setting)
            if value is not None:
                result[setting] = self.format_current(setting, value)
        return result

    def processes(self, rel: str) -> list[int]:
        """Thread-group ids in ``rel`` and every cgroup below it (cpu hierarchy), in tree order."""
        top = self.paths.directory("cpu", rel)
        hierarchy = self.paths.hierarchy("cpu")
        found: list[int] = []
        for directory, _, _ in os.walk(top, followlinks=False):
            confined(hierarchy, os.path.relpath(directory, hierarchy))
            for line in (read_text(Path(directory) / "cgroup.procs") or "").split():
                if line.isdigit() and int(line) not in found:
                    found.append(int(line))
        return found

    def normalize(self, rel: str, values: dict[str, str], kind: str = contract.TARGET_QOS) -> Desired:
        """The checked values for a target of ``kind``; Rejected(bad-value) for text that is not a value of its
        setting or is out of range."""
        try:
            return self._normalize(rel, values, kind)
        except limits.ValueProblem as err:
            raise Rejected(BAD_VALUE, str(err)) from None

    def _normalize(self, rel: str, values: dict[str, str], kind: str) -> Desired:
        ints = {name: limits.parse_int(name, text) for name, text in values.items()
                if name in CGROUP_SETTINGS and name != CPUSET_CPUS}
        desired: Desired = {}
        period = ints.get(CPU_PERIOD)
        if period is not None:
            desired[CPU_PERIOD] = period = limits.check_period(period)
        else:
            period = self.read_current(rel, CPU_PERIOD) or limits.DEFAULT_CFS_PERIOD_US
        if CPU_QUOTA in ints:
            desired[CPU_QUOTA] = limits.check_quota(ints[CPU_QUOTA], period)
        if CPU_BURST in ints:
            quota = desired.get(CPU_QUOTA, self.read_current(rel, CPU_QUOTA))
            desired[CPU_BURST] = limits.check_burst(ints[CPU_BURST], limits.UNLIMITED if quota is None else quota)
        if CPU_SHARES in ints:
            desired[CPU_SHARES] = limits.check_shares(ints[CPU_SHARES])
        if CPU_IDLE in ints:
            desired[CPU_IDLE] = limits.within(CPU_IDLE, ints[CPU_IDLE], 0, 1)
        if CPU_BVT_WARP in ints:
            desired[CPU_BVT_WARP] = limits.check_bvt(ints[CPU_BVT_WARP])
        if MEMORY_LIMIT in ints:
            desired[MEMORY_LIMIT] = limits.check_memory(ints[MEMORY_LIMIT])
        if CPUSET_CPUS in values:
            allowed = self.allowed_cpus(rel.rpartition("/")[0])
            minimum = limits.POD_MIN_CPUSET_CPUS if kind == contract.TARGET_POD else limits.BE_MIN_CPUSET_CPUS
            desired[CPUSET_CPUS] = limits.check_cpuset(limits.parse_cpulist(values[CPUSET_CPUS]), allowed, minimum)
        return desired


def protect_ls(target: Target, desired: Desired) -> None:
    """Refuse what could starve the LS/LSR pods under the kubepods root."""
    problems = []
    if desired.get(CPU_QUOTA, limits.UNLIMITED) != limits.UNLIMITED:
        problems.append(f"{CPU_QUOTA} must stay -1")
    if desired.get(MEMORY_LIMIT, limits.UNLIMITED) != limits.UNLIMITED:
        problems.append(f"{MEMORY_LIMIT} must stay -1")
    if desired.get(CPU_IDLE, 0) != 0:
        problems.append(f"{CPU_IDLE} must stay 0")
    if desired.get(CPU_BVT_WARP, 0) < 0:
        problems.append(f"{CPU_BVT_WARP} must not be negative")
    if CPUSET_CPUS in desired:
        problems.append(f"{CPUSET_CPUS} is the kubelet's")
    if problems:
        raise Rejected(PROTECTED_TARGET, f"qos {target.qos} is the kubepods root of every pod: " + "; ".join(problems))


def ordered_bandwidth(bandwidth: list[Write], burst: Write | None, current_burst: object | None,
                      new_burst: int | None) -> list[Write]:
    """Quota (and period) and burst in an order the kernel accepts: it refuses burst > quota at every step,
    so a shrinking burst goes first and a growing one last."""
    if burst is None:
        return bandwidth
    if isinstance(current_burst, int) and new_burst is not None and new_burst < current_burst:
        return [burst, *bandwidth]
    return [*bandwidth, burst]
