"""The pod labels and annotations the node-QoS plan reads, and what they mean.

The scheduler copies exactly these keys into each SchedulingDecision
(``labels`` / ``DECISION_ANNOTATIONS``), so the node aggregate learns them with
the pod without storing whole manifests (``PodView.labels`` / ``annotations``,
and ``PodView.numa_nodes`` from the resource status).
"""

from __future__ import annotations

from collections.abc import Mapping

from streams.koordinator.annotations import (
    ANNOTATION_CPU_BURST, ANNOTATION_CPU_QOS, ANNOTATION_EVICTION_POLICY, ANNOTATION_EVICTION_PRIORITY,
    ANNOTATION_NETWORK_QOS, ANNOTATION_RESCTRL, ANNOTATION_RESOURCE_STATUS)
from streams.koordinator.classes import KUBE_QOS_BY_DEFAULT_QOS, qos_class_by_name
from streams.koordinator.labels import (
    LABEL_CORE_SCHED_GROUP, LABEL_CORE_SCHED_GROUP_ID, LABEL_CORE_SCHED_POLICY, LABEL_POD_EVICTION_ENABLED,
    LABEL_POD_QOS, LABEL_POD_SUB_PRIORITY)

LABELS = (LABEL_POD_QOS, LABEL_CORE_SCHED_GROUP_ID, LABEL_CORE_SCHED_GROUP, LABEL_CORE_SCHED_POLICY,
          LABEL_POD_SUB_PRIORITY, LABEL_POD_EVICTION_ENABLED)
ANNOTATIONS = (ANNOTATION_CPU_QOS, ANNOTATION_CPU_BURST, ANNOTATION_NETWORK_QOS, ANNOTATION_RESCTRL,
               ANNOTATION_EVICTION_POLICY, ANNOTATION_EVICTION_PRIORITY)
DECISION_ANNOTATIONS = (*ANNOTATIONS, ANNOTATION_RESOURCE_STATUS)
"""What a SchedulingDecision carries: the node-QoS annotations and the pod's
``scheduling.koordinator.sh/resource-status`` (its NUMA placement, which the
NUMA-level batch calculation reads), passed through when the pod has one."""


def selected(values: Mapping[str, str] | None, keys: tuple[str, ...]) -> dict[str, str]:
    """The entries of ``values`` under ``keys`` (what a SchedulingDecision carries)."""
    return {key: values[key] for key in keys if values and key in values}


def raw_qos(labels: Mapping[str, str] | tuple) -> str:
    """``GetPodQoSClassRaw``: the ``koordinator.sh/qosClass`` label, "" when absent or unknown."""
    mapping = dict(labels)
    return qos_class_by_name(mapping.get(LABEL_POD_QOS))


def kube_qos(qos_with_default: str, labels: Mapping[str, str] | tuple) -> str | None:
    """The pod's Kubernetes QoS class when it can be told: without a QoS label Koordinator's default maps
    Guaranteed -> LSR, Burstable -> LS, BestEffort -> BE one to one, so the class gives it back; with a
    label it is unknown (None) and only the label matters to the plan."""
    if raw_qos(labels):
        return None
    return KUBE_QOS_BY_DEFAULT_QOS.get(qos_with_default)
