"""ScarceResourceAvoidance, ported from scarceresourceavoidance/scarce_resource_avoidance_test.go with its numbers,
and the v1.6 article's configuration applied as written."""

import numpy as np
import pytest

from streams.scheduler.framework import CycleState
from streams.scheduler.plugins.scarceresourceavoidance import NAME
from tests.streams.scheduler.support import applied, decisions, k8s_node, k8s_pod, plugin_of, pod_info, run

ARTICLE_SCARCE = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- pluginConfig:
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

GPU_NODE = {"cpu": "96", "memory": "512Gi", "nvidia.com/gpu": "8", "xx.xx/xx": "8"}
CPU_NODE = {"cpu": "96", "memory": "512Gi"}
CPU_POD = {"cpu": "16", "memory": "32Gi"}


@pytest.mark.parametrize("requests, want", [
    (CPU_POD, [50, 100]),
    ({**CPU_POD, "nvidia.com/gpu": "1"}, [100, 100]),
], ids=["TestPlugin_Score (node1 50 < node2 100)", "a GPU pod is not penalized on the GPU node"])
def test_plugin_score(requests, want):
    domain, _ = run(applied(ARTICLE_SCARCE), k8s_node("test-node1", GPU_NODE), k8s_node("test-node2", CPU_NODE))
    plugin = plugin_of(domain, NAME, "koord-scheduler")
    pod = pod_info(k8s_pod("test-pod-1", requests=requests, limits=requests))
    assert list(plugin.score(CycleState(), pod, np.ones(2, dtype=bool))) == want


def test_article_config_keeps_a_cpu_only_pod_off_the_gpu_node():
    _, out = run(applied(ARTICLE_SCARCE), k8s_node("a-gpu", {**GPU_NODE, "pods": "110"}),
                 k8s_node("b-cpu", {**CPU_NODE, "pods": "110"}), k8s_pod("web", requests=CPU_POD))
    web = decisions(out)[-1]
    assert (web["result"], web["nodeName"]) == ("Scheduled", "b-cpu")
    assert [(s["node"], s["score"]) for s in web["scores"]] == [("b-cpu", 400), ("a-gpu", 300)]
    assert web["scores"][0]["plugins"] == {"NodeResourcesFitPlus": 200, "ScarceResourceAvoidance": 200}
