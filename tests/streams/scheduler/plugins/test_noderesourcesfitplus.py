"""NodeResourcesFitPlus, ported from noderesourcefitplus/node_resources_fit_plus_test.go with its numbers,
and the v1.6 article's configuration applied as written."""

import numpy as np
import pytest

from streams.scheduler.framework import CycleState
from streams.scheduler.plugins.noderesourcesfitplus import NAME, NodeResourcesFitPlusArgs
from tests.streams.scheduler.support import (
    applied, decisions, k8s_node, k8s_pod, plugin_of, pod_info, profile_with, run)

ARTICLE_FIT_PLUS = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
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
  plugins:
    score:
      enabled:
      - name: NodeResourcesFitPlus
        weight: 2
  schedulerName: koord-scheduler
"""

NODE1 = {"cpu": "96", "memory": "512Gi", "nvidia.com/gpu": "8", "ephemeral-storage": "100Gi", "pods": "110"}
NODE2 = {**NODE1, "xx.xx/xx": "8"}
GPU_POD = {"cpu": "16", "memory": "32Gi", "nvidia.com/gpu": "2", "ephemeral-storage": "10Gi"}


def test_plugin_score():
    """TestPlugin_Score: node1 already holds a 16-cpu, 32Gi, 4-GPU pod. node1: cpu 66, memory 87, gpu 75 ->
    (66 + 87 + 2 * 75) / 4 = 75; node2: 83, 93, 25 -> (83 + 93 + 50) / 4 = 56. The GPU binpack wins."""
    domain, _ = run(applied(ARTICLE_FIT_PLUS), k8s_node("test-node1", NODE1), k8s_node("test-node2", NODE2),
                    k8s_pod("test-pod-0", requests={"cpu": "16", "memory": "32Gi", "nvidia.com/gpu": "4"},
                            limits={"cpu": "16", "memory": "32Gi", "nvidia.com/gpu": "4"}, node_name="test-node1"))
    plugin = plugin_of(domain, NAME, "koord-scheduler")
    pod = pod_info(k8s_pod("test-pod-1", requests=GPU_POD, limits=GPU_POD))
    scores = plugin.score(CycleState(), pod, np.ones(2, dtype=bool))
    assert list(scores) == [75, 56]


def test_article_config_bin_packs_a_gpu_pod():
    _, out = run(applied(ARTICLE_FIT_PLUS), k8s_node("gpu-a", NODE1), k8s_node("gpu-b", NODE1),
                 k8s_pod("first", requests={"nvidia.com/gpu": "4", "cpu": "1"}, node_name="gpu-b"),
                 k8s_pod("second", requests={"nvidia.com/gpu": "2", "cpu": "1"}))
    second = decisions(out)[-1]
    assert (second["result"], second["nodeName"]) == ("Scheduled", "gpu-b")
    assert [s["node"] for s in second["scores"]] == ["gpu-b", "gpu-a"]


@pytest.mark.parametrize("containers, init, want", [
    ([{"cpu": "2"}, {"cpu": "3"}], [], 5000),
    ([{"cpu": "2"}], [({"cpu": "10"}, None)], 10000),
    ([{"cpu": "2"}], [({"cpu": "1"}, "Always")], 3000),
    ([{"cpu": "2"}], [({"cpu": "1"}, "Always"), ({"cpu": "5"}, None)], 5000),
], ids=["Test_calculatePodResourceRequest_WithSidecar/containers only",
        "Test_calculatePodResourceRequest_WithSidecar/with regular init container (max-based)",
        "Test_calculatePodResourceRequest_WithSidecar/with sidecar init container (sum-based)",
        "Test_calculatePodResourceRequest_WithSidecar/with both sidecar and regular init containers"])
def test_pod_side_request_with_sidecars(containers, init, want):
    pod = pod_info(k8s_pod(
        "p", containers=[{"name": f"c{i}", "resources": {"requests": r}} for i, r in enumerate(containers)],
        init_containers=[{"name": f"i{i}", "resources": {"requests": r}, **({"restartPolicy": p} if p else {})}
                         for i, (r, p) in enumerate(init)]))
    assert pod.nonzero_request("cpu") == want


def test_pod_side_defaults_and_overhead_in_whole_units():
    pod = pod_info(k8s_pod("p", containers=[{"name": "a", "resources": {}}], overhead={"cpu": "250m"}))
    assert (pod.nonzero_request("cpu"), pod.nonzero_request("memory")) == (100 + 1, 200 * 1024 * 1024)


def test_no_configured_resource_requested_scores_every_node_100():
    domain, _ = run(profile_with(NAME, {}, score={"enabled": [{"name": NAME}]}), k8s_node("n", NODE1))
    plugin = plugin_of(domain, NAME)
    pod = pod_info(k8s_pod("p", requests={"cpu": "1"}))
    assert list(plugin.score(CycleState(), pod, np.ones(1, dtype=bool))) == [100]


def test_unknown_strategy_is_rejected():
    with pytest.raises(ValueError, match="must be MostAllocated or LeastAllocated"):
        NodeResourcesFitPlusArgs.from_config({"resources": {"cpu": {"type": "Packed", "weight": 1}}})
