"""The v1 backend on a fake /sys/fs/cgroup: files per subsystem, idempotence, restore on failure."""

import errno

import pytest

from node_agent.actuator.verify import PROTECTED_TARGET, Rejected, Target
from tests.node_agent.actuator.conftest import CONTAINER_ID, POD_UID, V1_UNLIMITED_MEMORY

BE = Target("qos", "BE", "cgroup", qos="BE")


def apply(backend, target, values):
    plan = backend.plan(target, values)
    outcome = backend.execute(plan)
    return plan, outcome, backend.read_back(plan)


@pytest.mark.parametrize("values, files, acked", [
    ({"cpu.cfs_quota_us": "50000"}, {("cpu", "cpu.cfs_quota_us"): "50000"}, {"cpu.cfs_quota_us": "50000"}),
    ({"cpu.cfs_quota_us": "2000"}, {("cpu", "cpu.cfs_quota_us"): "2000"}, {"cpu.cfs_quota_us": "2000"}),
    ({"cpu.cfs_quota_us": "-1"}, {("cpu", "cpu.cfs_quota_us"): "-1"}, {"cpu.cfs_quota_us": "-1"}),
    ({"cpu.cfs_period_us": "50000", "cpu.cfs_quota_us": "1000"},
     {("cpu", "cpu.cfs_period_us"): "50000", ("cpu", "cpu.cfs_quota_us"): "1000"},
     {"cpu.cfs_period_us": "50000", "cpu.cfs_quota_us": "1000"}),
    ({"cpu.shares": "2"}, {("cpu", "cpu.shares"): "2"}, {"cpu.shares": "2"}),
    ({"cpu.shares": "262144"}, {("cpu", "cpu.shares"): "262144"}, {"cpu.shares": "262144"}),
    ({"cpu.cfs_quota_us": "200000", "cpu.cfs_burst_us": "200000"},
     {("cpu", "cpu.cfs_burst_us"): "200000"}, {"cpu.cfs_quota_us": "200000", "cpu.cfs_burst_us": "200000"}),
    ({"cpu.idle": "1"}, {("cpu", "cpu.idle"): "1"}, {"cpu.idle": "1"}),
    ({"cpuset.cpus": "1,2,3"}, {("cpuset", "cpuset.cpus"): "1-3"}, {"cpuset.cpus": "1-3"}),
    ({"memory.limit_in_bytes": str(64 << 20)}, {("memory", "memory.limit_in_bytes"): str(64 << 20)},
     {"memory.limit_in_bytes": str(64 << 20)}),
    ({"memory.limit_in_bytes": "100000000"}, {("memory", "memory.limit_in_bytes"): "99999744"},
     {"memory.limit_in_bytes": "99999744"}),
    ({"memory.limit_in_bytes": "-1"}, {("memory", "memory.limit_in_bytes"): V1_UNLIMITED_MEMORY},
     {"memory.limit_in_bytes": "-1"}),
], ids=["quota", "quota-floor", "quota-unlimited", "period-and-floor", "shares-min", "shares-max",
        "burst-equal-to-quota", "idle", "cpuset", "memory-floor", "memory-page-rounded", "memory-unlimited"])
def test_be_tier_settings_land_in_their_v1_files(v1_tree, values, files, acked):
    plan, outcome, back = apply(v1_tree.backend(), BE, values)
    assert outcome.error is None and not plan.unsupported
    for (subsystem, name), text in files.items():
        assert v1_tree.read(subsystem, "kubepods/besteffort", name) == text
    assert back == acked


def test_pod_and_container_targets_find_their_directories(any_tree):
    pod = any_tree.pod(POD_UID, "Burstable")
    container = any_tree.container(pod)
    backend = any_tree.backend()
    apply(backend, Target("pod", POD_UID, "cgroup", pod_uid=POD_UID), {"cpu.cfs_quota_us": "300000"})
    apply(backend, Target("container", f"{POD_UID}/{CONTAINER_ID}", "cgroup", pod_uid=POD_UID,
                          container_id=CONTAINER_ID), {"cpu.cfs_quota_us": "100000"})
    if any_tree.version == "v1":
        assert any_tree.read("cpu", pod, "cpu.cfs_quota_us") == "300000"
        assert any_tree.read("cpu", container, "cpu.cfs_quota_us") == "100000"
    else:
        assert any_tree.read("", pod, "cpu.max") == "300000 100000"
        assert any_tree.read("", container, "cpu.max") == "100000 100000"


def test_unchanged_values_are_not_written_again(v1_tree, monkeypatch):
    backend = v1_tree.backend()
    apply(backend, BE, {"cpu.cfs_quota_us": "50000", "cpu.shares": "2"})
    writes = []
    backend.writer = lambda path, value: writes.append((path, value))
    plan, outcome, back = apply(backend, BE, {"cpu.cfs_quota_us": "50000", "cpu.shares": "2"})
    assert (writes, plan.actions, outcome.error) == ([], [], None)
    assert back == {"cpu.cfs_quota_us": "50000", "cpu.shares": "2"}


def test_failed_write_restores_the_files_already_written(v1_tree):
    backend = v1_tree.backend()
    real = backend.writer

    def failing(path, value):
        if path.name == "cpu.cfs_quota_us" and value == "40000":
            raise OSError(errno.EINVAL, "Invalid argument")
        real(path, value)
    backend.writer = failing
    plan, outcome, back = apply(backend, BE, {"cpu.cfs_period_us": "50000", "cpu.cfs_quota_us": "40000"})
    assert "EINVAL" in outcome.error and "cpu.cfs_quota_us" in outcome.error
    assert v1_tree.read("cpu", "kubepods/besteffort", "cpu.cfs_period_us") == "100000"
    assert back == {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "-1"}


def test_shrinking_burst_is_written_before_the_quota(v1_tree):
    backend = v1_tree.backend()
    apply(backend, BE, {"cpu.cfs_quota_us": "400000", "cpu.cfs_burst_us": "400000"})
    order = []
    real = backend.writer
    backend.writer = lambda path, value: (order.append(path.name), real(path, value))
    apply(backend, BE, {"cpu.cfs_quota_us": "100000", "cpu.cfs_burst_us": "50000"})
    assert order == ["cpu.cfs_burst_us", "cpu.cfs_quota_us"]


def test_bvt_is_unsupported_where_the_kernel_has_no_file(v1_tree):
    plan, outcome, back = apply(v1_tree.backend(), BE, {"cpu.bvt_warp_ns": "-1", "cpu.shares": "2"})
    assert set(plan.unsupported) == {"cpu.bvt_warp_ns"} and outcome.error is None
    assert back == {"cpu.shares": "2"}
    (v1_tree.root / "cpu/kubepods/besteffort/cpu.bvt_warp_ns").write_text("0\n")
    plan, _, back = apply(v1_tree.backend(), BE, {"cpu.bvt_warp_ns": "-1"})
    assert not plan.unsupported and back == {"cpu.bvt_warp_ns": "-1"}


@pytest.mark.parametrize("values", [{"cpu.cfs_quota_us": "100000"}, {"memory.limit_in_bytes": str(1 << 30)},
                                    {"cpu.idle": "1"}, {"cpuset.cpus": "0-1"}],
                         ids=["quota", "memory", "idle", "cpuset"])
def test_the_ls_tier_cannot_be_starved(v1_tree, values):
    with pytest.raises(Rejected) as rejected:
        v1_tree.backend().plan(Target("qos", "LS", "cgroup", qos="LS"), values)
    assert rejected.value.reason == PROTECTED_TARGET


def test_cpuset_below_the_two_cpu_floor_is_rejected(v1_tree):
    with pytest.raises(Rejected, match="floor is 2"):
        v1_tree.backend().plan(BE, {"cpuset.cpus": "3"})
