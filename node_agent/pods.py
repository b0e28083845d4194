"""Who a pod cgroup belongs to: UID -> namespace, name, priority class, QoS class and address.

Pods are found in the cgroup tree by UID; the pods topic tells their namespace
and name. Until it does, a pod is reported under its UID with the placeholder
namespace ``<unresolved>`` (not a valid namespace, so it never collides with a
real one) and the QoS class of the cgroup tier it runs in, taken the way
Koordinator defaults it: Guaranteed -> LSR, Burstable -> LS, BestEffort -> BE,
with the priority class that QoS implies (LS* -> koord-prod, BE -> koord-batch).

The directory keeps the pods bound to this node, plus a bounded number of not
yet bound ones (a pod record usually arrives before its binding), so memory
does not grow with the size of the fleet.

Decisions are idempotent here too: one sent again to the decisions topic (a
new record) must not bring back a pod that is gone. The directory ignores a
decision about this node whose id it applied already (the last ``MAX_APPLIED``) and one
placing a pod it saw deleted (the UIDs of the last ``MAX_DELETED`` pods of
this node whose tombstone or ended phase the pods topic carried, or that a
``Released`` decision said the scheduler deleted): a deleted object never comes
back under its UID.

A pod's address is a node-local fact the planner never learns (it plans from
SchedulingDecisions, made before the pod has an IP): the directory takes it
from the Pod record's manifest, ``status.podIP`` (else ``status.podIPs[0].ip``),
and ``address_of`` gives it to the tc backend, which classifies pods by address
as terway-qos does.
"""

from __future__ import annotations

import dataclasses
import json
from collections import OrderedDict
from collections.abc import Mapping

from streams.koordinator.classes import PRIORITY_NONE_NAME, QOS_BY_KUBE_QOS, QOS_NONE, priority_class_with_qos
from streams.nodeaggregate.replays import POD_GONE_REASONS
from streams.objects.podinfo import from_record

UNRESOLVED_NAMESPACE = "<unresolved>"
MAX_UNBOUND = 4096
MAX_APPLIED = 4096
"""Ids of decisions about this node remembered (about 100 bytes each): a duplicate of one of the node's last
4096 decisions is ignored."""
MAX_DELETED = 4096
"""UIDs of the node's deleted pods remembered (about 100 bytes each): a decision placing one of them is
ignored."""
PLACED = ("Scheduled", "Bound")
RELEASED = "Released"
ENDED_PHASES = ("Succeeded", "Failed")
DUPLICATE, DELETED = "duplicate", "deleted"
"""Why a decision is ignored (``PodDirectory.apply_decision``)."""


@dataclasses.dataclass(frozen=True, slots=True)
class PodIdentity:
    namespace: str
    name: str
    priority: str | None
    """Koordinator priority class (koord-prod, ...) or None."""
    qos: str | None
    """Koordinator QoS class (LSE, LSR, LS, BE, SYSTEM) or None."""
    address: str | None = None
    """The pod's IP (``status.podIP``) once the kubelet has reported it."""


def identity_from_tier(uid: str, kube_qos: str) -> PodIdentity:
    qos = QOS_BY_KUBE_QOS.get(kube_qos, QOS_NONE)
    return PodIdentity(UNRESOLVED_NAMESPACE, uid, priority_class_with_qos(qos) or None, qos or None)


def pod_address(record: Mapping) -> str | None:
    """``status.podIP`` of a Pod record's manifest, else ``status.podIPs[0].ip``; None before the pod has one."""
    try:
        manifest = json.loads(record.get("manifest") or "{}")
    except ValueError:
        return None
    status = manifest.get("status") if isinstance(manifest, dict) else None
    if not isinstance(status, dict):
        return None
    address = status.get("podIP")
    if not address:
        ips = status.get("podIPs")
        first = ips[0] if isinstance(ips, list) and ips else None
        address = first.get("ip") if isinstance(first, dict) else None
    return address if isinstance(address, str) and address else None


class PodDirectory:
    def __init__(self, node_name: str, max_unbound: int = MAX_UNBOUND) -> None:
        self.node_name = node_name
        self._bound: dict[str, PodIdentity] = {}
        self._unbound: OrderedDict[str, PodIdentity] = OrderedDict()
        self._uid_of_key: dict[str, str] = {}
        self._max_unbound = max_unbound
        self._applied: OrderedDict[str, None] = OrderedDict()
        self._deleted: OrderedDict[str, None] = OrderedDict()

    def update(self, key: str, record: dict | None) -> None:
        """Apply one record of the pods topic (None: a deletion of ``key``)."""
        old_uid = self._uid_of_key.pop(key, None)
        was_bound = old_uid is not None and self._bound.pop(old_uid, None) is not None
        if old_uid is not None:
            self._unbound.pop(old_uid, None)
        if record is None:
            if was_bound:
                self._remember(self._deleted, old_uid, MAX_DELETED)
            return
        info = from_record(key, record)
        if info.uid and info.phase in ENDED_PHASES and (info.node_name == self.node_name or was_bound):
            self._remember(self._deleted, info.uid, MAX_DELETED)
        if not info.uid or info.phase in ENDED_PHASES:
            return
        identity = PodIdentity(info.namespace, info.name, info.priority_class or None, info.qos_class or None)
        if info.node_name == self.node_name:
            self._bound[info.uid] = dataclasses.replace(identity, address=pod_address(record))
        elif info.node_name is None:
            self._unbound[info.uid] = identity
            while len(self._unbound) > self._max_unbound:
                self._unbound.popitem(last=False)
        else:
            return
        self._uid_of_key[key] = info.uid

    def apply_decision(self, record: dict) -> str | None:
        """A SchedulingDecision: a pod placed on this node is ours, with the classes the scheduler saw;
        a pod released or placed elsewhere is not. The address the pods topic gave stays. Returns why the
        decision was ignored (``DUPLICATE``, ``DELETED``), None when it was applied."""
        pod = record.get("pod") or {}
        uid = pod.get("uid")
        if not uid:
            return None
        node_name, result = record.get("nodeName"), record.get("result")
        decision_id = record.get("decisionId")
        if decision_id and node_name == self.node_name:
            if decision_id in self._applied:
                return DUPLICATE
            self._remember(self._applied, decision_id, MAX_APPLIED)
        if (result == RELEASED and record.get("reason") in POD_GONE_REASONS
                and (node_name == self.node_name or uid in self._bound)):
            self._remember(self._deleted, uid, MAX_DELETED)
        if node_name != self.node_name or result not in PLACED:
            if result == RELEASED or node_name:
                self._bound.pop(uid, None)
            return None
        if uid in self._deleted:
            return DELETED
        unbound = self._unbound.pop(uid, None)
        known = self._bound.get(uid) or unbound
        priority = record.get("priorityClass")
        namespace = pod.get("namespace") or "default"
        self._bound[uid] = PodIdentity(namespace, pod.get("name") or uid,
                                       None if priority in (None, "", PRIORITY_NONE_NAME) else priority,
                                       record.get("qosClass") or None, known.address if known else None)
        self._uid_of_key[f"{namespace}/{pod.get('name')}"] = uid
        return None

    @staticmethod
    def _remember(seen: OrderedDict[str, None], item: str, limit: int) -> None:
        """Add ``item`` to ``seen`` as its newest, forgetting the oldest beyond ``limit``."""
        seen[item] = None
        seen.move_to_end(item)
        while len(seen) > limit:
            seen.popitem(last=False)

    def lookup(self, uid: str, kube_qos: str) -> PodIdentity:
        return self._bound.get(uid) or self._unbound.get(uid) or identity_from_tier(uid, kube_qos)

    def address_of(self, uid: str) -> str | None:
        """The address of a pod bound to this node, None until its Pod record carries one."""
        identity = self._bound.get(uid)
        return identity.address if identity is not None else None

    def __len__(self) -> int:
        return len(self._bound) + len(self._unbound)
