"""Which writes a scheduling decision's ``volumeBindings`` ask of the cluster: kube-scheduler's VolumeBinding
PreBind (``BindPodVolumes``), planned against the objects the bridge last saw, so a re-read decision writes nothing
twice.

For each binding of a ``Scheduled`` decision, before the pod's Binding:

- **a claim to provision** (``volume`` null) -> a merge patch of the claim's annotation
  ``volume.kubernetes.io/selected-node: <node>`` (``AssumePodVolumes`` sets it on a copy of the claim and
  ``BindPodVolumes`` updates the claim); nothing when the claim shows that node already. The class's external
  provisioner then creates a volume on that node and kube-controller-manager's PV controller binds it: neither
  runs in koordstream.
- **a volume chosen for the claim** -> a merge patch of the PersistentVolume: ``spec.claimRef`` the claim's
  reference (kind, apiVersion, namespace, name, uid, resourceVersion) and, unless the volume was bound to that claim
  before, the annotation ``pv.kubernetes.io/bound-by-controller: "yes"`` (``GetBindVolumeToClaim``); nothing when
  the volume names the claim (same uid) already. The PV controller completes the binding on the claim.

``reads(decision)`` names the objects to read first (API paths), ``plan_claims(decision, seen)`` takes them (None
for a 404). A claim or a volume the cluster does not show is reported (``ClaimPlan.missing``) and not written:
kube-scheduler's PreBind fails then, and the pod is scheduled again. Each patch carries the ``resourceVersion`` it
was planned against, so a claim or volume that changed meanwhile is refused (409) rather than overwritten; reading
and planning again decides afresh.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

SELECTED_NODE = "volume.kubernetes.io/selected-node"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
CLAIMS, VOLUMES = "persistentvolumeclaims", "persistentvolumes"


@dataclasses.dataclass(frozen=True)
class ClaimPatch:
    """One JSON merge patch (RFC 7386) of a claim or a volume (core/v1 ``resource``)."""

    resource: str
    namespace: str | None
    name: str
    body: dict

    @property
    def path(self) -> str:
        return _path(self.resource, self.namespace, self.name)


def _path(resource: str, namespace: str | None, name: str) -> str:
    scope = f"/namespaces/{namespace}" if namespace else ""
    return f"/api/v1{scope}/{resource}/{name}"


def claim_path(key: str) -> str:
    namespace, _, name = key.partition("/")
    return _path(CLAIMS, namespace, name)


def volume_path(name: str) -> str:
    return _path(VOLUMES, None, name)


def reads(decision: Mapping) -> tuple[tuple[str, str], ...]:
    """(resource, API path) of every claim and volume ``plan_claims`` needs for ``decision``, each once."""
    if decision.get("result") != "Scheduled" or not decision.get("nodeName"):
        return ()
    found: dict[str, str] = {}
    for binding in decision.get("volumeBindings") or ():
        found.setdefault(claim_path(binding["claim"]), CLAIMS)
        if binding.get("volume") is not None:
            found.setdefault(volume_path(binding["volume"]), VOLUMES)
    return tuple((resource, path) for path, resource in found.items())


@dataclasses.dataclass(frozen=True)
class ClaimPlan:
    patches: tuple[ClaimPatch, ...] = ()
    """In the decision's binding order; all of them before the pod's Binding."""
    missing: tuple[str, ...] = ()
    """"persistentvolumeclaim ns/name" or "persistentvolume name" the cluster does not show."""


def plan_claims(decision: Mapping, seen: Mapping[str, Mapping | None]) -> ClaimPlan:
    """The writes ``decision`` asks of the claims and volumes as ``seen`` (API path -> object, None or absent when
    the API server has none)."""
    node = decision.get("nodeName")
    if decision.get("result") != "Scheduled" or not node:
        return ClaimPlan()
    patches: list[ClaimPatch] = []
    missing: list[str] = []
    for binding in decision.get("volumeBindings") or ():
        key, volume_name = binding["claim"], binding.get("volume")
        claim = seen.get(claim_path(key))
        if claim is None:
            missing.append(f"persistentvolumeclaim {key}")
            continue
        if volume_name is None:
            patch = _select_node(claim, node)
        elif (volume := seen.get(volume_path(volume_name))) is None:
            missing.append(f"persistentvolume {volume_name}")
            continue
        else:
            patch = _bind_volume(volume, claim)
        if patch is not None:
            patches.append(patch)
    return ClaimPlan(tuple(patches), tuple(missing))


def _select_node(claim: Mapping, node: str) -> ClaimPatch | None:
    meta = claim["metadata"]
    if (meta.get("annotations") or {}).get(SELECTED_NODE) == node:
        return None
    return ClaimPatch(CLAIMS, meta.get("namespace") or "default", meta["name"], {"metadata": {
        "annotations": {SELECTED_NODE: node}, **_version(meta)}})


def _bind_volume(volume: Mapping, claim: Mapping) -> ClaimPatch | None:
    claim_meta, meta = claim["metadata"], volume["metadata"]
    namespace = claim_meta.get("namespace") or "default"
    current = (volume.get("spec") or {}).get("claimRef") or {}
    bound_before = (current.get("name") == claim_meta["name"] and (current.get("namespace") or "default") == namespace
                    and current.get("uid") in (None, "", claim_meta.get("uid")))
    body: dict = {}
    if not bound_before or current.get("uid") != claim_meta.get("uid"):
        reference = {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": namespace,
                     "name": claim_meta["name"], "uid": claim_meta.get("uid"),
                     "resourceVersion": claim_meta.get("resourceVersion")}
        body["spec"] = {"claimRef": {k: v for k, v in reference.items() if v is not None}}
    if not bound_before and BOUND_BY_CONTROLLER not in (meta.get("annotations") or {}):
        body["metadata"] = {"annotations": {BOUND_BY_CONTROLLER: "yes"}}
    if not body:
        return None
    body["metadata"] = {**body.get("metadata", {}), **_version(meta)}
    return ClaimPatch(VOLUMES, None, meta["name"], body)


def _version(meta: Mapping) -> dict:
    version = meta.get("resourceVersion")
    return {"resourceVersion": version} if version else {}
