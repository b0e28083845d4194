"""The pod labels and annotations the node-QoS plan reads, and what they mean.

The scheduler copies exactly these keys into each SchedulingDecision
(``labels`` / ``DECISION_ANNOTATIONS``), so the node aggregate learns them with
the pod without storing whole manifests (``PodView.labels`` / ``annotations``,
and ``PodView.numa_nodes`` from the resource status).
"""

from __future__ import annotations

from collections.abc import Mapping

from streams.noderesource.classes import LABEL_QOS_CLASS, QOS_BE, QOS_LS, QOS_LSR, qos_class_by_name
from streams.noderesource.views import ANNOTATION_RESOURCE_STATUS

LABEL_CORE_SCHED_GROUP_ID = "koordinator.sh/core-sched-group-id"
"""``slov1alpha1.LabelCoreSchedGroupID``: pods with the same id share a core-scheduling cookie."""
LABEL_CORE_SCHED_POLICY = "koordinator.sh/core-sched-policy"
"""``""`` (by group id), ``none`` (no core scheduling) or ``exclusive`` (the pod UID is its group)."""
LABEL_SUB_PRIORITY = "koordinator.sh/priority"
LABEL_EVICTION_ENABLED = "koordinator.sh/eviction-enabled"
ANNOTATION_CPU_QOS = "koordinator.sh/cpuQOS"
"""``CPUQOSCfg`` JSON (``{"enable": true, "groupIdentity": -1}``); overrides the class only for LS pods."""
ANNOTATION_CPU_BURST = "koordinator.sh/cpuBurst"
"""``CPUBurstConfig`` JSON merged over the node's cpu-burst strategy."""
ANNOTATION_NETWORK_QOS = "koordinator.sh/networkQOS"
"""``{"ingressLimit": "<bits>", "egressLimit": "<bits>"}``: the pod's own bandwidth limits."""
ANNOTATION_RESCTRL = "node.koordinator.sh/resctrl"
"""``ResctrlConfig`` JSON (``{"llc": {"schemata": {"range": [a, b]}}, "mb": {"schemata": {"percent": p}}}``):
the pod gets its own resctrl group instead of its class's."""
ANNOTATION_EVICTION_POLICY = "koordinator.sh/eviction-policy"
ANNOTATION_EVICTION_PRIORITY = "koordinator.sh/eviction-priority"

LABELS = (LABEL_QOS_CLASS, LABEL_CORE_SCHED_GROUP_ID, LABEL_CORE_SCHED_POLICY, LABEL_SUB_PRIORITY,
          LABEL_EVICTION_ENABLED)
ANNOTATIONS = (ANNOTATION_CPU_QOS, ANNOTATION_CPU_BURST, ANNOTATION_NETWORK_QOS, ANNOTATION_RESCTRL,
               ANNOTATION_EVICTION_POLICY, ANNOTATION_EVICTION_PRIORITY)
DECISION_ANNOTATIONS = (*ANNOTATIONS, ANNOTATION_RESOURCE_STATUS)
"""What a SchedulingDecision carries: the node-QoS annotations and the pod's
``scheduling.koordinator.sh/resource-status`` (its NUMA placement, which the
NUMA-level batch calculation reads), passed through when the pod has one."""

KUBE_GUARANTEED, KUBE_BURSTABLE, KUBE_BEST_EFFORT = "Guaranteed", "Burstable", "BestEffort"
_KUBE_BY_DEFAULT_QOS = {QOS_LSR: KUBE_GUARANTEED, QOS_LS: KUBE_BURSTABLE, QOS_BE: KUBE_BEST_EFFORT}


def selected(values: Mapping[str, str] | None, keys: tuple[str, ...]) -> dict[str, str]:
    """The entries of ``values`` under ``keys`` (what a SchedulingDecision carries)."""
    return {key: values[key] for key in keys if values and key in values}


def raw_qos(labels: Mapping[str, str] | tuple) -> str:
    """``GetPodQoSClassRaw``: the ``koordinator.sh/qosClass`` label, "" when absent or unknown."""
    mapping = dict(labels)
    return qos_class_by_name(mapping.get(LABEL_QOS_CLASS))


def kube_qos(qos_with_default: str, labels: Mapping[str, str] | tuple) -> str | None:
    """The pod's Kubernetes QoS class when it can be told: without a QoS label Koordinator's default maps
    Guaranteed -> LSR, Burstable -> LS, BestEffort -> BE one to one, so the class gives it back; with a
    label it is unknown (None) and only the label matters to the plan."""
    if raw_qos(labels):
        return None
    return _KUBE_BY_DEFAULT_QOS.get(qos_with_default)
