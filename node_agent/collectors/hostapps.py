"""Host applications: non-pod cgroups whose usage is reported apart and kept out of system usage.

The config file holds Koordinator's NodeSLO ``spec.hostApplications`` list (a
YAML or JSON list, or a mapping with that key)::

    - name: nginx
      priority: koord-prod
      qos: LS
      cgroupPath: {base: CgroupRoot, parentDir: host-latency-sensitive, relativePath: nginx}

Cgroup directory (``pkg/koordlet/util/host_application.go``): without
``cgroupPath``, ``host-latency-sensitive/<name>`` for LSE/LSR/LS,
``host-best-effort/<name>`` for BE, ``<name>`` otherwise; with it,
``<base>/<parentDir>/<relativePath>`` where base is the root (CgroupRoot), or the
kubepods, burstable or besteffort tier (Kubepods, KubepodsBurstable,
KubepodsBesteffort). Names and paths are validated: no absolute paths, no ``..``.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import yaml

from node_agent.collectors.cgroups import CgroupLayout
from streams.koordinator.classes import (
    KUBE_BEST_EFFORT, KUBE_BURSTABLE, KUBE_GUARANTEED, QOS_BE, QOS_LS, QOS_LSE, QOS_LSR)

LS_DIR, BE_DIR = "host-latency-sensitive", "host-best-effort"
BASES = {"": None, "CgroupRoot": None, "Kubepods": KUBE_GUARANTEED, "KubepodsBurstable": KUBE_BURSTABLE,
         "KubepodsBesteffort": KUBE_BEST_EFFORT}


class HostApplicationError(ValueError):
    """The host-application config is invalid; the message names the entry."""


@dataclasses.dataclass(frozen=True, slots=True)
class HostApplication:
    name: str
    priority: str | None
    qos: str | None
    base: str
    parent_dir: str
    relative_path: str
    explicit_path: bool

    def cgroup_dir(self, layout: CgroupLayout) -> str:
        """The application's cgroup directory relative to a hierarchy root."""
        if not self.explicit_path:
            prefix = LS_DIR if self.qos in (QOS_LSE, QOS_LSR, QOS_LS) else BE_DIR if self.qos == QOS_BE else ""
            return "/".join(p for p in (prefix, self.name) if p)
        tier = BASES[self.base]
        base = dict(layout.tiers())[tier] if tier else ""
        return "/".join(p for p in (base, self.parent_dir, self.relative_path) if p)


def _safe_path(value: object, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or value.startswith("/") or ".." in value.split("/") or "\x00" in value:
        raise HostApplicationError(f"{where}: must be a relative path without '..', got {value!r}")
    return value.strip("/")


def parse_host_applications(doc: object) -> tuple[HostApplication, ...]:
    """Host applications from a parsed config document; HostApplicationError names a bad entry."""
    if isinstance(doc, dict):
        doc = doc.get("hostApplications", [])
    if doc is None:
        return ()
    if not isinstance(doc, list):
        raise HostApplicationError("hostApplications must be a list")
    apps, names = [], set()
    for index, entry in enumerate(doc):
        where = f"hostApplications[{index}]"
        if not isinstance(entry, dict):
            raise HostApplicationError(f"{where}: must be a mapping")
        name = entry.get("name")
        if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
            raise HostApplicationError(f"{where}.name: must be a non-empty name without '/', got {name!r}")
        if name in names:
            raise HostApplicationError(f"{where}.name: {name!r} is duplicated")
        names.add(name)
        path = entry.get("cgroupPath")
        if path is not None and not isinstance(path, dict):
            raise HostApplicationError(f"{where}.cgroupPath: must be a mapping")
        path = path or {}
        base = path.get("base") or ""
        if base not in BASES:
            raise HostApplicationError(f"{where}.cgroupPath.base: must be one of {', '.join(b for b in BASES if b)}")
        apps.append(HostApplication(
            name=name, priority=entry.get("priority") or None, qos=entry.get("qos") or None, base=base,
            parent_dir=_safe_path(path.get("parentDir"), f"{where}.cgroupPath.parentDir"),
            relative_path=_safe_path(path.get("relativePath"), f"{where}.cgroupPath.relativePath"),
            explicit_path=bool(path)))
    return tuple(apps)


def load_host_applications(path: Path | None) -> tuple[HostApplication, ...]:
    if path is None:
        return ()
    try:
        text = path.read_text()
    except OSError as err:
        raise HostApplicationError(f"{path}: cannot read: {err.strerror}") from None
    try:
        doc = json.loads(text) if text.lstrip().startswith(("{", "[")) else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as err:
        raise HostApplicationError(f"{path}: not YAML or JSON: {err}") from None
    return parse_host_applications(doc)
