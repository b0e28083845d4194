"""YARN containers on this machine's real cgroup v1: held by the BE quota, reported as BE, killed by memory eviction.

A test kubepods tree (unique name) in the real ``cpu``, ``cpuacct`` and ``memory`` hierarchies with the
NodeManager's hierarchy where yarn-copilot puts it (``<kubepods>/besteffort/hadoop-yarn``) and a container
cgroup named by a YARN ContainerId; a process spinning on one core in it, placed there as the NodeManager's
cgroups handler places a container's launch script. Then:

- an actuation sets the BE tier's quota to 0.3 CPU: the container's ``cpuacct.usage`` over 3 s must be within
  15 % of it and the BE tier's ``cpu.stat`` (where v1 counts the quota's throttling) must count throttled periods (CPU suppress covers YARN containers because
  they are below the BE tier);
- the node agent reports the hierarchy's usage as the BE host application ``hadoop-yarn``, near what the
  kernel counted;
- memory eviction (``YarnQoS`` on a ``/proc/meminfo`` showing 75 % used against a 70 % threshold) kills the
  container's process, and its ``cgroup.procs`` empties.

The processes are placed by the test: a real NodeManager puts containers into cgroups only with the
``LinuxContainerExecutor``, a setuid native binary Hadoop's Maven jars do not ship.
Skipped, naming why, when not root or when the v1 hierarchies are not writable.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest

from node_agent.actuator.actuator import Actuator
from node_agent.actuator.cgroupv1 import CgroupV1Backend
from node_agent.actuator.protection import ConfigStore
from node_agent.actuator.sequences import SequenceStore
from node_agent.actuator.verify import Verifier
from node_agent.agent import NodeAgent
from node_agent.collectors.cgroups import CgroupLayout
from node_agent.collectors.gpu import NVML
from node_agent.settings import AgentSettings
from node_agent.yarnqos import YarnQoS
from tests.node_agent.actuator.conftest import actuation
from tests.node_agent.real_cgroups import ROOT, busy_pod_cgroup, require_root, require_writable
from tests.streams.noderesource.support import configmap

pytestmark = [pytest.mark.real_cgroups, pytest.mark.measures]

NODE = "real-yarn-node"
CONTAINER = "container_e1_1700000000000_0001_01_000002"
PLANNED = 0.3
TOLERANCE = 0.15
SECONDS = 3.0


def _usage_ns(rel: str) -> int:
    return int((ROOT / "cpuacct" / rel / "cpuacct.usage").read_text())


def _throttled(rel: str) -> int:
    stat = (ROOT / "cpu" / rel / "cpu.stat").read_text().splitlines()
    return next(int(line.split()[1]) for line in stat if line.startswith("nr_throttled "))


def test_a_busy_yarn_container_is_held_by_the_be_quota_reported_as_be_and_killed_by_eviction(tmp_path,
                                                                                             record_property):
    require_root("create cgroups and move processes")
    hierarchies = [ROOT / "cpu", ROOT / "cpuacct", ROOT / "memory"]
    for hierarchy in hierarchies:
        require_writable(hierarchy)
    kubepods = f"kpyarn{uuid.uuid4().hex[:10]}"
    container = f"{kubepods}/besteffort/hadoop-yarn/{CONTAINER}"
    with busy_pod_cgroup(hierarchies, container) as busy:
        layout = CgroupLayout.detect(ROOT, kubepods, "cgroupfs", "v1")
        settings = AgentSettings(node_name=NODE, cgroup_root=ROOT, kubepods_dir=kubepods, cgroup_driver="cgroupfs",
                                 cgroup_version="v1", collect_interval_s=1.0)
        agent = NodeAgent(settings, nvml=NVML(module=None))
        actuator = Actuator(NODE, {"cgroup": CgroupV1Backend(layout)}, Verifier(NODE, None, SequenceStore(None)))
        ack = actuator.apply(actuation({"cpu.cfs_quota_us": str(int(PLANNED * 100_000)), "cpu.cfs_period_us": "100000"},
                                       node=NODE, timestamp=int(time.time() * 1000)))
        assert ack["applied"], ack["error"]
        time.sleep(0.3)

        agent.collect()
        tier = f"{kubepods}/besteffort"
        before, throttled, started = _usage_ns(container), _throttled(tier), time.monotonic()
        time.sleep(SECONDS)
        sample = agent.collect()
        measured = (_usage_ns(container) - before) / 1e9 / (time.monotonic() - started)
        throttled = _throttled(tier) - throttled
        reported = sample.host_apps["hadoop-yarn"].cpu
        record_property("yarn_cpu_planned_measured_reported", (PLANNED, round(measured, 3), round(reported, 3)))
        print(f"\nYARN container under the BE quota: planned {PLANNED} CPU, measured {measured:.3f}, "
              f"reported as hadoop-yarn {reported:.3f}, throttled in {throttled} periods")
        assert throttled > 0
        assert measured == pytest.approx(PLANNED, rel=TOLERANCE)
        assert reported == pytest.approx(measured, rel=TOLERANCE)
        agent.refresh()
        apps = {a["name"]: a for a in agent.node_metric()["status"]["hostApplicationMetric"]}
        assert (apps["hadoop-yarn"]["qos"], apps["hadoop-yarn"]["priority"]) == ("BE", "koord-batch")

        proc = tmp_path / "proc"
        proc.mkdir()
        (proc / "meminfo").write_text(f"MemTotal: {16 << 20} kB\nMemFree: {2 << 20} kB\nMemAvailable: {4 << 20} kB\n")
        configs = ConfigStore(None)
        assert configs.put(configmap(**{"resource-threshold-config": json.dumps(
            {"clusterStrategy": {"enable": True, "memoryEvictThresholdPercent": 70}})}))
        qos = YarnQoS(layout, "hadoop-yarn", tmp_path / "no-resctrl", proc, settings.memory_policy, configs,
                      lambda: {})
        [killed] = qos.tick()
        assert killed.container_id == CONTAINER
        assert busy.wait(timeout=10) == -9
        deadline = time.monotonic() + 5
        while (ROOT / "cpu" / container / "cgroup.procs").read_text().strip() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (ROOT / "cpu" / container / "cgroup.procs").read_text().strip() == ""
