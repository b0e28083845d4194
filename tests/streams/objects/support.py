"""Shared helpers for the objects tests: convert YAML text, read back problems, one sample per kind."""

import re
import textwrap

from streams.objects import ManifestError, ObjectRecord, load_documents, to_record

_PROBLEM = re.compile(r"^<stdin>:\d+: document \d+(?: \([^)]*\))?: ")


def record_of(text: str) -> ObjectRecord:
    """The record of the single document in ``text``."""
    (doc,) = load_documents("-", stdin_text=textwrap.dedent(text))
    return to_record(doc)


def problems_of(text: str) -> list[str]:
    """The "path: reason" part of every problem ``to_record`` finds in the single document in ``text``."""
    try:
        record_of(text)
    except ManifestError as err:
        return [_PROBLEM.sub("", problem) for problem in err.problems]
    raise AssertionError("the document converted without a problem")


SAMPLES = {
    "Node": """
        apiVersion: v1
        kind: Node
        metadata:
          name: node-1
          labels: {kubernetes.io/arch: amd64, node.koordinator.sh/numa-topology-policy: SingleNUMANode}
        spec:
          unschedulable: true
          taints:
          - {key: dedicated, value: gpu, effect: NoSchedule}
          - {key: node.kubernetes.io/unreachable, effect: NoExecute}
        status:
          capacity: {cpu: "64", memory: 256Gi, pods: "110"}
          allocatable: {cpu: 63500m, memory: 250Gi, pods: "110", kubernetes.io/batch-cpu: "20000"}
    """,
    "Pod": """
        apiVersion: v1
        kind: Pod
        metadata:
          name: web-1
          namespace: shop
          uid: 6f1d6c1e-0000-4000-8000-000000000001
          labels: {koordinator.sh/qosClass: LS}
          annotations: {scheduling.koordinator.sh/resource-spec: '{"preferredCPUBindPolicy":"SpreadByPCPUs"}'}
        spec:
          schedulerName: koord-scheduler
          priority: 9000
          priorityClassName: koord-prod
          nodeSelector: {kubernetes.io/arch: amd64}
          tolerations:
          - {key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}
          - {operator: Exists, effect: NoExecute, tolerationSeconds: 300}
          initContainers:
          - name: init
            resources: {requests: {cpu: "2", memory: 1Gi}}
          containers:
          - name: app
            resources:
              requests: {cpu: 500m, memory: 512Mi}
              limits: {cpu: "1", memory: 1Gi}
          - name: log
            resources:
              limits: {cpu: 250m, memory: 128Mi}
          overhead: {cpu: 100m}
        status:
          phase: Running
    """,
    "NodeMetric": """
        apiVersion: slo.koordinator.sh/v1alpha1
        kind: NodeMetric
        metadata:
          name: node-1
        status:
          updateTime: "2024-05-01T10:00:00Z"
          nodeMetric:
            nodeUsage:
              resources: {cpu: 12500m, memory: 64Gi}
          podsMetric:
          - namespace: shop
            name: web-1
            podUsage:
              resources: {cpu: 800m, memory: 600Mi}
    """,
    "ConfigMap": """
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: slo-controller-config
          namespace: koordinator-system
        data:
          colocation-config: '{"enable": true}'
          resource-threshold-config: '{"clusterStrategy": {"enable": true}}'
    """,
    "ElasticQuota": """
        apiVersion: scheduling.sigs.k8s.io/v1alpha1
        kind: ElasticQuota
        metadata:
          name: team-a
          namespace: team-a
          labels: {quota.scheduling.koordinator.sh/parent: koordinator-root-quota}
        spec:
          min: {cpu: "40", memory: 80Gi}
          max: {cpu: "80", memory: 160Gi}
    """,
    "ElasticQuotaProfile": """
        apiVersion: quota.koordinator.sh/v1alpha1
        kind: ElasticQuotaProfile
        metadata:
          name: amd64-profile
          namespace: kube-system
          labels: {kubernetes.io/arch: amd64}
        spec:
          quotaName: amd64-root-quota
          nodeSelector:
            matchLabels: {kubernetes.io/arch: amd64}
    """,
    "Reservation": """
        apiVersion: scheduling.koordinator.sh/v1alpha1
        kind: Reservation
        metadata:
          name: reserve-gpu
        spec:
          owners:
          - labelSelector: {matchLabels: {app: trainer}}
          template:
            spec:
              nodeName: node-1
              containers:
              - name: main
                resources:
                  requests: {cpu: "4", memory: 8Gi, nvidia.com/gpu: "1"}
    """,
    "Device": """
        apiVersion: scheduling.koordinator.sh/v1alpha1
        kind: Device
        metadata:
          name: node-1
        spec:
          devices:
          - type: gpu
            id: GPU-0a1b2c3d
            minor: 0
            health: true
            resources: {koordinator.sh/gpu-core: "100", koordinator.sh/gpu-memory: 80Gi, koordinator.sh/gpu-memory-ratio: "100"}
          - type: rdma
            minor: 1
            resources: {koordinator.sh/rdma: "100"}
    """,
    "NodeResourceTopology": """
        apiVersion: topology.node.k8s.io/v1alpha1
        kind: NodeResourceTopology
        metadata:
          name: node-1
          annotations: {kubelet.koordinator.sh/cpu-manager-policy: '{"policy":"none"}'}
        topologyPolicies: [None]
        zones:
        - name: node-0
          type: Node
          resources:
          - {name: cpu, capacity: "52", allocatable: "52", available: "52"}
          - {name: memory, capacity: 263856452Ki, allocatable: 263856452Ki, available: 263856452Ki}
        - name: node-1
          type: Node
          resources:
          - {name: cpu, capacity: "52", allocatable: "50", available: "50"}
          - {name: memory, capacity: 264221144Ki, allocatable: 264221144Ki, available: 264221144Ki}
    """,
}
"""One valid, feature-rich manifest per supported kind."""
