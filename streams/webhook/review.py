"""AdmissionReview (``admission.k8s.io/v1``) in, AdmissionReview out: the pure core of ``koord webhook``.

- ``mutate``: a pod on CREATE is onboarded by the ClusterColocationProfiles of ``ClusterView``
  (``streams.colocationprofile.mutation``); the answer carries a JSONPatch replacing ``/metadata`` and
  ``/spec`` when they changed. A profile naming a PriorityClass the cluster lacks refuses the pod, as
  Koordinator's webhook does (its failed Get is an admission error).
- ``mutate`` of a Node's ``status`` on UPDATE: the resource amplification of Koordinator's node webhook
  (``nodestatus``): the amplified cpu/memory allocatable and the ``raw-allocatable`` annotation, as a
  JSONPatch; an unreadable annotation is allowed unchanged with a warning.
- ``validate``: the object goes through the checks ``koord apply`` runs (``streams.objects.to_record``:
  every field of ElasticQuota, Reservation, PodMigrationJob, Device, the gang annotations of a Pod, ...),
  then the ones the pipeline runs when the object arrives: the ElasticQuota tree against the quotas in the
  cluster (``elasticquota.objects.validate`` / ``validate_delete``), the slo-controller-config
  (``parse_slo_config``) and a ClusterColocationProfile (``parse_profile``). A refusal's message is
  ``koord apply``'s line without its file position: ``(ElasticQuota default/q): spec.min.cpu: ...``.
- A request for a kind or operation it does not serve is allowed with a warning, never refused.

The ElasticQuota tree check here sees the quotas of the cluster, not those ElasticQuotaProfiles build
(the domain's ``admit`` sees both); a profile-built quota is checked when the domain builds it.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re

from streams.colocationprofile.mutation import mutate_pod
from streams.colocationprofile.profile import ColocationProfile, ProfileError, parse_profile
from streams.koordinator.colocationprofile import KIND as PROFILE_KIND
from streams.objects import ManifestError, to_record
from streams.objects.documents import Document
from streams.objects.kinds import KINDS
from streams.quotas import specs_of
from streams.scheduler.plugins.elasticquota.objects import QuotaRejected, validate as validate_quota, validate_delete
from streams.sloconfig.configmap import DEFAULT_CONFIG, parse_slo_config
from streams.sloconfig.document import CONFIG_NAME, CONFIG_NAMESPACE, ConfigError
from streams.webhook import nodestatus

REVIEW_API_VERSION = "admission.k8s.io/v1"
QUOTA_KIND = "ElasticQuota"
AUDIT_CHECKED = "checked"
_POSITION = re.compile(r"^admission:1: document 0 ")


@dataclasses.dataclass
class ClusterView:
    """What the webhook reads from the API server (``streams.webhook.informers`` keeps it current)."""

    profiles: dict[str, ColocationProfile] = dataclasses.field(default_factory=dict)
    namespaces: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    """Namespace name -> its labels."""
    priority_classes: dict[str, tuple[int, str | None]] = dataclasses.field(default_factory=dict)
    """PriorityClass name -> (value, preemptionPolicy)."""
    quotas: dict[str, dict] = dataclasses.field(default_factory=dict)
    """ElasticQuota name -> its record (``to_record``)."""


def response(request: dict, allowed: bool = True, message: str | None = None, patch: list | None = None,
             warnings: list[str] | None = None, code: int = 403, checked: bool = False) -> dict:
    """``checked``: the object went through the checks; the API server's audit log then carries
    ``<webhook name>/checked: "true"`` on the request."""
    answer: dict = {"uid": request.get("uid", ""), "allowed": allowed}
    if checked:
        answer["auditAnnotations"] = {AUDIT_CHECKED: "true"}
    if not allowed:
        answer["status"] = {"code": code, "message": message or "", "reason": "Forbidden" if code == 403 else ""}
    if patch:
        answer["patchType"] = "JSONPatch"
        answer["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
    if warnings:
        answer["warnings"] = warnings
    return {"apiVersion": REVIEW_API_VERSION, "kind": "AdmissionReview", "response": answer}


def _kind(request: dict) -> str:
    return (request.get("kind") or {}).get("kind", "")


def mutate(request: dict, view: ClusterView) -> dict:
    """The mutating answer to one AdmissionRequest."""
    kind, operation = _kind(request), request.get("operation")
    if kind == "Node" and request.get("subResource") == "status":
        return _mutate_node_status(request)
    if kind != "Pod" or operation != "CREATE" or request.get("subResource"):
        return response(request, warnings=[f"koordstream mutates only Pod CREATE, not {kind} {operation}; allowed"])
    pod = request.get("object") or {}
    namespace = request.get("namespace") or (pod.get("metadata") or {}).get("namespace") or ""
    name = (pod.get("metadata") or {}).get("name")
    try:
        mutated, _ = mutate_pod(pod, view.profiles.values(), namespace_labels=view.namespaces.get(namespace),
                                priority_classes=view.priority_classes,
                                draw_key=f"{namespace}/{name}" if name else request.get("uid", ""))
    except ProfileError as error:
        return response(request, False, str(error), code=500)
    patch = [{"op": "add" if key not in pod else "replace", "path": f"/{key}", "value": mutated[key]}
             for key in ("metadata", "spec") if mutated.get(key) != pod.get(key)]
    return response(request, patch=patch)


def _mutate_node_status(request: dict) -> dict:
    if request.get("operation") != "UPDATE":
        return response(request)
    node = request.get("object") or {}
    try:
        annotations, allocatable = nodestatus.amplified(node, request.get("oldObject"))
    except nodestatus.AnnotationError as error:
        return response(request, warnings=[f"koordstream did not amplify node {_name(node)}: {error}; allowed"])
    return response(request, patch=nodestatus.json_patch(node, annotations, allocatable))


def validate(request: dict, view: ClusterView) -> dict:
    """The validating answer to one AdmissionRequest."""
    kind, operation = _kind(request), request.get("operation")
    if operation == "DELETE":
        if kind == QUOTA_KIND:
            try:
                validate_delete(request.get("name", ""), specs_of(view.quotas))
            except QuotaRejected as error:
                return response(request, False, str(error), checked=True)
            return response(request, checked=True)
        return response(request)
    if operation not in ("CREATE", "UPDATE"):
        return response(request, warnings=[f"koordstream does not validate {kind} {operation}; allowed"])
    body = request.get("object") or {}
    if kind == PROFILE_KIND:
        try:
            parse_profile(body)
        except ProfileError as error:
            return response(request, False, f"({kind} {_name(body)}): {error}", checked=True)
        return response(request, checked=True)
    if kind not in KINDS:
        return response(request, warnings=[f"koordstream does not validate {kind}; allowed"])
    try:
        record = to_record(Document("admission", 0, 1, body))
    except ManifestError as error:
        return response(request, False, "; ".join(_POSITION.sub("", p) for p in error.problems), checked=True)
    try:
        if kind == QUOTA_KIND:
            validate_quota(record.record, specs_of(view.quotas))
        if kind == "ConfigMap":
            meta = record.record["metadata"]
            if (meta.get("name"), meta.get("namespace")) == (CONFIG_NAME, CONFIG_NAMESPACE):
                parse_slo_config(record.record, DEFAULT_CONFIG)
    except (QuotaRejected, ConfigError) as error:
        return response(request, False, f"({kind} {record.key}): {error}", checked=True)
    return response(request, checked=True)


def _name(body: dict) -> str:
    meta = body.get("metadata") if isinstance(body, dict) else None
    return (meta or {}).get("name", "") if isinstance(meta, dict) else ""
