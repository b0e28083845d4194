"""The kubelet's cgroup driver and pod cgroup, read from the running kubelet rather than configured.

As koordlet's ``GuessCgroupDriverFromKubeletPort`` (``pkg/koordlet/util/system/cgroup_driver.go``) does:
find the kubelet process in ``/proc`` (a DaemonSet has ``hostPID``), read its command line, and where a
flag is absent read its ``--config`` file (a KubeletConfiguration, YAML or JSON) through
``/proc/<pid>/root``, so the agent sees the host's file from inside its container; a relative path is
relative to kubelet's working directory. Flags win over the file, as in kubelet. The pod cgroup is
``<cgroupRoot>/kubepods`` when ``cgroupsPerQOS`` is on (kubelet's ``defaultNodeAllocatableCgroupName``
below ``cgroupRoot``); a systemd driver with a ``cgroupRoot`` other than ``/`` is not followed.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from node_agent.collectors.cgroups import CgroupLayout
from node_agent.hostfs import read_text

KUBELET = "kubelet"
DEFAULT_KUBEPODS = "kubepods"
DRIVERS = ("cgroupfs", "systemd")


@dataclasses.dataclass(frozen=True)
class KubeletCgroups:
    pid: int
    driver: str
    """cgroupfs or systemd (kubelet's default is cgroupfs)."""
    kubepods: str
    """The pod cgroup's directory below each hierarchy root (``kubepods``, ``koordstream/kubepods``)."""


def _flags(args: list[str]) -> dict[str, str]:
    """``--name=value`` and ``--name value`` arguments as a dict (the last one wins)."""
    flags: dict[str, str] = {}
    for index, arg in enumerate(args):
        if not arg.startswith("--"):
            continue
        name, sep, value = arg[2:].partition("=")
        if not sep:
            following = args[index + 1] if index + 1 < len(args) else ""
            value = "" if following.startswith("--") else following
        flags[name] = value
    return flags


def kubelet_pids(proc_root: Path) -> list[int]:
    """Pids whose executable's base name is ``kubelet`` (``/proc/<pid>/cmdline``'s first argument)."""
    pids = []
    try:
        entries = list(os.scandir(proc_root))
    except OSError:
        return []
    for entry in entries:
        if entry.name.isdigit():
            text = read_text(proc_root / entry.name / "cmdline")
            if text and os.path.basename(text.split("\0", 1)[0]) == KUBELET:
                pids.append(int(entry.name))
    return sorted(pids)


def read_config(proc_root: Path, pid: int, path: str) -> dict:
    """The kubelet's config file seen through ``/proc/<pid>/root``; {} when unreadable or not a mapping."""
    import yaml

    if not os.path.isabs(path):
        try:
            path = os.path.join(os.readlink(proc_root / str(pid) / "cwd"), path)
        except OSError:
            return {}
    text = read_text(proc_root / str(pid) / "root" / path.lstrip("/"))
    try:
        config = yaml.safe_load(text) if text else None
    except yaml.YAMLError:
        return {}
    return config if isinstance(config, dict) else {}


def find(proc_root: Path) -> KubeletCgroups | None:
    """The first kubelet's cgroup driver and pod cgroup; None without a kubelet or with a layout not followed."""
    for pid in kubelet_pids(proc_root):
        args = (read_text(proc_root / str(pid) / "cmdline") or "").split("\0")
        flags = _flags(args[1:])
        config = read_config(proc_root, pid, flags["config"]) if flags.get("config") else {}
        driver = flags.get("cgroup-driver") or config.get("cgroupDriver") or "cgroupfs"
        root = (flags.get("cgroup-root") or config.get("cgroupRoot") or "/").strip("/")
        per_qos = flags.get("cgroups-per-qos", str(config.get("cgroupsPerQOS", True))).lower() != "false"
        if driver not in DRIVERS or not per_qos or (driver == "systemd" and root):
            return None
        return KubeletCgroups(pid, driver, f"{root}/kubepods" if root else "kubepods")
    return None


def detect_layout(proc_root: Path, cgroup_root: Path, kubepods_dir: str, driver: str, version: str) -> CgroupLayout:
    """The pod cgroup layout. Left to detection (``driver`` auto, ``kubepods_dir`` the default) and with a
    kubelet whose pod cgroup is under ``cgroup_root``: that kubelet's driver and pod cgroup. Otherwise
    :meth:`CgroupLayout.detect` from the settings, which win when given."""
    found = find(proc_root) if driver == "auto" and kubepods_dir == DEFAULT_KUBEPODS else None
    if found is not None:
        layout = CgroupLayout.detect(cgroup_root, found.kubepods, found.driver, version)
        tier = dict(layout.tiers())
        if any(layout.cpuacct_dir(rel).is_dir() for rel in tier.values()):
            return layout
    return CgroupLayout.detect(cgroup_root, kubepods_dir, driver, version)
