"""The API resources the bridge lists and watches.

Every watched resource is one the conversion path of ``koord apply`` knows (``streams.objects.kinds``):
the bridge builds the manifest from the API object and calls the same ``to_record``. The version is the
one Koordinator serves (v1alpha1 for its custom resources). The ConfigMap watch is narrowed to the one
ConfigMap koordstream reads, ``koordinator-system/slo-controller-config``.
"""

from __future__ import annotations

import dataclasses

from streams.objects.kinds import KINDS

SLO_CONFIG_NAMESPACE = "koordinator-system"
SLO_CONFIG_NAME = "slo-controller-config"


@dataclasses.dataclass(frozen=True)
class WatchedResource:
    kind: str
    group: str
    """"" for the core group."""
    version: str
    plural: str
    namespace: str | None = None
    """Watch only this namespace (None: all namespaces, or a cluster-scoped kind)."""
    field_selector: str | None = None

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def name(self) -> str:
        """The resource as RBAC and the checkpoint name it: "pods", "elasticquotas.scheduling.sigs.k8s.io"."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def collection_path(self) -> str:
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        scope = f"/namespaces/{self.namespace}" if self.namespace else ""
        return f"{root}{scope}/{self.plural}"


WATCHED: tuple[WatchedResource, ...] = (
    WatchedResource("Node", "", "v1", "nodes"),
    WatchedResource("Pod", "", "v1", "pods"),
    WatchedResource("ConfigMap", "", "v1", "configmaps", namespace=SLO_CONFIG_NAMESPACE,
                    field_selector=f"metadata.name={SLO_CONFIG_NAME}"),
    WatchedResource("NodeMetric", "slo.koordinator.sh", "v1alpha1", "nodemetrics"),
    WatchedResource("ElasticQuota", "scheduling.sigs.k8s.io", "v1alpha1", "elasticquotas"),
    WatchedResource("ElasticQuotaProfile", "quota.koordinator.sh", "v1alpha1", "elasticquotaprofiles"),
    WatchedResource("Reservation", "scheduling.koordinator.sh", "v1alpha1", "reservations"),
    WatchedResource("Device", "scheduling.koordinator.sh", "v1alpha1", "devices"),
    WatchedResource("NodeResourceTopology", "topology.node.k8s.io", "v1alpha1", "noderesourcetopologies"),
    WatchedResource("PodGroup", "scheduling.sigs.k8s.io", "v1alpha1", "podgroups"),
    WatchedResource("PodMigrationJob", "scheduling.koordinator.sh", "v1alpha1", "podmigrationjobs"),
    WatchedResource("PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets"),
    WatchedResource("StorageClass", "storage.k8s.io", "v1", "storageclasses"),
    WatchedResource("CSINode", "storage.k8s.io", "v1", "csinodes"),
    WatchedResource("PersistentVolume", "", "v1", "persistentvolumes"),
    WatchedResource("PersistentVolumeClaim", "", "v1", "persistentvolumeclaims"),
)
"""Nodes first: a pod listed before its node would be Unschedulable until the node arrives."""



def _check() -> None:
    for resource in WATCHED:
        spec = KINDS[resource.kind]
        if not spec.accepts(resource.api_version):
            raise ValueError(f"{resource.kind}: {resource.api_version} is not a version koord apply accepts")


_check()
