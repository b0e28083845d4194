"""Resctrl backend: LLC ways (CAT) and memory bandwidth (MBA) per QoS group, as koordlet's resctrl reconcile.

Group ``<resctrl root>/<LSR|LS|BE>`` for a ``qos`` target, ``<resctrl root>/koordlet-<pod uid>`` for a
``pod`` target (koordlet's resctrl hook; its ``tasks.pods`` may only name that pod), created when missing.
``group.remove = 1`` (alone) on a pod target removes the pod's group, as koordlet's hook does when the pod's
sandbox goes: ``rmdir`` (the kernel moves its tasks back to the default group and frees its CLOSID); an
absent group is already removed. The planner asks for it once its pod left the node, so the kernel's
limited CLOSIDs are not used up by pods that ended; this backend collects nothing on its own. Its ``schemata``
gets, for the resources the actuation names::

    L3:<id>=<mask>;<id>=<mask>       for every L3 cache id of the root schemata
    MB:<id>=<value>;...              for every MB domain

CAT mask (``CalculateCatL3MaskValue``): the host's ``info/L3/cbm_mask`` must be
all ones; ``ways = bitlen(cbm)``, ``startWay = ceil(ways x start / 100)``,
``endWay = ceil(ways x end / 100)``, ``mask = (1 << endWay) - (1 << startWay)``
(lowercase hex). Both percents must be within 0..100 and ``end`` must exceed ``start`` (else refused).

MBA: a percent below ``info/MB/min_bandwidth`` (at least 1) or above 100 is
refused. Intel writes it rounded **up** to ``info/MB/bandwidth_gran`` (koordlet:
to a multiple of 10; the kernel rounds the same way); AMD
(``AuthenticAMD``) writes ``2048`` (unlimited) for 100 % and
``trunc(160 x percent / 100)`` otherwise.

``tasks.pods``: the threads of every listed pod's cgroups (the pod directory
and all below it; v1 ``tasks``, v2 ``cgroup.threads``) are written one by one
to the group's ``tasks``; a thread that exited meanwhile is skipped. Moving a
thread is not undone on a later failure (a thread belongs to exactly one
group, and koordlet does not undo either).

Read back: the percents asked for when their mask is the group's mask (of its
first cache id), else the smallest percents giving that mask; the MB value as a percent, and the listed pods whose threads
are all in the group; ``group.remove`` as ``1`` once the group is gone, else ``0``.
"""

from __future__ import annotations

import dataclasses
import errno
import math
import os
from collections.abc import Callable
from pathlib import Path

from node_agent.actuator import limits
from node_agent.actuator.backend import Outcome, Plan
from node_agent.actuator.files import Write, apply_writes, describe, read_value, write_value
from node_agent.actuator.paths import (CgroupPaths, PathProblem, confined, pod_uid, resctrl_group_dir,
                                      resctrl_pod_group_dir)
from node_agent.actuator.verify import BAD_TARGET, BAD_VALUE, Rejected, Target
from node_agent.collectors.cgroups import CgroupLayout
from node_agent.hostfs import read_text
from streams import actuation as contract
from streams.actuation import GROUP_REMOVE, L3_END, L3_START, MB_PERCENT, POD_RESCTRL_SETTINGS, TASKS_PODS

AMD_MB_UNLIMITED = 2048
AMD_MB_MAX = 160
"""25 x 8 x 0.8 Gbps: koordlet's AMD scale for 100 % minus the unlimited marker."""


class MaskProblem(ValueError):
    pass


def l3_mask(cbm: int, start: int, end: int) -> int:
    """koordlet's CalculateCatL3MaskValue."""
    if cbm <= 0 or (cbm + 1) & cbm:
        raise MaskProblem(f"cbm_mask {cbm:x} is not all ones")
    if start < 0 or end > 100 or end <= start:
        raise MaskProblem(f"L3 percents {start}-{end} are not 0 <= start < end <= 100")
    ways = cbm.bit_length()
    start_way, end_way = math.ceil(ways * start / 100), math.ceil(ways * end / 100)
    if end_way <= start_way:
        raise MaskProblem(f"L3 percents {start}-{end} select no way of {ways}")
    return (1 << end_way) - (1 << start_way)


def mask_percents(mask: int, ways: int) -> tuple[int, int] | None:
    """The smallest (start, end) percents whose ``l3_mask`` is ``mask``; None for a non-contiguous mask."""
    if mask <= 0 or ways <= 0:
        return None
    start_way = (mask & -mask).bit_length() - 1
    end_way = mask.bit_length()
    if mask != (1 << end_way) - (1 << start_way):
        return None

    def smallest(way: int) -> int:
        return 0 if way == 0 else (way - 1) * 100 // ways + 1
    return smallest(start_way), smallest(end_way)


@dataclasses.dataclass(frozen=True)
class ResctrlInfo:
    cbm: int | None
    l3_ids: tuple[int, ...]
    mb_ids: tuple[int, ...]
    min_bandwidth: int
    bandwidth_gran: int
    amd: bool

    def mb_value(self, percent: int) -> int:
        if self.amd:
            return AMD_MB_UNLIMITED if percent >= 100 else AMD_MB_MAX * percent // 100
        gran = max(self.bandwidth_gran, 1)
        return min(math.ceil(percent / gran) * gran, 100)

    def mb_percent(self, value: int) -> int:
        if self.amd:
            return 100 if value >= AMD_MB_UNLIMITED else math.ceil(value * 100 / AMD_MB_MAX)
        return value


def parse_schemata(text: str | None) -> dict[str, dict[int, str]]:
    """``{"L3": {0: "7ff", 1: "7ff"}, "MB": {...}}`` of a schemata file."""
    result: dict[str, dict[int, str]] = {}
    for line in (text or "").splitlines():
        resource, sep, domains = line.strip().partition(":")
        if not sep:
            continue
        entries = {}
        for domain in domains.split(";"):
            ident, sep, value = domain.strip().partition("=")
            if sep and ident.strip().isdigit():
                entries[int(ident)] = value.strip()
        result[resource.strip()] = entries
    return result


class ResctrlBackend:
    mechanism = contract.MECHANISM_RESCTRL

    def __init__(self, root: Path, layout: CgroupLayout, proc_root: Path = Path("/proc"),
                 writer: Callable[[Path, str], None] = write_value,
                 mkdir: Callable[[Path], None] = lambda path: os.mkdir(path, 0o755),
                 rmdir: Callable[[Path], None] = os.rmdir) -> None:
        """``mkdir`` creates a group (the kernel fills it with ``schemata`` and ``tasks``), ``rmdir`` removes
        one; tests pass fakes."""
        self.root, self.layout, self.proc_root = root, layout, proc_root
        self.cgroups = CgroupPaths(layout)
        self.writer, self.mkdir, self.rmdir = writer, mkdir, rmdir

    def info(self) -> ResctrlInfo | None:
        if not (self.root / "info").is_dir():
            return None
        cbm_text = read_value(self.root / "info/L3/cbm_mask")
        root = parse_schemata(read_text(self.root / "schemata"))

        def number(path: str, default: int) -> int:
            text = read_value(self.root / path)
            return int(text) if text is not None and text.isdigit() else default
        cpuinfo = read_text(self.proc_root / "cpuinfo") or ""
        return ResctrlInfo(cbm=int(cbm_text, 16) if cbm_text else None, l3_ids=tuple(sorted(root.get("L3", {}))),
                           mb_ids=tuple(sorted(root.get("MB", {}))),
                           min_bandwidth=number("info/MB/min_bandwidth", 10),
                           bandwidth_gran=number("info/MB/bandwidth_gran", 10), amd="AuthenticAMD" in cpuinfo)

    def plan(self, target: Target, values: dict[str, str]) -> Plan:
        info = self.info()
        asked = tuple(s for s in POD_RESCTRL_SETTINGS if s in values)
        if info is None:
            return Plan(target, (), unsupported={s: f"resctrl is not mounted at {self.root}" for s in asked})
        try:
            if target.kind == contract.TARGET_POD:
                group = resctrl_pod_group_dir(self.root, target.pod_uid)
            else:
                group = resctrl_group_dir(self.root, target.qos)
        except PathProblem as err:
            raise Rejected(BAD_TARGET, str(err)) from None
        if GROUP_REMOVE in values:
            return self._plan_removal(target, group, values)
        current = parse_schemata(read_text(group / "schemata")) if group.is_dir() else {}
        unsupported: dict[str, str] = {}
        l3_asked = None
        lines: list[str] = []
        wanted: dict[str, dict[int, str]] = {}
        try:
            if L3_START in values or L3_END in values:
                if info.cbm is None or not info.l3_ids:
                    unsupported.update({s: "no L3 CAT on this host (info/L3 or L3 schemata missing)"
                                        for s in (L3_START, L3_END) if s in values})
                else:
                    start, end = self._l3_percents(values, current, info)
                    l3_asked = (start, end)
                    mask = f"{l3_mask(info.cbm, start, end):x}"
                    wanted["L3"] = {i: mask for i in info.l3_ids}
            if MB_PERCENT in values:
                if not info.mb_ids:
                    unsupported[MB_PERCENT] = "no MBA on this host (MB schemata missing)"
                else:
                    percent = limits.check_percent(MB_PERCENT, limits.parse_int(MB_PERCENT, values[MB_PERCENT]),
                                                   low=max(info.min_bandwidth, 1))
                    wanted["MB"] = {i: str(info.mb_value(percent)) for i in info.mb_ids}
            pods = self._pods(values)
            if target.kind == contract.TARGET_POD and pods and pods != (target.pod_uid,):
                raise limits.ValueProblem(f"{TASKS_PODS} of pod {target.pod_uid}'s group may only name that pod")
        except (limits.ValueProblem, MaskProblem) as err:
            raise Rejected(BAD_VALUE, str(err)) from None
        for resource, domains in wanted.items():
            lines.append(f"{resource}:" + ";".join(f"{i}={v}" for i, v in sorted(domains.items())))
        create = not group.is_dir()
        schemata = None
        actions = [f"mkdir {group}"] if create and (lines or pods is not None) else []
        if lines:
            schemata = Write(group / "schemata", "\n".join(lines) + "\n",
                             same=lambda text, w=wanted: all(_same_domains(parse_schemata(text).get(r, {}), d)
                                                             for r, d in w.items()))
            if create or not schemata.satisfied_by(read_text(group / "schemata")):
                actions.append(f"write {schemata.value!r} to {group / 'schemata'}")
        threads, missing = self._threads(pods or ())
        in_group = self._group_tasks(group)
        moves = sorted(set().union(*threads.values()) - in_group) if threads else []
        if moves:
            actions.append(f"write {len(moves)} thread ids of pods {', '.join(sorted(threads))} to {group / 'tasks'}")
        requested = tuple(s for s in asked if s not in unsupported)
        return Plan(target, requested, actions, unsupported,
                    payload=dict(group=group, create=create, schemata=schemata, moves=moves, missing=missing,
                                 pods=pods or (), info=info, l3_asked=l3_asked))

    @staticmethod
    def _plan_removal(target: Target, group: Path, values: dict[str, str]) -> Plan:
        if values[GROUP_REMOVE] != "1" or len(values) != 1:
            raise Rejected(BAD_VALUE, f"{GROUP_REMOVE} must be 1 and come alone, got {sorted(values.items())}")
        actions = [f"rmdir {group}"] if group.is_dir() else []
        return Plan(target, (GROUP_REMOVE,), actions, payload=dict(group=group, remove=True))

    def _l3_percents(self, values: dict[str, str], current: dict[str, dict[int, str]],
                     info: ResctrlInfo) -> tuple[int, int]:
        start = values.get(L3_START)
        end = values.get(L3_END)
        known = None
        if start is None or end is None:
            first = next(iter(current.get("L3", {}).values()), None)
            known = mask_percents(int(first, 16), info.cbm.bit_length()) if first else None
        start_value = limits.check_percent(L3_START, limits.parse_int(L3_START, start)) if start is not None else \
            (known[0] if known else 0)
        end_value = limits.check_percent(L3_END, limits.parse_int(L3_END, end)) if end is not None else \
            (known[1] if known else 100)
        return start_value, end_value

    @staticmethod
    def _pods(values: dict[str, str]) -> tuple[str, ...] | None:
        if TASKS_PODS not in values:
            return None
        try:
            return tuple(pod_uid(u.strip()) for u in values[TASKS_PODS].split(",") if u.strip())
        except PathProblem as err:
            raise limits.ValueProblem(str(err)) from None

    def _threads(self, pods: tuple[str, ...]) -> tuple[dict[str, set[int]], list[str]]:
        """Thread ids per pod (all its cgroups), and the pods with no cgroup."""
        threads: dict[str, set[int]] = {}
        missing = []
        name = "tasks" if self.layout.v1 else "cgroup.threads"
        for uid in pods:
            rel = self.cgroups.pod_dir(uid)
            if rel is None:
                missing.append(uid)
                continue
            top = self.cgroups.directory("cpu", rel)
            found: set[int] = set()
            for directory, _, _ in os.walk(top, followlinks=False):
                confined(self.cgroups.hierarchy("cpu"), os.path.relpath(directory, self.cgroups.hierarchy("cpu")))
                found |= _ids(read_text(Path(directory) / name))
            threads[uid] = found
        return threads, missing

    @staticmethod
    def _group_tasks(group: Path) -> set[int]:
        return _ids(read_text(group / "tasks")) if group.is_dir() else set()

    def execute(self, plan: Plan) -> Outcome:
        if plan.payload is None:
            return Outcome()
        work = plan.payload
        group: Path = work["group"]
        if work.get("remove"):
            try:
                if group.is_dir():
                    self.rmdir(group)
            except FileNotFoundError:
                pass
            except OSError as err:
                return Outcome(f"removing resctrl group {group}: {describe(err)}")
            return Outcome()
        created = False
        if work["create"] and (work["schemata"] is not None or work["moves"]):
            try:
                self.mkdir(group)
                created = True
            except OSError as err:
                return Outcome(f"creating resctrl group {group}: {describe(err)}")
        if work["schemata"] is not None:
            result = apply_writes([work["schemata"]], self.writer)
            if result.error is not None:
                if created:
                    try:
                        self.rmdir(group)
                    except OSError as err:
                        result.error += f"; removing the new group failed: {describe(err)}"
                return Outcome(result.error)
        problems = []
        for tid in work["moves"]:
            try:
                self.writer(group / "tasks", str(tid))
            except OSError as err:
                if err.errno != errno.ESRCH:
                    problems.append(f"moving thread {tid} to {group}: {describe(err)}")
        if work["missing"]:
            problems.append(f"pods without a cgroup on this node: {', '.join(work['missing'])}")
        return Outcome("; ".join(problems) or None)

    def read_back(self, plan: Plan) -> dict[str, str]:
        if plan.payload is None:
            return {}
        work = plan.payload
        group: Path = work["group"]
        if work.get("remove"):
            return {GROUP_REMOVE: "0" if group.is_dir() else "1"}
        info: ResctrlInfo = work["info"]
        schemata = parse_schemata(read_text(group / "schemata"))
        result = {}
        l3 = next(iter(schemata.get("L3", {}).values()), None)
        if l3 and info.cbm and (L3_START in plan.requested or L3_END in plan.requested):
            percents = mask_percents(int(l3, 16), info.cbm.bit_length())
            asked = work["l3_asked"]
            if asked is not None and int(l3, 16) == l3_mask(info.cbm, *asked):
                percents = asked
            if percents is not None:
                result[L3_START], result[L3_END] = str(percents[0]), str(percents[1])
        mb = next(iter(schemata.get("MB", {}).values()), None)
        if mb and mb.isdigit() and MB_PERCENT in plan.requested:
            result[MB_PERCENT] = str(info.mb_percent(int(mb)))
        if TASKS_PODS in plan.requested:
            threads, _ = self._threads(work["pods"])
            in_group = self._group_tasks(group)
            result[TASKS_PODS] = ",".join(uid for uid in work["pods"]
                                          if uid in threads and threads[uid] and threads[uid] <= in_group)
        return result


def _same_domains(current: dict[int, str], wanted: dict[int, str]) -> bool:
    try:
        return all(int(current[i], 16) == int(v, 16) for i, v in wanted.items())
    except (KeyError, ValueError):
        return False


def _ids(text: str | None) -> set[int]:
    return {int(line) for line in (text or "").split() if line.isdigit()}

