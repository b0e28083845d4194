"""What the volume plugins read of PersistentVolumes, PersistentVolumeClaims and StorageClasses
(component-helpers ``storage/volume``: ``GetPersistentVolumeClaimClass``, ``GetPersistentVolumeClass``,
``CheckNodeAffinity``, ``MatchTopologySelectorTerms``; cloud-provider's ``LabelZonesToSet``).

Shared by VolumeBinding, VolumeZone and NodeVolumeLimits, which read the same objects from
``Cluster.objects`` and must read them alike. Parsed manifests are cached by their text, so a PV's node
affinity is read once whatever the number of pods that use it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping

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
    (keys prefixed "field:"); None when the PV has no required node affinity."""
    required = ((manifest(volume).get("spec") or {}).get("nodeAffinity") or {}).get("required")
    if not isinstance(required, dict):
        return None
    terms = required.get("nodeSelectorTerms")
    return tuple(_requirements(term.get("matchExpressions"), False) + _requirements(term.get("matchFields"), True)
                 for term in (terms if isinstance(terms, list) else ()) if isinstance(term, dict))


def affinity_matches(terms: NodeSelectorTerms | None, labels: Mapping[str, str]) -> bool:
    """``CheckNodeAffinity``: no required affinity, or one term whose requirements all hold on the node's labels.
    A term without requirements matches nothing; matchFields see a node without a name, as
    ``CheckNodeAffinity`` builds it from the labels alone."""
    if terms is None:
        return True
    return any(term and all(matches(r, "" if r.key.startswith("field:") else labels.get(r.key)) for r in term)
               for term in terms)


def topology_matches(storage_class: Mapping, labels: Mapping[str, str]) -> bool:
    """``MatchTopologySelectorTerms`` of a class's ``allowedTopologies``: none allows every node; else one term
    whose every matchLabelExpressions key is a node label with one of its values (an empty term selects nothing)."""
    terms = manifest(storage_class).get("allowedTopologies")
    if not isinstance(terms, list) or not terms:
        return True
    for term in terms:
        expressions = term.get("matchLabelExpressions") if isinstance(term, dict) else None
        if not isinstance(expressions, list) or not expressions:
            continue
        if all(isinstance(e, dict) and labels.get(str(e.get("key"))) in (e.get("values") or ()) for e in expressions):
            return True
    return False


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
