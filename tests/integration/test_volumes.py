"""Volumes end to end through the broker: a WaitForFirstConsumer claim takes the local volume of the one node that
has it, a claim to provision lands where its class's allowedTopologies admit, a missing claim stays Unschedulable
with kube-scheduler's message, and the claims read back with ``koord get pvc``."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration

NAMESPACE = "e2e-volumes"
ZONE = "topology.kubernetes.io/zone"


def node(name: str, zone: str) -> str:
    resources = '{cpu: "4", memory: 8Gi, pods: "110"}'
    return f"""\
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{e2e-scenario: volumes, {ZONE}: {zone}, kubernetes.io/hostname: {name}}}}}
spec: {{taints: [{{key: e2e-scenario, value: volumes, effect: NoSchedule}}]}}
status: {{capacity: {resources}, allocatable: {resources}}}
"""


def pod(name: str, claim: str) -> str:
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {NAMESPACE}}}
spec:
  nodeSelector: {{e2e-scenario: volumes}}
  tolerations: [{{key: e2e-scenario, operator: Equal, value: volumes, effect: NoSchedule}}]
  containers:
  - {{name: main, image: app, resources: {{requests: {{cpu: 100m, memory: 64Mi}}}}}}
  volumes:
  - {{name: data, persistentVolumeClaim: {{claimName: {claim}}}}}
"""


STORAGE = f"""\
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {{name: e2e-local}}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {{name: e2e-zonal}}
provisioner: csi.example.com
volumeBindingMode: WaitForFirstConsumer
allowedTopologies: [{{matchLabelExpressions: [{{key: {ZONE}, values: [e2e-zone-a]}}]}}]
---
apiVersion: v1
kind: PersistentVolume
metadata: {{name: e2e-local-b}}
spec:
  capacity: {{storage: 5Gi}}
  accessModes: [ReadWriteOnce]
  storageClassName: e2e-local
  local: {{path: /mnt/disk}}
  nodeAffinity: {{required: {{nodeSelectorTerms: [{{matchExpressions: [{{key: kubernetes.io/hostname, operator: In,
    values: [e2e-vol-b]}}]}}]}}}}
status: {{phase: Available}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: data, namespace: {NAMESPACE}}}
spec: {{accessModes: [ReadWriteOnce], storageClassName: e2e-local, resources: {{requests: {{storage: 1Gi}}}}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: scratch, namespace: {NAMESPACE}}}
spec: {{accessModes: [ReadWriteOnce], storageClassName: e2e-zonal, resources: {{requests: {{storage: 1Gi}}}}}}
"""


def apply(cluster, *manifests: str) -> None:
    cluster.koord("apply", "-f", "-", "--wait", "--timeout", "60", input="---\n".join(manifests))


def placed(cluster, name: str) -> tuple[str | None, str]:
    """(node, message of the latest decision) of a pod."""
    decisions = cluster.koord_json("explain", "pod", name, "-n", NAMESPACE)["decisions"]
    return decisions[-1].get("nodeName"), decisions[-1]["message"]


def test_claims_place_their_pods_where_their_volumes_can_be(cluster):
    apply(cluster, node("e2e-vol-a", "e2e-zone-a"), node("e2e-vol-b", "e2e-zone-b"), STORAGE)
    apply(cluster, pod("local-user", "data"), pod("provisioned-user", "scratch"), pod("orphan", "missing"))

    assert placed(cluster, "local-user")[0] == "e2e-vol-b"
    node_name, message = placed(cluster, "provisioned-user")
    assert node_name == "e2e-vol-a"
    assert "volume.kubernetes.io/selected-node set on the PersistentVolumeClaims e2e-volumes/scratch" in message
    node_name, message = placed(cluster, "orphan")
    assert node_name is None and 'persistentvolumeclaim "missing" not found.' in message

    claims = cluster.koord_json("get", "pvc", "-n", NAMESPACE)
    assert sorted(c["metadata"]["name"] for c in claims["items"]) == ["data", "scratch"]
