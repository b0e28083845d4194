"""Host paths the actuator may touch, built only from validated identifiers under configured roots.

Identifiers are checked against strict patterns before they become path parts:

- pod UID: a Kubernetes UID (RFC 4122 text, ``8-4-4-4-12`` hex) or the 32-hex
  hash the kubelet gives static pods;
- container id: 12 to 128 lowercase hex characters (docker, containerd, cri-o);
- QoS class: one of ``streams.actuation.QOS_GROUPS``;
- host-application cgroup path: 1 to 16 relative segments of
  ``[A-Za-z0-9][A-Za-z0-9_.:@-]*``, none ``.`` or ``..``.

Every path is then resolved (symlinks followed) and must still lie inside its
root, so neither ``..`` nor a symlink planted in the tree leads outside it.
Files are opened with ``O_NOFOLLOW`` and without ``O_CREAT`` (``files.py``):
a write never creates a file and never follows a final symlink.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from node_agent.collectors.cgroups import CgroupLayout
from streams.actuation import QOS_GROUPS, RESCTRL_POD_GROUP_PREFIX
from streams.koordinator.classes import KUBE_BEST_EFFORT, KUBE_GUARANTEED, QOS_BE

POD_UID = re.compile(r"^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})$")
CONTAINER_ID = re.compile(r"^[0-9a-f]{12,128}$")
SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,254}$")
MAX_SEGMENTS = 16
SYSTEMD_RUNTIMES = ("cri-containerd", "docker", "crio", "pouch")
"""Scope prefixes of a container under the systemd driver (koordlet's cgroup_driver.go)."""


class PathProblem(ValueError):
    """An identifier or path that must not reach the host."""


def pod_uid(text: str) -> str:
    if not isinstance(text, str) or not POD_UID.match(text):
        raise PathProblem(f"pod UID {text!r} is not a Kubernetes UID")
    return text


def container_id(text: str) -> str:
    if not isinstance(text, str) or not CONTAINER_ID.match(text):
        raise PathProblem(f"container id {text!r} is not 12-128 lowercase hex characters")
    return text


def qos_group(text: str) -> str:
    if text not in QOS_GROUPS:
        raise PathProblem(f"QoS class {text!r} is not one of {', '.join(QOS_GROUPS)}")
    return text


def relative_cgroup_path(text: str) -> str:
    """A host application's cgroup directory, relative to a hierarchy root."""
    if not isinstance(text, str):
        raise PathProblem(f"cgroup path {text!r} is not text")
    segments = text.split("/")
    if not 1 <= len(segments) <= MAX_SEGMENTS or not all(
            SEGMENT.match(s) and s not in (".", "..") for s in segments):
        raise PathProblem(f"cgroup path {text!r} must be 1-{MAX_SEGMENTS} relative segments of letters, digits "
                          "and _.:@- (no '..', no leading '/')")
    return text


def confined(root: Path, *parts: str) -> Path:
    """``root/parts`` when it resolves inside ``root`` (symlinks followed); PathProblem otherwise."""
    for part in parts:
        for segment in part.split("/"):
            if segment in ("", ".", "..") or "\x00" in segment:
                raise PathProblem(f"path part {part!r} is not a plain relative path")
    candidate = root.joinpath(*parts)
    real_root = os.path.realpath(root)
    real = os.path.realpath(candidate)
    if os.path.commonpath([real_root, real]) != real_root:
        raise PathProblem(f"{candidate} resolves to {real}, outside {real_root}")
    return candidate


class CgroupPaths:
    """Where a target's cgroup files are in one cgroup layout (v1 per subsystem, or v2 unified)."""

    def __init__(self, layout: CgroupLayout) -> None:
        self.layout = layout

    def hierarchy(self, subsystem: str) -> Path:
        return self.layout.root / subsystem if self.layout.v1 else self.layout.root

    def qos_dir(self, qos: str) -> str:
        """``kubepods`` (LSR, LS) or its besteffort tier (BE), as koordlet maps QoS to cgroups."""
        tiers = dict(self.layout.tiers())
        return tiers[KUBE_BEST_EFFORT] if qos_group(qos) == QOS_BE else tiers[KUBE_GUARANTEED]

    def pod_dir(self, uid: str, subsystem: str = "cpu") -> str | None:
        """The pod's directory in whichever kube-QoS tier holds it; None when the pod has no cgroup."""
        uid = pod_uid(uid)
        for kube_qos, _ in self.layout.tiers():
            rel = self.layout.pod_dir(uid, kube_qos)
            if confined(self.hierarchy(subsystem), rel).is_dir():
                return rel
        return None

    def container_dir(self, uid: str, cid: str, subsystem: str = "cpu") -> str | None:
        cid = container_id(cid)
        pod = self.pod_dir(uid, subsystem)
        if pod is None:
            return None
        names = [f"{runtime}-{cid}.scope" for runtime in SYSTEMD_RUNTIMES] if self.layout.driver == "systemd" \
            else [cid]
        for name in names:
            if confined(self.hierarchy(subsystem), pod, name).is_dir():
                return f"{pod}/{name}"
        return None

    def file(self, subsystem: str, rel: str, name: str) -> Path:
        """A cgroup file of directory ``rel``, confined to the subsystem's hierarchy."""
        return confined(self.hierarchy(subsystem), *([rel] if rel else []), name)

    def directory(self, subsystem: str, rel: str) -> Path:
        return confined(self.hierarchy(subsystem), rel) if rel else self.hierarchy(subsystem)


def resctrl_group_dir(root: Path, group: str) -> Path:
    return confined(root, qos_group(group))


def resctrl_pod_group_dir(root: Path, uid: str) -> Path:
    """A pod's own group, ``koordlet-<uid>``: the name comes only from the validated UID."""
    return confined(root, RESCTRL_POD_GROUP_PREFIX + pod_uid(uid))
