"""NodeVolumeLimits: a node may not attach more CSI volumes of a driver than its CSINode allows (kube-scheduler v1.34
``nodevolumelimits/csi.go``, ``CSILimits``).

The limit of a driver on a node is its CSINode's ``spec.drivers[].allocatable.count``, else the node's allocatable
``attachable-volumes-csi-<driver>`` (``getVolumeLimits`` still reads it; driver names that make the key longer than
63 characters, which kube-scheduler hashes, are not read there); a driver with neither has no limit. A volume is counted once per node as "<driver>/<handle>", where

- a claim bound to a PersistentVolume with a ``csi`` source counts as (``spec.csi.driver``,
  ``spec.csi.volumeHandle``); one bound to another kind of volume is not counted (the in-tree-to-CSI translation
  is not ported);
- an unbound claim, or one whose volume is not known yet, counts as its StorageClass's provisioner with a handle
  made of the claim's key (kube-scheduler prefixes it with a random id; here "unbound-", so decisions replay);
  a claim without a class or whose class is not known is not counted.

Filter: the incoming pod's volumes that are not already attached on the node (another pod of the node uses the
same one) are added per driver to those the node's pods hold; over the driver's limit the node fails with "node(s)
exceed max volume count" (Unschedulable: removing pods may help). A claim of the incoming pod that does not exist
fails every node with 'looking up PVC ns/c: persistentvolumeclaim "c" not found' (UnschedulableAndUnresolvable);
an assigned pod's missing claim is not counted. PreFilter skips a pod without claims.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from streams.objects.args import no_args
from streams.objects.podinfo import PodInfo
from streams.scheduler.framework import (
    ADD, ASSIGNED_POD_DELETE, NODE_ADD, REMOVED_PODS, SKIP, SUCCESS, UPDATE, ClusterEvent, Code, CycleState,
    FilterResult, Status, register)
from streams.scheduler.state import Cluster, PodAssigned, PodChanged, PodUnassigned
from streams.scheduler import volumes
from streams.scheduler.volumes import CSI_NODE, PV, PVC, STORAGE_CLASS

NAME = "NodeVolumeLimits"
REASON = "node(s) exceed max volume count"
"""kube-scheduler's ``ErrReasonMaxVolumeCountExceeded``."""
UNBOUND_PREFIX = "unbound"
"""The handle prefix of a volume counted by its class (kube-scheduler's ``randomVolumeIDPrefix``)."""

Claims = tuple[tuple[str, bool], ...]


@dataclasses.dataclass(frozen=True)
class NodeVolumeLimitsArgs:
    """No args."""

    @classmethod
    def from_config(cls, raw) -> "NodeVolumeLimitsArgs":
        no_args(NAME, raw)
        return cls()

    def validate(self) -> None:
        pass


ATTACH_LIMIT_PREFIX = "attachable-volumes-csi-"
"""``GetCSIAttachLimitKey``'s prefix of a node allocatable that limits a driver."""


def limits(csinode: Mapping | None, allocatable: Mapping[str, int]) -> dict[str, int]:
    """``getVolumeLimits``: driver -> the most volumes of it the node may attach, for the drivers that have one."""
    found = {name[len(ATTACH_LIMIT_PREFIX):]: value for name, value in allocatable.items()
             if name.startswith(ATTACH_LIMIT_PREFIX)}
    found.update({d["name"]: d["count"] for d in (csinode or {}).get("drivers") or () if d.get("count") is not None})
    return found


def _pvc_added(plugin: "NodeVolumeLimits", event: ClusterEvent, pod: PodInfo) -> bool:
    """``isSchedulableAfterPVCAdded``: a claim of the pod's namespace that the pod uses."""
    namespace, _, name = event.name.partition("/")
    return namespace == pod.namespace and any(claim == name for claim, _ in pod.claims)


class NodeVolumeLimits:
    name = NAME
    Args = NodeVolumeLimitsArgs
    watched_kinds = frozenset({PV, PVC, STORAGE_CLASS, CSI_NODE})
    events_to_register = (register(ASSIGNED_POD_DELETE, NODE_ADD, ClusterEvent(CSI_NODE, ADD),
                                   ClusterEvent(CSI_NODE, UPDATE))
                          + register(ClusterEvent(PVC, ADD), hint=_pvc_added))

    def __init__(self, args: NodeVolumeLimitsArgs, cluster: Cluster) -> None:
        self.cluster = cluster
        self._held: dict[str, dict[str, tuple[str, Claims]]] = {}
        """Node -> assigned pod key -> (its namespace, its claims), for the pods that have claims."""
        for key in sorted(cluster.assignment):
            self._assign(key, cluster.pods[key], cluster.assignment[key])

    def observe(self, change: object) -> None:
        if isinstance(change, PodAssigned):
            self._assign(change.key, change.pod, change.node)
        elif isinstance(change, PodUnassigned):
            self._held.get(change.node, {}).pop(change.key, None)
        elif isinstance(change, PodChanged) and change.new is None:
            for pods in self._held.values():
                pods.pop(change.key, None)

    def _assign(self, key: str, pod: PodInfo, node: str) -> None:
        if pod.claims:
            self._held.setdefault(node, {})[key] = (pod.namespace, pod.claims)

    def pre_filter(self, state: CycleState, pod: PodInfo) -> Status:
        return SUCCESS if pod.claims else SKIP

    def filter(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> FilterResult:
        count = len(candidates)
        wanted, missing = self._attachable(pod.namespace, pod.claims, new=True)
        if missing is not None:
            return FilterResult(np.zeros(count, dtype=bool), ((missing, candidates.copy()),),
                                Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        failed = np.zeros(count, dtype=bool)
        if not wanted:
            return FilterResult(candidates, ((REASON, failed),))
        csinodes = self.cluster.objects.get(CSI_NODE, {})
        removed = state.get(REMOVED_PODS) or ()
        names = self.cluster.columns.names
        for row in np.flatnonzero(candidates):
            node = names[row]
            allowed = limits(csinodes.get(node), self.cluster.nodes[node].allocatable)
            if not allowed:
                continue
            attached: dict[str, str] = {}
            for key, (namespace, claims) in sorted(self._held.get(node, {}).items()):
                if key not in removed:
                    attached.update(self._attachable(namespace, claims, new=False)[0])
            added: dict[str, int] = {}
            for handle, driver in wanted.items():
                if handle not in attached:
                    added[driver] = added.get(driver, 0) + 1
            in_use: dict[str, int] = {}
            for driver in attached.values():
                in_use[driver] = in_use.get(driver, 0) + 1
            failed[row] = any(driver in allowed and in_use.get(driver, 0) + n > allowed[driver]
                              for driver, n in added.items())
        return FilterResult(candidates & ~failed, ((REASON, failed),), Code.UNSCHEDULABLE)

    def _attachable(self, namespace: str, claims: Claims, new: bool) -> tuple[dict[str, str], str | None]:
        """``filterAttachableVolumes``: ({"<driver>/<handle>": driver}, None), or the error of an incoming pod's
        missing claim."""
        objects = self.cluster.objects
        found: dict[str, str] = {}
        for name, _ in claims:
            claim = objects.get(PVC, {}).get(f"{namespace}/{name}")
            if claim is None:
                if new:
                    return {}, f"looking up PVC {namespace}/{name}: " + volumes.not_found("persistentvolumeclaim",
                                                                                            name)
                continue
            driver, handle = self._driver_info(claim, f"{namespace}/{name}")
            if driver and handle:
                found[f"{driver}/{handle}"] = driver
        return found, None

    def _driver_info(self, claim: Mapping, key: str) -> tuple[str, str]:
        """``getCSIDriverInfo``: (driver, handle) of the claim's volume, else of its class's provisioner."""
        volume = self.cluster.objects.get(PV, {}).get(claim.get("volumeName") or "")
        if volume is not None:
            csi = (volumes.manifest(volume).get("spec") or {}).get("csi") or {}
            return volume.get("csiDriver") or "", str(csi.get("volumeHandle") or "")
        class_name = volumes.claim_class(claim)
        storage_class = self.cluster.objects.get(STORAGE_CLASS, {}).get(class_name) if class_name else None
        if storage_class is None:
            return "", ""
        return storage_class.get("provisioner") or "", f"{UNBOUND_PREFIX}-{key}"
