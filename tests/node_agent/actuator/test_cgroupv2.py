"""The v2 backend on a fake unified tree: cpu.max, cpu.weight (Koordinator's conversion), memory.max, ..."""

import errno

import pytest

from node_agent.actuator.verify import Target

BE = Target("qos", "BE", "cgroup", qos="BE")


def apply(backend, values):
    plan = backend.plan(BE, values)
    outcome = backend.execute(plan)
    return plan, outcome, backend.read_back(plan)


@pytest.mark.parametrize("values, files, acked", [
    ({"cpu.cfs_quota_us": "50000"}, {"cpu.max": "50000 100000"}, {"cpu.cfs_quota_us": "50000"}),
    ({"cpu.cfs_quota_us": "-1", "cpu.cfs_period_us": "200000"}, {"cpu.max": "max 200000"},
     {"cpu.cfs_quota_us": "-1", "cpu.cfs_period_us": "200000"}),
    ({"cpu.cfs_quota_us": "2000"}, {"cpu.max": "2000 100000"}, {"cpu.cfs_quota_us": "2000"}),
    ({"cpu.shares": "1024"}, {"cpu.weight": "39"}, {"cpu.shares": "998"}),
    ({"cpu.shares": "2"}, {"cpu.weight": "1"}, {"cpu.shares": "2"}),
    ({"cpu.shares": "262144"}, {"cpu.weight": "10000"}, {"cpu.shares": "262144"}),
    ({"cpu.shares": "50000"}, {"cpu.weight": "1908"}, {"cpu.shares": "49997"}),
    ({"cpu.cfs_burst_us": "30000"}, {"cpu.max.burst": "30000"}, {"cpu.cfs_burst_us": "30000"}),
    ({"cpu.idle": "1"}, {"cpu.idle": "1"}, {"cpu.idle": "1"}),
    ({"cpuset.cpus": "0-1"}, {"cpuset.cpus": "0-1"}, {"cpuset.cpus": "0-1"}),
    ({"memory.limit_in_bytes": "1073741824"}, {"memory.max": "1073741824"}, {"memory.limit_in_bytes": "1073741824"}),
    ({"memory.limit_in_bytes": "-1"}, {"memory.max": "max"}, {"memory.limit_in_bytes": "-1"}),
], ids=["quota", "unlimited-with-period", "quota-floor", "shares-1024", "shares-min", "shares-max", "shares-50000",
        "burst", "idle", "cpuset", "memory", "memory-unlimited"])
def test_settings_land_in_their_v2_files(v2_tree, values, files, acked):
    plan, outcome, back = apply(v2_tree.backend(), values)
    assert outcome.error is None and not plan.unsupported
    for name, text in files.items():
        assert v2_tree.read("", "kubepods/besteffort", name) == text
    assert back == acked


def test_quota_alone_keeps_the_period_in_force(v2_tree):
    v2_tree.path("", "kubepods/besteffort", "cpu.max").write_text("max 50000\n")
    apply(v2_tree.backend(), {"cpu.cfs_quota_us": "25000"})
    assert v2_tree.read("", "kubepods/besteffort", "cpu.max") == "25000 50000"


def test_idempotent_and_restoring(v2_tree):
    backend = v2_tree.backend()
    apply(backend, {"cpu.cfs_quota_us": "50000", "cpu.shares": "1024"})
    assert backend.plan(BE, {"cpu.cfs_quota_us": "50000", "cpu.shares": "1024"}).actions == []
    real = backend.writer

    def failing(path, value):
        if path.name == "cpu.weight":
            raise OSError(errno.EINVAL, "Invalid argument")
        real(path, value)
    backend.writer = failing
    _, outcome, back = apply(backend, {"cpu.cfs_quota_us": "70000", "cpu.shares": "4096"})
    assert "cpu.weight" in outcome.error
    assert v2_tree.read("", "kubepods/besteffort", "cpu.max") == "50000 100000"
    assert back == {"cpu.cfs_quota_us": "50000", "cpu.shares": "998"}


def test_missing_controller_file_is_unsupported(v2_tree):
    v2_tree.path("", "kubepods/besteffort", "cpuset.cpus").unlink()
    plan, outcome, back = apply(v2_tree.backend(), {"cpuset.cpus": "0-1", "cpu.bvt_warp_ns": "2", "cpu.idle": "1"})
    assert set(plan.unsupported) == {"cpuset.cpus", "cpu.bvt_warp_ns"}
    assert outcome.error is None and back == {"cpu.idle": "1"}
