"""Per-pod and per-container usage from the kubelet's cgroup tree (v1 and v2, cgroupfs and systemd).

Layout (``pkg/koordlet/util/system/cgroup_driver.go``), for kubepods dir ``K``:

=========  =================================  =====================================================
QoS tier   cgroupfs                           systemd
=========  =================================  =====================================================
Guaranteed ``K/pod<uid>``                     ``K.slice/K-pod<uid_>.slice``
Burstable  ``K/burstable/pod<uid>``           ``K.slice/K-burstable.slice/K-burstable-pod<uid_>.slice``
BestEffort ``K/besteffort/pod<uid>``          ``K.slice/K-besteffort.slice/K-besteffort-pod<uid_>.slice``
container  ``<pod dir>/<id>``                 ``<pod dir>/{docker,cri-containerd,crio,pouch}-<id>.scope``
=========  =================================  =====================================================

(``<uid_>``: the UID with ``-`` written ``_``.) Pods are found by listing the
tier directories, so a pod is reported by its UID as soon as its cgroup exists.

Files: v1 reads ``cpuacct/<dir>/cpuacct.usage`` (ns), ``memory/<dir>/memory.stat``,
``cpu/<dir>/cpu.stat`` (nr_periods, nr_throttled, throttled_time ns) and PSI
from ``cpuacct/<dir>/{cpu,memory,io}.pressure`` (kernels booted with psi_v1);
v2 reads ``<dir>/cpu.stat`` (usage_usec, nr_periods, nr_throttled,
throttled_usec), ``memory.stat`` and ``{cpu,memory,io}.pressure``. kidled's
``memory.idle_page_stats`` sits beside memory.stat. Every file may be missing
or garbage; that value is then None.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from node_agent.collectors import coldmemory
from node_agent.collectors.memory import MemoryStat, parse_memory_stat
from node_agent.hostfs import exists, list_dirs, parse_key_values, read_int, read_text
from streams.koordinator.classes import KUBE_BEST_EFFORT, KUBE_BURSTABLE, KUBE_GUARANTEED

PRESSURE_RESOURCES = ("cpu", "memory", "io")
_UID = r"[0-9a-fA-F]{1,16}(?:[-_][0-9a-fA-F]{1,16}){0,7}|[0-9A-Za-z]{1,64}"
_CGROUPFS_POD = re.compile(rf"^pod({_UID})$")
_CONTAINER_ID = re.compile(r"^[0-9a-f]{12,128}$")
_SCOPE = re.compile(r"^(docker|cri-containerd|crio|pouch)-([0-9a-f]{12,128})\.scope$")


@dataclasses.dataclass(frozen=True, slots=True)
class ContainerCgroup:
    id: str
    """Container id as the runtime names it (64 hex characters for docker/containerd)."""
    dir: str
    """Path relative to the hierarchy root."""


@dataclasses.dataclass(frozen=True, slots=True)
class PodCgroup:
    uid: str
    kube_qos: str
    """Guaranteed, Burstable or BestEffort: the tier the kubelet placed the pod in."""
    dir: str


@dataclasses.dataclass(frozen=True, slots=True)
class Throttling:
    periods: int
    throttled_periods: int
    throttled_ns: int


def throttled_ratio(previous: Throttling | None, current: Throttling | None) -> float | None:
    """Throttled periods / periods between two ``cpu.stat`` readings, as koordlet's pod-throttled collector
    (``podthrottled``) computes ``ContainerThrottledRatio``: None without both readings or without a period
    in between (a counter that went back, e.g. a recreated cgroup, reads as None too)."""
    if previous is None or current is None:
        return None
    periods = current.periods - previous.periods
    throttled = current.throttled_periods - previous.throttled_periods
    if periods <= 0 or throttled < 0:
        return None
    return min(throttled / periods, 1.0)


@dataclasses.dataclass(frozen=True, slots=True)
class Pressure:
    """One PSI file: ``some``/``full`` avg10/avg60/avg300 (percent) and total (microseconds)."""

    some_avg10: float
    some_avg60: float
    some_total_us: int
    full_avg10: float | None
    full_avg60: float | None
    full_total_us: int | None


@dataclasses.dataclass(frozen=True)
class CgroupLayout:
    root: Path
    version: str
    """"v1" or "v2"."""
    driver: str
    """"cgroupfs" or "systemd"."""
    kubepods: str
    """Base name of the pod cgroup, without ``.slice``."""

    @classmethod
    def detect(cls, root: Path, kubepods_dir: str = "kubepods", driver: str = "auto",
               version: str = "auto") -> "CgroupLayout":
        """The layout of ``root``: v2 when it holds cgroup.controllers; systemd when the slice exists."""
        base = kubepods_dir.removesuffix(".slice")
        if version == "auto":
            version = "v2" if exists(root / "cgroup.controllers") else "v1"
        if driver == "auto":
            probe = root if version == "v2" else root / "cpuacct"
            driver = "systemd" if exists(probe / f"{base}.slice") and not exists(probe / base) else "cgroupfs"
        return cls(root=root, version=version, driver=driver, kubepods=base)

    @property
    def v1(self) -> bool:
        return self.version == "v1"

    def _dir(self, subsystem: str, rel: str) -> Path:
        return self.root / subsystem / rel if self.v1 else self.root / rel

    def cpuacct_dir(self, rel: str) -> Path:
        return self._dir("cpuacct", rel)

    def cpu_dir(self, rel: str) -> Path:
        return self._dir("cpu", rel)

    def memory_dir(self, rel: str) -> Path:
        return self._dir("memory", rel)

    def tiers(self) -> tuple[tuple[str, str], ...]:
        """(Kubernetes QoS, directory) of the three tiers, relative to a hierarchy root."""
        k = self.kubepods
        if self.driver == "systemd":
            return ((KUBE_GUARANTEED, f"{k}.slice"), (KUBE_BURSTABLE, f"{k}.slice/{k}-burstable.slice"),
                    (KUBE_BEST_EFFORT, f"{k}.slice/{k}-besteffort.slice"))
        return ((KUBE_GUARANTEED, k), (KUBE_BURSTABLE, f"{k}/burstable"), (KUBE_BEST_EFFORT, f"{k}/besteffort"))

    def pod_uid(self, name: str, kube_qos: str) -> str | None:
        """The UID in a pod directory name of tier ``kube_qos``; None for any other name."""
        if self.driver == "systemd":
            tier = {KUBE_GUARANTEED: "", KUBE_BURSTABLE: "-burstable", KUBE_BEST_EFFORT: "-besteffort"}[kube_qos]
            prefix, suffix = f"{self.kubepods}{tier}-pod", ".slice"
            if not (name.startswith(prefix) and name.endswith(suffix)):
                return None
            uid = name[len(prefix):-len(suffix)]
            return uid.replace("_", "-") if re.fullmatch(_UID, uid) else None
        match = _CGROUPFS_POD.match(name)
        return match.group(1) if match else None

    def pod_dir(self, uid: str, kube_qos: str) -> str:
        """The directory of pod ``uid`` in tier ``kube_qos`` (the inverse of ``pod_uid``)."""
        tier = dict(self.tiers())[kube_qos]
        if self.driver == "systemd":
            infix = {KUBE_GUARANTEED: "", KUBE_BURSTABLE: "-burstable", KUBE_BEST_EFFORT: "-besteffort"}[kube_qos]
            return f"{tier}/{self.kubepods}{infix}-pod{uid.replace('-', '_')}.slice"
        return f"{tier}/pod{uid}"

    def container_id(self, name: str) -> str | None:
        if self.driver == "systemd":
            match = _SCOPE.match(name)
            return match.group(2) if match else None
        return name if _CONTAINER_ID.match(name) else None

    def discover_pods(self) -> list[PodCgroup]:
        """Every pod cgroup, found in the hierarchy that carries CPU accounting."""
        pods = []
        for kube_qos, tier in self.tiers():
            for name in list_dirs(self.cpuacct_dir(tier)):
                uid = self.pod_uid(name, kube_qos)
                if uid is not None:
                    pods.append(PodCgroup(uid=uid, kube_qos=kube_qos, dir=f"{tier}/{name}"))
        return pods

    def discover_containers(self, pod: PodCgroup) -> list[ContainerCgroup]:
        return [ContainerCgroup(id=cid, dir=f"{pod.dir}/{name}")
                for name in list_dirs(self.cpuacct_dir(pod.dir)) if (cid := self.container_id(name)) is not None]

    # Readers: one value each, None when the file is missing or garbage.

    def cpu_usage_ns(self, rel: str) -> int | None:
        if self.v1:
            value = read_int(self.cpuacct_dir(rel) / "cpuacct.usage")
        else:
            usec = parse_key_values(read_text(self.root / rel / "cpu.stat")).get("usage_usec")
            value = None if usec is None else usec * 1000
        return value if value is not None and value >= 0 else None

    def memory_stat(self, rel: str) -> MemoryStat | None:
        return parse_memory_stat(parse_key_values(read_text(self.memory_dir(rel) / "memory.stat")), v1=self.v1)

    def throttling(self, rel: str) -> Throttling | None:
        stat = parse_key_values(read_text(self.cpu_dir(rel) / "cpu.stat"))
        throttled_ns = stat.get("throttled_time") if self.v1 else (
            None if "throttled_usec" not in stat else stat["throttled_usec"] * 1000)
        periods, throttled = stat.get("nr_periods"), stat.get("nr_throttled")
        if periods is None or throttled is None or throttled_ns is None or min(periods, throttled, throttled_ns) < 0:
            return None
        return Throttling(periods, throttled, throttled_ns)

    def pressure(self, rel: str) -> dict[str, Pressure]:
        """PSI per resource (cpu, memory, io) where the kernel provides it."""
        result = {}
        for resource in PRESSURE_RESOURCES:
            parsed = parse_pressure(read_text(self.cpuacct_dir(rel) / f"{resource}.pressure"))
            if parsed is not None:
                result[resource] = parsed
        return result

    def cold_bytes(self, rel: str) -> int | None:
        return coldmemory.cold_bytes(read_text(self.memory_dir(rel) / coldmemory.FILE_NAME))


def parse_pressure(text: str | None) -> Pressure | None:
    """A PSI file (``some avg10=0.12 avg60=0.00 avg300=0.00 total=123``); None without a valid ``some`` line."""
    lines: dict[str, dict[str, str]] = {}
    for line in (text or "").splitlines():
        kind, _, rest = line.partition(" ")
        lines[kind] = dict(part.split("=", 1) for part in rest.split() if "=" in part)
    try:
        some = lines["some"]
        some_values = (float(some["avg10"]), float(some["avg60"]), int(some["total"]))
    except (KeyError, ValueError):
        return None
    full = lines.get("full", {})
    try:
        full_values = (float(full["avg10"]), float(full["avg60"]), int(full["total"]))
    except (KeyError, ValueError):
        full_values = (None, None, None)
    return Pressure(*some_values, *full_values)
