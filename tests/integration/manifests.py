"""Manifests several integration tests apply."""

from __future__ import annotations

COLOCATION_CONFIG = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: slo-controller-config, namespace: koordinator-system}
data:
  colocation-config: |
    {"enable": true, "cpuReclaimThresholdPercent": 65, "memoryReclaimThresholdPercent": 65,
     "degradeTimeMinutes": 15, "updateTimeThresholdSeconds": 300, "resourceDiffThreshold": 0.1}
"""
"""The strategy of Koordinator's batchresource ``TestPluginCalculate`` cases."""


def pre_bound_node(name: str, cpu: str, memory: str) -> str:
    """A Node only pre-bound pods run on: the taint keeps other tests' pending pods in the shared cluster
    off it, so its numbers are the test's own."""
    return f"""\
apiVersion: v1
kind: Node
metadata: {{name: {name}}}
spec:
  taints: [{{key: koordstream.io/e2e, value: only-pre-bound-pods, effect: NoSchedule}}]
status:
  capacity: {{cpu: "{cpu}", memory: {memory}, pods: "110"}}
  allocatable: {{cpu: "{cpu}", memory: {memory}, pods: "110"}}
"""


def scenario_node(name: str, scenario: str, cpu: str, memory: str, pods: str = "110") -> str:
    """A Node of one scenario: labelled and tainted with it, so that only that scenario's pods, which tolerate
    the taint, land on it in the shared cluster."""
    resources = f'{{cpu: "{cpu}", memory: {memory}, pods: "{pods}"}}'
    return f"""\
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{e2e-scenario: {scenario}}}}}
spec: {{taints: [{{key: e2e-scenario, value: {scenario}, effect: NoSchedule}}]}}
status: {{capacity: {resources}, allocatable: {resources}}}
"""
