"""A Reservation as the plugin reads it, and which pods may use it (``pkg/util/reservation``,
``transformer.go``, ``apis/extension/reservation.go``).

Owners (OR over the list; one owner is the AND of its parts): ``object`` (each non-empty uid, name,
namespace must equal the pod's), ``controller`` (namespace, if set, equals the pod's; some owner reference
of the pod matches every non-empty uid, name, kind, apiVersion), ``labelSelector`` (matches the pod's
labels). No owners match nothing; an empty owner ``{}`` matches every pod.

A pod's reservation affinity (annotation ``scheduling.koordinator.sh/reservation-affinity``) naming a
reservation matches only that one; otherwise a reservation that is ``unschedulable`` or has NoSchedule /
NoExecute taints matches only a pod whose affinity tolerations tolerate them, and the affinity's
``reservationSelector`` must match the reservation's labels. Exact match (annotation
``scheduling.koordinator.sh/exact-match-reservation``): for each named resource, absent on both sides
-> match at once (Koordinator's quirk: later names are not checked), on one side only or different
amounts -> no match, all equal -> match.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping

from streams.koordinator.annotations import (
    ANNOTATION_EXACT_MATCH_RESERVATION, ANNOTATION_RESERVATION_AFFINITY, LABEL_RESERVATION_IGNORED,
    LABEL_RESERVATION_ORDER)
from streams.objects.duration import parse_duration
from streams.objects.fields import FieldReader
from streams.objects.kinds.nodemetric import rfc3339_millis
from streams.objects.podinfo import PodInfo
from streams.scheduler.state import NO_SCHEDULE_EFFECTS
from streams.scheduler.taints import UNSCHEDULABLE_TAINT, tolerated
from streams.sloconfig.selectors import parse_selector

DEFAULT_TTL_MS = 24 * 3600 * 1000
ALIGNED, RESTRICTED = "Aligned", "Restricted"


def _json(text: str | None) -> dict:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


@dataclasses.dataclass(frozen=True)
class ReservationInfo:
    name: str
    uid: str | None
    manifest: dict
    owners: tuple[dict, ...]
    requests: Mapping[str, int]
    """What it reserves (its template's requests; ``pods``, a pod-count limit, apart)."""
    pods_limit: int | None
    ttl_ms: int
    """0: never expires."""
    expires_ms: int | None
    created_ms: int | None
    allocate_once: bool
    policy: str
    unschedulable: bool
    taints: tuple[dict, ...]
    labels: Mapping[str, str]
    order: int
    pinned_node: str | None
    terminal_phase: str | None
    """Succeeded or Failed as last written back: a terminal reservation never reserves again."""

    def expired(self, now_ms: int, first_seen_ms: int) -> bool:
        if self.ttl_ms == 0 and self.expires_ms is None:
            return False
        if self.expires_ms is not None and now_ms > self.expires_ms:
            return True
        created = self.created_ms if self.created_ms is not None else first_seen_ms
        return self.ttl_ms > 0 and now_ms - created > self.ttl_ms


def parse(name: str, record: Mapping) -> ReservationInfo:
    manifest = _json(record.get("manifest"))
    meta = manifest.get("metadata") if isinstance(manifest.get("metadata"), dict) else {}
    spec = manifest.get("spec") if isinstance(manifest.get("spec"), dict) else {}
    status = manifest.get("status") if isinstance(manifest.get("status"), dict) else {}
    template_spec = (spec.get("template") or {}).get("spec") or {}
    requests = dict(record.get("requests") or {})
    pods_limit = requests.pop("pods", None)
    ttl = spec.get("ttl")
    try:
        ttl_ms = parse_duration(ttl) if ttl is not None else DEFAULT_TTL_MS
    except ValueError:
        ttl_ms = DEFAULT_TTL_MS
    reader = FieldReader()
    expires = rfc3339_millis(reader, spec["expires"], "spec.expires") if isinstance(spec.get("expires"), str) else None
    created = rfc3339_millis(reader, meta["creationTimestamp"], "metadata.creationTimestamp") \
        if isinstance(meta.get("creationTimestamp"), str) else None
    labels = dict((record.get("metadata") or {}).get("labels") or {})
    try:
        order = int(labels.get(LABEL_RESERVATION_ORDER) or 0)
    except ValueError:
        order = 0
    phase = status.get("phase")
    return ReservationInfo(
        name, (record.get("metadata") or {}).get("uid"), manifest,
        tuple(o for o in spec.get("owners") or [] if isinstance(o, dict)), requests,
        int(pods_limit) if pods_limit is not None else None, ttl_ms, expires, created,
        spec.get("allocateOnce", True) is not False, spec.get("allocatePolicy") or ALIGNED,
        bool(spec.get("unschedulable")), tuple(t for t in spec.get("taints") or [] if isinstance(t, dict)), labels,
        order, template_spec.get("nodeName") or None, phase if phase in ("Succeeded", "Failed") else None)


def _owner_references(pod: PodInfo) -> list[dict]:
    manifest = _json((pod.record or {}).get("manifest"))
    meta = manifest.get("metadata") if isinstance(manifest.get("metadata"), dict) else {}
    return [o for o in meta.get("ownerReferences") or [] if isinstance(o, dict)]


def owner_matches(owner: dict, pod: PodInfo) -> bool:
    matched = True
    obj = owner.get("object")
    if isinstance(obj, dict):
        fields = {"uid": pod.uid, "name": pod.name, "namespace": pod.namespace}
        matched &= all(not obj.get(field) or obj.get(field) == value for field, value in fields.items())
    controller = owner.get("controller")
    if isinstance(controller, dict):
        if controller.get("namespace") and controller["namespace"] != pod.namespace:
            return False
        keys = ("uid", "name", "kind", "apiVersion")
        matched &= any(all(not controller.get(k) or controller.get(k) == ref.get(k) for k in keys)
                       for ref in _owner_references(pod))
    selector = owner.get("labelSelector")
    if isinstance(selector, dict):
        try:
            matched &= parse_selector(selector, "labelSelector").matches(pod.labels)
        except ValueError:
            return False
    return matched


def is_owner(info: ReservationInfo, pod: PodInfo) -> bool:
    return any(owner_matches(owner, pod) for owner in info.owners)


def ignores_reservations(pod: PodInfo) -> bool:
    return pod.labels.get(LABEL_RESERVATION_IGNORED) == "true"


def affinity(pod: PodInfo) -> dict | None:
    """The pod's reservation affinity, or None when it has none (then it need not use a reservation)."""
    raw = pod.annotations.get(ANNOTATION_RESERVATION_AFFINITY)
    if raw is None:
        return None
    value = _json(raw)
    return value


def exact_match(pod: PodInfo, info: ReservationInfo) -> bool:
    spec = _json(pod.annotations.get(ANNOTATION_EXACT_MATCH_RESERVATION))
    for name in spec.get("resourceNames") or []:
        mine, reserved = pod.requests.get(name), info.requests.get(name)
        if mine is None and reserved is None:
            return True
        if mine is None or reserved is None or mine != reserved:
            return False
    return True


def usable_by(info: ReservationInfo, pod: PodInfo, wanted: dict | None) -> bool:
    """Whether ``pod`` (with its affinity ``wanted``) may use reservation ``info``, owners aside."""
    if wanted is not None and wanted.get("name"):
        return wanted["name"] == info.name and exact_match(pod, info)
    tolerations = (wanted or {}).get("tolerations") or []
    if info.unschedulable and not tolerated(UNSCHEDULABLE_TAINT, tolerations):
        return False
    if any(t.get("effect") in NO_SCHEDULE_EFFECTS and not tolerated(t, tolerations) for t in info.taints):
        return False
    selector = (wanted or {}).get("reservationSelector")
    if isinstance(selector, dict) and any(info.labels.get(k) != v for k, v in selector.items()):
        return False
    return exact_match(pod, info)
