"""Host applications: the LS/BE treatment of processes outside Kubernetes (Koordinator v1.4)."""

from __future__ import annotations

import pytest

from streams.actuation import CPU_BVT_WARP, CPU_IDLE, HOSTAPP_PATH
from streams.nodeqos.plugins.hostapps import HostApps
from tests.streams.nodeqos.support import qos_strategy, snapshot

APPS = {"applications": [
    {"name": "nginx", "qos": "LS", "cgroupPath": {"base": "CgroupRoot", "parentDir": "host-latency-sensitive/",
                                                   "relativePath": "nginx/"}},
    {"name": "batch-agent", "qos": "BE"},
]}
QOS = {"clusterStrategy": {"lsClass": {"cpuQOS": {"enable": True, "groupIdentity": 2}},
                           "beClass": {"cpuQOS": {"enable": True, "groupIdentity": -1}}}}


def test_host_apps_get_their_class_group_identity_under_their_cgroup():
    strategy = qos_strategy(host_application_config=APPS, resource_qos_config=QOS)
    settings = {s.target_id: s.values for s in HostApps().plan(snapshot(strategy)).settings}
    assert settings == {
        "nginx": {HOSTAPP_PATH: "host-latency-sensitive/nginx", CPU_BVT_WARP: "2", CPU_IDLE: "0"},
        "batch-agent": {HOSTAPP_PATH: "host-best-effort/batch-agent", CPU_BVT_WARP: "-1", CPU_IDLE: "0"},
    }


def test_host_apps_with_only_kernel_defaults_are_not_actuated():
    assert HostApps().plan(snapshot(qos_strategy(host_application_config=APPS))).settings == ()


@pytest.mark.parametrize("path", ["../etc", "a/../../b"])
def test_a_cgroup_path_leaving_the_root_is_rejected(path):
    from streams.sloconfig.document import ConfigError
    with pytest.raises(ConfigError, match="must not leave the cgroup root"):
        qos_strategy(host_application_config={"applications": [
            {"name": "x", "qos": "LS", "cgroupPath": {"parentDir": path}}]})
