"""Issue 42, QoS of YARN containers end to end: a NodeMetric reporting YARN's usage ends as a BE quota that holds a
busy YARN container on a real cgroup v1.

On the session cluster: an slo-controller-config with CPU suppress on (cfsQuota, threshold 65 %) and the YARN
hierarchy declared as a BE host application (``host-application-config``: ``hadoop-yarn``, QoS BE, base
``KubepodsBesteffort``, what the node agent reports it as), a 2-CPU Node with an LS pod, then a NodeMetric as the
node agent sends it: node 1500m, the LS pod 600m, ``hadoop-yarn`` 700m. The node aggregate plans
(koordlet's ``calculateBESuppressCPU`` with ``NonBEHostAppFilter``)::

    system   = max(1500 - 600 - 700, 0) = 200
    suppress = 2000 * 65 % - LS 600 - non-BE host apps 0 - system 200 = 500 milli-cores -> quota 50000 us

(were YARN's 700m counted as non-BE, the quota would be the 2000 us floor). An in-process actuator writes it
on the BE tier of a test kubepods tree in the real ``cpu``/``cpuacct`` hierarchies; a process spinning in the
YARN container cgroup ``besteffort/hadoop-yarn/container_...`` must then use 0.5 CPU within 15 % over 3 s and
the BE tier must count throttled periods. Skipped, saying why, when not root or when the v1 hierarchies are not
writable.
"""

from __future__ import annotations

import datetime
import json
import time
import uuid

import pytest

from node_agent.actuator.actuator import Actuator
from node_agent.actuator.cgroupv1 import CgroupV1Backend
from node_agent.actuator.sequences import SequenceStore
from node_agent.actuator.verify import Verifier
from node_agent.collectors.cgroups import CgroupLayout
from tests.integration.manifests import pre_bound_node
from tests.integration.test_qos_loop import ActuatorThread
from tests.node_agent.real_cgroups import ROOT, busy_pod_cgroup, require_root, require_writable

pytestmark = [pytest.mark.integration, pytest.mark.real_cgroups, pytest.mark.scenario, pytest.mark.measures]

NODE = "yarn-qos-node"
NAMESPACE = "yarn-qos"
CONTAINER = "container_e1_1700000000000_0001_01_000002"
PLANNED_QUOTA = 50_000
PLANNED_CPU = PLANNED_QUOTA / 100_000
TOLERANCE = 0.15
SECONDS = 3.0
LS_UID = str(uuid.uuid4())
HOST_APPS = {"applications": [{"name": "hadoop-yarn", "priority": "koord-batch", "qos": "BE",
                               "cgroupPath": {"base": "KubepodsBesteffort", "relativePath": "hadoop-yarn"}}]}
THRESHOLD = {"clusterStrategy": {"enable": True, "cpuSuppressThresholdPercent": 65, "cpuSuppressPolicy": "cfsQuota"}}
CONFIG = f"""\
apiVersion: v1
kind: ConfigMap
metadata: {{name: slo-controller-config, namespace: koordinator-system}}
data:
  resource-threshold-config: '{json.dumps(THRESHOLD)}'
  host-application-config: '{json.dumps(HOST_APPS)}'
"""
LS_POD = f"""\
apiVersion: v1
kind: Pod
metadata: {{name: ls-pod, namespace: {NAMESPACE}, uid: {LS_UID}, labels: {{koordinator.sh/qosClass: LS}}}}
spec:
  nodeName: {NODE}
  containers:
  - {{name: main, image: app, resources: {{requests: {{cpu: "1", memory: 1G}}}}}}
"""


def _node_metric() -> str:
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"""\
apiVersion: slo.koordinator.sh/v1alpha1
kind: NodeMetric
metadata: {{name: {NODE}}}
status:
  updateTime: "{now}"
  nodeMetric:
    nodeUsage: {{resources: {{cpu: 1500m, memory: 3G}}}}
  podsMetric:
  - {{namespace: {NAMESPACE}, name: ls-pod, podUsage: {{resources: {{cpu: 600m, memory: 1G}}}}}}
  hostApplicationMetric:
  - {{name: hadoop-yarn, priority: koord-batch, qos: BE, usage: {{resources: {{cpu: 700m, memory: 1G}}}}}}
"""


def _wait(condition, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")


def _throttled(stat) -> int:
    return next(int(line.split()[1]) for line in stat.read_text().splitlines() if line.startswith("nr_throttled "))


def test_node_metric_with_yarn_usage_to_a_be_quota_holding_a_busy_yarn_container(cluster, tmp_path, record_property):
    require_root("create cgroups and move processes")
    hierarchies = [ROOT / "cpu", ROOT / "cpuacct"]
    for hierarchy in hierarchies:
        require_writable(hierarchy)
    kubepods = f"kpyq{uuid.uuid4().hex[:10]}"
    container = f"{kubepods}/besteffort/hadoop-yarn/{CONTAINER}"
    with busy_pod_cgroup(hierarchies, container):
        quota_file = ROOT / "cpu" / kubepods / "besteffort" / "cpu.cfs_quota_us"
        for manifest in (CONFIG, pre_bound_node(NODE, cpu="2", memory="8G"), LS_POD):
            cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input=manifest)
        layout = CgroupLayout.detect(ROOT, kubepods, "cgroupfs", "v1")
        actuator = Actuator(NODE, {"cgroup": CgroupV1Backend(layout)},
                            Verifier(NODE, None, SequenceStore(tmp_path / "state")))
        with ActuatorThread(actuator, cluster.bootstrap, cluster.topology.names(), tmp_path / "state"):
            cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input=_node_metric())
            _wait(lambda: quota_file.read_text().strip() == str(PLANNED_QUOTA), 60,
                  f"{quota_file} to become {PLANNED_QUOTA} (it is {quota_file.read_text().strip()})")
            time.sleep(0.3)
            usage = ROOT / "cpuacct" / container / "cpuacct.usage"
            stat = quota_file.with_name("cpu.stat")
            before, throttled, started = int(usage.read_text()), _throttled(stat), time.monotonic()
            time.sleep(SECONDS)
            measured = (int(usage.read_text()) - before) / 1e9 / (time.monotonic() - started)
            throttled = _throttled(stat) - throttled
    record_property("yarn_container_cpu_planned_vs_measured", (PLANNED_CPU, round(measured, 3)))
    print(f"\nYARN container under CPU suppress: planned {PLANNED_CPU} CPU, measured {measured:.3f}, "
          f"throttled in {throttled} periods")
    assert throttled > 0
    assert measured == pytest.approx(PLANNED_CPU, rel=TOLERANCE)
