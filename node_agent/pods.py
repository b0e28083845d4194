"""Who a pod cgroup belongs to: UID -> namespace, name, priority class and QoS class.

Pods are found in the cgroup tree by UID; the pods topic tells their namespace
and name. Until it does, a pod is reported under its UID with the placeholder
namespace ``<unresolved>`` (not a valid namespace, so it never collides with a
real one) and the QoS class of the cgroup tier it runs in, taken the way
Koordinator defaults it: Guaranteed -> LSR, Burstable -> LS, BestEffort -> BE,
with the priority class that QoS implies (LS* -> koord-prod, BE -> koord-batch).

The directory keeps the pods bound to this node, plus a bounded number of not
yet bound ones (a pod record usually arrives before its binding), so memory
does not grow with the size of the fleet.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict

from streams.koordinator.classes import PRIORITY_NONE_NAME, QOS_BY_KUBE_QOS, QOS_NONE, priority_class_with_qos
from streams.scheduler.podinfo import from_record

UNRESOLVED_NAMESPACE = "<unresolved>"
MAX_UNBOUND = 4096
PLACED = ("Scheduled", "Bound")
RELEASED = "Released"


@dataclasses.dataclass(frozen=True, slots=True)
class PodIdentity:
    namespace: str
    name: str
    priority: str | None
    """Koordinator priority class (koord-prod, ...) or None."""
    qos: str | None
    """Koordinator QoS class (LSE, LSR, LS, BE, SYSTEM) or None."""


def identity_from_tier(uid: str, kube_qos: str) -> PodIdentity:
    qos = QOS_BY_KUBE_QOS.get(kube_qos, QOS_NONE)
    return PodIdentity(UNRESOLVED_NAMESPACE, uid, priority_class_with_qos(qos) or None, qos or None)


class PodDirectory:
    def __init__(self, node_name: str, max_unbound: int = MAX_UNBOUND) -> None:
        self.node_name = node_name
        self._bound: dict[str, PodIdentity] = {}
        self._unbound: OrderedDict[str, PodIdentity] = OrderedDict()
        self._uid_of_key: dict[str, str] = {}
        self._max_unbound = max_unbound

    def update(self, key: str, record: dict | None) -> None:
        """Apply one record of the pods topic (None: a deletion of ``key``)."""
        old_uid = self._uid_of_key.pop(key, None)
        if old_uid is not None:
            self._bound.pop(old_uid, None)
            self._unbound.pop(old_uid, None)
        if record is None:
            return
        info = from_record(key, record)
        if not info.uid or info.phase in ("Succeeded", "Failed"):
            return
        identity = PodIdentity(info.namespace, info.name, info.priority_class or None, info.qos_class or None)
        if info.node_name == self.node_name:
            self._bound[info.uid] = identity
        elif info.node_name is None:
            self._unbound[info.uid] = identity
            while len(self._unbound) > self._max_unbound:
                self._unbound.popitem(last=False)
        else:
            return
        self._uid_of_key[key] = info.uid

    def apply_decision(self, record: dict) -> None:
        """A SchedulingDecision: a pod placed on this node is ours, with the classes the scheduler saw;
        a pod released or placed elsewhere is not."""
        pod = record.get("pod") or {}
        uid = pod.get("uid")
        if not uid:
            return
        node_name, result = record.get("nodeName"), record.get("result")
        if node_name != self.node_name or result not in PLACED:
            if result == RELEASED or node_name:
                self._bound.pop(uid, None)
            return
        self._unbound.pop(uid, None)
        priority = record.get("priorityClass")
        namespace = pod.get("namespace") or "default"
        self._bound[uid] = PodIdentity(namespace, pod.get("name") or uid,
                                       None if priority in (None, "", PRIORITY_NONE_NAME) else priority,
                                       record.get("qosClass") or None)
        self._uid_of_key[f"{namespace}/{pod.get('name')}"] = uid

    def lookup(self, uid: str, kube_qos: str) -> PodIdentity:
        return self._bound.get(uid) or self._unbound.get(uid) or identity_from_tier(uid, kube_qos)

    def __len__(self) -> int:
        return len(self._bound) + len(self._unbound)
