"""VolumeZone: a pod's bound volumes must be in the node's zone and region (kube-scheduler v1.34
``volumezone/volume_zone.go``).

PreFilter reads the zone labels of the PersistentVolume bound to each of the pod's ``persistentVolumeClaim``
volumes (generic ephemeral volumes are not looked at, as in kube-scheduler): ``failure-domain.beta.kubernetes.io/
zone`` and ``/region``, ``topology.kubernetes.io/zone`` and ``/region``, each value a set of zones joined by "__".
UnschedulableAndUnresolvable with:

- 'persistentvolumeclaim "data" not found', 'persistentvolume "pv-1" not found',
  'storageclass.storage.k8s.io "fast" not found' (the API server's NotFound messages);
- "PersistentVolumeClaim had no name", "PersistentVolumeClaim had no pv name and storageClass name",
  "PersistentVolume had no name" (an unbound claim whose class binds Immediate).

An unbound WaitForFirstConsumer claim is skipped (VolumeBinding places it); a pod whose volumes carry no zone label
is skipped too.

Filter: a node without any of the four labels passes (a single-zone cluster); otherwise each volume label's key
(or, for a beta key the node lacks, its GA key) must be on the node with one of the volume's values, else
"node(s) had no available volume zone".
"""

from __future__ import annotations

import dataclasses

import numpy as np

from streams.objects.args import no_args
from streams.objects.podinfo import PodInfo
from streams.scheduler.framework import (
    ADD, NODE_ADD, NODE_UPDATE, SKIP, SUCCESS, UPDATE, ClusterEvent, Code, CycleState, FilterResult, Status, register)
from streams.scheduler.state import Cluster
from streams.scheduler import volumes
from streams.scheduler.volumes import PV, PVC, STORAGE_CLASS

NAME = "VolumeZone"
REASON = "node(s) had no available volume zone"
"""kube-scheduler's ``ErrReasonConflict``."""
BETA_ZONE, BETA_REGION = "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region"
ZONE, REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (BETA_ZONE, BETA_REGION, ZONE, REGION)
GA_LABEL = {BETA_ZONE: ZONE, BETA_REGION: REGION}


@dataclasses.dataclass(frozen=True)
class VolumeZoneArgs:
    """No args."""

    @classmethod
    def from_config(cls, raw) -> "VolumeZoneArgs":
        no_args(NAME, raw)
        return cls()

    def validate(self) -> None:
        pass


def _pvc_changed(plugin: "VolumeZone", event: ClusterEvent, pod: PodInfo) -> bool:
    """``isSchedulableAfterPersistentVolumeClaimChange``: a claim the pod names, in its namespace."""
    namespace, _, name = event.name.partition("/")
    return namespace == pod.namespace and any(claim == name for claim, ephemeral in pod.claims if not ephemeral)


def _class_added(plugin: "VolumeZone", event: ClusterEvent, pod: PodInfo) -> bool:
    """``isSchedulableAfterStorageClassAdded``: only a WaitForFirstConsumer class may help."""
    added = plugin.cluster.objects.get(STORAGE_CLASS, {}).get(event.name)
    return added is None or added.get("volumeBindingMode") == volumes.WAIT_FOR_FIRST_CONSUMER


def topologies(volume) -> tuple[tuple[str, frozenset[str]], ...]:
    """``getPVTopologies``: (label key, zones) of the volume's topology labels that parse."""
    labels = volume["metadata"].get("labels") or {}
    return tuple((key, zones) for key in TOPOLOGY_LABELS if key in labels and (zones := volumes.zones(labels[key])))


class VolumeZone:
    name = NAME
    Args = VolumeZoneArgs
    watched_kinds = frozenset({PV, PVC, STORAGE_CLASS})
    events_to_register = (register(NODE_ADD, NODE_UPDATE, ClusterEvent(PV, ADD), ClusterEvent(PV, UPDATE))
                          + register(ClusterEvent(STORAGE_CLASS, ADD), hint=_class_added)
                          + register(ClusterEvent(PVC, ADD), ClusterEvent(PVC, UPDATE), hint=_pvc_changed))

    def __init__(self, args: VolumeZoneArgs, cluster: Cluster) -> None:
        self.cluster = cluster

    def pre_filter(self, state: CycleState, pod: PodInfo) -> Status:
        if not pod.claims:
            return SKIP
        objects = self.cluster.objects
        claims, pvs, classes = objects.get(PVC, {}), objects.get(PV, {}), objects.get(STORAGE_CLASS, {})
        found: list[tuple[str, frozenset[str]]] = []
        for name, ephemeral in pod.claims:
            if ephemeral:
                continue
            if not name:
                return Status.unschedulable("PersistentVolumeClaim had no name", NAME, resolvable=False)
            claim = claims.get(f"{pod.namespace}/{name}")
            if claim is None:
                return Status.unschedulable(volumes.not_found("persistentvolumeclaim", name), NAME, resolvable=False)
            volume_name = claim.get("volumeName")
            if not volume_name:
                class_name = volumes.claim_class(claim)
                if not class_name:
                    return Status.unschedulable("PersistentVolumeClaim had no pv name and storageClass name", NAME,
                                                resolvable=False)
                storage_class = classes.get(class_name)
                if storage_class is None:
                    return Status.unschedulable(volumes.not_found("storageclass.storage.k8s.io", class_name), NAME,
                                                resolvable=False)
                if storage_class.get("volumeBindingMode") == volumes.WAIT_FOR_FIRST_CONSUMER:
                    continue
                return Status.unschedulable("PersistentVolume had no name", NAME, resolvable=False)
            volume = pvs.get(volume_name)
            if volume is None:
                return Status.unschedulable(volumes.not_found("persistentvolume", volume_name), NAME, resolvable=False)
            found.extend(topologies(volume))
        if not found:
            return SKIP
        state[NAME] = tuple(found)
        return SUCCESS

    def filter(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> FilterResult:
        wanted = state[NAME]
        failed = np.zeros(len(candidates), dtype=bool)
        for row, labels in enumerate(self.cluster.row_labels()):
            if not candidates[row] or not any(key in labels for key in TOPOLOGY_LABELS):
                continue
            for key, zones in wanted:
                value = labels.get(key)
                if value is None:
                    value = labels.get(GA_LABEL.get(key, key))
                if value is None or value not in zones:
                    failed[row] = True
                    break
        return FilterResult(candidates & ~failed, ((REASON, failed),), Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
