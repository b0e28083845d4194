"""What the volume plugins read of PersistentVolumes, PersistentVolumeClaims and StorageClasses
(component-helpers ``storage/volume``: ``GetPersistentVolumeClaimClass``, ``GetPersistentVolumeClass``,
``CheckNodeAffinity`` and ``MatchTopologySelectorTerms`` as node masks, ``AffinityMasks``; cloud-provider's
``LabelZonesToSet``).

Shared by VolumeBinding, VolumeZone and NodeVolumeLimits, which read the same objects from
``Cluster.objects`` and must read them alike. Parsed manifests are cached by their text, so a PV's node
affinity is read once whatever the number of pods that use it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping

import numpy as np

from streams.objects.nodeselector import matches
from streams.objects.podinfo import Requirement

PV, PVC, STORAGE_CLASS, CSI_NODE = "PersistentVolume", "PersistentVolumeClaim", "StorageClass", "CSINode"
"""The kinds (and the cluster-event resources) of the storage objects."""
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
"""The claim annotation that asks the provisioner for a volume on that node (``volume.AnnSelectedNode``)."""
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
"""Set by the PV controller once it has bound a claim (``volume.AnnBindCompleted``)."""
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
"""The deprecated class annotation, read before ``spec.storageClassName``."""
NO_PROVISIONER = "kubernetes.io/no-provisioner"
"""The provisioner of classes whose volumes are only created by hand (``volume.NotSupportedProvisioner``)."""
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
NodeSelectorTerms = tuple[tuple[Requirement, ...], ...]


def claim_class(claim: Mapping) -> str:
    """``GetPersistentVolumeClaimClass``: the beta annotation, else ``spec.storageClassName``, else ""."""
    annotations = claim["metadata"].get("annotations") or {}
    if ANN_BETA_STORAGE_CLASS in annotations:
        return annotations[ANN_BETA_STORAGE_CLASS]
    return claim.get("storageClassName") or ""


def volume_class(volume: Mapping) -> str:
    """``GetPersistentVolumeClass``: the beta annotation, else ``spec.storageClassName``."""
    annotations = volume["metadata"].get("annotations") or {}
    return annotations.get(ANN_BETA_STORAGE_CLASS, volume.get("storageClassName") or "")


def is_delay_binding(claim: Mapping, classes: Mapping[str, Mapping]) -> bool:
    """``IsDelayBindingMode``: the claim's class exists and binds WaitForFirstConsumer (no class, or one not
    found, binds Immediate)."""
    name = claim_class(claim)
    found = classes.get(name) if name else None
    return found is not None and found.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER


def fully_bound(claim: Mapping) -> bool:
    """``isPVCFullyBound``: a volume named and the PV controller's bind-completed annotation."""
    return bool(claim.get("volumeName")) and ANN_BIND_COMPLETED in (claim["metadata"].get("annotations") or {})


@functools.lru_cache(maxsize=4096)
def _manifest(text: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def manifest(record: Mapping) -> dict:
    """The record's manifest, parsed (cached by its text)."""
    text = record.get("manifest")
    return _manifest(text) if isinstance(text, str) else {}


def being_deleted(record: Mapping) -> bool:
    return bool((manifest(record).get("metadata") or {}).get("deletionTimestamp"))


def _requirements(raw: object, field: bool) -> tuple[Requirement, ...]:
    out = []
    for item in raw if isinstance(raw, list) else ():
        if isinstance(item, dict):
            values = item.get("values") if isinstance(item.get("values"), list) else []
            key = str(item.get("key", ""))
            out.append(Requirement(f"field:{key}" if field else key, str(item.get("operator", "")),
                                   tuple(str(v) for v in values)))
    return tuple(out)


def node_affinity(volume: Mapping) -> NodeSelectorTerms | None:
    """``spec.nodeAffinity.required.nodeSelectorTerms`` of a PV: each term's matchExpressions and matchFields
    (keys prefixed "field:"); None when the PV has no required node affinity. Cached by the manifest's text."""
    text = volume.get("manifest")
    return _node_affinity(text) if isinstance(text, str) else None


@functools.lru_cache(maxsize=4096)
def _node_affinity(text: str) -> NodeSelectorTerms | None:
    required = ((_manifest(text).get("spec") or {}).get("nodeAffinity") or {}).get("required")
    if not isinstance(required, dict):
        return None
    terms = required.get("nodeSelectorTerms")
    return tuple(_requirements(term.get("matchExpressions"), False) + _requirements(term.get("matchFields"), True)
                 for term in (terms if isinstance(terms, list) else ()) if isinstance(term, dict))


def topology_terms(storage_class: Mapping) -> NodeSelectorTerms | None:
    """A class's ``allowedTopologies`` as node selector terms (each matchLabelExpressions ``key In values``) for
    ``AffinityMasks``: None (every node) when it has none, and a term without expressions selects nothing."""
    terms = manifest(storage_class).get("allowedTopologies")
    if not isinstance(terms, list) or not terms:
        return None
    out = []
    for term in terms:
        expressions = term.get("matchLabelExpressions") if isinstance(term, dict) else None
        out.append(tuple(Requirement(str(e.get("key")), "In", tuple(str(v) for v in e.get("values") or ()))
                         for e in (expressions if isinstance(expressions, list) else ()) if isinstance(e, dict)))
    return tuple(out)


def zones(value: str) -> frozenset[str]:
    """``LabelZonesToSet``: a zone label's value, which may list several zones joined by "__"."""
    return frozenset(zone.strip() for zone in value.split("__") if zone.strip())


def not_found(resource: str, name: str) -> str:
    """The API server's NotFound message, as the listers return it: 'persistentvolumeclaim "data" not found'."""
    return f'{resource} "{name}" not found'


def selector_matches(selector: object, labels: Mapping[str, str]) -> bool:
    """``metav1.LabelSelectorAsSelector(selector).Matches(labels)`` of a claim's ``spec.selector`` (absent: every
    volume): matchLabels are ``key In (value)``; In, NotIn, Exists, DoesNotExist as for node labels."""
    if not isinstance(selector, Mapping):
        return True
    required = [Requirement(str(k), "In", (str(v),)) for k, v in (selector.get("matchLabels") or {}).items()]
    required += _requirements(selector.get("matchExpressions"), False)
    return all(matches(r, labels.get(r.key)) for r in required)


class AffinityMasks:
    """``CheckNodeAffinity`` of node selector terms over every node at once (a term holds when all its requirements
    do, a term without requirements selects nothing, no terms at all select every node; matchFields see a node
    without a name, as ``CheckNodeAffinity`` builds the node from its labels alone): a node mask per distinct set of terms,
    built from an index of the nodes' label values (one pass over the labels per label key), kept until the node
    labels change. A local volume's affinity (one hostname) is then one lookup, not a pass over the nodes."""

    def __init__(self) -> None:
        self._version: object = None
        self._masks: dict[object, np.ndarray] = {}
        self._index: dict[str, dict[str, np.ndarray]] = {}
        self._labels: list[Mapping[str, str]] = []

    def mask(self, terms: NodeSelectorTerms | None, labels: list[Mapping[str, str]], version: object) -> np.ndarray:
        """The nodes (rows of ``labels``) whose labels satisfy ``terms``; ``version`` changes when labels do."""
        if version != self._version:
            self._version, self._masks, self._index, self._labels = version, {}, {}, labels
        mask = self._masks.get(terms)
        if mask is None:
            mask = self._terms_mask(terms, len(labels))
            self._masks[terms] = mask
        return mask

    def _terms_mask(self, terms: NodeSelectorTerms | None, count: int) -> np.ndarray:
        if terms is None:
            return np.ones(count, dtype=bool)
        out = np.zeros(count, dtype=bool)
        for term in terms:
            if term:
                held = np.ones(count, dtype=bool)
                for requirement in term:
                    held &= self._requirement_mask(requirement, count)
                out |= held
        return out

    def _requirement_mask(self, requirement: Requirement, count: int) -> np.ndarray:
        op, key = requirement.operator, requirement.key
        if key.startswith("field:"):
            return np.full(count, matches(requirement, ""), dtype=bool)
        rows = self._rows(key)
        if op in ("In", "NotIn"):
            found = np.zeros(count, dtype=bool)
            for value in requirement.values:
                if value in rows:
                    found |= rows[value]
            return found if op == "In" else ~found
        if op in ("Exists", "DoesNotExist"):
            present = np.zeros(count, dtype=bool)
            for mask in rows.values():
                present |= mask
            return present if op == "Exists" else ~present
        return np.fromiter((matches(requirement, labels.get(key)) for labels in self._labels), dtype=bool,
                           count=count)

    def _rows(self, key: str) -> dict[str, np.ndarray]:
        """Label value -> the nodes that have it, for one key."""
        rows = self._index.get(key)
        if rows is None:
            positions: dict[str, list[int]] = {}
            for row, labels in enumerate(self._labels):
                value = labels.get(key)
                if value is not None:
                    positions.setdefault(value, []).append(row)
            count = len(self._labels)
            rows = {}
            for value, found in positions.items():
                mask = np.zeros(count, dtype=bool)
                mask[found] = True
                rows[value] = mask
            self._index[key] = rows
        return rows
