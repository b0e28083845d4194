"""VolumeRestrictions: a pod may not mount a disk another pod on the node already holds in a way that excludes it
(kube-scheduler v1.34 ``volumerestrictions/volume_restrictions.go``, ``isVolumeConflict``).

A volume of the incoming pod conflicts with a volume of a pod assigned to the node when both are

- GCE persistent disks with the same ``pdName``, unless both are read-only;
- AWS EBS volumes with the same ``volumeID`` (read-only or not);
- ISCSI volumes with the same ``iqn``, unless both are read-only;
- RBD volumes sharing a Ceph monitor, in the same ``pool`` (the API server's default "rbd" when unset) with the
  same ``image``, unless both are read-only.

A node with a conflict fails with "node(s) had no available disk" (Unschedulable: the pod holding the disk may go).

ReadWriteOncePod (``readWriteOncePodPVCsForPod``, ``satisfyReadWriteOncePod``): PreFilter looks up each claim of
the pod's ``persistentVolumeClaim`` volumes ('persistentvolumeclaim "data" not found' when one is missing,
UnschedulableAndUnresolvable); when a claim with the ReadWriteOncePod access mode is used by an assigned pod, every
node fails with "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
(Unschedulable: preempting that pod helps, and preemption's dry runs leave it out).

PreFilter skips a pod without such a disk or claim, so the common path costs four substring tests of its manifest.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

import numpy as np

from streams.objects.args import no_args
from streams.objects.podinfo import PodInfo
from streams.scheduler.framework import (
    ADD, ASSIGNED_POD_DELETE, NODE_ADD, REMOVED_PODS, SKIP, SUCCESS, UPDATE, ClusterEvent, Code, CycleState,
    FilterResult, Status, register)
from streams.scheduler.state import Cluster, PodAssigned, PodChanged, PodUnassigned

NAME = "VolumeRestrictions"
REASON = "node(s) had no available disk"
"""kube-scheduler's ``ErrReasonDiskConflict``."""
REASON_READ_WRITE_ONCE_POD = ("node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod "
                              "access mode")
"""kube-scheduler's ``ErrReasonReadWriteOncePodConflict``."""
PVC = "PersistentVolumeClaim"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
SOURCES = ("gcePersistentDisk", "awsElasticBlockStore", "iscsi", "rbd")
"""The volume sources with restrictions (``needsRestrictionsCheck``)."""
DEFAULT_RBD_POOL = "rbd"
"""The API server's default of ``rbd.pool``."""

Disk = tuple
"""("gcePersistentDisk", pdName, readOnly) | ("awsElasticBlockStore", volumeID) | ("iscsi", iqn, readOnly) |
("rbd", monitors, pool, image, readOnly), monitors a frozenset."""


@dataclasses.dataclass(frozen=True)
class VolumeRestrictionsArgs:
    """No args."""

    @classmethod
    def from_config(cls, raw) -> "VolumeRestrictionsArgs":
        no_args(NAME, raw)
        return cls()

    def validate(self) -> None:
        pass


def disks(record: Mapping | None) -> tuple[Disk, ...]:
    """The restricted volume sources of a Pod record's ``spec.volumes``."""
    text = (record or {}).get("manifest")
    if not isinstance(text, str) or not (
            '"gcePersistentDisk"' in text or '"awsElasticBlockStore"' in text or '"iscsi"' in text or '"rbd"' in text):
        return ()
    try:
        volumes = (json.loads(text).get("spec") or {}).get("volumes") or ()
    except (ValueError, AttributeError):
        return ()
    found = []
    for volume in volumes if isinstance(volumes, list) else ():
        if not isinstance(volume, dict):
            continue
        for source in SOURCES:
            spec = volume.get(source)
            if isinstance(spec, dict):
                found.append(_disk(source, spec))
    return tuple(found)


def _disk(source: str, spec: Mapping) -> Disk:
    read_only = spec.get("readOnly") is True
    if source == "gcePersistentDisk":
        return source, spec.get("pdName"), read_only
    if source == "awsElasticBlockStore":
        return source, spec.get("volumeID")
    if source == "iscsi":
        return source, spec.get("iqn"), read_only
    monitors = spec.get("monitors")
    monitors = frozenset(m for m in monitors if isinstance(m, str)) if isinstance(monitors, list) else frozenset()
    return source, monitors, spec.get("pool") or DEFAULT_RBD_POOL, spec.get("image"), read_only


def _claim_keys(pod: PodInfo | None) -> tuple[str, ...]:
    """The claims a pod's ``persistentVolumeClaim`` volumes name (``PVCRefCounts`` counts no ephemeral volume)."""
    return tuple(f"{pod.namespace}/{name}" for name, ephemeral in pod.claims if not ephemeral) if pod else ()


def conflict(disk: Disk, existing: Disk) -> bool:
    """Whether ``disk`` of the incoming pod conflicts with ``existing`` of an assigned pod (``isVolumeConflict``)."""
    if disk[0] != existing[0]:
        return False
    if disk[0] == "awsElasticBlockStore":
        return disk[1] == existing[1]
    if disk[0] == "rbd":
        return bool(disk[1] & existing[1]) and disk[2:4] == existing[2:4] and not (disk[4] and existing[4])
    return disk[1] == existing[1] and not (disk[2] and existing[2])


class VolumeRestrictions:
    name = NAME
    Args = VolumeRestrictionsArgs
    watched_kinds = frozenset({PVC})
    events_to_register = register(ASSIGNED_POD_DELETE, NODE_ADD, ClusterEvent(PVC, ADD), ClusterEvent(PVC, UPDATE))

    def __init__(self, args: VolumeRestrictionsArgs, cluster: Cluster) -> None:
        self.cluster = cluster
        self._held: dict[str, tuple[str, tuple[Disk, ...]]] = {}
        """Assigned pod key -> (its node, its restricted volumes), for the pods that have any."""
        self._last: tuple[dict | None, tuple[Disk, ...]] = (None, ())
        """(record, its disks) of the pod PreFilter last read: the pod then assigned is usually that one."""
        self._claim_users: dict[str, set[str]] = {}
        """Claim key -> the assigned pods whose ``persistentVolumeClaim`` volumes name it (``PVCRefCounts``)."""
        for key in sorted(cluster.assignment):
            self._assign(key, cluster.pods[key], cluster.assignment[key])

    def observe(self, change: object) -> None:
        if isinstance(change, PodAssigned):
            self._assign(change.key, change.pod, change.node)
        elif isinstance(change, PodUnassigned) or (isinstance(change, PodChanged) and change.new is None):
            self._held.pop(change.key, None)
            pod = change.pod if isinstance(change, PodUnassigned) else change.old
            for claim in _claim_keys(pod):
                users = self._claim_users.get(claim)
                if users is not None:
                    users.discard(change.key)
                    if not users:
                        del self._claim_users[claim]

    def _assign(self, key: str, pod: PodInfo, node: str) -> None:
        for claim in _claim_keys(pod):
            self._claim_users.setdefault(claim, set()).add(key)
        found = self._last[1] if pod.record is not None and pod.record is self._last[0] else disks(pod.record)
        if found:
            self._held[key] = (node, found)
        else:
            self._held.pop(key, None)

    def pre_filter(self, state: CycleState, pod: PodInfo) -> Status:
        wanted = disks(pod.record)
        self._last = (pod.record, wanted)
        state[NAME] = wanted
        if not pod.claims:
            return SUCCESS if wanted else SKIP
        exclusive: list[str] = []
        claims = self.cluster.objects.get(PVC, {})
        for name, ephemeral in pod.claims:
            if ephemeral:
                continue
            claim = claims.get(f"{pod.namespace}/{name}")
            if claim is None:
                return Status.unschedulable(f'persistentvolumeclaim "{name}" not found', NAME, resolvable=False)
            if READ_WRITE_ONCE_POD in (claim.get("accessModes") or ()):
                exclusive.append(f"{pod.namespace}/{name}")
        users = {user for claim in exclusive for user in self._claim_users.get(claim, ())}
        state[f"{NAME}/exclusive"] = users
        return SUCCESS if wanted or users else SKIP

    def filter(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> FilterResult:
        wanted = state.get(NAME) or ()
        failed = np.zeros(len(candidates), dtype=bool)
        removed = state.get(REMOVED_PODS) or ()
        rows = self.cluster.columns.row
        for key, (node, held) in self._held.items():
            row = rows.get(node)
            if row is None or row >= len(candidates) or not candidates[row] or failed[row] or key in removed:
                continue
            failed[row] = any(conflict(disk, existing) for disk in wanted for existing in held)
        exclusive = candidates & ~failed if state.get(f"{NAME}/exclusive", set()) - set(removed) else \
            np.zeros(len(candidates), dtype=bool)
        return FilterResult(candidates & ~failed & ~exclusive,
                            ((REASON, failed), (REASON_READ_WRITE_ONCE_POD, exclusive)), Code.UNSCHEDULABLE)
