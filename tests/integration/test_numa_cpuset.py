"""Issue 17 end to end on the session broker: an LSE pod gets a FullPCPUs cpuset on one NUMA node and the node
agent writes it into the real cgroup v1 cpuset hierarchy; a SingleNUMANode node refuses a pod that cannot fit
one NUMA node, with Koordinator's message.

The nodes copy this machine's CPUs as two NUMA nodes of one CPU each (``node.koordinator.sh/cpu-topology``), so
the cpuset the scheduler picks is one the kernel accepts. The pods are scheduled by koordstream (no
``spec.nodeName``); their decisions are read from the decision stream. An in-process node-agent actuator (as
``koord node-agent`` runs it) applies the node's actuations to a test kubepods tree under the real ``cpu`` and
``cpuset`` hierarchies; the node's plan runs on its next NodeMetric (as the node agent reports every interval),
so the test applies one. Skipped, saying why, when not root or the hierarchies are not writable.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import time
import uuid

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from node_agent.actuator import limits
from node_agent.actuator.actuator import Actuator
from node_agent.actuator.cgroupv1 import CgroupV1Backend
from node_agent.actuator.sequences import SequenceStore
from node_agent.actuator.verify import Verifier
from node_agent.collectors.cgroups import CgroupLayout
from streams import kafka
from streams.schemas import codec
from tests.integration.test_qos_loop import ActuatorThread, _wait
from tests.node_agent.real_cgroups import ROOT, remove, require_root, require_writable

pytestmark = [pytest.mark.integration, pytest.mark.real_cgroups, pytest.mark.scenario]

NAMESPACE = "numa-cpuset"
TOPOLOGY = json.dumps({"detail": [{"id": 0, "core": 0, "socket": 0, "node": 0},
                                  {"id": 1, "core": 1, "socket": 0, "node": 1}]})


def node(name: str, labels: dict) -> str:
    resources = '{cpu: "2", memory: 8Gi, pods: "110"}'
    return f"""\
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {json.dumps({"e2e-scenario": name, **labels})}
  annotations: {{node.koordinator.sh/cpu-topology: '{TOPOLOGY}'}}
spec: {{taints: [{{key: e2e-scenario, value: {name}, effect: NoSchedule}}]}}
status: {{capacity: {resources}, allocatable: {resources}}}
"""


def lse_pod(name: str, uid: str, node_name: str, cpu: str) -> str:
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {NAMESPACE}, uid: {uid}, labels: {{koordinator.sh/qosClass: LSE}}}}
spec:
  priorityClassName: koord-prod
  nodeSelector: {{e2e-scenario: {node_name}}}
  tolerations: [{{key: e2e-scenario, operator: Equal, value: {node_name}, effect: NoSchedule}}]
  containers:
  - {{name: main, image: app, resources: {{requests: {{cpu: "{cpu}", memory: 256Mi}}, limits: {{cpu: "{cpu}", memory: 256Mi}}}}}}
"""


async def _decision(bootstrap: str, topic: str, pod: str, timeout_s: float = 60) -> dict:
    consumer = AIOKafkaConsumer(**kafka.client_settings(bootstrap), **kafka.consumer_settings(), group_id=None,
                                enable_auto_commit=False, auto_offset_reset="earliest")
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, p) for p in await kafka.partitions_for(consumer, topic)])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for messages in (await consumer.getmany(timeout_ms=200)).values():
                for message in messages:
                    schema, record = codec.decode(message.value)
                    if schema == "SchedulingDecision" and record["pod"]["name"] == pod:
                        return record
        raise AssertionError(f"no decision about {pod} in {timeout_s:.0f}s")
    finally:
        await consumer.stop()


def test_lse_cpuset_reaches_the_cgroup_and_single_numa_node_refuses_a_wide_pod(cluster, tmp_path):
    require_root("create cgroups and write cpusets")
    for hierarchy in (ROOT / "cpuset", ROOT / "cpu"):
        require_writable(hierarchy)
    root_cpus = limits.parse_cpulist((ROOT / "cpuset" / "cpuset.cpus").read_text())
    if not {0, 1} <= root_cpus:
        pytest.skip(f"the root cpuset {limits.format_cpulist(root_cpus)} lacks CPUs 0 and 1")
    names = cluster.topology.names()
    uid = str(uuid.uuid4())
    kubepods = f"kpnuma{uuid.uuid4().hex[:10]}"
    pod_dir = f"{kubepods}/pod{uid}"
    mems = (ROOT / "cpuset" / "cpuset.mems").read_text().strip()
    full = limits.format_cpulist(root_cpus)
    created = []
    try:
        for hierarchy in (ROOT / "cpu", ROOT / "cpuset"):
            for rel in (kubepods, pod_dir):
                (hierarchy / rel).mkdir()
                created.append(hierarchy / rel)
                if hierarchy.name == "cpuset":
                    (hierarchy / rel / "cpuset.cpus").write_text(full)
                    (hierarchy / rel / "cpuset.mems").write_text(mems)
        cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input="---\n".join([
            node("numa-pin", {}), node("numa-single", {"node.koordinator.sh/numa-topology-policy": "SingleNUMANode"})]))
        cluster.koord("apply", "-f", "-", input="---\n".join([
            lse_pod("lse-pinned", uid, "numa-pin", "1"), lse_pod("lse-too-wide", str(uuid.uuid4()), "numa-single", "2")]))
        pinned = asyncio.run(_decision(cluster.bootstrap, names["decisions"], "lse-pinned"))
        assert pinned["result"] == "Scheduled" and pinned["nodeName"] == "numa-pin", pinned
        status = json.loads(pinned["annotations"]["scheduling.koordinator.sh/resource-status"])
        cpuset = status["cpuset"]
        assert cpuset in ("0", "1"), status
        numa_of = {cpu["id"]: cpu["node"] for cpu in json.loads(TOPOLOGY)["detail"]}
        assert len({numa_of[cpu] for cpu in limits.parse_cpulist(cpuset)}) == 1, "one NUMA node"

        wide = asyncio.run(_decision(cluster.bootstrap, names["decisions"], "lse-too-wide"))
        assert wide["result"] == "Unschedulable"
        assert "Unaligned NUMA Hint cause" in wide["message"], wide["message"]

        layout = CgroupLayout.detect(ROOT, kubepods, "cgroupfs", "v1")
        actuator = Actuator("numa-pin", {"cgroup": CgroupV1Backend(layout)},
                            Verifier("numa-pin", None, SequenceStore(tmp_path / "state")))
        written = ROOT / "cpuset" / pod_dir / "cpuset.cpus"
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input=f"""\
apiVersion: slo.koordinator.sh/v1alpha1
kind: NodeMetric
metadata: {{name: numa-pin}}
status: {{updateTime: "{now}", nodeMetric: {{nodeUsage: {{resources: {{cpu: 300m, memory: 1G}}}}}}}}
""")
        with ActuatorThread(actuator, cluster.bootstrap, names, tmp_path / "state"):
            _wait(lambda: written.read_text().strip() == cpuset, 60, f"{written} to become {cpuset}")
        assert (ROOT / "cpu" / pod_dir / "cpu.cfs_quota_us").read_text().strip() == "-1"
    finally:
        leftovers = remove(created)
        assert not leftovers, f"test cgroups left behind: {leftovers}"
