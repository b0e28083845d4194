"""Identifiers are validated before they become paths; paths stay inside their roots."""

import os

import pytest

from node_agent.actuator import paths


@pytest.mark.parametrize("uid", ["aaaaaaaa-0000-0000-0000-000000000001", "0123456789abcdef0123456789abcdef"])
def test_kubernetes_uids_pass(uid):
    assert paths.pod_uid(uid) == uid


@pytest.mark.parametrize("uid", ["../../etc", "aaaaaaaa-0000-0000-0000-00000000000/", "", "AAAAAAAA-0000-0000-0000-"
                                 "000000000001", "aaaaaaaa-0000-0000-0000-000000000001\x00", "pod1"])
def test_other_pod_uids_are_refused(uid):
    with pytest.raises(paths.PathProblem):
        paths.pod_uid(uid)


@pytest.mark.parametrize("cid", ["abc/def0123456789", "../0123456789ab", "0123456789AB", "0123"])
def test_bad_container_ids(cid):
    with pytest.raises(paths.PathProblem):
        paths.container_id(cid)


@pytest.mark.parametrize("path", ["host-latency-sensitive/nginx", "system.slice/sshd.service"])
def test_host_app_paths(path):
    assert paths.relative_cgroup_path(path) == path


@pytest.mark.parametrize("path", ["/etc", "a/../../etc", "..", "a//b", "a/./b", "", "a/b c", "/".join("a" * 17)])
def test_bad_host_app_paths(path):
    with pytest.raises(paths.PathProblem):
        paths.relative_cgroup_path(path)


def test_a_symlink_out_of_the_root_is_refused(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir(), outside.mkdir()
    os.symlink(outside, root / "escape")
    with pytest.raises(paths.PathProblem, match="outside"):
        paths.confined(root, "escape", "cpu.shares")
    assert paths.confined(root, "inside", "cpu.shares") == root / "inside" / "cpu.shares"


@pytest.mark.parametrize("part", ["..", "a/../..", "/abs"])
def test_confined_refuses_dot_dot_and_absolute_parts(tmp_path, part):
    with pytest.raises(paths.PathProblem):
        paths.confined(tmp_path, part)


def test_pod_dirs_of_each_tier_and_driver(any_tree):
    uid = "aaaaaaaa-0000-0000-0000-000000000001"
    rel = any_tree.pod(uid, "Burstable")
    cgroups = paths.CgroupPaths(any_tree.layout)
    assert cgroups.pod_dir(uid) == rel
    assert cgroups.pod_dir("bbbbbbbb-0000-0000-0000-000000000001") is None
    assert cgroups.qos_dir("BE") == dict(any_tree.layout.tiers())["BestEffort"]
    assert cgroups.qos_dir("LS") == cgroups.qos_dir("LSR") == dict(any_tree.layout.tiers())["Guaranteed"]
