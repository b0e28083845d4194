"""Which write a decision asks of the cluster, given what the cluster shows: the bridge's idempotency.

Every write is keyed by what the decision asks for, checked against the object the watch last saw:

- **Scheduled** -> what PreBind decided, then a Binding to the node, as kube-scheduler's binding cycle makes
  them. Every annotation and label the decision carries (Koordinator's ``resource-status``,
  ``device-allocated``, ``reservation-allocated``, ``hami.io/vgpu-node``, the pod's own ones it copied, and
  any later one) that the watched pod does not show yet is written first, with :data:`DECISION_ANNOTATION`
  (the decision id), in one merge patch of ``metadata`` (``Bind.annotations`` / ``Bind.labels``), as
  Koordinator's frameworkext PreBind patches the pod its plugins modified; then the Binding, which carries
  :data:`DECISION_ANNOTATION` itself (the API server copies a Binding's annotations onto the pod with
  ``spec.nodeName``, in the same write). So the pod never shows its node without what the decision wrote on
  it, and a decision that asks for nothing beyond its id costs one request, as kube-scheduler's binding of a
  pod no PreBind plugin touched does. A re-read decision whose patch is there already (the crash fell
  between the patch and the Binding) patches nothing. Skipped when the pod is bound already (to that node:
  done; to another: reported). The API server refuses a second Binding (409), so a decision replayed
  before the watch shows the first binding still binds once.
- **Unschedulable** -> an Event named after the decision id (a second create is a 409, i.e. done), then the
  ``PodScheduled=False`` condition with reason and message as kube-scheduler writes it; skipped when the
  pod is bound or already shows that condition.
- **NodeResource** -> capacity and allocatable of ``kubernetes.io/{batch,mid}-{cpu,memory}`` and of the
  device resources (``koordinator.sh/gpu-core``, ``gpu-memory``, ``gpu-memory-ratio``, ``gpu``,
  ``gpu.shared``, ``rdma``, ``huawei.com/npu-*``: :data:`NODE_RESOURCES`) on the node's status, as
  koord-manager writes them (cpu in milli-cores, memory in bytes, both plain integers; capacity equals
  allocatable); one of these names the record lacks is removed, as Koordinator's Prepare deletes a reset
  resource. Only those keys are in the patch (a JSON merge patch of ``status.capacity`` and
  ``status.allocatable``), so what kubelet owns (cpu, memory, pods, device plugins' resources) is left as
  it is. The record's annotations (the CPU normalization ratio, the origin extended allocatable, ...) and
  labels (GPU vendor, model, driver) the node does not show go first, in a merge patch of its
  ``metadata``, where Koordinator's node meta update writes them; the ratio annotations
  (:data:`OWNED_ANNOTATIONS`) are removed when the record has none. ``koord webhook`` then amplifies each
  kubelet status update with the amplification ratio (``streams.webhook.nodestatus``). Skipped when the node
  shows all of it.
- **Eviction** -> an Eviction (policy/v1, so PodDisruptionBudgets are honoured); skipped when the pod is
  gone, is another pod of that name (uid), or is being deleted already, so it never evicts twice.

Only pods whose ``spec.schedulerName`` is the bridge's are bound or marked; decisions about other pods
are koordstream's opinion, which the shadow report compares.

**Bound**, **Released** and **Preempted** decisions ask for no write. Bound and Released follow what the
cluster did. A victim of preemption comes with an Eviction decision too, and that one is carried out as
above: the victim is evicted through the Eviction API, where Koordinator's scheduler, like kube-scheduler,
deletes it with a plain DELETE (budgets only weigh in choosing victims; the bridge's role has no
``delete pods``). The preemptor is bound at once, without waiting for its victims to go (its
``nominatedNodeName`` is not set), so a real kubelet refuses it (OutOfcpu, OutOfmemory) until they are
gone, longer when a budget refuses an eviction.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from streams.koordinator.annotations import ANNOTATION_CPU_NORMALIZATION_RATIO, ANNOTATION_RESOURCE_AMPLIFICATION_RATIO
from streams.koordinator.resources import EXTENDED_RESOURCES
from streams.noderesource.plugins import gpudeviceresource, rdmadeviceresource

DECISION_ANNOTATION = "koordstream.io/decision-id"
"""Pod annotation: the SchedulingDecision the pod was bound for."""
SCHEDULED, UNSCHEDULABLE = "Scheduled", "Unschedulable"
NODE_RESOURCES = (*EXTENDED_RESOURCES, *gpudeviceresource.RESOURCE_NAMES, *rdmadeviceresource.RESOURCE_NAMES)
"""The node-status resources a NodeResource owns: written when it has them, removed when it has not."""
OWNED_ANNOTATIONS = (ANNOTATION_CPU_NORMALIZATION_RATIO, ANNOTATION_RESOURCE_AMPLIFICATION_RATIO)
"""Node annotations a NodeResource owns: removed when it has none (Koordinator's CPUNormalization and
ResourceAmplification Prepare)."""
POD_SCHEDULED = "PodScheduled"


@dataclasses.dataclass(frozen=True)
class PodView:
    """What the bridge needs to know of a pod, from its last watched version."""

    namespace: str
    name: str
    uid: str
    scheduler_name: str
    node_name: str | None
    deleting: bool
    scheduled_condition: tuple[str, str, str] | None
    """(status, reason, message) of the PodScheduled condition, when there is one."""
    annotations: Mapping[str, str] = dataclasses.field(default_factory=dict)
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class NodeView:
    name: str
    capacity: Mapping[str, str]
    allocatable: Mapping[str, str]
    annotations: Mapping[str, str] = dataclasses.field(default_factory=dict)
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Skip:
    reason: str


@dataclasses.dataclass(frozen=True)
class Bind:
    namespace: str
    name: str
    uid: str
    node: str
    decision_id: str
    annotations: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """What the pod's metadata patch sets before the Binding; with ``labels`` empty: no patch."""
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict)

    @property
    def patches(self) -> bool:
        return bool(self.annotations or self.labels)


@dataclasses.dataclass(frozen=True)
class MarkUnschedulable:
    namespace: str
    name: str
    uid: str
    decision_id: str
    reason: str
    message: str

    @property
    def event_name(self) -> str:
        return f"{self.name}.{self.decision_id}"


@dataclasses.dataclass(frozen=True)
class PatchNodeStatus:
    """Merge patches of the node: ``annotations``/``labels`` on its metadata (None removes one; both empty:
    no patch), then ``capacity``/``allocatable`` on its status (None removes one; both empty: no patch)."""

    node: str
    capacity: Mapping[str, str | None]
    allocatable: Mapping[str, str | None]
    annotations: Mapping[str, str | None] = dataclasses.field(default_factory=dict)
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Evict:
    namespace: str
    name: str
    uid: str | None
    decision_id: str
    reason: str
    message: str


Write = Bind | MarkUnschedulable | PatchNodeStatus | Evict


def pod_view(obj: dict) -> PodView:
    metadata, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    condition = next(((c.get("status", ""), c.get("reason", ""), c.get("message", ""))
                      for c in status.get("conditions") or [] if c.get("type") == POD_SCHEDULED), None)
    return PodView(metadata.get("namespace", ""), metadata["name"], metadata.get("uid", ""),
                   spec.get("schedulerName") or "default-scheduler", spec.get("nodeName") or None,
                   bool(metadata.get("deletionTimestamp")), condition, dict(metadata.get("annotations") or {}),
                   dict(metadata.get("labels") or {}))


def node_view(obj: dict) -> NodeView:
    status, metadata = obj.get("status") or {}, obj.get("metadata") or {}
    return NodeView(metadata["name"], dict(status.get("capacity") or {}), dict(status.get("allocatable") or {}),
                    dict(metadata.get("annotations") or {}), dict(metadata.get("labels") or {}))


def _same_pod(pod: PodView | None, uid: str | None) -> str | None:
    """Why a decision about ``uid`` does not apply to ``pod``; None when it does."""
    if pod is None:
        return "the pod no longer exists"
    if uid and pod.uid and uid != pod.uid:
        return f"the decision was for an earlier pod of that name (uid {uid}, now {pod.uid})"
    if pod.deleting:
        return "the pod is being deleted"
    return None


def plan_scheduling(decision: Mapping, pod: PodView | None, scheduler_name: str,
                    nodes: Mapping[str, NodeView] | None = None) -> Write | Skip:
    """The write a SchedulingDecision asks for, or why there is none. With ``nodes`` (the watched view), a
    binding to a node the cluster does not have is refused: the API server would accept it and leave the pod
    on no kubelet."""
    result = decision["result"]
    if result not in (SCHEDULED, UNSCHEDULABLE):
        return Skip(f"a {result} decision asks for no write")
    if (why := _same_pod(pod, decision["pod"].get("uid"))) is not None:
        return Skip(why)
    if pod.scheduler_name != scheduler_name:
        return Skip(f"the pod names scheduler {pod.scheduler_name}, not {scheduler_name}")
    node = decision.get("nodeName")
    if result == SCHEDULED:
        if pod.node_name == node:
            return Skip(f"already bound to {node}")
        if pod.node_name:
            return Skip(f"bound to {pod.node_name} by another client; koordstream chose {node}")
        if nodes is not None and node not in nodes:
            return Skip(f"node {node} does not exist in the cluster")
        annotations, labels = prebind_patch(decision, pod)
        return Bind(pod.namespace, pod.name, pod.uid, node, decision["decisionId"], annotations, labels)
    if pod.node_name:
        return Skip(f"already bound to {pod.node_name}")
    reason, message = decision.get("reason") or UNSCHEDULABLE, decision.get("message") or ""
    if pod.scheduled_condition == ("False", reason, message):
        return Skip("the pod shows this condition already")
    return MarkUnschedulable(pod.namespace, pod.name, pod.uid, decision["decisionId"], reason, message)


def prebind_patch(decision: Mapping, pod: PodView) -> tuple[dict[str, str], dict[str, str]]:
    """(annotations, labels) the pod's metadata patch sets before the Binding: the decision's entries the pod
    does not show, with the decision id; both empty when the pod shows every entry (then the Binding, which
    carries the id, is the only write)."""
    annotations = _missing(decision.get("annotations"), pod.annotations)
    labels = _missing(decision.get("labels"), pod.labels)
    if not (annotations or labels):
        return {}, {}
    return {**annotations, DECISION_ANNOTATION: decision["decisionId"]}, labels


def _missing(wanted: Mapping[str, str] | None, shown: Mapping[str, str]) -> dict[str, str]:
    return {key: value for key, value in (wanted or {}).items() if shown.get(key) != value}


def patched(pod: PodView, write: Bind) -> PodView:
    """``pod`` as it shows once ``write``'s patch is made."""
    return dataclasses.replace(pod, annotations={**pod.annotations, **write.annotations},
                               labels={**pod.labels, **write.labels})


def plan_node_resources(record: Mapping, node: NodeView | None) -> PatchNodeStatus | Skip:
    """The node patches a NodeResource asks for, or why there are none."""
    if node is None:
        return Skip("the node no longer exists")
    computed = record.get("allocatable") or {}
    wanted = {name: str(int(computed[name])) if name in computed else None for name in NODE_RESOURCES}
    allocatable = {name: value for name, value in wanted.items()
                   if node.allocatable.get(name) != value or node.capacity.get(name) != value}
    annotations: dict[str, str | None] = _missing(record.get("annotations"), node.annotations)
    annotations.update({name: None for name in OWNED_ANNOTATIONS
                        if name in node.annotations and name not in (record.get("annotations") or {})})
    labels = _missing(record.get("labels"), node.labels)
    if not (allocatable or annotations or labels):
        return Skip("the node shows these values already")
    return PatchNodeStatus(node.name, allocatable, allocatable, annotations, labels)


def node_patched(node: NodeView, write: PatchNodeStatus) -> NodeView:
    """``node`` as it shows once ``write`` is made."""
    def merged(shown: Mapping[str, str], patch: Mapping[str, str | None]) -> dict[str, str]:
        return {k: v for k, v in {**shown, **patch}.items() if v is not None}
    return NodeView(node.name, merged(node.capacity, write.capacity), merged(node.allocatable, write.allocatable),
                    merged(node.annotations, write.annotations), merged(node.labels, write.labels))


def plan_eviction(eviction: Mapping, pod: PodView | None) -> Evict | Skip:
    """The Eviction an Eviction decision asks for, or why there is none."""
    uid = eviction["pod"].get("uid")
    if (why := _same_pod(pod, uid)) is not None:
        return Skip(why)
    return Evict(pod.namespace, pod.name, uid or pod.uid, eviction["decisionId"], eviction["reason"],
                 eviction.get("message") or "")
