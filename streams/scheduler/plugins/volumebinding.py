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
"""CycleState key: the ``_Found`` bindings of the pod's WaitForFirstConsumer claims on every node."""


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


@dataclasses.dataclass(frozen=True)
class _Found:
    """Filter's ``podVolumesByNode`` as columns: the claims to provision wherever the pod goes, and per claim to
    match the volume each node gives it."""

    provisioned: tuple[str, ...]
    matched: tuple[str, ...]
    picks: tuple[np.ndarray, ...]
    """Per matched claim, the index in ``volumes`` of its volume on each node; -1: provisioned there."""
    volumes: tuple[str, ...]

    def bindings(self, row: int) -> tuple[tuple[str, str | None], ...]:
        """(claim key, volume or None to provision) on the node of ``row``, by claim key."""
        matched = [(key, self.volumes[picks[row]] if picks[row] >= 0 else None)
                   for key, picks in zip(self.matched, self.picks)]
        return tuple(sorted([(key, None) for key in self.provisioned] + matched, key=lambda item: item[0]))


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
        self._masks = volumes.AffinityMasks()
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
        if data.delayed:
            state[BINDINGS] = self._find(data.delayed, candidates, bind_conflict, errors)
        failed = node_conflict | missing | bind_conflict
        for mask in errors.values():
            failed |= mask
        reasons = tuple((reason, mask) for reason, mask in ((REASON_NODE_CONFLICT, node_conflict),
                                                            (REASON_BIND_CONFLICT, bind_conflict),
                                                            (REASON_PV_NOT_EXIST, missing), *errors.items())
                        if mask.any())
        return FilterResult(candidates & ~failed, reasons, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def _find(self, delayed: tuple[tuple[str, Mapping], ...], candidates: np.ndarray, bind_conflict: np.ndarray,
              errors: dict[str, np.ndarray]) -> "_Found":
        """``FindPodVolumes`` for the unbound claims on every candidate node at once: per claim to match, the
        volume each node gives it (``FindMatchingVolume``, claims smallest first, a volume taken by an earlier
        claim on that node skipped), then ``checkVolumeProvisions`` for the claims left, in kube-scheduler's
        order (claims with a selected node first), the first failing claim giving the node's reason."""
        claim_of, selected = self._assumed_views()
        count = len(candidates)
        rows = self.cluster.columns.row
        pinned = {key: selected.get(key) or (claim["metadata"].get("annotations") or {}).get(ANN_SELECTED_NODE)
                  for key, claim in delayed}
        undecided = candidates.copy()
        for node in {at for at in pinned.values() if at is not None}:
            here = np.zeros(count, dtype=bool)
            row = rows.get(node)
            if row is not None and row < count:
                here[row] = True
            bind_conflict |= undecided & ~here
            undecided &= here
        to_match = [(key, claim) for key, claim in delayed if pinned[key] is None]
        ids: dict[str, int] = {}
        chosen: list[np.ndarray] = []
        for key, claim in to_match:
            chosen.append(self._choose(self._options(key, claim, claim_of), count, ids, chosen))
        classes = self.cluster.objects.get(STORAGE_CLASS, {})
        provisions = [(claim, np.ones(count, dtype=bool)) for key, claim in delayed if pinned[key] is not None]
        provisions += [(claim, picked < 0) for (key, claim), picked in zip(to_match, chosen)]
        for claim, needed in provisions:
            needs = undecided & needed
            if not needs.any():
                continue
            problem, allowed = self._provisionable(claim, classes, count)
            if problem is not None:
                errors.setdefault(problem, np.zeros(count, dtype=bool))
                errors[problem] |= needs
                undecided &= ~needs
            else:
                bind_conflict |= needs & ~allowed
                undecided &= ~(needs & ~allowed)
        return _Found(tuple(key for key, _ in delayed if pinned[key] is not None), tuple(key for key, _ in to_match),
                      tuple(chosen), tuple(sorted(ids, key=ids.__getitem__)))

    def _choose(self, options: tuple[list, list], count: int, ids: dict[str, int],
                earlier: list[np.ndarray]) -> np.ndarray:
        """``FindMatchingVolume`` on every node: the id (in ``ids``) of the volume each node gives the claim (-1:
        none, to provision), skipping on each node the volumes ``earlier`` claims took there."""
        prebound, others = options
        picked = np.full(count, -1, dtype=np.int64)
        open_rows = np.ones(count, dtype=bool)
        for group, final in ((prebound, True), (others, False)):
            for name, terms in group:
                if not open_rows.any():
                    return picked
                index = ids.setdefault(name, len(ids))
                free = open_rows.copy()
                for taken in earlier:
                    free &= taken != index
                mask = self._affinity_mask(terms, count)
                picked[free & mask] = index
                open_rows &= ~(free & mask) if not final else ~free
        return picked

    def _provisionable(self, claim: Mapping, classes: Mapping[str, Mapping], count: int) -> tuple[str | None,
                                                                                                  np.ndarray]:
        """``checkVolumeProvisions`` of one claim: (the error, when it cannot be checked, else None, and the nodes
        where its class may provision it)."""
        class_name = volumes.claim_class(claim)
        meta = claim["metadata"]
        if not class_name:
            return f'no class for claim "{meta.get("namespace") or "default"}/{meta["name"]}"', np.zeros(count, bool)
        storage_class = classes.get(class_name)
        if storage_class is None:
            return f'failed to find storage class "{class_name}"', np.zeros(count, dtype=bool)
        if storage_class.get("provisioner") in ("", volumes.NO_PROVISIONER):
            return None, np.zeros(count, dtype=bool)
        return None, self._affinity_mask(volumes.topology_terms(storage_class), count)

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

    def _affinity_mask(self, terms, count: int) -> np.ndarray:
        """The nodes whose labels satisfy ``terms`` (``CheckNodeAffinity``), kept until node labels change."""
        return self._masks.mask(terms, self.cluster.row_labels(), (self.cluster.labels_version, count))

    # -- PreBind ----------------------------------------------------------------------

    def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> dict[str, str]:
        found: _Found | None = state.get(BINDINGS)
        if found is not None:
            state[VOLUME_BINDINGS] = found.bindings(self.cluster.columns.row[node])
        return {}
