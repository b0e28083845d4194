"""Koordinator's priority classes and QoS classes (``apis/extension/priority*.go``, ``qos*.go``).

Priority class of a pod, raw: the ``koordinator.sh/priority-class`` label when
present (an unknown name gives None), else the range ``spec.priority`` falls
in (koord-prod 9000-9999, koord-mid 7000-7999, koord-batch 5000-5999,
koord-free 3000-3999), else None. *With default*
(``GetPodPriorityClassWithDefault``): the raw class, or when that is None the
class implied by the QoS class with default (SYSTEM/LSE/LSR/LS -> Prod,
BE -> Batch, else None).

QoS class with default: the ``koordinator.sh/qosClass`` label (unknown
names give None), else from the Kubernetes QoS class: Guaranteed -> LSR,
Burstable -> LS, BestEffort -> BE. On a node, the Guaranteed case depends on the
kubelet's CPU manager policy (``qos_for_guaranteed``: LSR only with ``static``).

A SchedulingDecision carries ``priority``, ``priorityClass`` (the raw class
the scheduler derived) and ``qosClass`` (already with default), so
``decision_priority_class`` applies the "with default" rule to those fields.

Kubernetes QoS (``ComputePodQOS``, ``kube_qos_class``) looks at cpu and memory
of every container and init container: no positive request or limit anywhere
-> BestEffort; every container limits both cpu and memory and requests equal
limits -> Guaranteed; else Burstable. ``status.qosClass`` wins when set.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

PRIORITY_PROD = "koord-prod"
PRIORITY_MID = "koord-mid"
PRIORITY_BATCH = "koord-batch"
PRIORITY_FREE = "koord-free"
PRIORITY_NONE = ""

KNOWN_PRIORITY_CLASSES = (PRIORITY_PROD, PRIORITY_MID, PRIORITY_BATCH, PRIORITY_FREE, PRIORITY_NONE)
"""``extension.KnownPriorityClasses``, in Koordinator's order."""

PRIORITY_RANGES = {
    PRIORITY_PROD: (9000, 9999),
    PRIORITY_MID: (7000, 7999),
    PRIORITY_BATCH: (5000, 5999),
    PRIORITY_FREE: (3000, 3999),
}
"""Inclusive ``spec.priority`` ranges of the classes."""

DEFAULT_PRIORITY = {PRIORITY_PROD: 9500, PRIORITY_MID: 7500, PRIORITY_BATCH: 5500, PRIORITY_FREE: 3500,
                    PRIORITY_NONE: 0}
"""``GetDefaultPriorityByPriorityClass``."""
PRIORITY_CLASS_VALUES = {PRIORITY_PROD: 9000, PRIORITY_MID: 7000, PRIORITY_BATCH: 5000, PRIORITY_FREE: 3000}
"""Values of the PriorityClass objects Koordinator installs (koord-prod is 9000, ...)."""
PRIORITY_NONE_NAME = "none"
"""How a pod without a Koordinator priority class is named on decisions."""

QOS_LSE, QOS_LSR, QOS_LS, QOS_BE, QOS_SYSTEM, QOS_NONE = "LSE", "LSR", "LS", "BE", "SYSTEM", ""
KNOWN_QOS_CLASSES = (QOS_LSE, QOS_LSR, QOS_LS, QOS_BE, QOS_SYSTEM)

KUBE_GUARANTEED, KUBE_BURSTABLE, KUBE_BEST_EFFORT = "Guaranteed", "Burstable", "BestEffort"
"""Kubernetes' QoS classes (``corev1.PodQOSClass``)."""
QOS_BY_KUBE_QOS = {KUBE_GUARANTEED: QOS_LSR, KUBE_BURSTABLE: QOS_LS, KUBE_BEST_EFFORT: QOS_BE}
"""Koordinator's default mapping (``QoSClassForGuaranteed`` is LSR)."""
KUBE_QOS_BY_DEFAULT_QOS = {qos: kube for kube, qos in QOS_BY_KUBE_QOS.items()}
"""The inverse: one to one, so a QoS class with default that came from the mapping gives the Kubernetes class back."""
QOS_COMPUTE_RESOURCES = ("cpu", "memory")

CPU_MANAGER_POLICY_STATIC, CPU_MANAGER_POLICY_NONE = "static", "none"
"""The kubelet's CPU manager policies (``KubeletCPUManagerPolicyStatic`` / ``None``); ``none`` is kubelet's default."""

PRIORITY_CODES = {name: code for code, name in enumerate(KNOWN_PRIORITY_CLASSES)}
"""Compact codes for persistence: index in ``KNOWN_PRIORITY_CLASSES``."""
QOS_CODES = {name: code for code, name in enumerate((QOS_NONE,) + KNOWN_QOS_CLASSES)}
QOS_BY_CODE = {code: name for name, code in QOS_CODES.items()}


def priority_class_by_name(name: str | None) -> str:
    """``GetPodPriorityClassByName``: a known class name, else None."""
    return name if name in PRIORITY_RANGES else PRIORITY_NONE


def priority_class_by_priority(priority: int | None) -> str:
    """``getPriorityClassByPriority``: the class whose range holds ``priority``, else None."""
    if priority is None:
        return PRIORITY_NONE
    for name, (low, high) in PRIORITY_RANGES.items():
        if low <= priority <= high:
            return name
    return PRIORITY_NONE


def priority_class_raw(label: str | None, priority: int | None) -> str:
    """``GetPodPriorityClassRaw``: the label when present, else the priority range."""
    if label is not None:
        return priority_class_by_name(label)
    return priority_class_by_priority(priority)


def qos_class_by_name(name: str | None) -> str:
    return name if name in KNOWN_QOS_CLASSES else QOS_NONE


def qos_class_with_default(label: str | None, kube_qos: str | None) -> str:
    """``GetPodQoSClassWithDefault``: the label, else Koordinator's class for the Kubernetes QoS."""
    qos = qos_class_by_name(label)
    if qos != QOS_NONE:
        return qos
    return QOS_BY_KUBE_QOS.get(kube_qos or "", QOS_NONE)


def qos_for_guaranteed(cpu_manager_policy: str) -> str:
    """The class of a Guaranteed pod without a QoS label on a node whose kubelet runs ``cpu_manager_policy``:
    LSR with ``static``, LS with any other (the Koordinator 1.0 QoS table: "when kubelet CPU Manager Policy is
    static, Guaranteed is equivalent to LSR; when none, to LS"). The source's ``QoSClassForGuaranteed`` is a
    fixed LSR; ``QOS_BY_KUBE_QOS`` keeps it for what is decided before a node is known (the scheduler)."""
    return QOS_LSR if cpu_manager_policy == CPU_MANAGER_POLICY_STATIC else QOS_LS


def priority_class_with_qos(qos: str) -> str:
    """``GetPodPriorityClassWithQoS``."""
    if qos in (QOS_SYSTEM, QOS_LSE, QOS_LSR, QOS_LS):
        return PRIORITY_PROD
    if qos == QOS_BE:
        return PRIORITY_BATCH
    return PRIORITY_NONE


def priority_class_with_default(raw: str, qos_with_default: str) -> str:
    """``GetPodPriorityClassWithDefault`` from the raw class and the QoS class with default."""
    return raw if raw != PRIORITY_NONE else priority_class_with_qos(qos_with_default)


def decision_priority_class(priority_class: str | None, priority: int | None, qos_class: str | None) -> str:
    """Priority class with default of the pod a SchedulingDecision describes."""
    raw = priority_class_by_name(priority_class)
    if raw == PRIORITY_NONE:
        raw = priority_class_by_priority(priority)
    return priority_class_with_default(raw, qos_class_by_name(qos_class))


def default_priority(priority_class: str | None) -> int:
    """``GetDefaultPriorityByPriorityClass``: unknown names count as None (0)."""
    return DEFAULT_PRIORITY.get(priority_class or PRIORITY_NONE, 0)


def kube_qos_class(containers: Iterable[tuple[Mapping[str, int], Mapping[str, int]]],
                   status_qos: str | None = None) -> str:
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
        return KUBE_BEST_EFFORT
    if guaranteed and len(requests) == len(limits) and all(limits.get(n) == v for n, v in requests.items()):
        return KUBE_GUARANTEED
    return KUBE_BURSTABLE
