"""YARN containers on a fake host: found under the BE tier, reported as the BE host application ``hadoop-yarn``,
their threads joining the BE resctrl group, and memory eviction killing real processes as yarn-copilot does."""

from __future__ import annotations

import json
import subprocess

import pytest

from node_agent.actuator.protection import ConfigStore
from node_agent.collectors.cgroups import CgroupLayout
from node_agent.collectors.yarn import discover, parse_container_id, validate_cgroup_dir
from node_agent.settings import SettingsError
from node_agent.yarnkill import kill, victims
from node_agent.yarnqos import YarnQoS
from node_agent.yarnresctrl import join_be_group
from tests.node_agent.test_agent import make_agent, two_rounds
from tests.streams.noderesource.support import configmap

GIB = 1 << 30
AM = "container_e17_1410901177871_0001_01_000001"
OLD = "container_e17_1410901177871_0001_01_000002"
NEW = "container_e17_1410901177871_0002_01_000003"


@pytest.mark.parametrize("name, order", [
    pytest.param(AM, (1410901177871, 1, 1, 1, 17), id="with-epoch"),
    pytest.param("container_1410901177871_0001_02_000004", (1410901177871, 1, 2, 4, 0), id="without-epoch"),
    pytest.param("container_1_2_3", None, id="too-few-parts"),
    pytest.param("pod1234", None, id="not-a-container"),
    pytest.param("container_e1_1_1_1_1/../x", None, id="path"),
])
def test_parse_container_id(name, order):
    assert parse_container_id(name) == order


@pytest.mark.parametrize("value", ["/abs", "a/../b", "", "a b"])
def test_a_bad_cgroup_dir_is_refused_naming_the_setting(fake_host, value):
    with pytest.raises(ValueError, match="yarn_cgroup_dir"):
        validate_cgroup_dir(value)
    if value:
        with pytest.raises(SettingsError, match="yarn_cgroup_dir"):
            fake_host.settings(yarn_cgroup_dir=value).validate()


def _yarn_dir(host, name: str = "") -> str:
    return "/".join(p for p in (dict(host.tiers())["BestEffort"], "hadoop-yarn", name) if p)


def _layout(host) -> CgroupLayout:
    return CgroupLayout.detect(host.cgroup, host.kubepods, host.driver, host.version)


def test_containers_are_found_under_the_be_tier_oldest_first(any_host):
    for name in (NEW, AM, OLD, "not-a-container"):
        any_host.write_cgroup(_yarn_dir(any_host, name), cpu_ns=0, anon=0)
    found = discover(_layout(any_host), "hadoop-yarn")
    assert [c.id for c in found] == [AM, OLD, NEW]
    assert [c.is_application_master for c in found] == [True, False, False]
    assert found[0].dir == _yarn_dir(any_host, AM)


def test_the_yarn_hierarchy_is_reported_as_a_be_host_application(any_host, clock):
    yarn = _yarn_dir(any_host)
    any_host.write_cgroup(yarn, cpu_ns=0, anon=GIB)
    agent = make_agent(any_host, clock)
    sample = two_rounds(any_host, clock, agent, between=lambda: any_host.write_cgroup(
        yarn, cpu_ns=int(0.5 * 2e9), anon=GIB))
    assert sample.host_apps["hadoop-yarn"].cpu == pytest.approx(0.5)
    assert sample.system.cpu == pytest.approx(3.0 - 1.5 - 0.5 - 0.5)
    (entry,) = agent.node_metric()["status"]["hostApplicationMetric"]
    assert (entry["name"], entry["priority"], entry["qos"]) == ("hadoop-yarn", "koord-batch", "BE")


def test_without_the_hierarchy_or_when_disabled_nothing_is_reported(fake_host, clock):
    for overrides in ({}, {"yarn_cgroup_dir": ""}):
        agent = make_agent(fake_host, clock, **overrides)
        two_rounds(fake_host, clock, agent)
        assert agent.node_metric()["status"].get("hostApplicationMetric") in (None, [])


def _containers(host):
    for name in (AM, OLD, NEW):
        host.write_cgroup(_yarn_dir(host, name), cpu_ns=0, anon=GIB)
    return discover(_layout(host), "hadoop-yarn")


@pytest.mark.parametrize("release, chosen", [
    pytest.param(1, [NEW], id="one-is-enough-newest-first"),
    pytest.param(GIB + 1, [NEW, OLD], id="two-needed"),
    pytest.param(10 * GIB, [NEW, OLD], id="never-the-application-master"),
    pytest.param(0, [], id="nothing-to-release"),
])
def test_victims(fake_host, release, chosen):
    containers = _containers(fake_host)
    assert [v.container.id for v in victims(containers, {c.id: GIB for c in containers}, release)] == chosen


def _sleeper(new_session: bool = True) -> subprocess.Popen:
    return subprocess.Popen(["sleep", "60"], start_new_session=new_session)


@pytest.mark.parametrize("new_session", [pytest.param(True, id="group-leader"),
                                         pytest.param(False, id="not-a-group-leader")])
def test_kill_ends_the_containers_processes(fake_host, new_session):
    layout = _layout(fake_host)
    container = _containers(fake_host)[-1]
    process = _sleeper(new_session)
    try:
        fake_host.write(layout.cpu_dir(container.dir) / "cgroup.procs", f"{process.pid}\n")
        signalled = kill(layout, container)
        assert process.wait(timeout=10) == -9
        assert signalled == ([-process.pid] if new_session else [process.pid])
    finally:
        process.kill()
        process.wait()


def test_kill_of_an_empty_container_signals_nothing(fake_host):
    layout = _layout(fake_host)
    container = _containers(fake_host)[-1]
    fake_host.write(layout.cpu_dir(container.dir) / "cgroup.procs", "1\n")
    assert kill(layout, container, send=lambda *_: pytest.fail("signalled")) == []


def test_threads_join_the_be_resctrl_group_when_it_exists(tmp_path):
    written = []
    assert join_be_group(tmp_path, [5, 6]) == []
    (tmp_path / "BE").mkdir()
    (tmp_path / "BE" / "tasks").write_text("5\n")
    assert join_be_group(tmp_path, [5, 6, 7], writer=lambda path, value: written.append((path.name, value))) == [6, 7]
    assert written == [("tasks", "6"), ("tasks", "7")]


def _qos(host, tmp_path, enable: bool, clock) -> YarnQoS:
    configs = ConfigStore(None)
    assert configs.put(configmap(**{"resource-threshold-config": json.dumps(
        {"clusterStrategy": {"enable": enable, "memoryEvictThresholdPercent": 70}})}))
    return YarnQoS(_layout(host), "hadoop-yarn", tmp_path / "resctrl", host.proc, "usageWithoutPageCache", configs,
                   lambda: {}, clock=clock)


def test_memory_eviction_kills_the_newest_yarn_container(fake_host, tmp_path, clock):
    """16 GiB, 12 GiB used (75 % >= 70 %): release 16 GiB * (75 - 68) / 100 = 1.12 GiB -> the two newest
    non-AM containers of 1 GiB each; then the cool-down holds the next round."""
    fake_host.set_meminfo(total_kb=16 << 20, free_kb=2 << 20, available_kb=4 << 20)
    layout = _layout(fake_host)
    containers = _containers(fake_host)
    processes = {c.id: _sleeper() for c in containers}
    try:
        for container in containers:
            fake_host.write(layout.cpu_dir(container.dir) / "cgroup.procs", f"{processes[container.id].pid}\n")
        qos = _qos(fake_host, tmp_path, True, clock)
        killed = qos.tick()
        assert [k.container_id for k in killed] == [NEW, OLD]
        assert "node memory usage 75% >= threshold 70%" in killed[0].message
        assert processes[NEW].wait(timeout=10) == -9 and processes[OLD].wait(timeout=10) == -9
        assert processes[AM].poll() is None
        assert qos.tick() == []
    finally:
        for process in processes.values():
            process.kill()
            process.wait()


def test_nothing_is_killed_when_eviction_is_off_or_memory_is_below_the_threshold(fake_host, tmp_path, clock):
    layout = _layout(fake_host)
    container = _containers(fake_host)[-1]
    fake_host.write(layout.cpu_dir(container.dir) / "cgroup.procs", "4242\n")
    fake_host.set_meminfo(total_kb=16 << 20, free_kb=2 << 20, available_kb=4 << 20)
    assert _qos(fake_host, tmp_path, False, clock).tick() == []
    fake_host.set_meminfo(total_kb=16 << 20, free_kb=8 << 20, available_kb=12 << 20)
    assert _qos(fake_host, tmp_path, True, clock).tick() == []


def test_koord_node_agent_runs_yarn_qos_on_the_config_it_stored(fake_host, tmp_path, clock):
    """Without local protection, ``koord node-agent`` takes the slo-controller-config kept in its state dir."""
    from streams.cli.nodeagent import yarn_qos

    state = tmp_path / "state"
    assert ConfigStore(state).put(configmap(**{"resource-threshold-config": json.dumps(
        {"clusterStrategy": {"enable": True, "memoryEvictThresholdPercent": 70}})}))
    fake_host.set_meminfo(total_kb=16 << 20, free_kb=2 << 20, available_kb=4 << 20)
    agent = make_agent(fake_host, clock, state_dir=state)
    container = _containers(fake_host)[-1]
    process = _sleeper()
    try:
        fake_host.write(agent.layout.cpu_dir(container.dir) / "cgroup.procs", f"{process.pid}\n")
        assert [k.container_id for k in yarn_qos(agent, None).tick()] == [NEW]
        assert process.wait(timeout=10) == -9
    finally:
        process.kill()
        process.wait()
