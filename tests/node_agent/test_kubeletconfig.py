"""The running kubelet's cgroup driver and pod cgroup, read from a /proc laid out like the host's."""

from __future__ import annotations

from pathlib import Path

import pytest

from node_agent.kubeletconfig import KubeletCgroups, detect_layout, find


def fake_kubelet(proc: Path, pid: int, args: list[str], files: dict[str, str] | None = None, cwd: str = "/") -> None:
    folder = proc / str(pid)
    folder.mkdir(parents=True)
    (folder / "cmdline").write_bytes(b"\0".join(a.encode() for a in args) + b"\0")
    for path, text in (files or {}).items():
        target = folder / "root" / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    (folder / "cwd").symlink_to(cwd)


@pytest.mark.parametrize("args, files, cwd, expected", [
    (["/usr/bin/kubelet", "--config=/var/lib/kubelet/config.yaml"],
     {"/var/lib/kubelet/config.yaml": "kind: KubeletConfiguration\ncgroupDriver: systemd\n"}, "/",
     ("systemd", "kubepods")),
    (["kubelet", "--config", "config.json"],
     {"/run/k/config.json": '{"cgroupDriver": "cgroupfs", "cgroupRoot": "/koordstream"}'}, "/run/k",
     ("cgroupfs", "koordstream/kubepods")),
    (["/opt/kubelet", "--config=/c.yaml", "--cgroup-driver=cgroupfs", "--cgroup-root", "/a/b"],
     {"/c.yaml": "cgroupDriver: systemd\n"}, "/", ("cgroupfs", "a/b/kubepods")),
    (["kubelet"], {}, "/", ("cgroupfs", "kubepods")),
], ids=["config-file-systemd", "relative-config-with-root", "flags-win-over-the-file", "defaults"])
def test_the_kubelets_flags_and_config_file_give_driver_and_pod_cgroup(tmp_path, args, files, cwd, expected):
    fake_kubelet(tmp_path, 4242, args, files, cwd)
    (tmp_path / "1").mkdir()
    (tmp_path / "1" / "cmdline").write_bytes(b"/sbin/init\0")
    assert find(tmp_path) == KubeletCgroups(4242, *expected)


@pytest.mark.parametrize("args, files", [
    (["kubelet", "--cgroups-per-qos=false"], {}),
    (["kubelet", "--config=/c.yaml"], {"/c.yaml": "cgroupDriver: systemd\ncgroupRoot: /custom.slice\n"}),
    (["kubelet", "--cgroup-driver=docker"], {}),
], ids=["no-qos-cgroups", "systemd-with-a-root", "unknown-driver"])
def test_a_layout_not_followed_is_none(tmp_path, args, files):
    fake_kubelet(tmp_path, 7, args, files)
    assert find(tmp_path) is None


def test_no_kubelet_and_garbage_config_fall_back_to_the_settings(tmp_path):
    proc, cgroup = tmp_path / "proc", tmp_path / "cgroup"
    (cgroup / "cpuacct" / "kubepods").mkdir(parents=True)
    proc.mkdir()
    assert detect_layout(proc, cgroup, "kubepods", "auto", "v1").kubepods == "kubepods"
    fake_kubelet(proc, 9, ["kubelet", "--config=/c.yaml"], {"/c.yaml": "::: not yaml ["})
    assert find(proc) == KubeletCgroups(9, "cgroupfs", "kubepods")


def test_the_kubelets_layout_is_used_only_when_left_to_detection_and_its_cgroup_exists(tmp_path):
    proc, cgroup = tmp_path / "proc", tmp_path / "cgroup"
    fake_kubelet(proc, 11, ["kubelet", "--cgroup-root=/koord"])
    (cgroup / "cpuacct" / "kubepods").mkdir(parents=True)
    assert detect_layout(proc, cgroup, "kubepods", "auto", "v1").kubepods == "kubepods", "no koord/kubepods yet"
    (cgroup / "cpuacct" / "koord" / "kubepods").mkdir(parents=True)
    assert detect_layout(proc, cgroup, "kubepods", "auto", "v1").kubepods == "koord/kubepods"
    assert detect_layout(proc, cgroup, "mine", "auto", "v1").kubepods == "mine", "a configured dir wins"
    assert detect_layout(proc, cgroup, "kubepods", "cgroupfs", "v1").kubepods == "kubepods", "a configured driver wins"
