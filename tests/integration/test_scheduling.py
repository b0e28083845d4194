"""Issue 5 end to end on the real broker: load-aware filtering, FitPlus bin-packing, scarce-resource
avoidance and the Insufficient-quotas message.

Every scenario has its own nodes, labelled and tainted ``e2e-scenario: <name>``, and its pods select and
tolerate them, so the other tests' nodes and pending pods in the shared cluster never compete. The scheduler profile for
``koord-scheduler`` is the v1.6 article's (NodeResourcesFitPlus args from its first example, the
plugins of its second: every other score plugin disabled); ``default-scheduler`` keeps the defaults,
so the rest of the suite is not affected.
"""

from __future__ import annotations

import datetime

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.scenario]

SCHEDULER_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
- pluginConfig:
  - args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: NodeResourcesFitPlusArgs
      resources:
        nvidia.com/gpu:
          type: MostAllocated
          weight: 2
        cpu:
          type: LeastAllocated
          weight: 1
        memory:
          type: LeastAllocated
          weight: 1
    name: NodeResourcesFitPlus
  - args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: ScarceResourceAvoidanceArgs
      resources:
      - nvidia.com/gpu
    name: ScarceResourceAvoidance
  plugins:
    score:
      enabled:
      - name: NodeResourcesFitPlus
        weight: 2
      - name: ScarceResourceAvoidance
        weight: 2
      disabled:
      - name: "*"
  schedulerName: koord-scheduler
"""


def node(name: str, scenario: str, cpu: str, memory: str = "64Gi", gpus: int = 0) -> str:
    extra = f', nvidia.com/gpu: "{gpus}"' if gpus else ""
    resources = f'{{cpu: "{cpu}", memory: {memory}, pods: "110"{extra}}}'
    return f"""\
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{e2e-scenario: {scenario}}}}}
spec: {{taints: [{{key: e2e-scenario, value: {scenario}, effect: NoSchedule}}]}}
status: {{capacity: {resources}, allocatable: {resources}}}
"""


def pod(name: str, scenario: str, cpu: str, gpus: int = 0, node_name: str = "", quota: str = "",
        scheduler: str = "default-scheduler", namespace: str = "e2e-sched") -> str:
    requests = f'{{cpu: "{cpu}", memory: 1Gi' + (f', nvidia.com/gpu: "{gpus}"' if gpus else "") + "}"
    limits = f'{{nvidia.com/gpu: "{gpus}"}}' if gpus else "{}"
    labels = f"{{quota.scheduling.koordinator.sh/name: {quota}}}" if quota else "{}"
    bound = f"\n  nodeName: {node_name}" if node_name else ""
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {namespace}, labels: {labels}}}
spec:
  schedulerName: {scheduler}{bound}
  nodeSelector: {{e2e-scenario: {scenario}}}
  tolerations: [{{key: e2e-scenario, operator: Equal, value: {scenario}, effect: NoSchedule}}]
  containers:
  - {{name: main, image: app, resources: {{requests: {requests}, limits: {limits}}}}}
"""


def node_metric(name: str, cpu: str, memory: str) -> str:
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"""\
apiVersion: slo.koordinator.sh/v1alpha1
kind: NodeMetric
metadata: {{name: {name}}}
status:
  updateTime: "{now}"
  nodeMetric: {{nodeUsage: {{resources: {{cpu: "{cpu}", memory: {memory}}}}}}}
"""


def apply(cluster, *manifests: str) -> None:
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input="---\n".join(manifests))


def placed(cluster, name: str, namespace: str = "e2e-sched") -> dict:
    return cluster.koord_json("get", "pods", name, "-n", namespace)


@pytest.fixture(scope="module")
def koord_scheduler(cluster):
    apply(cluster, SCHEDULER_CONFIG)


def test_pod_is_kept_off_the_node_whose_usage_is_over_threshold(cluster):
    """The hot node is larger and emptier by requests (LeastAllocated would pick it) but its cpu usage is
    94 %, over LoadAwareScheduling's default 65 %; the pod goes to the cool node."""
    apply(cluster, node("la-hot", "loadaware", cpu="64"), node("la-cool", "loadaware", cpu="8"),
          node_metric("la-hot", cpu="60", memory="8Gi"), node_metric("la-cool", cpu="1", memory="8Gi"))
    apply(cluster, pod("la-web", "loadaware", cpu="1"))
    assert placed(cluster, "la-web")["spec"]["nodeName"] == "la-cool"

    apply(cluster, pod("la-big", "loadaware", cpu="20"))
    big = placed(cluster, "la-big")
    assert "nodeName" not in big["spec"]
    condition = next(c for c in big["status"]["conditions"] if c["type"] == "PodScheduled")
    assert condition["message"].startswith("0/")
    assert "1 node(s) cpu usage exceed threshold" in condition["message"]
    assert "1 Insufficient cpu" in condition["message"]


def test_gpu_pod_is_bin_packed_by_fitplus(cluster, koord_scheduler):
    """gpu-a already has 4 of its 8 GPUs bound, gpu-b none: FitPlus's MostAllocated on nvidia.com/gpu packs
    the new GPU pod onto gpu-a (the default LeastAllocated would spread it to gpu-b)."""
    apply(cluster, node("gpu-a", "gpu", cpu="32", gpus=8), node("gpu-b", "gpu", cpu="32", gpus=8))
    apply(cluster, pod("gpu-trainer", "gpu", cpu="4", gpus=4, node_name="gpu-a", scheduler="koord-scheduler"))
    apply(cluster, pod("gpu-packed", "gpu", cpu="2", gpus=1, scheduler="koord-scheduler"),
          pod("gpu-spread", "gpu", cpu="2", gpus=1))
    assert placed(cluster, "gpu-packed")["spec"]["nodeName"] == "gpu-a"
    assert placed(cluster, "gpu-spread")["spec"]["nodeName"] == "gpu-b"


def test_cpu_only_pod_avoids_the_gpu_node(cluster, koord_scheduler):
    """mixed-gpu is as large as mixed-cpu and emptier (mixed-cpu runs a 4-core pod), so LeastAllocated alone
    prefers it; ScarceResourceAvoidance keeps a pod that requests no GPU off it."""
    apply(cluster, node("mixed-gpu", "mixed", cpu="16", gpus=8), node("mixed-cpu", "mixed", cpu="16"))
    apply(cluster, pod("mixed-busy", "mixed", cpu="4", node_name="mixed-cpu"))
    apply(cluster, pod("mixed-web", "mixed", cpu="1", scheduler="koord-scheduler"),
          pod("mixed-default", "mixed", cpu="1"))
    assert placed(cluster, "mixed-web")["spec"]["nodeName"] == "mixed-cpu"
    assert placed(cluster, "mixed-default")["spec"]["nodeName"] == "mixed-gpu"


def test_pod_over_its_quota_gets_the_insufficient_quotas_message(cluster):
    """Runtime memory is 2Gi, not max's 4Gi: the runtime quota follows the quota's requests (two 1Gi pods)."""
    quota = """\
apiVersion: scheduling.sigs.k8s.io/v1alpha1
kind: ElasticQuota
metadata: {name: team-small, namespace: e2e-quota}
spec:
  min: {cpu: "2", memory: 4Gi}
  max: {cpu: "2", memory: 4Gi}
"""
    apply(cluster, node("quota-node", "quota", cpu="32"), quota)
    apply(cluster, pod("quota-fits", "quota", cpu="1", quota="team-small", namespace="e2e-quota"))
    apply(cluster, pod("quota-over", "quota", cpu="2", quota="team-small", namespace="e2e-quota"))
    assert placed(cluster, "quota-fits", "e2e-quota")["spec"]["nodeName"] == "quota-node"
    over = placed(cluster, "quota-over", "e2e-quota")
    assert "nodeName" not in over["spec"]
    condition = next(c for c in over["status"]["conditions"] if c["type"] == "PodScheduled")
    assert condition["reason"] == "Unschedulable"
    assert condition["message"].startswith("0/"), condition["message"]
    assert ("nodes are available: Insufficient quotas, quotaName: team-small, runtime: cpu:2,memory:2Gi, "
            "used: cpu:1,memory:1Gi, pod's request: cpu:2,memory:1Gi, exceedDimensions: [cpu]. preemption: "
            in condition["message"]), condition["message"]
