"""VolumeBinding: a pod's PersistentVolumeClaims must be bound, or bindable, to volumes its node can reach
(kube-scheduler v1.34 ``volumebinding/volume_binding.go`` and ``binder.go``; component-helpers'
``FindMatchingVolume``).

PreFilter (``podHasPVCs``, ``GetPodVolumeClaims``), UnschedulableAndUnresolvable with the first problem:

- a claim that does not exist: 'persistentvolumeclaim "data" not found' (a generic ephemeral volume's claim:
  'waiting for ephemeral volume controller to create the persistentvolumeclaim "web-0-scratch"', and one the
  pod does not own: "PVC ns/c was not created for pod ns/p (pod is not owner)");
- a Lost claim: 'persistentvolumeclaim "data" bound to non-existent persistentvolume "pv-1"'; one being deleted:
  'persistentvolumeclaim "data" is being deleted';
- a claim neither fully bound (``spec.volumeName`` and the PV controller's ``pv.kubernetes.io/bind-completed``)
  nor WaitForFirstConsumer without a volume: "pod has unbound immediate PersistentVolumeClaims";
- more than ``MAX_DELAYED_CLAIMS`` WaitForFirstConsumer claims (koordstream's bound on what a pod's state keeps).

A pod without claims is skipped: PreFilter reads ``PodInfo.claims``, parsed once when the pod arrived.

Filter, per node (``FindPodVolumes``), UnschedulableAndUnresolvable with every reason that holds:

- bound claims: each volume's ``spec.nodeAffinity.required`` must match the node's labels, else "node(s) had
  volume node affinity conflict"; a claim bound to a volume that does not exist: "node(s) unavailable due to one
  or more pvc(s) bound to non-existent pv(s)";
- WaitForFirstConsumer claims: one whose ``volume.kubernetes.io/selected-node`` names another node fails at once;
  the others, smallest request first, each take the smallest Available volume of their class that fits them
  (capacity, volume mode, access modes, ``spec.selector``, node affinity; a volume pre-bound to the claim by its
  ``claimRef`` wins whatever its size), not taken by another claim of the pod; a claim left without one must be
  provisioned: its class's provisioner must not be ``kubernetes.io/no-provisioner`` and its
  ``allowedTopologies`` must admit the node, else "node(s) didn't find available persistent volumes to bind".
  Volumes of equal size are taken in name order (kube-scheduler takes the informer's order).

PreBind: the chosen volumes and the claims to provision on the node become the decision's ``volumeBindings``
(``framework.VOLUME_BINDINGS``). There is no Reserve: from the assignment on, the plugin assumes them (a chosen
volume's claimRef, a provisioned claim's selected node) as kube-scheduler's assume cache does, until the objects
come back bound. The bridge writes them (``streams/bridge/claims.py``): the claimRef on a chosen volume, the
selected-node annotation on a claim to provision. Binding the claim and provisioning its volume are the work of
kube-controller-manager's PV controller and of the class's external provisioner, which koordstream does not run.

Not ported: storage capacity (CSIStorageCapacity and CSIDriver are not koordstream kinds, so every node has room,
as kube-scheduler decides for drivers without capacity tracking), the in-tree-to-CSI translation of bound volumes,
and the Score, which kube-scheduler v1.34 runs only with the StorageCapacityScoring feature gate (off by default).
A Filter error of kube-scheduler's (a claim to provision without a class: 'no class for claim "ns/c"', or whose
class does not exist: 'failed to find storage class "fast"') fails the node with that message.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from streams.objects.args import ArgsError, ArgsReader
from streams.objects.podinfo import PodInfo
from streams.scheduler.framework import (
    ADD, NODE_ADD, NODE_UPDATE, SKIP, SUCCESS, UPDATE, VOLUME_BINDINGS, ClusterEvent, Code, CycleState,
    FilterResult, Status, register)
from streams.scheduler.state import Cluster, PodAssigned, PodChanged, PodUnassigned
from streams.scheduler import volumes
from streams.scheduler.volumes import ANN_SELECTED_NODE, CSI_NODE, PV, PVC, STORAGE_CLASS

NAME = "VolumeBinding"
REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
DEFAULT_BIND_TIMEOUT_SECONDS = 600
MAX_DELAYED_CLAIMS = 64
"""The most WaitForFirstConsumer claims one pod may bind: its bindings are kept beside it in the state (at most
578 bytes of JSON each, so 64 take 37 KB of the 64 KB ``limits.ENTRY_RESERVE``). A koordstream limit, not
kube-scheduler's."""
BINDINGS = f"{NAME}/bindings"
"""CycleState key: node row -> the bindings Filter found for the pod there."""


@dataclasses.dataclass(frozen=True)
class VolumeBindingArgs:
    """kube-scheduler's ``VolumeBindingArgs``."""

    bind_timeout_seconds: int = DEFAULT_BIND_TIMEOUT_SECONDS
    """How long kube-scheduler's PreBind waits for the PV controller (600 s). Read and checked, not used: the
    bridge writes the bindings and does not wait for them."""

    @classmethod
    def from_config(cls, raw) -> "VolumeBindingArgs":
        reader = ArgsReader(NAME, raw, {"bindTimeoutSeconds", "shape"})
        if reader.sequence("shape"):
            raise reader.fail("shape", "is only used with the StorageCapacityScoring feature gate, which is off")
        return cls(reader.integer("bindTimeoutSeconds", DEFAULT_BIND_TIMEOUT_SECONDS))

    def validate(self) -> None:
        if self.bind_timeout_seconds < 0:
            raise ArgsError(f"{NAME}: bindTimeoutSeconds: Invalid value: {self.bind_timeout_seconds}: "
                             "invalid BindTimeoutSeconds, should not be a negative value")


@dataclasses.dataclass(frozen=True)
class _Claims:
    """PreFilter's ``PodVolumeClaims``: the pod's fully bound claims and its WaitForFirstConsumer ones."""

    bound: tuple[Mapping, ...]
    delayed: tuple[tuple[str, Mapping], ...]
    """(claim key, claim), smallest request first."""


def _owned_by(claim: Mapping, pod: PodInfo) -> bool:
    """``ephemeral.VolumeIsForPod``: the pod is the claim's controller."""
    owners = (volumes.manifest(claim).get("metadata") or {}).get("ownerReferences") or ()
    return any(isinstance(o, dict) and o.get("controller") is True and o.get("uid") == pod.uid
               for o in owners if pod.uid)


def _pvc_changed(plugin: "VolumeBinding", event: ClusterEvent, pod: PodInfo) -> bool:
    """``isSchedulableAfterPersistentVolumeClaimChange``: a claim of the pod's namespace that the pod uses."""
    namespace, _, name = event.name.partition("/")
    return namespace == pod.namespace and any(claim == name for claim, _ in pod.claims)


class VolumeBinding:
    name = NAME
    Args = VolumeBindingArgs
    watched_kinds = frozenset({PV, PVC, STORAGE_CLASS, CSI_NODE})
    events_to_register = (
        register(ClusterEvent(STORAGE_CLASS, ADD), ClusterEvent(STORAGE_CLASS, UPDATE), ClusterEvent(PV, ADD),
                 ClusterEvent(PV, UPDATE), NODE_ADD, NODE_UPDATE, ClusterEvent(CSI_NODE, ADD),
                 ClusterEvent(CSI_NODE, UPDATE))
        + register(ClusterEvent(PVC, ADD), ClusterEvent(PVC, UPDATE), hint=_pvc_changed))

    def __init__(self, args: VolumeBindingArgs, cluster: Cluster) -> None:
        self.cluster = cluster
        self._assumed: dict[str, tuple[str, tuple[tuple[str, str | None], ...]]] = {}
        """Assigned pod key -> (its node, the bindings it was scheduled with): kube-scheduler's assume cache."""
        self._masks: dict[object, np.ndarray] = {}
        self._version = (-1, -1)
        for key in sorted(cluster.assignment):
            self._assume(key, cluster.assignment[key])

    def observe(self, change: object) -> None:
        if isinstance(change, PodAssigned):
            self._assume(change.key, change.node)
        elif isinstance(change, PodUnassigned) or (isinstance(change, PodChanged) and change.new is None):
            self._assumed.pop(change.key, None)

    def _assume(self, key: str, node: str) -> None:
        bindings = self.cluster.volume_bindings.get(key)
        if bindings:
            self._assumed[key] = (node, bindings)

    def _assumed_views(self) -> tuple[dict[str, str], dict[str, str]]:
        """(volume -> claim key it is assumed bound to, claim key -> node it is assumed provisioned on)."""
        claim_of: dict[str, str] = {}
        selected: dict[str, str] = {}
        for key in sorted(self._assumed):
            node, bindings = self._assumed[key]
            for claim, volume in bindings:
                if volume is None:
                    selected[claim] = node
                else:
                    claim_of[volume] = claim
        return claim_of, selected

    # -- PreFilter -------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo) -> Status:
        if not pod.claims:
            return SKIP
        objects = self.cluster.objects
        claims, classes = objects.get(PVC, {}), objects.get(STORAGE_CLASS, {})
        found: list[tuple[str, Mapping]] = []
        for name, ephemeral in pod.claims:
            key = f"{pod.namespace}/{name}"
            claim = claims.get(key)
            if claim is None:
                return Status.unschedulable(
                    f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"'
                    if ephemeral else volumes.not_found("persistentvolumeclaim", name), NAME, resolvable=False)
            if claim.get("phase") == "Lost":
                return Status.unschedulable(f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume '
                                            f'"{claim.get("volumeName") or ""}"', NAME, resolvable=False)
            if volumes.being_deleted(claim):
                return Status.unschedulable(f'persistentvolumeclaim "{name}" is being deleted', NAME, resolvable=False)
            if ephemeral and not _owned_by(claim, pod):
                return Status.unschedulable(f"PVC {pod.namespace}/{name} was not created for pod "
                                            f"{pod.namespace}/{pod.name} (pod is not owner)", NAME, resolvable=False)
            found.append((key, claim))
        bound, delayed = [], []
        for key, claim in found:
            if volumes.fully_bound(claim):
                bound.append(claim)
            elif volumes.is_delay_binding(claim, classes) and not claim.get("volumeName"):
                delayed.append((key, claim))
            else:
                return Status.unschedulable(REASON_UNBOUND_IMMEDIATE, NAME, resolvable=False)
        if len(delayed) > MAX_DELAYED_CLAIMS:
            return Status.unschedulable(f"pod has {len(delayed)} WaitForFirstConsumer PersistentVolumeClaims to bind, "
                                        f"over the {MAX_DELAYED_CLAIMS} a pod may bind in koordstream (the state "
                                        "budget of a pod)", NAME, resolvable=False)
        delayed.sort(key=lambda item: item[1].get("request") or 0)
        state[NAME] = _Claims(tuple(bound), tuple(delayed))
        return SUCCESS

    # -- Filter ----------------------------------------------------------------------

    def filter(self, state: CycleState, pod: PodInfo, candidates: np.ndarray) -> FilterResult:
        data: _Claims = state[NAME]
        count = len(candidates)
        volumes_by_name = self.cluster.objects.get(PV, {})
        node_conflict = np.zeros(count, dtype=bool)
        missing = np.zeros(count, dtype=bool)
        remaining = candidates.copy()
        for claim in data.bound:
            volume = volumes_by_name.get(claim["volumeName"])
            if volume is None:
                missing |= remaining
                break
            mask = self._affinity_mask(volumes.node_affinity(volume), count)
            node_conflict |= remaining & ~mask
            remaining &= mask
        bind_conflict = np.zeros(count, dtype=bool)
        errors: dict[str, np.ndarray] = {}
        per_node: dict[int, tuple[tuple[str, str | None], ...]] = {}
        if data.delayed:
            self._find(data.delayed, candidates, bind_conflict, errors, per_node)
        state[BINDINGS] = per_node
        failed = node_conflict | missing | bind_conflict
        for mask in errors.values():
            failed |= mask
        reasons = tuple((reason, mask) for reason, mask in ((REASON_NODE_CONFLICT, node_conflict),
                                                            (REASON_BIND_CONFLICT, bind_conflict),
                                                            (REASON_PV_NOT_EXIST, missing), *errors.items())
                        if mask.any())
        return FilterResult(candidates & ~failed, reasons, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def _find(self, delayed: tuple[tuple[str, Mapping], ...], candidates: np.ndarray, bind_conflict: np.ndarray,
              errors: dict[str, np.ndarray], per_node: dict[int, tuple[tuple[str, str | None], ...]]) -> None:
        """``FindPodVolumes`` for the unbound claims, on every candidate node."""
        claim_of, selected = self._assumed_views()
        names = self.cluster.columns.names
        count = len(candidates)
        rows = np.flatnonzero(candidates)
        pinned = {key: selected.get(key) or (claim["metadata"].get("annotations") or {}).get(ANN_SELECTED_NODE)
                  for key, claim in delayed}
        to_match = [(key, claim) for key, claim in delayed if pinned[key] is None]
        options = {key: self._options(key, claim, claim_of) for key, claim in to_match}
        classes = self.cluster.objects.get(STORAGE_CLASS, {})
        labels = self.cluster.row_labels()
        for row in rows:
            node = names[row]
            if any(at is not None and at != node for at in pinned.values()):
                bind_conflict[row] = True
                continue
            chosen: dict[str, str] = {}
            to_provision = [(key, claim) for key, claim in delayed if pinned[key] is not None]
            for key, claim in to_match:
                volume = self._match(options[key], row, count, chosen)
                if volume is None:
                    to_provision.append((key, claim))
                else:
                    chosen[volume] = key
            problem = self._provisionable(to_provision, classes, labels[row]) if to_provision else None
            if problem is None:
                per_node[int(row)] = tuple(sorted([(key, volume) for volume, key in chosen.items()]
                                                  + [(key, None) for key, _ in to_provision]))
            elif problem == REASON_BIND_CONFLICT:
                bind_conflict[row] = True
            else:
                errors.setdefault(problem, np.zeros(count, dtype=bool))[row] = True

    def _options(self, key: str, claim: Mapping, claim_of: Mapping[str, str]) -> tuple[list, list]:
        """(volumes pre-bound to the claim, other volumes that may take it) of the claim's class, before node
        affinity and the pod's other claims: ``FindMatchingVolume``'s node-independent checks."""
        wanted_class = volumes.claim_class(claim)
        request = claim.get("request") or 0
        mode = claim.get("volumeMode") or "Filesystem"
        modes = set(claim.get("accessModes") or ())
        selector = (volumes.manifest(claim).get("spec") or {}).get("selector")
        prebound, others = [], []
        for name, volume in sorted(self.cluster.objects.get(PV, {}).items()):
            if volumes.volume_class(volume) != wanted_class:
                continue
            holder = claim_of.get(name) or volume.get("claimRef")
            if holder is not None and holder != key:
                continue
            if (volume.get("storage") or 0) < request or (volume.get("volumeMode") or "Filesystem") != mode \
                    or volumes.being_deleted(volume):
                continue
            terms = volumes.node_affinity(volume)
            if holder == key:
                prebound.append((name, terms))
                continue
            if volume.get("phase") != "Available" \
                    or not volumes.selector_matches(selector, volume["metadata"].get("labels") or {}) \
                    or not modes <= set(volume.get("accessModes") or ()):
                continue
            others.append((volume.get("storage") or 0, name, terms))
        others.sort(key=lambda item: (item[0], item[1]))
        return prebound, [(name, terms) for _, name, terms in others]

    def _match(self, options: tuple[list, list], row: int, count: int, chosen: Mapping[str, str]) -> str | None:
        prebound, others = options
        for name, terms in prebound:
            if name not in chosen:
                return name if self._affinity_mask(terms, count)[row] else None
        for name, terms in others:
            if name not in chosen and self._affinity_mask(terms, count)[row]:
                return name
        return None

    @staticmethod
    def _provisionable(claims: list[tuple[str, Mapping]], classes: Mapping[str, Mapping],
                       labels: Mapping[str, str]) -> str | None:
        """``checkVolumeProvisions``: None when every claim can be provisioned on the node, else the reason."""
        for key, claim in claims:
            class_name = volumes.claim_class(claim)
            if not class_name:
                return f'no class for claim "{key}"'
            storage_class = classes.get(class_name)
            if storage_class is None:
                return f'failed to find storage class "{class_name}"'
            if storage_class.get("provisioner") in ("", volumes.NO_PROVISIONER) \
                    or not volumes.topology_matches(storage_class, labels):
                return REASON_BIND_CONFLICT
        return None

    def _affinity_mask(self, terms, count: int) -> np.ndarray:
        """The nodes whose labels satisfy ``terms`` (``CheckNodeAffinity``), cached until node labels change."""
        version = (self.cluster.labels_version, count)
        if version != self._version:
            self._masks, self._version = {}, version
        mask = self._masks.get(terms)
        if mask is None:
            mask = np.fromiter((volumes.affinity_matches(terms, labels) for labels in self.cluster.row_labels()),
                               dtype=bool, count=count)
            self._masks[terms] = mask
        return mask

    # -- PreBind ----------------------------------------------------------------------

    def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> dict[str, str]:
        per_node = state.get(BINDINGS)
        if per_node:
            bindings = per_node.get(self.cluster.columns.row.get(node))
            if bindings:
                state[VOLUME_BINDINGS] = bindings
        return {}
