"""The kubepods tree in each layout (v1/v2 x cgroupfs/systemd): paths, discovery, readers, odd files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from node_agent.collectors.cgroups import CgroupLayout, Pressure, Throttling, parse_pressure, throttled_ratio
from node_agent.collectors.memory import MemoryStat
from tests.node_agent.conftest import KIDLED_SAMPLE

UID = "6553a60b-2b97-442a-b6da-a5704d81dd98"
DOCKER_ID = "703b1b4e811f56673d68f9531204e5dd4963e734e2929a7056fd5f33fde4abaf"
PSI = "some avg10=1.50 avg60=0.75 avg300=0.10 total=123456\nfull avg10=0.50 avg60=0.25 avg300=0.00 total=6543\n"


@pytest.mark.parametrize("driver, qos, expected", [
    ("systemd", "Guaranteed", "kubepods.slice/kubepods-poduid1.slice"),
    ("systemd", "Burstable", "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-poduid1.slice"),
    ("systemd", "BestEffort", "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-poduid1.slice"),
    ("cgroupfs", "Guaranteed", "kubepods/poduid1"),
    ("cgroupfs", "BestEffort", "kubepods/besteffort/poduid1"),
], ids=["systemd-guaranteed", "systemd-burstable", "systemd-besteffort", "cgroupfs-guaranteed",
        "cgroupfs-besteffort"])
def test_pod_dir_matches_koordinator_tv_4_5(driver, qos, expected):
    layout = CgroupLayout(Path("/x"), "v1", driver, "kubepods")
    assert layout.pod_dir("uid1", qos) == expected
    assert layout.pod_uid(expected.rsplit("/", 1)[1], qos) == "uid1"


@pytest.mark.parametrize("driver, name, expected", [
    ("systemd", f"docker-{DOCKER_ID}.scope", DOCKER_ID),
    ("systemd", f"cri-containerd-{DOCKER_ID}.scope", DOCKER_ID),
    ("systemd", f"crio-{DOCKER_ID}.scope", DOCKER_ID),
    ("systemd", f"crio-conmon-{DOCKER_ID}.scope", None),
    ("systemd", "invalid", None),
    ("cgroupfs", DOCKER_ID, DOCKER_ID),
    ("cgroupfs", "not-a-container", None),
], ids=["docker-scope", "containerd-scope", "crio-scope", "conmon-skipped", "systemd-invalid", "cgroupfs-id",
        "cgroupfs-invalid"])
def test_container_id_from_dir_name_tv_4_6(driver, name, expected):
    assert CgroupLayout(Path("/x"), "v1", driver, "kubepods").container_id(name) == expected


def test_systemd_uid_underscores_become_dashes():
    layout = CgroupLayout(Path("/x"), "v2", "systemd", "kubepods")
    name = f"kubepods-besteffort-pod{UID.replace('-', '_')}.slice"
    assert layout.pod_uid(name, "BestEffort") == UID
    assert layout.pod_uid(name, "Burstable") is None


def test_detect_reads_version_and_driver_from_the_tree(any_host):
    layout = CgroupLayout.detect(any_host.cgroup, "kubepods")
    assert (layout.version, layout.driver) == (any_host.version, any_host.driver)


def test_detect_accepts_the_slice_spelling(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpu memory\n")
    (tmp_path / "kubepods.slice").mkdir()
    layout = CgroupLayout.detect(tmp_path, "kubepods.slice")
    assert (layout.version, layout.driver, layout.kubepods) == ("v2", "systemd", "kubepods")


def test_discovers_pods_of_every_tier_and_ignores_other_dirs(any_host):
    uids = {"Guaranteed": "11111111-1111-1111-1111-111111111111", "Burstable": UID,
            "BestEffort": "33333333-3333-3333-3333-333333333333"}
    for qos, uid in uids.items():
        any_host.write_cgroup(any_host.pod_dir(uid, qos), cpu_ns=1)
    for _, tier in any_host.tiers():
        any_host.write_cgroup(f"{tier}/not-a-pod", cpu_ns=1)
    any_host.write_cgroup(any_host.container_dir(any_host.pod_dir(UID), DOCKER_ID), cpu_ns=1)
    layout = CgroupLayout.detect(any_host.cgroup, "kubepods")
    found = {(p.uid, p.kube_qos) for p in layout.discover_pods()}
    assert found == {(uid, qos) for qos, uid in uids.items()}
    pod = next(p for p in layout.discover_pods() if p.uid == UID)
    assert [c.id for c in layout.discover_containers(pod)] == [DOCKER_ID]


def test_readers_return_the_known_counters(any_host):
    rel = any_host.pod_dir(UID)
    any_host.write_cgroup(rel, cpu_ns=5_000_000_000, anon=300 << 20, file=100 << 20,
                          throttling=(100, 25, 7_000_000), pressure=PSI, idle_page_stats=KIDLED_SAMPLE)
    layout = CgroupLayout.detect(any_host.cgroup, "kubepods")
    assert layout.cpu_usage_ns(rel) == 5_000_000_000
    assert layout.memory_stat(rel) == MemoryStat(anon=300 << 20, file=100 << 20)
    assert layout.throttling(rel) == Throttling(100, 25, 7_000_000)
    assert layout.pressure(rel)["memory"] == Pressure(1.5, 0.75, 123456, 0.5, 0.25, 6543)
    assert layout.cold_bytes(rel) == 0


def _unreadable(monkeypatch, target: Path) -> None:
    """EACCES on opening ``target`` (root reads a file whatever its mode, so the open is made to fail)."""
    real_open = os.open

    def guarded(path, *args, **kwargs):
        if Path(path) == target:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)
    monkeypatch.setattr(os, "open", guarded)


@pytest.mark.parametrize("damage", ["missing", "empty", "garbage-text", "binary", "directory", "symlink-loop",
                                    "unreadable", "negative"])
def test_every_reader_survives_a_damaged_file(any_host, damage, monkeypatch):
    rel = any_host.pod_dir(UID)
    any_host.write_cgroup(rel, cpu_ns=1_000, anon=4096 * 4, throttling=(1, 1, 1), pressure=PSI,
                          idle_page_stats=KIDLED_SAMPLE)
    layout = CgroupLayout.detect(any_host.cgroup, "kubepods")
    v1 = any_host.version == "v1"
    files = [any_host.path("cpuacct", rel) / ("cpuacct.usage" if v1 else "cpu.stat"),
             any_host.path("memory", rel) / "memory.stat", any_host.path("cpu", rel) / "cpu.stat",
             any_host.path("cpuacct", rel) / "cpu.pressure", any_host.path("memory", rel) / "memory.idle_page_stats"]
    for path in dict.fromkeys(files):
        if damage == "unreadable":
            _unreadable(monkeypatch, path)
            continue
        if path.is_file():
            path.unlink()
        if damage == "empty":
            path.write_text("")
        elif damage == "garbage-text":
            path.write_text("usage_usec banana\ntotal_active_anon\nsome avg10=x\n\x7f???\n")
        elif damage == "binary":
            path.write_bytes(b"\xff\xfe\x00\x81" * 64)
        elif damage == "directory":
            path.mkdir()
        elif damage == "symlink-loop":
            os.symlink(path, path)
        elif damage == "negative":
            path.write_text("-5\nusage_usec -5\nnr_periods -1\n")
    assert layout.cpu_usage_ns(rel) is None
    assert layout.memory_stat(rel) is None
    assert layout.throttling(rel) is None
    assert "cpu" not in layout.pressure(rel)
    assert layout.cold_bytes(rel) is None


def test_a_vanished_pod_dir_reads_as_nothing(any_host):
    layout = CgroupLayout.detect(any_host.cgroup, "kubepods")
    gone = any_host.pod_dir("deadbeef-0000-0000-0000-000000000000")
    assert (layout.cpu_usage_ns(gone), layout.memory_stat(gone), layout.throttling(gone)) == (None, None, None)
    assert layout.pressure(gone) == {}


@pytest.mark.parametrize("text, expected", [
    ("some avg10=0.12 avg60=0.00 avg300=0.00 total=123\n", Pressure(0.12, 0.0, 123, None, None, None)),
    (PSI, Pressure(1.5, 0.75, 123456, 0.5, 0.25, 6543)),
    ("full avg10=0.12 avg60=0.00 avg300=0.00 total=123\n", None),
    ("some avg10=NaNx\n", None),
    (None, None),
], ids=["some-only", "some-and-full", "no-some", "garbage", "absent"])
def test_parse_pressure(text, expected):
    assert parse_pressure(text) == expected


@pytest.mark.parametrize("previous, current, expected", [
    pytest.param(Throttling(100, 10, 5), Throttling(200, 35, 9), 0.25, id="25-of-100-periods"),
    pytest.param(None, Throttling(200, 35, 9), None, id="first-reading"),
    pytest.param(Throttling(100, 10, 5), None, None, id="file-gone"),
    pytest.param(Throttling(100, 10, 5), Throttling(100, 10, 5), None, id="no-period-in-between"),
    pytest.param(Throttling(100, 10, 5), Throttling(50, 5, 1), None, id="counters-went-back"),
])
def test_throttled_ratio(previous, current, expected):
    """koordlet's pod-throttled collector: delta nr_throttled / delta nr_periods between two reports."""
    assert throttled_ratio(previous, current) == expected
