"""Quota burst on a real throttled cgroup v1: measured by the node agent, planned by CPUBurst, applied by its backend.

A test kubepods tree (unique name) in this machine's ``cpuacct``, ``cpu`` and ``memory`` hierarchies holds a
Burstable pod with a 200m cpu limit (``cpu.cfs_quota_us`` 20000 of 100000) running a process that spins on a
core, so every CFS period throttles it. Each round, about one second apart: the agent
collects and refreshes (``nr_throttled`` from ``cpu.stat``), builds the NodeMetric with its report code, the
manifest goes through the publisher's encoding and the Avro codec, CPUBurst plans on it with ``policy: auto``
and the cgroup v1 backend applies the Actuation. The node the plan sees is the test's kubepods tree: its share
pool usage is the test pod's usage, not the whole machine's (other tests load it, and Koordinator rightly does
not burst on a saturated share pool). The quota in the real file must follow Koordinator's rule exactly (x1.2
after a throttled report, unchanged after an unthrottled one, at most 300 % of the base) and must have risen
at least three times, and the pod's CPU must have grown with it (the spinner wants a whole core, more than the
300 % cap, so it stays throttled: the ratio does not fall, the CPU it gets rises). The rounds are printed
(``-s`` shows them). Skipped, naming what is missing, when not root or a hierarchy is not writable.
"""

from __future__ import annotations

import dataclasses
import time
import uuid

import pytest

from node_agent.actuator.actuator import Actuator
from node_agent.actuator.cgroupv1 import CgroupV1Backend
from node_agent.actuator.sequences import SequenceStore
from node_agent.actuator.verify import Verifier
from node_agent.agent import NodeAgent
from node_agent.collectors.gpu import NVML
from node_agent.publisher import encode_manifest
from node_agent.settings import AgentSettings
from streams.events import Causation
from streams.koordinator.classes import QOS_LS
from streams.nodeqos.planner import QoSMemory, plan_node
from streams.nodeqos.plugins.cpuburst import REMAIN, UP, CPUBurst, burst_quota
from streams.noderesource.views import PodView, metric_view, node_view
from streams.schemas import codec
from tests.node_agent.real_cgroups import ROOT, busy_pod_cgroup, require_root, require_writable
from tests.streams.nodeqos.support import qos_strategy

pytestmark = [pytest.mark.real_cgroups, pytest.mark.measures]

NODE = "real-node"
LIMIT_MILLI = 200
BASE_QUOTA = 20_000
ROUNDS = 10

def test_throttled_pod_gets_its_quota_raised_on_the_real_cgroup():
    require_root("create cgroups and move a process into them")
    hierarchies = [ROOT / "cpuacct", ROOT / "cpu", ROOT / "memory"]
    for hierarchy in hierarchies:
        require_writable(hierarchy)
    kubepods, uid = f"kptest{uuid.uuid4().hex[:10]}", str(uuid.uuid4())
    pod_dir = f"{kubepods}/burstable/pod{uid}"
    quota_file = ROOT / "cpu" / pod_dir / "cpu.cfs_quota_us"
    with busy_pod_cgroup(hierarchies, pod_dir):
        quota_file.write_text(str(BASE_QUOTA))
        settings = AgentSettings(node_name=NODE, cgroup_root=ROOT, kubepods_dir=kubepods, cgroup_driver="cgroupfs",
                                 cgroup_version="v1", collect_interval_s=1.0, report_interval_s=1.0,
                                 aggregate_duration_s=1.0)
        agent = NodeAgent(settings, nvml=NVML(module=None))
        actuator = Actuator(NODE, {"cgroup": CgroupV1Backend(agent.layout)}, Verifier(NODE, None, SequenceStore(None)))
        node = node_view(codec.decode(encode_manifest(agent.node())[1].value)[1])
        strategy = qos_strategy(cpu_burst_config={"clusterStrategy": {"policy": "auto",
                                                                     "sharePoolThresholdPercent": 100}})
        agent.collect()
        agent.refresh()
        memory, rounds, in_force = QoSMemory(), [], BASE_QUOTA
        for offset in range(1, ROUNDS + 1):
            time.sleep(1.0)
            agent.collect()
            agent.refresh()
            _, outgoing = encode_manifest(agent.node_metric())
            measured = metric_view(codec.decode(outgoing.value)[1])
            key = next(k for k in measured.pods if k.endswith(f"/{uid}"))
            metric = dataclasses.replace(measured, node_usage=(measured.pods[key][0], measured.pods[key][1]))
            pods = {key: PodView(LIMIT_MILLI, 0, "", QOS_LS, 0, (), uid, LIMIT_MILLI)}
            cause = Causation("koord.inbox.node", 0, offset, "koord.nodemetrics", 0, offset)
            memory, outputs = plan_node((CPUBurst(),), node, pods, metric, strategy, metric.update_time_ms or 0,
                                        memory, cause, metric_is_new=True)
            for schema, record in outputs:
                assert schema == "Actuation" and record["targetId"] == uid, record
                ack = actuator.apply(record)
                assert ack["applied"] and ack["error"] is None, ack
            ratio = measured.throttled_ratio.get(key)
            expected = burst_quota(LIMIT_MILLI, in_force, UP if ratio else REMAIN, 300)
            written = int(quota_file.read_text())
            rounds.append((in_force, ratio, measured.pods[key][0], measured.node_usage[0], written))
            assert written == expected, f"round {offset}: {rounds}"
            in_force = written
        print("\nround: cpu.cfs_quota_us in force, throttled ratio, pod cpu, machine cpu (milli-cores), quota after")
        for index, (before, ratio, cpu, machine, written) in enumerate(rounds, start=1):
            print(f"  {index}: {before}, {ratio if ratio is None else round(ratio, 3)}, {cpu}, {machine}, {written}")
    assert sum(written > before for before, *_, written in rounds) >= 3, f"raised fewer than three times: {rounds}"
    at_base = [cpu for before, _, cpu, _, _ in rounds if before == BASE_QUOTA]
    raised = [cpu for before, _, cpu, _, _ in rounds if before >= 2 * BASE_QUOTA]
    assert raised and max(raised) > max(at_base) * 1.5, f"the pod did not get more CPU: {rounds}"
