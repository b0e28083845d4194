"""Fake host trees for the actuator: cgroup v1 and v2 (with the files the kernel would show) and resctrl.

``CgroupTree`` makes the kube QoS tiers and any pod or container directory
with the default values a fresh kernel cgroup holds. ``snapshot`` records
every file under a directory (path -> bytes) so a test can show nothing was
written. ``actuation`` builds a valid Actuation record for the fake node.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import pytest

from node_agent.actuator.actuator import Actuator
from node_agent.actuator.cgroupv1 import CgroupV1Backend
from node_agent.actuator.cgroupv2 import CgroupV2Backend
from node_agent.actuator.resctrl import ResctrlBackend
from node_agent.actuator.sequences import SequenceStore
from node_agent.actuator.verify import Verifier
from node_agent.collectors.cgroups import CgroupLayout

NODE = "fake-node"
POD_UID = "aaaaaaaa-0000-0000-0000-000000000001"
CONTAINER_ID = "0123456789abcdef" * 4
V1_UNLIMITED_MEMORY = "9223372036854771712"

V1_FILES = {
    "cpu": {"cpu.cfs_quota_us": "-1", "cpu.cfs_period_us": "100000", "cpu.shares": "1024", "cpu.cfs_burst_us": "0",
            "cpu.idle": "0", "tasks": "", "cgroup.procs": ""},
    "cpuacct": {"cpuacct.usage": "0"},
    "cpuset": {"cpuset.cpus": "0-3", "cpuset.effective_cpus": "0-3"},
    "memory": {"memory.limit_in_bytes": V1_UNLIMITED_MEMORY},
}
V2_FILES = {"cpu.max": "max 100000", "cpu.weight": "100", "cpu.max.burst": "0", "cpu.idle": "0",
            "cpuset.cpus": "", "cpuset.cpus.effective": "0-3", "memory.max": "max", "cgroup.threads": "",
            "cgroup.procs": ""}


@dataclasses.dataclass
class CgroupTree:
    root: Path
    version: str = "v1"
    driver: str = "cgroupfs"

    def __post_init__(self) -> None:
        if self.version == "v2":
            self.root.mkdir(parents=True, exist_ok=True)
            (self.root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
        self.layout = CgroupLayout.detect(self.root, "kubepods", self.driver, self.version)
        self.mkdir("")
        for _, tier in self.layout.tiers():
            self.mkdir(tier)

    def mkdir(self, rel: str) -> None:
        """A cgroup directory with a fresh cgroup's files in every hierarchy."""
        if self.version == "v2":
            directory = self.root / rel
            directory.mkdir(parents=True, exist_ok=True)
            for name, text in V2_FILES.items():
                (directory / name).write_text(text + "\n")
            return
        for subsystem, files in V1_FILES.items():
            directory = self.root / subsystem / rel
            directory.mkdir(parents=True, exist_ok=True)
            for name, text in files.items():
                (directory / name).write_text(text + "\n")

    def pod(self, uid: str = POD_UID, kube_qos: str = "BestEffort") -> str:
        rel = self.layout.pod_dir(uid, kube_qos)
        self.mkdir(rel)
        return rel

    def container(self, pod_rel: str, cid: str = CONTAINER_ID) -> str:
        rel = f"{pod_rel}/cri-containerd-{cid}.scope" if self.driver == "systemd" else f"{pod_rel}/{cid}"
        self.mkdir(rel)
        return rel

    def path(self, subsystem: str, rel: str, name: str) -> Path:
        return self.root / rel / name if self.version == "v2" else self.root / subsystem / rel / name

    def read(self, subsystem: str, rel: str, name: str) -> str:
        return self.path(subsystem, rel, name).read_text().strip()

    def backend(self, **kwargs):
        return (CgroupV1Backend if self.version == "v1" else CgroupV2Backend)(self.layout, **kwargs)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file and directory under ``root`` with its content (directories map to b"<dir>")."""
    result = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs:
            result[os.path.join(directory, name)] = b"<dir>"
        for name in files:
            path = os.path.join(directory, name)
            result[path] = b"<link>" + os.readlink(path).encode() if os.path.islink(path) else Path(path).read_bytes()
    return result


def actuation(values: dict[str, str], *, kind: str = "qos", target: str = "BE", mechanism: str = "cgroup",
              sequence: int = 1, node: str = NODE, decision: str = "d-1", timestamp: int = 1_700_000_000_000) -> dict:
    return {"decisionId": decision, "nodeName": node, "sequence": sequence, "targetKind": kind, "targetId": target,
            "mechanism": mechanism, "values": values, "signature": None,
            "causation": {"inboxTopic": "koord.inbox.node", "inboxPartition": 0, "inboxOffset": 7,
                          "sourceTopic": "koord.nodemetrics", "sourcePartition": 0, "sourceOffset": 3},
            "timestamp": timestamp}


def make_actuator(tree: CgroupTree, *, key: bytes | None = None, state_dir: Path | None = None, resctrl=None,
                  tc=None, dry_run: bool = False, out=None) -> Actuator:
    backends = {"cgroup": tree.backend()}
    if resctrl is not None:
        backends["resctrl"] = resctrl
    if tc is not None:
        backends["tc"] = tc
    return Actuator(NODE, backends, Verifier(NODE, key, SequenceStore(state_dir, persist=not dry_run)), dry_run=dry_run,
                    clock=lambda: 1_700_000_000.5, **({"out": out} if out else {}))


@pytest.fixture(params=[("v1", "cgroupfs"), ("v1", "systemd"), ("v2", "cgroupfs"), ("v2", "systemd")],
                ids=lambda p: f"{p[0]}-{p[1]}")
def any_tree(request, tmp_path) -> CgroupTree:
    return CgroupTree(tmp_path / "cgroup", *request.param)


@pytest.fixture
def v1_tree(tmp_path) -> CgroupTree:
    return CgroupTree(tmp_path / "cgroup", "v1")


@pytest.fixture
def v2_tree(tmp_path) -> CgroupTree:
    return CgroupTree(tmp_path / "cgroup", "v2")


def intel_proc(tmp_path: Path) -> Path:
    """A /proc whose cpuinfo names an Intel CPU (koordlet reads the vendor for the MBA form)."""
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cpuinfo").write_text("processor\t: 0\nvendor_id\t: GenuineIntel\n")
    return proc


@dataclasses.dataclass
class ResctrlTree:
    """/sys/fs/resctrl of a 2-socket Intel host: 11 L3 ways (cbm 7ff), MBA in steps of 10 from 10 %."""

    root: Path
    cbm_mask: str = "7ff"
    cache_ids: tuple[int, ...] = (0, 1)

    def __post_init__(self) -> None:
        (self.root / "info/L3").mkdir(parents=True)
        (self.root / "info/MB").mkdir(parents=True)
        (self.root / "info/L3/cbm_mask").write_text(self.cbm_mask + "\n")
        (self.root / "info/MB/min_bandwidth").write_text("10\n")
        (self.root / "info/MB/bandwidth_gran").write_text("10\n")
        (self.root / "schemata").write_text(self.default_schemata())
        (self.root / "tasks").write_text("")

    def default_schemata(self) -> str:
        l3 = ";".join(f"{i}={self.cbm_mask}" for i in self.cache_ids)
        mb = ";".join(f"{i}=100" for i in self.cache_ids)
        return f"    MB:{mb}\n    L3:{l3}\n"

    def mkdir(self, path: Path) -> None:
        """What the kernel does on mkdir in resctrl: a group with the default schemata and no tasks."""
        path.mkdir()
        (path / "schemata").write_text(self.default_schemata())
        (path / "tasks").write_text("")

    def writer(self, path: Path, value: str) -> None:
        """The kernel's tasks file appends one id per write; other files are replaced."""
        if path.name == "tasks":
            with open(path, "a") as file:
                file.write(value.strip() + "\n")
        else:
            from node_agent.actuator.files import write_value
            write_value(path, value)

    def backend(self, tree: CgroupTree, proc_root: Path) -> ResctrlBackend:
        return ResctrlBackend(self.root, tree.layout, proc_root, writer=self.writer, mkdir=self.mkdir,
                              rmdir=shutil.rmtree)
