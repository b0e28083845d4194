"""Host applications: Koordinator's cgroup path rules and a config that cannot escape the cgroup root."""

from pathlib import Path

import pytest

from node_agent.collectors.cgroups import CgroupLayout
from node_agent.collectors.hostapps import HostApplicationError, load_host_applications, parse_host_applications

CGROUPFS = CgroupLayout(Path("/x"), "v1", "cgroupfs", "kubepods")
SYSTEMD = CgroupLayout(Path("/x"), "v1", "systemd", "kubepods")


@pytest.mark.parametrize("entry, layout, expected", [
    ({"name": "nginx", "qos": "LS"}, CGROUPFS, "host-latency-sensitive/nginx"),
    ({"name": "batch", "qos": "BE"}, CGROUPFS, "host-best-effort/batch"),
    ({"name": "plain"}, CGROUPFS, "plain"),
    ({"name": "a", "cgroupPath": {"base": "CgroupRoot", "parentDir": "p", "relativePath": "a"}}, CGROUPFS, "p/a"),
    ({"name": "a", "cgroupPath": {"base": "KubepodsBesteffort", "relativePath": "a"}}, CGROUPFS,
     "kubepods/besteffort/a"),
    ({"name": "a", "cgroupPath": {"base": "KubepodsBurstable", "relativePath": "a"}}, SYSTEMD,
     "kubepods.slice/kubepods-burstable.slice/a"),
], ids=["default-ls", "default-be", "default-none", "root-base", "besteffort-base", "systemd-burstable-base"])
def test_cgroup_dir(entry, layout, expected):
    (app,) = parse_host_applications([entry])
    assert app.cgroup_dir(layout) == expected


@pytest.mark.parametrize("doc, message", [
    ([{"name": "x", "cgroupPath": {"relativePath": "../../etc"}}], "without '..'"),
    ([{"name": "x", "cgroupPath": {"parentDir": "/abs"}}], "relative path"),
    ([{"name": "../x"}], "name"),
    ([{"name": "x"}, {"name": "x"}], "duplicated"),
    ([{"name": "x", "cgroupPath": {"base": "Elsewhere"}}], "base"),
    ("nope", "must be a list"),
], ids=["dotdot", "absolute", "slash-in-name", "duplicate", "unknown-base", "not-a-list"])
def test_invalid_config_is_refused(doc, message):
    with pytest.raises(HostApplicationError, match=message):
        parse_host_applications(doc)


def test_loads_yaml_with_nodeslo_key(tmp_path):
    path = tmp_path / "apps.yaml"
    path.write_text("hostApplications:\n- name: nginx\n  priority: koord-prod\n  qos: LS\n")
    (app,) = load_host_applications(path)
    assert (app.name, app.priority, app.qos) == ("nginx", "koord-prod", "LS")
