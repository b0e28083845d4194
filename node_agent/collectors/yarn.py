"""YARN containers on the node: the NodeManager's cgroup hierarchy under the BE tier.

yarn-copilot's agent (``cmd/yarn-copilot-agent/options``) places the NodeManager's cgroup hierarchy
(``yarn.nodemanager.linux-container-executor.cgroups.hierarchy``) at ``kubepods/besteffort/hadoop-yarn``,
one directory per container named by its ContainerId (``container_[e<epoch>_]<cluster ts>_<app>_<attempt>_<n>``).
Here the hierarchy is ``<BE tier>/<yarn_cgroup_dir>`` of the kubelet layout the agent follows, so a cgroup
root other than ``kubepods`` moves it along.

The hierarchy is reported as koordlet reports a cgroup under the BE tier that is not a pod: a host
application (``HostApplicationSpec``) named ``hadoop-yarn``, QoS BE, priority koord-batch, cgroup base
``KubepodsBesteffort``. Its usage goes to the NodeMetric's ``hostApplicationMetric`` and is taken out of
system usage; CPU suppress counts it as BE (koordlet's ``NonBEHostAppFilter``) when the node's
host-application config names it with that QoS and base. Being below the BE tier, the containers are held
by the BE tier's CPU quota and cpuset like BE pods.
"""

from __future__ import annotations

import dataclasses
import re

from node_agent.collectors.cgroups import CgroupLayout
from node_agent.collectors.hostapps import HostApplication
from node_agent.hostfs import list_dirs, read_text
from streams.koordinator.classes import KUBE_BEST_EFFORT, PRIORITY_BATCH, QOS_BE

HOST_APPLICATION = "hadoop-yarn"
"""The host-application name of the hierarchy (yarn-copilot's ``YARNAllocationName`` too)."""
DEFAULT_CGROUP_DIR = "hadoop-yarn"
"""yarn-copilot's ``DefaultYarnContainerCgroupPath`` below ``kubepods/besteffort``."""
CONTAINER_ID = re.compile(r"^container_(?:e(\d+)_)?(\d+)_(\d+)_(\d+)_(\d+)$")
"""YARN's ContainerId string: optional epoch, cluster timestamp, application, attempt, container number."""
AM_CONTAINER_NUMBER = 1
"""The ApplicationMaster runs in its attempt's first container."""


@dataclasses.dataclass(frozen=True, order=True)
class YarnContainer:
    """A YARN container cgroup; ordered by submission (cluster timestamp, application, attempt, number)."""

    order: tuple[int, int, int, int, int]
    """(cluster timestamp, application, attempt, container number, epoch)."""
    id: str
    dir: str
    """Relative to a hierarchy root, like a pod's directory."""

    @property
    def is_application_master(self) -> bool:
        return self.order[3] == AM_CONTAINER_NUMBER


def parse_container_id(name: str) -> tuple[int, int, int, int, int] | None:
    """The submission order of a ContainerId string; None for any other name."""
    match = CONTAINER_ID.match(name)
    if match is None:
        return None
    epoch, cluster, app, attempt, number = match.groups()
    return int(cluster), int(app), int(attempt), int(number), int(epoch or 0)


def validate_cgroup_dir(value: str) -> str:
    """A relative directory of safe segments (``--yarn-cgroup-dir``); ValueError naming the flag otherwise."""
    parts = value.strip("/").split("/")
    if value.startswith("/") or not all(re.fullmatch(r"[A-Za-z0-9_.-]+", p) and p not in (".", "..") for p in parts):
        raise ValueError(f"yarn_cgroup_dir must be a relative path of plain names below the BE tier, got {value!r}")
    return "/".join(parts)


def hierarchy_dir(layout: CgroupLayout, cgroup_dir: str) -> str:
    """The NodeManager's hierarchy relative to a hierarchy root: ``<BE tier>/<cgroup_dir>``."""
    return f"{dict(layout.tiers())[KUBE_BEST_EFFORT]}/{cgroup_dir}"


def host_application(cgroup_dir: str) -> HostApplication:
    """The hierarchy as a BE host application (koordlet's ``HostApplicationSpec``)."""
    return HostApplication(name=HOST_APPLICATION, priority=PRIORITY_BATCH, qos=QOS_BE, base="KubepodsBesteffort",
                           parent_dir="", relative_path=cgroup_dir, explicit_path=True)


def discover(layout: CgroupLayout, cgroup_dir: str) -> list[YarnContainer]:
    """The container cgroups of the hierarchy (found in the CPU accounting hierarchy), oldest first."""
    parent = hierarchy_dir(layout, cgroup_dir)
    found = []
    for name in list_dirs(layout.cpuacct_dir(parent)):
        order = parse_container_id(name)
        if order is not None:
            found.append(YarnContainer(order, name, f"{parent}/{name}"))
    return sorted(found)


def container_pids(layout: CgroupLayout, container: YarnContainer) -> list[int]:
    """The processes of a container's cgroup (``cgroup.procs`` of the cpu hierarchy, as yarn-copilot reads)."""
    return _ids(read_text(layout.cpu_dir(container.dir) / "cgroup.procs"))


def container_threads(layout: CgroupLayout, container: YarnContainer) -> list[int]:
    """The threads of a container's cgroup (v1 ``tasks``, v2 ``cgroup.threads``), for resctrl."""
    return _ids(read_text(layout.cpu_dir(container.dir) / ("tasks" if layout.v1 else "cgroup.threads")))


def _ids(text: str | None) -> list[int]:
    return [int(line) for line in (text or "").split() if line.isdigit()]


def with_yarn(apps: tuple[HostApplication, ...], cgroup_dir: str) -> tuple[HostApplication, ...]:
    """The configured host applications plus the YARN hierarchy, unless disabled (empty ``cgroup_dir``) or
    a configured one is already named ``hadoop-yarn`` (the operator's entry wins)."""
    if not cgroup_dir or any(app.name == HOST_APPLICATION for app in apps):
        return apps
    return (*apps, host_application(cgroup_dir))
