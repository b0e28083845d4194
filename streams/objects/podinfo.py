"""What the scheduler and the node agent read of a Pod, parsed once per Pod event.

The Pod record types the fields most consumers need (effective requests and
limits, nodeSelector, tolerations, priority); the rest is read from the
lossless manifest: required node affinity, owner references, containers (for
the Kubernetes QoS class and the non-zero requests kube-scheduler scores with),
conditions, ``preemptionPolicy``.

The scheduling state keeps a pod's record reduced (``stored_record``): the typed fields whole, the manifest
to the keys of ``KEPT_MANIFEST``, which hold everything read from it here and by the plugins (the next
kube-scheduler plugins included: inter-pod affinity, topology spread, ports, volumes, images). What else a
manifest holds (commands, environment, status details) decides nothing and would only make the entry big.
``PodInfo.record`` is that reduced record, live as after a restore.

Priority: a pod whose ``spec.priority`` is unset but whose
``priorityClassName`` is one of Koordinator's classes gets that class's value
(koord-prod 9000, koord-mid 7000, koord-batch 5000, koord-free 3000), as the
API server's Priority admission would from the PriorityClass objects
Koordinator installs. Other names leave the priority unset (0 when ordering).
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Mapping

from streams.koordinator.classes import (
    PRIORITY_CLASS_VALUES, QOS_BY_KUBE_QOS, QOS_NONE, kube_qos_class, priority_class_raw, priority_class_with_default,
    qos_class_by_name)
from streams.koordinator.labels import (
    LABEL_POD_PRIORITY_CLASS, LABEL_POD_QOS, LABEL_QUOTA_NAME, LABEL_QUOTA_PREEMPTIBLE)
from streams.koordinator.resources import GPU_SHARED, GPU_SHARED_ARTICLE
from streams.objects.fields import FieldReader
from streams.objects.kinds.nodemetric import rfc3339_millis
from streams.objects.podresources import ContainerResources, pod_requests
from streams.objects.quantity import QuantityError, resource_list

DEFAULT_MILLI_CPU_REQUEST = 100
"""kube-scheduler's non-zero cpu request for a container that states none (``schedutil.DefaultMilliCPURequest``)."""
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
"""kube-scheduler's non-zero memory request (``schedutil.DefaultMemoryRequest``)."""

SIDECAR = "Always"

ALL = None
"""A kept key whose whole value is kept."""
CONTAINER_KEPT = {"name": ALL, "image": ALL, "resources": ALL, "ports": ALL, "restartPolicy": ALL}
"""What is kept of each container: its image (ImageLocality), requests and limits, host ports, and whether an
init container is a sidecar."""
KEPT_MANIFEST = {
    "apiVersion": ALL, "kind": ALL,
    "metadata": {"name": ALL, "namespace": ALL, "uid": ALL, "ownerReferences": ALL, "creationTimestamp": ALL,
                 "deletionTimestamp": ALL, "firstSeenMs": ALL},
    "spec": {"affinity": ALL, "tolerations": ALL, "topologySpreadConstraints": ALL, "volumes": ALL,
             "overhead": ALL, "preemptionPolicy": ALL, "priority": ALL, "priorityClassName": ALL,
             "schedulerName": ALL, "schedulingGates": ALL, "nodeName": ALL, "nodeSelector": ALL,
             "runtimeClassName": ALL,
             "containers": CONTAINER_KEPT, "initContainers": CONTAINER_KEPT},
    "status": {"phase": ALL, "reason": ALL, "qosClass": ALL, "conditions": ALL},
}
"""The manifest keys a pod's stored record keeps, as a tree: a key maps to ``ALL`` (its whole value), or to
the keys kept of its value (of each item, for a list). Labels and annotations are kept in the record's
typed ``metadata``, not twice. ``firstSeenMs`` is the reserve pods' (``plugins.reservation``). A plugin
that reads another part of the manifest adds its key here."""


@dataclasses.dataclass(frozen=True)
class Requirement:
    """One node selector requirement: ``key`` ``operator`` ``values``."""

    key: str
    operator: str
    values: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class SelectorTerm:
    match_expressions: tuple[Requirement, ...] = ()
    match_fields: tuple[Requirement, ...] = ()


@dataclasses.dataclass(frozen=True)
class PodInfo:
    key: str
    namespace: str
    name: str
    uid: str | None
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    requests: Mapping[str, int]
    limits: Mapping[str, int]
    priority: int | None
    """spec.priority (or the value of a Koordinator PriorityClass name); None when unset."""
    priority_class_raw: str
    priority_class: str
    qos_class: str
    scheduler_name: str
    node_name: str | None
    phase: str | None
    node_selector: Mapping[str, str]
    tolerations: tuple[Mapping, ...]
    required_terms: tuple[SelectorTerm, ...] | None
    """requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms; None when the pod has none."""
    preferred_terms: tuple[tuple[int, SelectorTerm], ...]
    """(weight, preference) of preferredDuringSchedulingIgnoredDuringExecution, without the terms kube-scheduler
    drops (weight 0, or no requirement)."""
    owner_kinds: tuple[str, ...]
    containers: tuple[ContainerResources, ...]
    init_containers: tuple[ContainerResources, ...]
    overhead: Mapping[str, int]
    scheduled_at: int | None
    """lastTransitionTime (ms) of a True PodScheduled condition."""
    initialized_at: int | None
    preemption_policy: str | None
    images: tuple[str, ...] = ()
    """The images of the init containers, then of the containers, as written (ImageLocality)."""
    claims: tuple[tuple[str, bool], ...] = ()
    """(claim name, generic ephemeral) of each volume backed by a PersistentVolumeClaim, in volume order: a
    ``persistentVolumeClaim`` volume names its claim, an ``ephemeral`` one's is "<pod name>-<volume name>"
    (``ephemeral.VolumeClaimName``). The volume plugins read them."""
    record: dict | None = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def sort_priority(self) -> int:
        return self.priority or 0

    @property
    def is_daemonset(self) -> bool:
        return "DaemonSet" in self.owner_kinds

    @property
    def non_preemptible(self) -> bool:
        return self.labels.get(LABEL_QUOTA_PREEMPTIBLE) == "false"

    @property
    def quota_label(self) -> str:
        return self.labels.get(LABEL_QUOTA_NAME, "")

    @functools.cached_property
    def _nonzero(self) -> dict[str, int]:
        return _nonzero(self)

    def nonzero_requests(self) -> dict[str, int]:
        """The pod's requests where a container without a cpu or memory request counts 100m / 200Mi
        (kube-scheduler's ``NonZeroRequested``, used by the Fit scores)."""
        return self._nonzero

    def nonzero_request(self, resource: str) -> int:
        """NodeResourcesFitPlus's pod-side request (``calculatePodResourceRequest``): containers summed with
        non-zero defaults, sidecars added, other init containers by max, then overhead in whole units.
        A record without containers in its manifest counts as one container with the pod's requests."""
        if not self.containers and not self.init_containers:
            return _nonzero_value(resource, self.requests)
        total = 0
        for container in self.containers:
            total += _nonzero_value(resource, container.requests)
        for container in self.init_containers:
            value = _nonzero_value(resource, container.requests)
            total = total + value if container.sidecar else max(total, value)
        if resource in self.overhead:
            value = self.overhead[resource]
            total += -(-value // 1000) if resource == "cpu" else value
        return total


def _canonical_names(requests: Mapping[str, int]) -> dict[str, int]:
    """The v1.6 article's ``koordinator.sh/gpu-shared`` is Koordinator's ``koordinator.sh/gpu.shared``."""
    out = dict(requests)
    if GPU_SHARED_ARTICLE in out:
        out[GPU_SHARED] = out.pop(GPU_SHARED_ARTICLE) + out.get(GPU_SHARED, 0)
    return out


def _nonzero_value(resource: str, requests: Mapping[str, int]) -> int:
    if resource == "cpu":
        return requests.get("cpu", DEFAULT_MILLI_CPU_REQUEST)
    if resource == "memory":
        return requests.get("memory", DEFAULT_MEMORY_REQUEST)
    return requests.get(resource, 0)


def _nonzero(pod: PodInfo) -> dict[str, int]:
    def fill(container: ContainerResources) -> ContainerResources:
        requests = dict(container.requests)
        requests.setdefault("cpu", DEFAULT_MILLI_CPU_REQUEST)
        requests.setdefault("memory", DEFAULT_MEMORY_REQUEST)
        return ContainerResources(requests, container.limits, container.sidecar)

    if not pod.containers and not pod.init_containers:
        return {**pod.requests, "cpu": pod.requests.get("cpu", DEFAULT_MILLI_CPU_REQUEST),
                "memory": pod.requests.get("memory", DEFAULT_MEMORY_REQUEST)}
    return pod_requests([fill(c) for c in pod.containers], [fill(c) for c in pod.init_containers], pod.overhead)


def _qos_class(labels: Mapping[str, str], kube_qos: str) -> str:
    """The ``koordinator.sh/qosClass`` label when present (an unknown name gives None), else Koordinator's
    class for the Kubernetes QoS. Unlike ``classes.qos_class_with_default`` (``GetPodQoSClassWithDefault``),
    a label with an unknown name does not fall back to the Kubernetes QoS."""
    if LABEL_POD_QOS in labels:
        return qos_class_by_name(labels[LABEL_POD_QOS])
    return QOS_BY_KUBE_QOS.get(kube_qos, QOS_NONE)


def from_record(key: str, record: Mapping, stored: bool = False) -> PodInfo:
    """The PodInfo of a Pod record (``Pod.avsc``); ``stored``: one :func:`stored_record` made (a restore
    reads those back), kept as it is since reducing it again gives it back."""
    meta = record["metadata"]
    manifest = _json(record.get("manifest"))
    spec = manifest.get("spec") if isinstance(manifest.get("spec"), dict) else {}
    status = manifest.get("status") if isinstance(manifest.get("status"), dict) else {}
    labels = dict(meta.get("labels") or {})
    containers = tuple(_containers(spec.get("containers"), init=False))
    init_containers = tuple(_containers(spec.get("initContainers"), init=True))
    kube_qos = kube_qos_class(((c.requests, c.limits) for c in containers + init_containers),
                              status.get("qosClass") if isinstance(status.get("qosClass"), str) else None)
    qos = _qos_class(labels, kube_qos)
    value = record.get("priority")
    if value is None:
        value = PRIORITY_CLASS_VALUES.get(record.get("priorityClassName") or "")
    raw_class = priority_class_raw(labels.get(LABEL_POD_PRIORITY_CLASS), value)
    conditions = _conditions(status.get("conditions"))
    owners = (manifest.get("metadata") or {}).get("ownerReferences") or []
    return PodInfo(
        key=key,
        namespace=meta.get("namespace") or "default",
        name=meta["name"],
        uid=meta.get("uid"),
        labels=labels,
        annotations=dict(meta.get("annotations") or {}),
        requests=_canonical_names(record.get("requests") or {}),
        limits=dict(record.get("limits") or {}),
        priority=value,
        priority_class_raw=raw_class,
        priority_class=priority_class_with_default(raw_class, qos),
        qos_class=qos,
        scheduler_name=record.get("schedulerName") or "default-scheduler",
        node_name=record.get("nodeName"),
        phase=record.get("phase"),
        node_selector=dict(record.get("nodeSelector") or {}),
        tolerations=tuple(record.get("tolerations") or ()),
        required_terms=_required_terms(spec.get("affinity")),
        preferred_terms=_preferred_terms(spec.get("affinity")),
        owner_kinds=tuple(o.get("kind", "") for o in owners if isinstance(o, dict)),
        containers=containers,
        init_containers=init_containers,
        overhead=_resources(spec.get("overhead")),
        scheduled_at=conditions.get("PodScheduled"),
        initialized_at=conditions.get("Initialized"),
        preemption_policy=spec.get("preemptionPolicy") if isinstance(spec.get("preemptionPolicy"), str) else None,
        images=_images(spec),
        claims=_claims(spec, meta["name"]),
        record=dict(record) if stored else _stored(record, manifest),
    )


def stored_record(record: Mapping, manifest: dict | None = None) -> dict:
    """``record`` as the scheduling state keeps it: its manifest (``manifest`` when the caller parsed it) reduced
    to ``KEPT_MANIFEST``, as compact JSON with sorted keys. Reducing a stored record again gives it back."""
    return _stored(record, _json(record.get("manifest")) if manifest is None else manifest)


def _stored(record: Mapping, manifest: dict) -> dict:
    kept = _kept(manifest, KEPT_MANIFEST)
    return {**record, "manifest": json.dumps(kept, sort_keys=True, separators=(",", ":"), ensure_ascii=False)}


def _kept(value, keys):
    """The parts of ``value`` that ``keys`` names (``KEPT_MANIFEST``'s tree)."""
    if keys is ALL:
        return value
    if isinstance(value, list):
        return [_kept(item, keys) for item in value]
    if not isinstance(value, dict):
        return value
    return {key: _kept(value[key], sub) for key, sub in keys.items() if key in value}


def _images(spec: Mapping) -> tuple[str, ...]:
    """The string ``image`` of each init container, then of each container."""
    groups = [spec.get(group) for group in ("initContainers", "containers")]
    return tuple(container["image"] for group in groups if isinstance(group, list) for container in group
                 if isinstance(container, dict) and isinstance(container.get("image"), str))


def _claims(spec: Mapping, pod_name: str) -> tuple[tuple[str, bool], ...]:
    out = []
    for volume in spec.get("volumes") if isinstance(spec.get("volumes"), list) else ():
        if not isinstance(volume, dict):
            continue
        source = volume.get("persistentVolumeClaim")
        if isinstance(source, dict) and isinstance(source.get("claimName"), str):
            out.append((source["claimName"], False))
        elif isinstance(volume.get("ephemeral"), dict) and isinstance(volume.get("name"), str):
            out.append((f"{pod_name}-{volume['name']}", True))
    return tuple(out)


def placeholder(key: str) -> PodInfo:
    """A pod known only by its key (a deletion of a pod never seen)."""
    namespace, _, name = key.partition("/")
    return from_record(key, {"metadata": {"name": name, "namespace": namespace}, "manifest": "{}"})


def _json(text) -> dict:
    try:
        value = json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _resources(value) -> dict[str, int]:
    if not isinstance(value, dict):
        return {}
    try:
        return resource_list(value)
    except QuantityError:
        return {}


def _containers(value, init: bool):
    for raw in value if isinstance(value, list) else ():
        if not isinstance(raw, dict):
            continue
        resources = raw.get("resources") if isinstance(raw.get("resources"), dict) else {}
        requests = _resources(resources.get("requests"))
        limits = _resources(resources.get("limits"))
        for name, limit in limits.items():
            requests.setdefault(name, limit)
        yield ContainerResources(requests, limits, sidecar=init and raw.get("restartPolicy") == SIDECAR)


def _conditions(value) -> dict[str, int]:
    out = {}
    for raw in value if isinstance(value, list) else ():
        if isinstance(raw, dict) and raw.get("status") == "True" and raw.get("lastTransitionTime"):
            millis = rfc3339_millis(FieldReader(), raw["lastTransitionTime"], "status.conditions")
            if millis is not None and isinstance(raw.get("type"), str):
                out[raw["type"]] = millis
    return out


def _requirements(value) -> tuple[Requirement, ...]:
    out = []
    for raw in value if isinstance(value, list) else ():
        if isinstance(raw, dict):
            values = raw.get("values") if isinstance(raw.get("values"), list) else []
            out.append(Requirement(str(raw.get("key", "")), str(raw.get("operator", "")),
                                   tuple(str(v) for v in values)))
    return tuple(out)


def _preferred_terms(affinity) -> tuple[tuple[int, SelectorTerm], ...]:
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, dict) else None
    preferred = node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") if isinstance(
        node_affinity, dict) else None
    out = []
    for item in preferred if isinstance(preferred, list) else ():
        preference = item.get("preference") if isinstance(item, dict) else None
        weight = item.get("weight") if isinstance(item, dict) else None
        if not isinstance(preference, dict) or not isinstance(weight, int) or isinstance(weight, bool) or weight == 0:
            continue
        term = SelectorTerm(_requirements(preference.get("matchExpressions")),
                            _requirements(preference.get("matchFields")))
        if term.match_expressions or term.match_fields:
            out.append((weight, term))
    return tuple(out)


def _required_terms(affinity) -> tuple[SelectorTerm, ...] | None:
    if not isinstance(affinity, dict):
        return None
    node_affinity = affinity.get("nodeAffinity")
    if not isinstance(node_affinity, dict):
        return None
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not isinstance(required, dict):
        return None
    terms = required.get("nodeSelectorTerms")
    return tuple(
        SelectorTerm(_requirements(term.get("matchExpressions")), _requirements(term.get("matchFields")))
        for term in (terms if isinstance(terms, list) else ()) if isinstance(term, dict)
    )
