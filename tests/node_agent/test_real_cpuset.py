"""An LSE pod's pinned cpuset from the CPUSet plan into a real cgroup v1 cpuset directory, and back out.

A test kubepods tree (unique name) in this machine's ``cpu`` and ``cpuset`` hierarchies holds a Guaranteed
pod with one container cgroup running a sleeping process. The CPUSet strategy plans the pod pinned to the
last CPU of the root cpuset (Actuation record from ``planner.plan_node``); the node agent's actuator writes
it, the pod's and the container's ``cpuset.cpus`` read back as that CPU and the process may run only there.
The pod then loses its pin: the next plan gives it the LS share pool (every CPU) and the agent widens both
cgroups again. Skipped, naming what is missing, when not root or the cpuset hierarchy is not writable.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from node_agent.actuator import limits
from node_agent.actuator.actuator import Actuator
from node_agent.actuator.cgroupv1 import CgroupV1Backend
from node_agent.actuator.sequences import SequenceStore
from node_agent.actuator.verify import Verifier
from node_agent.collectors.cgroups import CgroupLayout
from streams.events import Causation
from streams.koordinator.annotations import ANNOTATION_RESOURCE_STATUS
from streams.koordinator.classes import QOS_LS, QOS_LSE
from streams.nodeqos.planner import QoSMemory, plan_node
from streams.nodeqos.plugins.cpuset import CPUSet
from streams.noderesource.views import PodView, build_node_view, cpuset_of
from streams.sloconfig.nodeqos import NodeQoSStrategy
from tests.node_agent.real_cgroups import ROOT, remove, require_root, require_writable

pytestmark = pytest.mark.real_cgroups

NODE = "real-node"
CONTAINER = "c0ffee" * 10 + "c0ffee12"
CAUSE = Causation("koord.inbox.node", 0, 1, "koord.nodemetrics", 0, 1)


def _pod(qos: str, uid: str, cpuset: str) -> PodView:
    status = f'{{"cpuset": "{cpuset}"}}' if cpuset else None
    return PodView(4000, 1 << 30, "", qos, 0, (), uid,
                   cpuset=cpuset_of({ANNOTATION_RESOURCE_STATUS: status} if status else {}))


def _plan(cpus: int, pod: PodView, memory: QoSMemory) -> tuple[QoSMemory, dict]:
    node = build_node_view(NODE, {"cpu": cpus * 1000}, {"cpu": cpus * 1000}, {}, {})
    memory, outputs = plan_node((CPUSet(),), node, {"default/pinned": pod}, None, NodeQoSStrategy(),
                                int(time.time() * 1000), memory, CAUSE)
    assert [schema for schema, _ in outputs] == ["Actuation"], outputs
    return memory, outputs[0][1]


def test_lse_pod_cpuset_is_written_to_a_real_v1_cpuset_cgroup_and_read_back():
    require_root("create cgroups and move a process into them")
    for hierarchy in (ROOT / "cpuset", ROOT / "cpu"):
        require_writable(hierarchy)
    root_cpus = limits.parse_cpulist((ROOT / "cpuset" / "cpuset.cpus").read_text())
    if root_cpus != frozenset(range(len(root_cpus))):
        pytest.skip(f"the root cpuset {limits.format_cpulist(root_cpus)} is not 0..n-1, as the plan assumes")
    mems = (ROOT / "cpuset" / "cpuset.mems").read_text().strip()
    kubepods, uid = f"kptest{uuid.uuid4().hex[:10]}", str(uuid.uuid4())
    pod_dir = f"{kubepods}/pod{uid}"
    container_dir = f"{pod_dir}/{CONTAINER}"
    pinned = str(max(root_cpus))
    full = limits.format_cpulist(root_cpus)
    created, sleeper = [], None
    try:
        for hierarchy, rels in ((ROOT / "cpu", (kubepods, pod_dir)),
                                (ROOT / "cpuset", (kubepods, pod_dir, container_dir))):
            for rel in rels:
                (hierarchy / rel).mkdir()
                created.append(hierarchy / rel)
                if hierarchy.name == "cpuset":
                    (hierarchy / rel / "cpuset.cpus").write_text(full)
                    (hierarchy / rel / "cpuset.mems").write_text(mems)
        sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        (ROOT / "cpuset" / container_dir / "cgroup.procs").write_text(str(sleeper.pid))
        layout = CgroupLayout.detect(ROOT, kubepods, "cgroupfs", "v1")
        actuator = Actuator(NODE, {"cgroup": CgroupV1Backend(layout)}, Verifier(NODE, None, SequenceStore(None)))

        memory, record = _plan(len(root_cpus), _pod(QOS_LSE, uid, pinned), QoSMemory())
        assert (record["targetKind"], record["targetId"]) == ("pod", uid)
        assert record["values"] == {"cpu.cfs_quota_us": "-1", "cpuset.cpus": pinned}
        ack = actuator.apply(record)
        assert ack["applied"] and ack["error"] is None, ack
        assert ack["values"]["cpuset.cpus"] == pinned
        for rel in (pod_dir, container_dir):
            assert (ROOT / "cpuset" / rel / "cpuset.cpus").read_text().strip() == pinned, rel
        assert os.sched_getaffinity(sleeper.pid) == {int(pinned)}

        memory, record = _plan(len(root_cpus), _pod(QOS_LS, uid, ""), memory)
        assert record["values"] == {"cpuset.cpus": full} and record["sequence"] == 2
        ack = actuator.apply(record)
        assert ack["applied"] and ack["values"]["cpuset.cpus"] == full, ack
        for rel in (pod_dir, container_dir):
            assert (ROOT / "cpuset" / rel / "cpuset.cpus").read_text().strip() == full, rel
        assert os.sched_getaffinity(sleeper.pid) == set(root_cpus)
    finally:
        if sleeper is not None:
            sleeper.send_signal(signal.SIGKILL)
            sleeper.wait()
        leftovers = remove(created)
        assert not leftovers, f"test cgroups left behind: {leftovers}"
