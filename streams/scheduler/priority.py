"""Koordinator priority classes and QoS classes, as ``apis/extension`` derives them.

Priority class (``priority.go``, ``priority_utils.go``)::

    raw     = label koordinator.sh/priority-class if present (unknown names -> none)
              else by spec.priority range: 9000-9999 koord-prod, 7000-7999 koord-mid,
                                           5000-5999 koord-batch, 3000-3999 koord-free, else none
    default = raw, or when raw is none: from the QoS class (LSE/LSR/LS/SYSTEM -> prod, BE -> batch)

QoS class (``qos_utils.go``)::

    label koordinator.sh/qosClass if present (unknown names -> none)
    else from the Kubernetes QoS class: Guaranteed -> LSR, Burstable -> LS, BestEffort -> BE

Kubernetes QoS (``ComputePodQOS``) looks at cpu and memory of every container
and init container: no positive request or limit anywhere -> BestEffort; every
container limits both cpu and memory and requests equal limits -> Guaranteed;
else Burstable. ``status.qosClass`` wins when set.

Resource names by class (``resource.go``): batch pods ask for
``kubernetes.io/batch-cpu``/``batch-memory``, mid pods for ``mid-cpu``/``mid-memory``;
prod and none use cpu/memory; free translates to nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

PROD, MID, BATCH, FREE, NONE = "koord-prod", "koord-mid", "koord-batch", "koord-free", ""
CLASS_NONE_NAME = "none"
"""How a pod without a Koordinator priority class is named on decisions."""

RANGES = ((PROD, 9000, 9999), (MID, 7000, 7999), (BATCH, 5000, 5999), (FREE, 3000, 3999))
DEFAULT_VALUES = {PROD: 9500, MID: 7500, BATCH: 5500, FREE: 3500, NONE: 0}
PRIORITY_CLASS_VALUES = {PROD: 9000, MID: 7000, BATCH: 5000, FREE: 3000}
"""Values of the PriorityClass objects Koordinator installs (koord-prod is 9000, ...)."""

LABEL_PRIORITY_CLASS = "koordinator.sh/priority-class"
LABEL_QOS = "koordinator.sh/qosClass"

LSE, LSR, LS, BE, SYSTEM, QOS_NONE = "LSE", "LSR", "LS", "BE", "SYSTEM", ""
KNOWN_QOS = (LSE, LSR, LS, BE, SYSTEM)
GUARANTEED, BURSTABLE, BEST_EFFORT = "Guaranteed", "Burstable", "BestEffort"

BATCH_CPU, BATCH_MEMORY = "kubernetes.io/batch-cpu", "kubernetes.io/batch-memory"
MID_CPU, MID_MEMORY = "kubernetes.io/mid-cpu", "kubernetes.io/mid-memory"
_TRANSLATE = {
    BATCH: {"cpu": BATCH_CPU, "memory": BATCH_MEMORY},
    MID: {"cpu": MID_CPU, "memory": MID_MEMORY},
}
QOS_COMPUTE_RESOURCES = ("cpu", "memory")


def class_by_priority(priority: int | None) -> str:
    if priority is None:
        return NONE
    for name, low, high in RANGES:
        if low <= priority <= high:
            return name
    return NONE


def raw_priority_class(labels: Mapping[str, str], priority: int | None) -> str:
    """``GetPodPriorityClassRaw``: the label, else the priority range."""
    if LABEL_PRIORITY_CLASS in labels:
        value = labels[LABEL_PRIORITY_CLASS]
        return value if value in (PROD, MID, BATCH, FREE) else NONE
    return class_by_priority(priority)


def qos_class(labels: Mapping[str, str], kube_qos: str) -> str:
    """``GetPodQoSClassWithDefault``: the label, else derived from the Kubernetes QoS class."""
    if LABEL_QOS in labels:
        value = labels[LABEL_QOS]
        return value if value in KNOWN_QOS else QOS_NONE
    return {GUARANTEED: LSR, BURSTABLE: LS, BEST_EFFORT: BE}.get(kube_qos, QOS_NONE)


def class_of_qos(qos: str) -> str:
    """``GetPodPriorityClassWithQoS``."""
    if qos in (SYSTEM, LSE, LSR, LS):
        return PROD
    if qos == BE:
        return BATCH
    return NONE


def priority_class(labels: Mapping[str, str], priority: int | None, qos: str) -> str:
    """``GetPodPriorityClassWithDefault``."""
    raw = raw_priority_class(labels, priority)
    return raw if raw != NONE else class_of_qos(qos)


def translate(resource: str, klass: str) -> str:
    """``TranslateResourceNameByPriorityClass``; "" when the class has no such resource (free)."""
    if klass in (PROD, NONE):
        return resource
    return _TRANSLATE.get(klass, {}).get(resource, "")


def kube_qos(containers: Iterable[tuple[Mapping[str, int], Mapping[str, int]]], status_qos: str | None = None) -> str:
    """Kubernetes QoS class of a pod from (requests, limits) of all its containers and init containers."""
    if status_qos:
        return status_qos
    requests: dict[str, int] = {}
    limits: dict[str, int] = {}
    guaranteed = True
    for container_requests, container_limits in containers:
        for name in QOS_COMPUTE_RESOURCES:
            if container_requests.get(name, 0) > 0:
                requests[name] = requests.get(name, 0) + container_requests[name]
        found = set()
        for name in QOS_COMPUTE_RESOURCES:
            if container_limits.get(name, 0) > 0:
                found.add(name)
                limits[name] = limits.get(name, 0) + container_limits[name]
        if found != set(QOS_COMPUTE_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return BEST_EFFORT
    if guaranteed and len(requests) == len(limits) and all(limits.get(n) == v for n, v in requests.items()):
        return GUARANTEED
    return BURSTABLE
